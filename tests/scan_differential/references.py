"""The reference readers: Spark's own ``spark.read`` and DuckDB, over the same files.

Each reference is a view with the scan's column names: data columns by
name (absent ones as nulls), partition columns (hive keys as each reader
types them; ``dirN`` derived from the file path, which neither reader
offers), and the implicit file columns, derived from the path too (Spark:
``_metadata``; DuckDB: its ``filename`` column). csv is read as text
everywhere, since the scan keeps csv fields as strings (Drill's rule).

A reference declines what it cannot express in the scan's terms
(``supports``), and the comparison then relies on the other one:

- Spark: json documents (``multiLine`` reads one value per file); csv
  whose files have different headers (Spark maps fields by position) or
  read without ``nullValue ''`` (Spark reads an empty field as null) or
  with bad rows (whether Spark finds a short row depends on the projected
  columns); parquet whose ``qty`` widens (``mergeSchema`` refuses long and
  double).
- DuckDB: csv long rows under ``on_error="null"`` (never drawn).

Bad records: ``skip`` is Spark's ``DROPMALFORMED`` and DuckDB's
``ignore_errors`` (which keeps a malformed json line as a row of nulls,
dropped here by its null ``id``: a good record always has one); ``null``
is Spark's ``PERMISSIVE`` and DuckDB's ``ignore_errors`` (json) or
``null_padding`` (csv short rows). Under ``fail`` the references read as
under ``skip``, and whether the query must fail is decided from where the
bad records are (``queries.needs_bad_file``): Spark's ``FAILFAST`` and
DuckDB both count rows without judging them, so neither fails where it
should.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import duckdb
from pyspark.sql import SparkSession

from tests.scan_differential.datasets import GHOST, DataSet

SPARK_MODES = {"fail": "DROPMALFORMED", "skip": "DROPMALFORMED", "null": "PERMISSIVE"}
QUOTES = {"spark": "`", "duckdb": '"'}


class Reference(Protocol):
    name: str
    quote: str
    view: str

    def run(self, sql: str) -> list[tuple[Any, ...]]: ...


def spark_supports(data_set: DataSet) -> bool:
    if data_set.format == "json":
        return data_set.layout != "documents"
    if data_set.format == "csv":
        headers = {f.columns for f in data_set.files}
        bad = any(f.bad for f in data_set.files)
        return len(headers) == 1 and data_set.empty_is_null and not bad
    return not any(
        isinstance(row[f.columns.index("qty")], float)
        for f in data_set.files
        if "qty" in f.columns
        for row in f.rows
    )


class SparkReference:
    """A temporary view over ``spark.read`` of the files, in the scan's terms."""

    name = "spark"
    quote = "`"

    def __init__(self, spark: SparkSession, data_set: DataSet, root: Path) -> None:
        self._spark = spark
        self.view = f"ref_{uuid.uuid4().hex[:12]}"
        reader = spark.read.format(data_set.format)
        if data_set.format == "json":
            reader = reader.option("mode", SPARK_MODES[data_set.on_error])
            if data_set.layout == "array":
                reader = reader.option("multiLine", "true")
        elif data_set.format == "csv":
            reader = reader.option("header", "true").option("escape", '"')
        else:
            reader = reader.option("mergeSchema", "true")
        if data_set.partitioning == "dirs":
            reader = reader.option("recursiveFileLookup", "true")
        frame = reader.load(str(root))
        prefix = len(f"file:{root}/")
        present = set(frame.columns)
        path = f"substring(_metadata.file_path, {prefix + 1})"
        derived = {
            "filename": "_metadata.file_name",
            "fqn": "regexp_replace(_metadata.file_path, '^file:', '')",
            "filepath": "regexp_replace(regexp_replace(_metadata.file_path, '^file:', ''), "
            "'/[^/]*$', '')",
            "suffix": "regexp_extract(_metadata.file_name, '[.]([^.]*)$', 1)",
            GHOST: "CAST(NULL AS STRING)",
        }
        expressions = []
        for column in data_set.columns():
            if column in present:
                expressions.append(f"`{column}`")
            elif column.startswith("dir") and data_set.partitioning == "dirs":
                index = int(column[3:])
                parts = f"split({path}, '/')"
                expressions.append(
                    f"CASE WHEN size({parts}) > {index + 1} THEN element_at({parts}, {index + 1}) "
                    f"END AS `{column}`"
                )
            else:
                expressions.append(f"{derived.get(column, 'CAST(NULL AS STRING)')} AS `{column}`")
        frame.selectExpr(*expressions).createOrReplaceTempView(self.view)

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._spark.sql(sql).collect()]

    def drop(self) -> None:
        self._spark.catalog.dropTempView(self.view)


class DuckDBReference:
    """A DuckDB view over ``read_json`` / ``read_csv`` / ``read_parquet`` of the files."""

    name = "duckdb"
    quote = '"'

    def __init__(
        self, connection: duckdb.DuckDBPyConnection, data_set: DataSet, root: Path, paths: Sequence[Path]
    ) -> None:
        self._connection = connection
        self.view = f"ref_{uuid.uuid4().hex[:12]}"
        files = "[" + ", ".join(f"'{p}'" for p in paths) + "]"
        hive = "true" if data_set.partitioning == "hive" else "false"
        common = f"union_by_name = true, hive_partitioning = {hive}, filename = '_path'"
        bad = bool(data_set.bad_files())
        keep_good = ""
        if data_set.format == "json":
            layout = {"lines": "newline_delimited", "array": "array", "documents": "unstructured"}
            errors = ", ignore_errors = true" if bad else ""
            source = f"read_json({files}, format = '{layout[data_set.layout]}', {common}{errors})"
            if bad and data_set.on_error != "null":
                keep_good = ' WHERE "id" IS NOT NULL'
        elif data_set.format == "csv":
            nulls = "" if data_set.empty_is_null else ", nullstr = '\x01'"
            errors = ""
            if bad:
                errors = (
                    ", null_padding = true" if data_set.on_error == "null" else ", ignore_errors = true"
                )
            source = (
                f"read_csv({files}, header = true, all_varchar = true, delim = ',', quote = '\"', "
                f"escape = '\"', {common}{nulls}{errors})"
            )
        else:
            source = f"read_parquet({files}, {common})"
        described = connection.sql(f"SELECT * FROM {source} LIMIT 0").columns
        present = {c for c in described if c != "_path"}
        relative = f"substr(_path, {len(str(root)) + 2})"
        derived = {
            "filename": "regexp_extract(_path, '[^/]*$')",
            "fqn": "_path",
            "filepath": "regexp_replace(_path, '/[^/]*$', '')",
            "suffix": "regexp_extract(_path, '[.]([^./]*)$', 1)",
        }
        expressions = []
        for column in data_set.columns():
            if column in present:
                expressions.append(f'"{column}"')
            elif column.startswith("dir") and data_set.partitioning == "dirs":
                index = int(column[3:])
                parts = f"string_split({relative}, '/')"
                expressions.append(
                    f'CASE WHEN len({parts}) > {index + 1} THEN {parts}[{index + 1}] END AS "{column}"'
                )
            else:
                expressions.append(f"{derived.get(column, 'CAST(NULL AS VARCHAR)')} AS \"{column}\"")
        connection.execute(
            f"CREATE VIEW {self.view} AS SELECT {', '.join(expressions)} FROM {source}{keep_good}"
        )

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._connection.sql(sql).fetchall()]

    def drop(self) -> None:
        self._connection.execute(f"DROP VIEW IF EXISTS {self.view}")
