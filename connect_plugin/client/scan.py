"""``connect_plugin.scan``: schema-on-read file scans as Spark Connect DataFrames.

The DataFrame's plan is one plugin ``Scan`` relation; the gateway turns it
into a read of the scan data source running inside Spark.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from google.protobuf.message import Message
from pyspark.sql.connect.dataframe import DataFrame
from pyspark.sql.connect.types import pyspark_types_to_proto_types
from pyspark.sql.pandas.types import from_arrow_schema

from connect_plugin import proto
from connect_plugin.client.plan import PluginRelation, session_id_of
from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import SCAN_OPTIONS, Format, ScanOptions

if TYPE_CHECKING:
    from pyspark.sql.connect.client import SparkConnectClient

class ScanRelation(PluginRelation):
    """The plugin ``Scan`` relation, stamped with the sending session."""

    def __init__(self, message: proto.Scan) -> None:
        super().__init__()
        self._message = message

    def to_plugin_message(self, client: SparkConnectClient) -> Message:
        message = proto.Scan()
        message.CopyFrom(self._message)
        message.session_id = session_id_of(client)
        return message


def scan(
    spark: Any,
    paths: str | Sequence[str] | None = None,
    *,
    table: str | None = None,
    format: str | None = None,
    columns: Sequence[str] | None = None,
    schema: str | pa.Schema | None = None,
    strict: bool = False,
    evolution: str | None = None,
    rescued_column: str | None = None,
    partitioning: str = "dirs",
    on_error: str = "fail",
    rejects_table: str | None = None,
    compression: str = "auto",
    missing_columns: str = "null",
    max_rows: int | None = None,
    max_bytes: int | None = None,
    sample_bytes: int | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Scan files, schema on read, as a Spark Connect DataFrame.

    The files are listed, sampled and read inside Spark (the gateway turns
    the scan into a read of the plugin's Python data source), so paths are
    paths of the Spark server's file system or object-store URLs.

    Args:
        spark: A Spark Connect session opened through the connect-plugin gateway.
        paths: A file, a directory (read recursively, skipping names that
            start with ``.`` or ``_``), a glob (``/data/2024/*/*.json``), an
            object-store URL (``s3://bucket/prefix``), or a list of these.
        table: Instead of ``paths``: a temporary table of the session, else
            a catalog table stored as files; its format and schema are used.
        format: ``json`` (objects one per line, in a top-level array, or one
            after another, pretty-printed or not: see ``json_format``;
            ``ndjson`` is another name for it), ``csv``, ``tsv``,
            ``parquet`` or ``text``; required with ``paths``.
        columns: The projection: table columns (matched without case),
            nested members (``m.a``), list elements (``columns[2]``), implicit
            file columns (``filename``, ``filepath``, ``fqn``, ``suffix``),
            partition columns (``dir0``, ...), and ``*``. ``None`` means
            every column, ``[]`` none (row counts only).
        schema: The provided schema, as DDL (``"a BIGINT, b STRING"``) or a
            ``pyarrow.Schema``; its columns come first with its types.
        strict: Shorthand for ``evolution="none"``.
        evolution: What columns outside the schema do: ``add_new_columns``
            (the default: every file's columns join), ``fail_on_new_columns``
            (an error naming the file and its new columns), ``rescue`` (the
            schema or first file fixes the columns, the rest goes to the
            rescued-data column) or ``none`` (the rest is ignored).
        rescued_column: Name of a string column that keeps, as a JSON object
            naming the file, the values that did not fit their column's type
            and the fields the schema does not keep (``_rescued_data`` by
            default with ``evolution="rescue"``).
        partitioning: ``dirs`` for Drill's positional ``dir0``, ``dir1``, ...
            columns, ``hive`` for typed ``key=value`` directory columns.
        on_error: What a record that cannot be read does: ``fail`` the query,
            ``skip`` the record, keep it with the bad values ``null``, or
            ``reject`` it: skip it and keep it in the rejects table.
        rejects_table: With ``on_error="reject"``, the temp table of the
            session that holds the rejected records (file, line,
            byte_offset, column_name, error_type, error_message,
            raw_record); ``reject_errors`` by default, as in DuckDB. Each
            action refills it; another scan naming it replaces it.
        compression: ``auto`` (by extension: ``.gz``, ``.bz2``, ``.zst``),
            ``none``, ``gzip``, ``bzip2`` or ``zstd``; for json, csv, tsv and text.
        missing_columns: What a column named in ``columns`` that no file
            has and ``schema`` does not name gives: ``null`` (a string column
            of nulls, as in Drill) or ``error`` (the scan fails, naming it
            and the columns there are: a typo shows at once).
        max_rows: Rows per Arrow batch at most (1 to 65536; 4096 by default).
        max_bytes: Arrow buffer bytes per batch at most (16 MiB by default).
        sample_bytes: Bytes read from the start of each json, csv, tsv and
            text file to learn its columns (256 KiB by default).
        options: Reader options (``json_format``: ``auto``, ``lines``,
            ``array`` or ``documents`` for json; ``header``, ``delimiter``,
            ``quote``, ``escape``, ``nullValue``, ``multiLine`` for csv/tsv)
            and object-store options
            (``s3.endpoint``, ``s3.region``, ``s3.access_key``,
            ``s3.secret_key``, ``s3.session_token``), as text.

    Returns:
        A DataFrame whose plan is one scan relation; nothing is read before
        an action. Its columns are those of its first plan (its first
        action or schema): every later query of it keeps them and reads
        the files there are then.

    Raises:
        ValueError: Both or neither of ``paths`` and ``table`` are given,
            ``format`` is missing for ``paths``, a choice is not one of its
            words, or a number is not a whole number.
        TypeError: ``schema`` is neither DDL text nor a ``pyarrow.Schema``.

    Errors found in Spark (a path that matches nothing, a type conflict, a
    bad record with ``on_error="fail"``, new columns with
    ``evolution="fail_on_new_columns"``) surface on the action, naming the
    file, line and column.
    """
    arguments = dict(locals())
    if (paths is None) == (table is None):
        raise ValueError("scan() needs either paths or table=, not both")
    if table is None and not format:
        raise ValueError(f"scan() over paths needs format= ({Format.either()})")
    keywords = {option.name: arguments[option.name] for option in SCAN_OPTIONS}
    if isinstance(schema, pa.Schema):
        keywords["schema"] = pyspark_types_to_proto_types(from_arrow_schema(schema))
    elif schema is not None and not isinstance(schema, str):
        raise TypeError(
            f"schema must be a DDL string or a pyarrow.Schema, got {type(schema).__name__}"
        )
    try:
        request = ScanOptions.from_keywords(keywords, options)
    except InvalidScanSpec as exc:
        raise ValueError(str(exc)) from None
    message = proto.Scan()
    request.to_message(message)
    message.call_id = uuid.uuid4().hex
    return DataFrame(ScanRelation(message), spark)
