"""The reference readers: Spark's own ``spark.read`` and DuckDB, over the same files.

Each reference is a view with the scan's column names: data columns by
name (absent ones as nulls), partition columns (hive keys as each reader
types them; ``dirN`` derived from the file path, which neither reader
offers), and the implicit file columns, derived from the path too (Spark:
``_metadata``; DuckDB: its ``filename`` column), unless a column of the data
has the name (the data's column wins, as in the scan). csv is read as text
everywhere, since the scan keeps csv fields as strings (Drill's rule).

A view is made over the files there are (a ``Change`` makes it anew) in the
terms of the scan as it was planned (``planned``): its columns, their
spellings, the columns a rescue scan keeps.

A reference declines what it cannot express in the scan's terms
(``supports``), and the comparison then relies on the other one:

- Spark: json documents (``multiLine`` reads one value per file); csv
  whose files have different headers (Spark maps fields by position) or
  read without ``nullValue ''`` (Spark reads an empty field as null) or
  with bad rows (whether Spark finds a short row depends on the projected
  columns); headerless csv; parquet whose ``qty`` widens (``mergeSchema``
  refuses long and double); names in other cases (its readers refuse keys
  that differ only in case, ``COLUMN_ALREADY_EXISTS``), text clashing with
  numbers (its inference makes the column a string), byte order marks,
  rescued data.
- DuckDB: csv long rows under ``on_error="null"`` (never drawn).

DuckDB keeps each spelling of a key as a column of its own (``name``,
``NAME_1``): the view makes one column of them (``coalesce``), as the scan
does. A record giving ``name`` two values (a twin) and a ``qty`` that is
text (a clash) are bad records of the scan wherever the column is read:
the view drops them (``skip``, ``reject``, and ``fail``, whose queries that
read them must fail) or nulls the column (``null``), by their ids. DuckDB
types such a ``qty`` as text (or JSON), and each spelling of it by that
spelling's values alone (``qty`` a HUGEINT, ``QTY_1`` text): the view casts
each spelling to the scan's number (the type rule of docs/scans.md) before
making them one, a value that does not convert becoming null. A spelling of
``tags`` whose lists are all empty or null is JSON[] to DuckDB, which would
make the lists of the others JSON text too: each spelling is cast to
BIGINT[], the integers the files hold.
Under rescue the rescued column is the struct of the columns the first file
does not have (compared with the scan's JSON object, file key left out).

Bad records: ``skip`` and ``reject`` are Spark's ``DROPMALFORMED`` and
DuckDB's ``ignore_errors`` (which keeps a malformed json line as a row of
nulls, dropped here by its null ``id``: a good record always has one);
``null`` is Spark's ``PERMISSIVE`` and DuckDB's ``ignore_errors`` (json) or
``null_padding`` (csv short rows). Under ``fail`` the references read as
under ``skip``, and whether the query must fail is decided from where the
bad records are (``queries.needs_bad_file``): Spark's ``FAILFAST`` and
DuckDB both count rows without judging them, so neither fails where it
should. A file in UTF-16 is read by neither: a query of the scan that reads it must fail.
Where no file is left to read (all in UTF-16), the DuckDB view has no rows; where no file
gives DuckDB a headerless field (an empty file is one column to it), the field is null.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import duckdb
from pyspark.sql import SparkSession

from tests.scan_differential.datasets import (
    DATA_COLUMNS,
    GHOST,
    RESCUED,
    DataFile,
    DataSet,
    canonical,
    fold,
)

SPARK_MODES = {
    "fail": "DROPMALFORMED",
    "skip": "DROPMALFORMED",
    "reject": "DROPMALFORMED",
    "null": "PERMISSIVE",
}
QUOTES = {"spark": "`", "duckdb": '"'}
_ELEMENT = re.compile(r"columns\[(\d+)\]")


class Reference(Protocol):
    name: str
    quote: str
    view: str

    def run(self, sql: str) -> list[tuple[Any, ...]]: ...


def spark_supports(data_set: DataSet) -> bool:
    edges = (
        data_set.rescue
        or data_set.headerless
        or any(f.spellings or f.respelled or f.mark or f.clash_ids() for f in data_set.files)
        or any(bad.kind == "twin" for f in data_set.files for bad in f.bad)
    )
    if edges:
        return False
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


def _dir(column: str, data_set: DataSet) -> int | None:
    """``n`` for a ``dirN`` the scan derives from folders (not a column of the data)."""
    match = re.fullmatch(r"dir(\d+)", fold(column))
    if match is None or data_set.partitioning != "dirs" or fold(column) in data_set.data_columns():
        return None
    return int(match.group(1))


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
        present = {fold(c): c for c in frame.columns}
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
            index = _dir(column, data_set)
            if fold(column) in present:
                expressions.append(f"`{present[fold(column)]}` AS `{column}`")
            elif fold(column) in data_set.data_columns():
                expressions.append(f"CAST(NULL AS STRING) AS `{column}`")
            elif index is not None:
                parts = f"split({path}, '/')"
                expressions.append(
                    f"CASE WHEN size({parts}) > {index + 1} THEN element_at({parts}, {index + 1}) "
                    f"END AS `{column}`"
                )
            else:
                expression = derived.get(fold(column), "CAST(NULL AS STRING)")
                expressions.append(f"{expression} AS `{column}`")
        selected = frame.selectExpr(*expressions) if expressions else frame.select()
        selected.createOrReplaceTempView(self.view)

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._spark.sql(sql).collect()]

    def drop(self) -> None:
        self._spark.catalog.dropTempView(self.view)


class DuckDBReference:
    """A DuckDB view over ``read_json`` / ``read_csv`` / ``read_parquet`` of the files."""

    name = "duckdb"
    quote = '"'

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        planned: DataSet,
        root: Path,
        files: Sequence[DataFile],
    ) -> None:
        self._connection = connection
        self.view = f"ref_{uuid.uuid4().hex[:12]}"
        readable = [f for f in files if f.mark != "utf-16"]
        self._planned = planned
        self._files = readable
        paths = [root / f.relative(planned) for f in readable]
        listed = "[" + ", ".join(f"'{p}'" for p in paths) + "]"
        source = self._source(listed) if paths else "(SELECT '' AS _path WHERE false)"
        described = connection.sql(f"SELECT * FROM {source} LIMIT 0").columns
        self._described = set(described)
        self._variants: dict[str, list[str]] = {}
        for name in described:
            if name != "_path":
                self._variants.setdefault(canonical(name), []).append(name)
        relative = f"substr(_path, {len(str(root)) + 2})"
        derived = {
            "filename": "regexp_extract(_path, '[^/]*$')",
            "fqn": "_path",
            "filepath": "regexp_replace(_path, '/[^/]*$', '')",
            "suffix": "regexp_extract(_path, '[.]([^./]*)$', 1)",
        }
        expressions = []
        for column in planned.columns():
            index = _dir(column, planned)
            data = self._data(column)
            if data is not None:
                expressions.append(f'{data} AS "{column}"')
            elif index is not None:
                parts = f"string_split({relative}, '/')"
                expressions.append(
                    f'CASE WHEN len({parts}) > {index + 1} THEN {parts}[{index + 1}] END AS "{column}"'
                )
            else:
                expression = derived.get(fold(column), "CAST(NULL AS VARCHAR)")
                expressions.append(f'{expression} AS "{column}"')
        listed_columns = ", ".join(expressions) or "1 AS _row"
        connection.execute(
            f"CREATE VIEW {self.view} AS SELECT {listed_columns} FROM {source}{self._kept()}"
        )

    def _source(self, listed: str) -> str:
        planned = self._planned
        hive = "true" if planned.partitioning == "hive" else "false"
        common = f"union_by_name = true, hive_partitioning = {hive}, filename = '_path'"
        malformed = any(b.kind != "twin" for f in self._files for b in f.bad)
        if planned.format == "json":
            layout = {"lines": "newline_delimited", "array": "array", "documents": "unstructured"}
            errors = ", ignore_errors = true" if malformed else ""
            return f"read_json({listed}, format = '{layout[planned.layout]}', {common}{errors})"
        if planned.format == "csv":
            nulls = "" if planned.empty_is_null else ", nullstr = '\x01'"
            errors = ""
            if malformed:
                errors = (
                    ", null_padding = true" if planned.on_error == "null" else ", ignore_errors = true"
                )
            header = "false" if planned.headerless else "true"
            return (
                f"read_csv({listed}, header = {header}, all_varchar = true, delim = ',', "
                f"quote = '\"', escape = '\"', {common}{nulls}{errors})"
            )
        return f"read_parquet({listed}, {common})"

    def _twins(self) -> list[int]:
        if not self._planned.decodes("name"):
            return []
        return [b.id for f in self._files for b in f.bad if b.kind == "twin"]

    def _clashes(self) -> list[int]:
        if not self._planned.decodes("qty") or self._planned.rescue:
            return []
        return [row_id for f in self._files for row_id in f.clash_ids()]

    def _kept(self) -> str:
        """The WHERE clause of the rows the scan keeps (all, under ``null``)."""
        if self._planned.on_error == "null":
            return ""
        conditions = []
        row_id = self._value("id") or '"id"'
        if self._planned.format == "json" and any(b.kind != "twin" for f in self._files for b in f.bad):
            conditions.append(f"{row_id} IS NOT NULL")
        dropped = self._twins() + self._clashes()
        if dropped:
            conditions.append(f'{row_id} NOT IN ({", ".join(map(str, dropped))})')
        return f" WHERE {' AND '.join(conditions)}" if conditions else ""

    def _value(self, column: str, cast: str | None = None) -> str | None:
        """One data column of the files, its spellings made one, each cast to ``cast`` first
        (``coalesce`` refuses to mix a number and text); None when no file has it."""
        variants = self._variants.get(column)
        if not variants:
            return None
        quoted = [f'"{name}"' if cast is None else f'TRY_CAST("{name}" AS {cast})' for name in variants]
        return quoted[0] if len(quoted) == 1 else f"coalesce({', '.join(quoted)})"

    def _data(self, column: str) -> str | None:
        """The expression of an output column that is a column of the data or a hive key,
        else None."""
        planned = self._planned
        if planned.partitioning == "hive" and fold(column) in planned.partition_columns():
            return self._value(fold(column)) or "NULL"
        if planned.headerless:
            element = _ELEMENT.fullmatch(fold(column))
            width = len(planned.files[0].columns)
            if fold(column) == "columns":
                return "[" + ", ".join(self._field(i) for i in range(width)) + "]"
            if element is not None:
                return self._field(int(element.group(1)))
            return None
        if fold(column) == fold(RESCUED) and planned.rescue:
            return self._rescued()
        name = canonical(column)
        if name not in planned.data_columns():
            return None
        cast = None
        if name == "qty" and planned.format != "csv":
            if self._fractional():
                cast = "DOUBLE"
            elif self._clash_in_files():
                cast = "BIGINT"
        elif name == "tags":
            cast = "BIGINT[]"
        if planned.format == "json" and name not in ("tags", "id") and self._only_nulls(name):
            cast = "VARCHAR"
        value = self._value(name, cast)
        if value is None:
            return "NULL"
        if planned.on_error == "null":
            nulled = self._twins() if name == "name" else self._clashes() if name == "qty" else []
            if nulled:
                row_id = self._value("id") or '"id"'
                value = f'CASE WHEN {row_id} IN ({", ".join(map(str, nulled))}) THEN NULL ELSE {value} END'
        return value

    def _field(self, index: int) -> str:
        """Field ``index`` of a headerless record: null past the first record's width, and
        where no file gives DuckDB that many fields (an empty file is one column to it)."""
        width = len(self._planned.files[0].columns)
        name = f"column{index}"
        return f'"{name}"' if index < width and name in self._described else "CAST(NULL AS VARCHAR)"

    def _rescued(self) -> str:
        fixed = self._planned.fixed() or ()
        members = [
            f'"{name}" := {self._value(name)}'
            for name in self._variants
            if name not in fixed and name in DATA_COLUMNS
        ]
        return f"struct_pack({', '.join(members)})" if members else "CAST(NULL AS VARCHAR)"

    def _clash_in_files(self) -> bool:
        return any(f.clash_ids() for f in self._files)

    def _only_nulls(self, column: str) -> bool:
        """Whether the files the scan was planned on hold no value of ``column`` (json gives
        it no type then, and the scan reads it as text: a value of a file added since is
        its json text)."""
        return not any(
            row[f.columns.index(column)] is not None
            for f in self._planned.files
            if column in f.columns
            for row in f.rows
        )

    def _fractional(self) -> bool:
        """Whether the scan planned ``qty`` as a double (a file had a fraction then)."""
        return any(
            isinstance(row[f.columns.index("qty")], float)
            for f in self._planned.files
            if "qty" in f.columns
            for row in f.rows
        )

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._connection.sql(sql).fetchall()]

    def drop(self) -> None:
        self._connection.execute(f"DROP VIEW IF EXISTS {self.view}")
