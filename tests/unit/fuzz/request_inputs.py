"""Inputs for fuzzing request decoding: real requests built with the proto classes, and mutations.

Every seed is a request a stock client sends (or one carrying the gateway's
own relations); mutations flip, insert, delete, splice and cut their bytes,
so most inputs get past the first bytes a decoder reads.
"""

from __future__ import annotations

from google.protobuf.message import Message
from hypothesis import strategies as st
from pyspark.sql.connect import proto as spark_proto

from connect_plugin import proto

SESSION = "3d4a2c9e-1b7f-4c55-8a0e-5f6b7c8d9e0f"
REQUEST_TYPES: tuple[type[Message], ...] = (
    spark_proto.ExecutePlanRequest,
    spark_proto.AnalyzePlanRequest,
    spark_proto.ConfigRequest,
)


def _extension(message: Message) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.common.plan_id = 3
    relation.extension.Pack(message)
    return relation


def _scan() -> proto.Scan:
    scan = proto.Scan(session_id=SESSION, wildcard=True)
    scan.files.paths.append("/data/*.csv")
    return scan


def _count(child: spark_proto.Relation) -> spark_proto.Relation:
    """``df.count()`` as pyspark sends it: an ungrouped aggregate of ``count(1)``."""
    relation = spark_proto.Relation()
    aggregate = relation.aggregate
    aggregate.input.CopyFrom(child)
    aggregate.group_type = spark_proto.Aggregate.GroupType.GROUP_TYPE_GROUPBY
    expression = aggregate.aggregate_expressions.add()
    expression.unresolved_function.function_name = "count"
    expression.unresolved_function.arguments.add().literal.integer = 1
    return relation


def _execute(root: spark_proto.Relation) -> spark_proto.ExecutePlanRequest:
    request = spark_proto.ExecutePlanRequest(session_id=SESSION)
    request.user_context.user_id = "alice"
    request.plan.root.CopyFrom(root)
    return request


def _sql_command(text: str) -> spark_proto.ExecutePlanRequest:
    request = spark_proto.ExecutePlanRequest(session_id=SESSION)
    request.plan.command.sql_command.input.sql.query = text
    return request


def _with_columns(levels: int) -> spark_proto.Relation:
    relation = spark_proto.Relation()
    relation.range.end = 10
    for level in range(levels):
        outer = spark_proto.Relation()
        outer.with_columns.input.CopyFrom(relation)
        alias = outer.with_columns.aliases.add()
        alias.name.append(f"c{level}")
        alias.expr.unresolved_attribute.unparsed_identifier = "id"
        relation = outer
    return relation


def _read_into_create() -> spark_proto.ExecutePlanRequest:
    create = proto.CreateTempTableAsSelect(session_id=SESSION, name="t", format="parquet")
    create.input.CopyFrom(_extension(proto.ReadTempTable(session_id=SESSION, name="u")))
    return _execute(_extension(create))


def _analyze_schema() -> spark_proto.AnalyzePlanRequest:
    request = spark_proto.AnalyzePlanRequest(session_id=SESSION)
    request.schema.plan.root.CopyFrom(_count(_extension(_scan())))
    return request


def _config_set() -> spark_proto.ConfigRequest:
    request = spark_proto.ConfigRequest(session_id=SESSION)
    pair = request.operation.set.pairs.add()
    pair.key, pair.value = "spark.sql.sources.outputCommitterClass", "my.Committer"
    return request


def _drop_temp_view() -> spark_proto.ExecutePlanRequest:
    root = spark_proto.Relation()
    root.catalog.drop_temp_view.view_name = "t"
    return _execute(root)


SEEDS: tuple[tuple[type[Message], bytes], ...] = tuple(
    (type(message), message.SerializeToString())
    for message in (
        _execute(_count(_extension(_scan()))),
        _execute(_extension(proto.ListTempTables(session_id=SESSION))),
        _execute(_extension(proto.DropTempTable(session_id=SESSION, name="t", if_exists=True))),
        _read_into_create(),
        _execute(_with_columns(40)),
        _sql_command("CREATE TEMPORARY TABLE t AS SELECT 1 AS x"),
        _sql_command("DROP VIEW IF EXISTS t"),
        _drop_temp_view(),
        _analyze_schema(),
        _config_set(),
    )
)
"""Real requests: the decoder's type and the bytes a client sends."""


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few bytes flipped, inserted, deleted, repeated or cut off."""
    buffer = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("flip", "insert", "delete", "repeat", "cut")))
        at = draw(st.integers(0, max(len(buffer) - 1, 0)))
        if kind == "flip" and buffer:
            buffer[at] = draw(st.integers(0, 255))
        elif kind == "insert":
            buffer[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del buffer[at : at + draw(st.integers(1, 8))]
        elif kind == "repeat":
            end = at + draw(st.integers(1, 32))
            buffer[at:at] = buffer[at:end]
        else:
            del buffer[at:]
    return bytes(buffer)


def request_bytes() -> st.SearchStrategy[tuple[type[Message], bytes]]:
    """A decoder type with a mutated seed, a seed as it is, or bytes of no request at all."""
    seeded = st.sampled_from(SEEDS).flatmap(
        lambda seed: st.tuples(st.just(seed[0]), mutated(seed[1]))
    )
    raw = st.tuples(st.sampled_from(REQUEST_TYPES), st.binary(max_size=64))
    return st.one_of(seeded, st.sampled_from(SEEDS), raw)
