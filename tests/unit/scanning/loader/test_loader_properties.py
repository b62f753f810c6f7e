"""Property: whatever is saved comes out, in order, in batches that keep every limit."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect_plugin.scanning import ResultSetLoader
from tests.unit.scanning.loader.loader_checks import buffer_bytes

TEXT = st.text(max_size=4)
INT32 = st.integers(-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class Kind:
    arrow_type: pa.DataType
    values: st.SearchStrategy[Any]
    empty: Any = None

    @property
    def may_be_required(self) -> bool:
        return self.empty is not None


ITEM = pa.struct([("a", pa.int16()), ("b", pa.list_(pa.string()))])
KINDS = [
    Kind(pa.int64(), st.integers(-(2**63), 2**63 - 1), 0),
    Kind(pa.int8(), st.integers(-128, 127), 0),
    Kind(pa.float64(), st.floats(allow_nan=False)),
    Kind(pa.bool_(), st.booleans(), False),
    Kind(pa.string(), TEXT, ""),
    Kind(pa.binary(), st.binary(max_size=6)),
    Kind(pa.date32(), st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1))),
    Kind(pa.list_(pa.int32()), st.lists(INT32 | st.none(), max_size=2), []),
    Kind(pa.list_(pa.string()), st.lists(TEXT | st.none(), max_size=2)),
    Kind(
        pa.struct([("x", pa.int32()), ("s", pa.string())]),
        st.fixed_dictionaries({"x": INT32 | st.none(), "s": TEXT | st.none()}),
    ),
    Kind(
        pa.list_(ITEM),
        st.lists(
            st.fixed_dictionaries(
                {
                    "a": st.integers(-(2**15), 2**15 - 1),
                    "b": st.lists(TEXT, max_size=2) | st.none(),
                }
            ),
            max_size=2,
        ),
    ),
    Kind(
        pa.map_(pa.string(), pa.int64()),
        st.lists(st.tuples(TEXT, st.integers(-10, 10) | st.none()), max_size=2),
    ),
    Kind(
        pa.list_(pa.list_(pa.int8())),
        st.lists(st.lists(st.integers(-128, 127), max_size=2), max_size=2),
    ),
]


@dataclass
class Scenario:
    fields: list[pa.Field]
    initial: int
    projection: list[str] | None
    max_rows: int
    max_bytes: int
    ops: list[tuple[Any, ...]]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=7))
    fields = []
    for index, kind in enumerate(kinds):
        required = kind.may_be_required and draw(st.booleans())
        fields.append(pa.field(f"c{index}", kind.arrow_type, nullable=not required))
    initial = draw(st.integers(1, len(fields)))
    projection = draw(st.none() | st.lists(st.sampled_from([f.name.upper() for f in fields])))

    def row(width: int) -> dict[str, Any]:
        values = {}
        for field, kind in zip(fields[:width], kinds[:width], strict=True):
            if draw(st.booleans()):
                value = draw(kind.values if not field.nullable else kind.values | st.none())
                values[field.name] = value
        return values

    ops: list[tuple[Any, ...]] = []
    width = initial
    for _ in range(draw(st.integers(10, 60))):
        action = draw(st.sampled_from(["save", "save", "save", "drop", "bulk", "add"]))
        if action == "add":
            if width < len(fields):
                ops.append(("add", width))
                width += 1
        elif action == "bulk":
            rows = [row(width) for _ in range(draw(st.integers(0, 40)))]
            ops.append(("bulk", rows, draw(st.booleans())))
        else:
            ops.append((action, row(width)))
    return Scenario(
        fields,
        initial,
        projection,
        draw(st.sampled_from([65536, 4096, 1, 3]) | st.integers(1, 300)),
        draw(st.integers(900, 2000)),
        ops,
    )


def expected_value(field: pa.Field, values: dict[str, Any]) -> Any:
    if field.name in values:
        value = values[field.name]
        if isinstance(value, list) and pa.types.is_map(field.type):
            return [tuple(pair) for pair in value]
        return value
    if field.nullable:
        return None
    return next(kind.empty for kind in KINDS if kind.arrow_type == field.type)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_batches_hold_exactly_what_was_saved(scenario: Scenario) -> None:
    loader = ResultSetLoader(
        pa.schema(scenario.fields[: scenario.initial]),
        projection=scenario.projection,
        max_rows=scenario.max_rows,
        max_bytes=scenario.max_bytes,
    )
    writer = loader.writer
    saved: list[dict[str, Any]] = []
    batches: list[pa.RecordBatch] = []
    loader.start_batch()

    def next_batch() -> None:
        batches.append(loader.harvest())
        loader.start_batch()

    width = scenario.initial
    for op in scenario.ops:
        if op[0] == "add":
            writer.add_column(scenario.fields[op[1]])
            width += 1
        elif op[0] == "bulk":
            rows, as_tuples = op[1], op[2]
            names = [field.name for field in scenario.fields[:width]]
            if as_tuples:
                data: list[Any] = [
                    tuple(values.get(name, _omitted(scenario, name)) for name in names)
                    for values in rows
                ]
            else:
                data = [{name.upper(): value for name, value in values.items()} for values in rows]
            position = 0
            while position < len(data):
                if writer.is_full():
                    next_batch()
                position += writer.write_rows(data, position)
            saved.extend(
                {name: values.get(name, _omitted(scenario, name)) for name in names}
                if as_tuples
                else values
                for values in rows
            )
        else:
            if writer.is_full():
                next_batch()
            writer.start_row()
            for name, value in op[1].items():
                writer.column(name.upper()).set(value)
            if op[0] == "save":
                writer.save_row()
                saved.append(op[1])
    batches.append(loader.harvest())
    if loader.has_lookahead:
        loader.start_batch()
        batches.append(loader.harvest())

    projected = [
        field
        for field in scenario.fields[:width]
        if scenario.projection is None or field.name.upper() in scenario.projection
    ]
    position = 0
    last_version = 0
    for batch in batches:
        batch.validate(full=True)
        assert batch.num_rows <= scenario.max_rows
        assert buffer_bytes(batch) <= scenario.max_bytes
        assert list(batch.schema) == projected[: batch.num_columns]
        for offset, row in enumerate(batch.to_pylist()):
            values = saved[position + offset]
            assert row == {field.name: expected_value(field, values) for field in batch.schema}
            later = {f.name for f in projected[batch.num_columns :]}
            assert not later & values.keys(), "a value landed in a batch without its column"
        position += batch.num_rows
        assert loader.schema_version >= last_version
        last_version = loader.schema_version
    assert position == len(saved)
    assert loader.total_row_count == len(saved)


def _omitted(scenario: Scenario, name: str) -> Any:
    """The value a tuple row carries for a column the row leaves out."""
    field = next(field for field in scenario.fields if field.name == name)
    return None if field.nullable else expected_value(field, {})
