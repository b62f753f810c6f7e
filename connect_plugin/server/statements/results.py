"""The small result tables of plugin statements, as standard Spark relations.

A handled statement is replaced in the client's plan by a parameterized
``SELECT ... FROM VALUES`` relation, so Spark itself produces the rows and
the client's own request (operation id, reattach, release) runs as usual.
Values travel as named parameters, never spliced into the SQL text.

A statement that is the client's whole request may instead be answered by
the gateway, as Spark answers a command: with its rows in a
``LocalRelation`` (``local_relation``), which the client then reads back.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.server.model.spark_sql import literal, quote_identifier

CREATED_COLUMNS = (("table", "STRING"), ("rows_written", "BIGINT"))
STATUS_COLUMNS = (("ok", "BOOLEAN"), ("summary", "STRING"))
LIST_COLUMNS = (
    ("name", "STRING"),
    ("format", "STRING"),
    ("rows", "BIGINT"),
    ("bytes", "BIGINT"),
    ("created", "TIMESTAMP"),
)

Row = Sequence[str | int | bool | datetime.datetime | None]


def result_relation(columns: Sequence[tuple[str, str]], rows: Sequence[Row]) -> spark_proto.Relation:
    """A relation with exactly ``rows``, typed by ``columns`` (name, Spark SQL type)."""
    relation = spark_proto.Relation()
    width = len(columns)
    projection = ", ".join(
        f"CAST(c{i} AS {sql_type}) AS {quote_identifier(name)}"
        for i, (name, sql_type) in enumerate(columns)
    )
    aliases = ", ".join(f"c{i}" for i in range(width))
    if not rows:
        nulls = ", ".join("NULL" for _ in range(width))
        relation.sql.query = f"SELECT {projection} FROM VALUES ({nulls}) AS t({aliases}) WHERE FALSE"
        return relation
    tuples = []
    for r, row in enumerate(rows):
        markers = []
        for c, value in enumerate(row):
            if value is None:
                markers.append("NULL")
                continue
            key = f"v{r}_{c}"
            if isinstance(value, datetime.datetime):
                value = value.isoformat()
            relation.sql.named_arguments[key].CopyFrom(literal(value))
            markers.append(f":{key}")
        tuples.append("(" + ", ".join(markers) + ")")
    relation.sql.query = f"SELECT {projection} FROM VALUES {', '.join(tuples)} AS t({aliases})"
    return relation


_ARROW_TYPES = {
    "BIGINT": pa.int64(),
    "STRING": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}


def local_relation(columns: Sequence[tuple[str, str]], rows: Sequence[Row]) -> spark_proto.Relation:
    """The rows of ``result_relation(columns, rows)`` as Spark answers a command with its
    result: a ``LocalRelation`` holding them in Arrow's IPC stream format."""
    schema = pa.schema([(name, _ARROW_TYPES[sql_type]) for name, sql_type in columns])
    table = pa.Table.from_pylist(
        [dict(zip(schema.names, row, strict=True)) for row in rows],
        schema=schema,
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table)
    relation = spark_proto.Relation()
    relation.local_relation.data = sink.getvalue().to_pybytes()
    return relation


def refreshed(name: str) -> spark_proto.Relation:
    """``REFRESH TABLE name``: Spark's answer to an INSERT (no columns, no rows), and the
    table's file listing brought up to date."""
    relation = spark_proto.Relation()
    relation.sql.query = f"REFRESH TABLE {quote_identifier(name)}"
    return relation


def inserted() -> spark_proto.Relation:
    """Spark's answer to an INSERT, as the gateway gives it for one it ran: no columns, no
    rows."""
    return local_relation((), ())


def created(table: str, rows_written: int) -> spark_proto.Relation:
    return result_relation(CREATED_COLUMNS, [(table, rows_written)])


def status(ok: bool, summary: str) -> spark_proto.Relation:
    return result_relation(STATUS_COLUMNS, [(ok, summary)])
