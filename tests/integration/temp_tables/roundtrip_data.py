"""Random tables for the round-trip property: schemas, rows, exact values, what to expect.

Schemas use every type the Python client can send as data (its Arrow path
refuses char/varchar, year-month and calendar intervals, and TIME or
day-time intervals of other precisions), nested to depth 3, every field
nullable. Time values come as often from their edges (around the epoch,
UTC or local, and the ends of their range) as from anywhere. Values are
compared exactly: floats by their bits, timestamps as microseconds since the
epoch, variants by what they hold and its types.

``expected_refusal`` says, from the values themselves and independently of
the gateway's code, which tables a format must refuse: it is the property's
second half (what is accepted reads back exactly, what is refused is refused).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import struct
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
    VariantType,
    VariantVal,
)

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = datetime.timedelta(microseconds=1)
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
ZONES = (
    "UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati", "Europe/Berlin",
    "America/St_Johns", "Australia/Lord_Howe",
)  # fmt: skip
NAMES = ("a", "B", "c d", "ü", "x.y", "e_1", "col-2", "Ünïcode", "$", "q`t")
MAX_INTERVAL_DAYS = 106_751_990
MAX_DIGITS = 80
"""Enough for any Spark decimal, which Python's default context (28 digits) would round."""
ORC_SKIPPED = (datetime.date(1582, 10, 5), datetime.date(1582, 10, 14))
ORC_SKIPPED_INSTANTS = (
    datetime.datetime(1582, 10, 4, tzinfo=UTC),
    datetime.datetime(1582, 10, 16, tzinfo=UTC),
)
ORC_LATE_SECOND = (EPOCH - 999_000 * MICROSECOND, EPOCH)
"""Instants orc reads back one second later: 1969-12-31 23:59:59.001 up to the epoch."""
ZEROS = st.sampled_from([-0.0, 0.0])
"""Zeros of both signs, drawn often enough to meet in one column: orc's reader read a 0.0
written after a -0.0 back as -0.0 (issue 45)."""

_ATOMIC: list[DataType] = [
    NullType(), BooleanType(), ByteType(), ShortType(), IntegerType(), LongType(), FloatType(),
    DoubleType(), StringType(), BinaryType(), DateType(), TimestampType(), TimestampNTZType(),
    DayTimeIntervalType(), TimeType(6), VariantType(),
]  # fmt: skip
_TIMES: list[DataType] = [
    DateType(), TimestampType(), TimestampNTZType(), TimeType(6), DayTimeIntervalType(),
]  # fmt: skip
_KEYS: list[DataType] = [
    BooleanType(), ByteType(), IntegerType(), LongType(), DoubleType(), StringType(),
    DateType(), TimestampType(), TimestampNTZType(),
]  # fmt: skip
PARTITION_TYPES: list[DataType] = [
    BooleanType(), IntegerType(), LongType(), DoubleType(), StringType(), DateType(),
    TimestampType(), TimestampNTZType(), DecimalType(12, 3),
]  # fmt: skip


def decimal_types() -> st.SearchStrategy[DataType]:
    return st.integers(1, 38).flatmap(
        lambda p: st.integers(0, p).map(lambda s: DecimalType(p, s))
    )


def atomic_types(*, nested: bool = False) -> st.SearchStrategy[DataType]:
    """Flat types, time types a third of the time (their edges are where formats went
    wrong); no void inside arrays, maps or structs, which pyspark's own ``toArrow`` cannot
    convert (a client limit, not the gateway's)."""
    flat = [t for t in _ATOMIC if not (nested and isinstance(t, NullType))]
    return st.one_of(st.sampled_from(flat), decimal_types(), st.sampled_from(_TIMES))


def field_names(count: int) -> st.SearchStrategy[list[str]]:
    """``count`` names, distinct ignoring case (Spark refuses duplicates in files)."""
    names = st.one_of(st.sampled_from(NAMES), st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True))
    return st.lists(names, min_size=count, max_size=count, unique_by=str.lower)


def struct_types(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[DataType]:
    return st.lists(children, min_size=1, max_size=3).flatmap(
        lambda types: field_names(len(types)).map(
            lambda names: StructType([StructField(n, t) for n, t in zip(names, types, strict=True)])
        )
    )


def data_types(depth: int = 3, *, nested: bool = False) -> st.SearchStrategy[DataType]:
    """Any sendable type with at most ``depth`` levels of arrays, maps and structs."""
    if depth == 0:
        return atomic_types(nested=nested)
    inner = data_types(depth - 1, nested=True)
    return st.one_of(
        atomic_types(nested=nested),
        inner.map(ArrayType),
        st.tuples(st.sampled_from(_KEYS), inner).map(lambda kv: MapType(kv[0], kv[1])),
        struct_types(inner),
    )


def _json_values() -> st.SearchStrategy[Any]:
    flat = st.one_of(
        st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
    )  # fmt: skip
    return st.recursive(
        flat,
        lambda kids: st.one_of(
            st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=4), kids, max_size=3)
        ),
        max_leaves=6,
    )


def _variants() -> st.SearchStrategy[VariantVal]:
    return _json_values().map(lambda v: VariantVal.parseJson(json.dumps(v)))


FIRST_INSTANT = datetime.datetime(1, 1, 2, tzinfo=UTC)
LAST_INSTANT = datetime.datetime(9999, 12, 30, tzinfo=UTC)
"""The instants the client sends in any session time zone (a day from Python's ends)."""
NEAR_EPOCH = (
    -1_000_001, -1_000_000, -999_999, -999_001, -999_000, -500_000, -1000, -999, -1, 0, 1,
    999, 999_999, 1_000_000,
)  # fmt: skip
"""Microseconds from an epoch where formats have gone wrong: orc reads an instant from
-999000 to -1 back a second late (its reader rounds the seconds toward zero)."""


def _near(origin: datetime.datetime) -> st.SearchStrategy[datetime.datetime]:
    """Instants (or local times) within two seconds of ``origin``, its edges most of all."""
    micros = st.one_of(st.sampled_from(NEAR_EPOCH), st.integers(-2_000_000, 2_000_000))
    return micros.map(lambda us: origin + us * MICROSECOND)


def _timestamps() -> st.SearchStrategy[datetime.datetime]:
    """Any instant, or one at an edge: around the epoch (UTC, where orc goes wrong, or in a
    zone of ``ZONES``) and at the ends of the range, each as often."""
    anywhere = st.datetimes(
        min_value=FIRST_INSTANT.replace(tzinfo=None), max_value=LAST_INSTANT.replace(tzinfo=None)
    ).map(lambda d: d.replace(tzinfo=UTC))
    local_epochs = [EPOCH.replace(tzinfo=zoneinfo.ZoneInfo(z)) for z in ZONES]
    return st.one_of(
        anywhere,
        _near(EPOCH),
        st.sampled_from(local_epochs).flatmap(_near).map(lambda d: d.astimezone(UTC)),
        st.sampled_from([FIRST_INSTANT, LAST_INSTANT]),
    )


def _local_times() -> st.SearchStrategy[datetime.datetime]:
    """Any TIMESTAMP_NTZ, or one around 1970-01-01 00:00:00 or at an end of the range."""
    edges = st.one_of(
        _near(EPOCH.replace(tzinfo=None)),
        st.sampled_from([datetime.datetime.min, datetime.datetime.max]),
    )
    return st.one_of(st.datetimes(), edges)


def _dates() -> st.SearchStrategy[datetime.date]:
    """Any date, or one around 1970-01-01, the calendar switch or an end of the range."""
    epoch = datetime.date(1970, 1, 1)
    edges = st.one_of(
        st.integers(-2, 2).map(lambda n: epoch + datetime.timedelta(days=n)),
        st.sampled_from(
            [datetime.date.min, datetime.date.max, datetime.date(1582, 10, 4),
             datetime.date(1582, 10, 15), *ORC_SKIPPED]
        ),
    )  # fmt: skip
    return st.one_of(st.dates(), edges)


def _decimals(data_type: DecimalType) -> st.SearchStrategy[decimal.Decimal]:
    """Every decimal of the type, built from its unscaled digits: hypothesis's own decimals
    round their bounds to Python's default 28 digits."""
    most = 10**data_type.precision - 1
    return st.integers(-most, most).map(lambda u: decimal.Decimal(f"{u}E-{data_type.scale}"))


def values(data_type: DataType, *, nullable: bool = True) -> st.SearchStrategy[Any]:
    """Values the client sends for ``data_type`` (None among them when ``nullable``)."""
    found = _non_null(data_type)
    return st.one_of(st.none(), found) if nullable else found


def _non_null(data_type: DataType) -> st.SearchStrategy[Any]:
    if isinstance(data_type, NullType):
        return st.none()
    if isinstance(data_type, BooleanType):
        return st.booleans()
    if isinstance(data_type, (ByteType, ShortType, IntegerType, LongType)):
        bits = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}[type(data_type)]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if isinstance(data_type, FloatType):
        return st.one_of(st.floats(width=32), ZEROS)
    if isinstance(data_type, DoubleType):
        return st.one_of(st.floats(), ZEROS)
    if isinstance(data_type, DecimalType):
        return _decimals(data_type)
    if isinstance(data_type, StringType):
        return st.text(max_size=12)
    if isinstance(data_type, BinaryType):
        return st.binary(max_size=8)
    if isinstance(data_type, DateType):
        return _dates()
    if isinstance(data_type, TimestampType):
        return _timestamps()
    if isinstance(data_type, TimestampNTZType):
        return _local_times()
    if isinstance(data_type, DayTimeIntervalType):
        limit = datetime.timedelta(days=MAX_INTERVAL_DAYS)
        edges = st.sampled_from([-limit, -MICROSECOND, datetime.timedelta(0), MICROSECOND, limit])
        return st.one_of(st.timedeltas(min_value=-limit, max_value=limit), edges)
    if isinstance(data_type, TimeType):
        edges = st.sampled_from(
            [datetime.time(0), datetime.time(0, 0, 0, 1), datetime.time(23, 59, 59, 999_999)]
        )
        return st.one_of(st.times(), edges)
    if isinstance(data_type, VariantType):
        return _variants()
    if isinstance(data_type, ArrayType):
        return st.lists(values(data_type.elementType), max_size=3)
    if isinstance(data_type, MapType):
        keys = _non_null(data_type.keyType).filter(lambda k: not (isinstance(k, float) and k != k))
        return st.dictionaries(keys, values(data_type.valueType), max_size=3)
    if isinstance(data_type, StructType):
        return st.tuples(*(values(f.dataType) for f in data_type.fields))
    raise AssertionError(f"no values for {data_type}")


TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
DATETIME_REBASE = "spark.sql.parquet.datetimeRebaseModeInWrite"
INT96_REBASE = "spark.sql.parquet.int96RebaseModeInWrite"
WRITE_SETTINGS: tuple[tuple[tuple[str, str], ...], ...] = (
    ((TIMESTAMP_TYPE, "TIMESTAMP_MILLIS"),),
    ((TIMESTAMP_TYPE, "INT96"),),
    ((DATETIME_REBASE, "LEGACY"),),
    ((INT96_REBASE, "LEGACY"),),
    (("spark.sql.parquet.writeLegacyFormat", "true"),),
)
"""Session settings that change how Spark writes parquet (issue 45), as a client sets them
with ``spark.conf.set`` before it writes a table."""


@dataclass(frozen=True)
class Table:
    """A random table: an ``id`` column, the data columns, maybe a partition column, and the
    session settings it is written with."""

    schema: StructType
    rows: list[tuple[Any, ...]]
    partition: str | None
    zone: str
    settings: tuple[tuple[str, str], ...] = ()


@st.composite
def tables(draw: st.DrawFn) -> Table:
    count = draw(st.integers(1, 4))
    # Half the tables are flat, so that csv (which holds only flat columns) is tried often.
    kinds = atomic_types() if draw(st.booleans()) else data_types()
    types = draw(st.lists(kinds, min_size=count, max_size=count))
    names = draw(field_names(count + 1).filter(lambda ns: "id" not in (n.lower() for n in ns)))
    fields = [StructField("id", LongType(), False)]
    fields += [StructField(n, t) for n, t in zip(names[:count], types, strict=True)]
    partition = None
    if draw(st.booleans()):
        partition = names[count]
        fields.append(StructField(partition, draw(st.sampled_from(PARTITION_TYPES))))
    schema = StructType(fields)
    row_values = st.tuples(*(values(f.dataType) for f in fields[1:]))
    data = draw(st.lists(row_values, max_size=6))
    rows = [(i, *row) for i, row in enumerate(data)]
    zone = draw(st.sampled_from(ZONES))
    settings = draw(st.sampled_from(WRITE_SETTINGS)) if draw(st.booleans()) else ()
    return Table(schema, rows, partition, zone, settings)


def expected_refusal(fmt: str, table: Table) -> tuple[str, str] | None:
    """(column, reason) of the first column ``fmt`` must refuse in ``table``, else None."""
    data = [f for f in table.schema.fields if f.name != table.partition]
    for field in data:
        reason = _type_refused(fmt, field.dataType, field.name)
        if reason:
            return field.name, reason
    refused = settings_refusal(fmt, table, by_spark=False)
    if refused is not None:
        return refused
    at = {f.name: i for i, f in enumerate(table.schema.fields)}
    for field in data:
        column = [row[at[field.name]] for row in table.rows]
        if fmt == "orc" and zeros_of_both_signs(column, field.dataType):
            return field.name, "orc zeros of both signs"
    for field in table.schema.fields:
        column = [row[at[field.name]] for row in table.rows]
        if field.name == table.partition:
            if any(v in ("", DEFAULT_PARTITION) or "\x00" in str(v) for v in column):
                return field.name, "partition value"
        elif fmt == "orc" and any(_orc_moves(v, field.dataType) for v in column):
            return field.name, "orc calendar"
    return None


def settings_refusal(fmt: str, table: Table, *, by_spark: bool) -> tuple[str, str] | None:
    """(column, setting) of the data column whose dates or timestamps the session's settings
    would change in a parquet write, else None. ``by_spark``: Spark writes it (an INSERT),
    with the session's timestamp type; the gateway writes microseconds."""
    if fmt != "parquet":
        return None
    said = dict(table.settings)
    written_as = said.get(TIMESTAMP_TYPE, "INT96") if by_spark else "TIMESTAMP_MICROS"
    data = [f for f in table.schema.fields if f.name != table.partition]
    dates = [f.name for f in data if _holds(f.dataType, DateType)]
    timestamps = [f.name for f in data if _holds(f.dataType, TimestampType)]
    if written_as == "TIMESTAMP_MILLIS" and timestamps:
        return timestamps[0], TIMESTAMP_TYPE
    if said.get(DATETIME_REBASE) == "LEGACY" and dates:
        return dates[0], DATETIME_REBASE
    if said.get(DATETIME_REBASE) == "LEGACY" and written_as != "INT96" and timestamps:
        return timestamps[0], DATETIME_REBASE
    if said.get(INT96_REBASE) == "LEGACY" and written_as == "INT96" and timestamps:
        return timestamps[0], INT96_REBASE
    return None


def _holds(data_type: DataType, kind: type[DataType]) -> bool:
    return isinstance(data_type, kind) or any(
        _holds(child, kind) for child, _ in _children(data_type)
    )


def _type_refused(fmt: str, data_type: DataType, name: str) -> str | None:
    if fmt == "orc" and "`" in name:
        return "a backtick in a name"
    if isinstance(data_type, (ArrayType, MapType, StructType)) and fmt == "csv":
        return "nested"
    if isinstance(data_type, MapType) and fmt == "orc":
        return "map order"
    if isinstance(data_type, MapType) and fmt == "json" and not isinstance(
        data_type.keyType, StringType
    ):
        return "map keys"
    if isinstance(data_type, VariantType) and fmt != "parquet":
        return "variant"
    if isinstance(data_type, NullType) and fmt in ("orc", "csv"):
        return "void"
    if isinstance(data_type, BinaryType) and fmt == "csv":
        return "binary"
    for child, child_name in _children(data_type):
        reason = _type_refused(fmt, child, child_name)
        if reason:
            return reason
    return None


def _children(data_type: DataType) -> list[tuple[DataType, str]]:
    if isinstance(data_type, ArrayType):
        return [(data_type.elementType, "")]
    if isinstance(data_type, MapType):
        return [(data_type.keyType, ""), (data_type.valueType, "")]
    if isinstance(data_type, StructType):
        return [(f.dataType, f.name) for f in data_type.fields]
    return []


def has_variant(data_type: DataType) -> bool:
    return isinstance(data_type, VariantType) or any(
        has_variant(child) for child, _ in _children(data_type)
    )


def _orc_moves(value: Any, data_type: DataType) -> bool:
    """Whether ``value`` holds a date or timestamp orc would move (or one near enough), or
    one it reads back a second late."""
    if value is None:
        return False
    if isinstance(data_type, DateType):
        return bool(ORC_SKIPPED[0] <= value <= ORC_SKIPPED[1])
    if isinstance(data_type, TimestampType):
        return bool(
            ORC_SKIPPED_INSTANTS[0] <= value < ORC_SKIPPED_INSTANTS[1]
            or ORC_LATE_SECOND[0] <= value < ORC_LATE_SECOND[1]
        )
    if isinstance(data_type, ArrayType):
        return any(_orc_moves(v, data_type.elementType) for v in value)
    if isinstance(data_type, MapType):
        return any(_orc_moves(k, data_type.keyType) for k in value) or any(
            _orc_moves(v, data_type.valueType) for v in value.values()
        )
    if isinstance(data_type, StructType):
        return any(_orc_moves(v, f.dataType) for v, f in zip(value, data_type.fields, strict=True))
    return False


def zeros_of_both_signs(column: Sequence[Any], data_type: DataType) -> bool:
    """Whether one float or double place of a column (a struct's field, an array's elements,
    a map's keys or values: orc stores each apart) holds both a -0.0 and a 0.0 in ``column``'s
    values, which the gateway refuses before writing them to orc: its reader may read such
    zeros back with one sign."""
    signs: dict[tuple[str, ...], set[bool]] = {}
    for value in column:
        _zero_signs(value, data_type, (), signs)
    return any(len(found) == 2 for found in signs.values())


def _zero_signs(
    value: Any, data_type: DataType, place: tuple[str, ...], signs: dict[tuple[str, ...], set[bool]]
) -> None:
    if value is None:
        return
    if isinstance(data_type, (FloatType, DoubleType)):
        if value == 0:
            signs.setdefault(place, set()).add(math.copysign(1.0, value) < 0)
    elif isinstance(data_type, ArrayType):
        for element in value:
            _zero_signs(element, data_type.elementType, (*place, "[]"), signs)
    elif isinstance(data_type, MapType):
        for key, item in value.items():
            _zero_signs(key, data_type.keyType, (*place, "key"), signs)
            _zero_signs(item, data_type.valueType, (*place, "value"), signs)
    elif isinstance(data_type, StructType):
        for item, field in zip(value, data_type.fields, strict=True):
            _zero_signs(item, field.dataType, (*place, field.name), signs)


def exact(value: Any, data_type: DataType) -> Any:
    """An Arrow (``to_pylist``) value as something that compares equal only when exact."""
    if value is None:
        return None
    if isinstance(data_type, FloatType):
        return ("f32", struct.pack(">f", value)) if not math.isnan(value) else "NaN"
    if isinstance(data_type, DoubleType):
        return ("f64", struct.pack(">d", value)) if not math.isnan(value) else "NaN"
    if isinstance(data_type, DecimalType):
        with decimal.localcontext(decimal.Context(prec=MAX_DIGITS)):
            return format(value.quantize(decimal.Decimal(f"1E-{data_type.scale}")), "f")
    if isinstance(data_type, TimestampType):
        return (value - EPOCH) // MICROSECOND
    if isinstance(data_type, VariantType):
        return _typed(VariantVal(value["value"], value["metadata"]).toPython())
    if isinstance(data_type, ArrayType):
        return [exact(v, data_type.elementType) for v in value]
    if isinstance(data_type, MapType):
        return [(exact(k, data_type.keyType), exact(v, data_type.valueType)) for k, v in value]
    if isinstance(data_type, StructType):
        return [exact(value[f.name], f.dataType) for f in data_type.fields]
    return value


def _typed(value: Any) -> Any:
    """A variant's Python value with the type of every leaf (so 1, 1.0 and 1.00 differ)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    return (type(value).__name__, str(value))


def exact_rows(rows: Sequence[dict[str, Any]], schema: StructType) -> list[list[Any]]:
    """Arrow rows (dicts) as exact values, in ``schema``'s column order, sorted by ``id``."""
    converted = [[exact(row[f.name], f.dataType) for f in schema.fields] for row in rows]
    return sorted(converted, key=lambda r: (r[0], repr(r)))
