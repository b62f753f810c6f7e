"""Random data sets for the differential scan test, described as plain values and written on demand.

A ``DataSet`` is a value with a ``repr`` that is valid Python, so a find is
kept as a literal in the test module. Its columns are fixed in name and
kind (``id`` a unique whole number present in every record, ``qty`` a
number that may widen from whole to fractional between files, ``name`` and
``extra`` text, ``ok`` a boolean): the test looks for wrong answers in the
scan's query paths, not for type conflicts, which the scan reports as
errors by design. ``extra`` appears only in later files and any column but
``id`` may be missing from a file (schema drift).

Bad records are written where a reference reader can say what the same
record means: malformed lines in json lines, short and long rows in csv.
Long rows are never drawn with ``on_error="null"``, whose treatment of a
row with too many fields no reference shares.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume
from hypothesis import strategies as st

Value = int | float | str | bool | None

DATA_COLUMNS = ("id", "qty", "name", "ok", "extra")
IMPLICIT_COLUMNS = ("filename", "filepath", "fqn", "suffix")
GHOST = "ghost"
"""A projected column no file has: the scan gives nulls, as Drill does."""

WORDS = ("a", "b c", "x,y", 'q"t', "é", "")
"""Text values: a space, the csv delimiter, a quote, a non-ASCII letter, empty text."""
NUMBERS = (0, 1, 2, 7, -3)
FRACTIONS = (0.5, 2.25, -1.5, 1e-3)
HIVE_KEYS = ("month", "tag")
HIVE_INTS = ("1", "2", "3", "4")
HIVE_WORDS = ("a", "b", "c")
DIR_NAMES = ("2023", "2024", "x", "y")
BAD_ID_BASE = 1000
"""Ids of bad records (which keep their id when a policy keeps the row) start here."""


@dataclass(frozen=True)
class BadRecord:
    """A record no reader accepts, written before row ``position`` of its file.

    ``kind``: ``truncated`` and ``garbage`` json lines; ``short`` and
    ``long`` csv rows (one field fewer or more than the header).
    """

    position: int
    kind: str
    id: int


@dataclass(frozen=True)
class DataFile:
    """One file: its folders below the root, its columns in file order and its rows."""

    folders: tuple[str, ...]
    stem: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    bad: tuple[BadRecord, ...] = ()

    def relative(self, data_set: DataSet) -> str:
        return "/".join((*self.folders, f"{self.stem}.{data_set.suffix}"))

    def hive_values(self) -> dict[str, str]:
        return dict(folder.split("=", 1) for folder in self.folders if "=" in folder)


@dataclass(frozen=True)
class DataSet:
    """Files of one format and layout under one root, and how the scan is asked to read them.

    ``projection`` is the scan's ``columns`` (None: the wildcard);
    ``empty_is_null`` gives csv scans ``nullValue ''``, as Spark and DuckDB
    read by default; ``marker`` adds a ``_SUCCESS`` file every reader skips.
    """

    format: str
    layout: str
    partitioning: str
    files: tuple[DataFile, ...]
    on_error: str = "fail"
    gzip: bool = False
    projection: tuple[str, ...] | None = None
    empty_is_null: bool = True
    marker: bool = False
    extra_options: tuple[tuple[str, str], ...] = field(default=())

    @property
    def suffix(self) -> str:
        base = "json" if self.format == "json" else self.format
        return f"{base}.gz" if self.gzip else base

    def data_columns(self) -> tuple[str, ...]:
        """The union of the files' columns, in the fixed order of ``DATA_COLUMNS``.

        A json file has no header: one without records adds no column.
        """
        present = {
            name
            for data_file in self.files
            if data_file.rows or self.format != "json"
            for name in data_file.columns
        }
        return tuple(name for name in DATA_COLUMNS if name in present)

    def partition_columns(self) -> tuple[str, ...]:
        if self.partitioning == "hive":
            keys = {key for data_file in self.files for key in data_file.hive_values()}
            return tuple(key for key in HIVE_KEYS if key in keys)
        depth = max(len(data_file.folders) for data_file in self.files)
        return tuple(f"dir{i}" for i in range(depth))

    def columns(self) -> tuple[str, ...]:
        """The columns the scan gives: the projection, or every data then partition column."""
        if self.projection is not None:
            return self.projection
        return self.data_columns() + self.partition_columns()

    def hive_is_int(self, key: str) -> bool:
        values = {f.hive_values()[key] for f in self.files if key in f.hive_values()}
        return all(value.lstrip("-").isdigit() for value in values)

    def bad_files(self) -> tuple[DataFile, ...]:
        return tuple(data_file for data_file in self.files if data_file.bad)

    def options(self) -> dict[str, str]:
        """The scan's reader options (``options=`` of ``connect_plugin.scan``)."""
        options = dict(self.extra_options)
        if self.format == "csv":
            options["header"] = "true"
            if self.empty_is_null:
                options["nullValue"] = ""
        return options

    def write(self, root: Path) -> list[Path]:
        """Write every file below ``root``; returns their paths (the marker file excluded)."""
        paths = []
        for data_file in self.files:
            path = root / data_file.relative(self)
            path.parent.mkdir(parents=True, exist_ok=True)
            if self.format == "parquet":
                pq.write_table(_arrow_table(data_file), path)
            else:
                payload = _text(self, data_file).encode()
                path.write_bytes(gzip.compress(payload, mtime=0) if self.gzip else payload)
            paths.append(path)
        if self.marker:
            (root / "_SUCCESS").write_bytes(b"")
        return paths

    def describe(self, root: Path) -> str:
        """Every file's path and content, for a failure message."""
        parts = []
        for data_file in self.files:
            body = "(parquet) " + repr(data_file.rows) if self.format == "parquet" else None
            parts.append(f"--- {data_file.relative(self)}\n{body or _text(self, data_file)}")
        return f"root {root}\n" + "\n".join(parts)


def _arrow_table(data_file: DataFile) -> pa.Table:
    arrays = {}
    for index, name in enumerate(data_file.columns):
        values = [row[index] for row in data_file.rows]
        arrays[name] = pa.array(values, type=_arrow_type(name, values))
    return pa.table(arrays) if arrays else pa.table({"id": pa.array([], pa.int64())})


def _arrow_type(name: str, values: list[Value]) -> pa.DataType:
    if name == "id":
        return pa.int64()
    if name == "qty":
        return pa.float64() if any(isinstance(v, float) for v in values) else pa.int64()
    if name == "ok":
        return pa.bool_()
    return pa.string()


def _text(data_set: DataSet, data_file: DataFile) -> str:
    records = [dict(zip(data_file.columns, row, strict=True)) for row in data_file.rows]
    if data_set.format == "csv":
        return _csv(data_file)
    if data_set.layout == "array":
        return json.dumps(records, indent=1)
    if data_set.layout == "documents":
        return "\n".join(json.dumps(record, indent=2) for record in records)
    lines = [json.dumps(record) for record in records]
    for bad in sorted(data_file.bad, key=lambda b: b.position, reverse=True):
        text = f'{{"id": {bad.id}, "name": ' if bad.kind == "truncated" else "not json"
        lines.insert(bad.position, text)
    return "".join(line + "\n" for line in lines)


def _csv(data_file: DataFile) -> str:
    lines = [[_csv_field(v) for v in row] for row in data_file.rows]
    width = len(data_file.columns)
    for bad in sorted(data_file.bad, key=lambda b: b.position, reverse=True):
        fields = [str(bad.id)] + ["w"] * (width - 1)
        lines.insert(bad.position, fields[:-1] if bad.kind == "short" else [*fields, "w"])
    return "".join(",".join(line) + "\n" for line in [list(data_file.columns), *lines])


def _csv_field(value: Value) -> str:
    """A field as text, quoted when it holds the delimiter or a quote; null and "" are empty."""
    if value is None:
        return ""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"') else text


@st.composite
def data_sets(draw: st.DrawFn) -> DataSet:
    """A small data set: 1-5 files of 0-6 rows, partitioned, drifting, maybe with bad records.

    At least one file holds a record: the references type no column of files
    without one (a json file without records has no columns), so data sets
    without records are fixed cases of the test instead.
    """
    file_format = draw(st.sampled_from(("json", "json", "csv", "parquet")))
    layouts = {"json": ("lines", "lines", "array", "documents"), "csv": ("header",)}
    layout = draw(st.sampled_from(layouts.get(file_format, ("parquet",))))
    partitioning = draw(st.sampled_from(("hive", "dirs")))
    folders = draw(_folders(partitioning))
    on_error = draw(st.sampled_from(("fail", "skip", "null")))
    kinds: dict[str, tuple[str, ...]] = {"lines": ("truncated", "garbage"), "header": ("short", "long")}
    bad_kinds = kinds.get(layout, ())
    if on_error == "null":
        bad_kinds = tuple(kind for kind in bad_kinds if kind != "long")
    drift = draw(st.booleans())
    next_id = 0
    files = []
    for index, place in enumerate(folders):
        columns = ["id", "qty", "name", "ok"]
        if drift:
            later = ["extra"] if index > 0 else []
            kept = [c for c in [*columns[1:], *later] if draw(st.booleans())]
            columns = ["id", *draw(st.permutations(kept))]
        fractional = drift and draw(st.booleans())
        rows = []
        for _ in range(draw(st.integers(0, 6))):
            rows.append(tuple(draw(_value(name, next_id, fractional)) for name in columns))
            next_id += 1
        bad: list[BadRecord] = []
        if bad_kinds and (file_format != "csv" or len(columns) > 1):
            for _ in range(draw(st.integers(0, 2) if draw(st.booleans()) else st.just(0))):
                kind = draw(st.sampled_from(bad_kinds))
                bad.append(BadRecord(draw(st.integers(0, len(rows))), kind, BAD_ID_BASE + next_id))
                next_id += 1
        files.append(DataFile(place, f"part{index}", tuple(columns), tuple(rows), tuple(bad)))
    data_set = DataSet(
        file_format,
        layout,
        partitioning,
        tuple(files),
        on_error=on_error,
        gzip=file_format != "parquet" and draw(st.booleans()),
        empty_is_null=draw(st.booleans()) if file_format == "csv" else True,
        marker=draw(st.booleans()),
    )
    assume(any(data_file.rows for data_file in files))
    if draw(st.booleans()):
        return data_set
    return _replace_projection(data_set, draw(_projection(data_set)))


def _replace_projection(data_set: DataSet, projection: tuple[str, ...]) -> DataSet:
    fields = {name: getattr(data_set, name) for name in data_set.__dataclass_fields__}
    return DataSet(**{**fields, "projection": projection})


def _projection(data_set: DataSet) -> st.SearchStrategy[tuple[str, ...]]:
    """``id`` and any of the data, partition, implicit and ghost columns, in any order."""
    partitions = list(data_set.partition_columns())
    if data_set.partitioning == "dirs":
        partitions.append(f"dir{len(partitions)}")
    others = [*data_set.data_columns()[1:], *partitions, *IMPLICIT_COLUMNS, GHOST]
    return st.lists(st.sampled_from(others), unique=True, max_size=5).flatmap(
        lambda picked: st.permutations(["id", *picked]).map(tuple)
    )


def _folders(partitioning: str) -> st.SearchStrategy[list[tuple[str, ...]]]:
    if partitioning == "dirs":
        folder = st.lists(st.sampled_from(DIR_NAMES), max_size=2).map(tuple)
        return st.lists(folder, min_size=1, max_size=5)
    return st.tuples(
        st.sampled_from((HIVE_INTS, HIVE_WORDS)), st.booleans(), st.integers(1, 5)
    ).flatmap(lambda spec: _hive_folders(*spec))


def _hive_folders(values: tuple[str, ...], two_levels: bool, count: int) -> st.SearchStrategy[
    list[tuple[str, ...]]
]:
    month = st.sampled_from(values).map(lambda v: f"month={v}")
    if not two_levels:
        return st.lists(month.map(lambda m: (m,)), min_size=count, max_size=count)
    tag = st.sampled_from(HIVE_WORDS).map(lambda v: f"tag={v}")
    return st.lists(st.tuples(month, tag), min_size=count, max_size=count)


def _value(name: str, row_id: int, fractional: bool) -> st.SearchStrategy[Value]:
    if name == "id":
        return st.just(row_id)
    if name == "qty":
        numbers = FRACTIONS if fractional else NUMBERS
        return st.one_of(st.none(), st.sampled_from(numbers))
    if name == "ok":
        return st.one_of(st.none(), st.booleans())
    return st.one_of(st.none(), st.sampled_from(WORDS))
