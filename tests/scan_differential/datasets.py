"""Random data sets for the differential scan test, described as plain values and written on demand.

A ``DataSet`` is a value with a ``repr`` that is valid Python, so a find is
kept as a literal in the test module. Its columns are fixed in kind (``id``
a unique whole number present in every record, ``qty`` a number that may
widen from whole to fractional between files, ``name`` and ``extra`` text,
``ok`` a boolean, ``tags`` a list of numbers with nulls; ``filename`` or
``dir0``, text columns of the data named like implicit columns, in some
data sets); ``extra`` and ``tags`` appear only in later files and any
column but ``id`` may be missing from a file (schema drift).

What users write, beyond what the scan expects (issue 44):

- names in any case: a file spells its keys in its own case, or with a
  character outside ASCII that folds to their letters (the Kelvin sign, the
  long s, ligatures; ``DataFile.spellings``), json records may spell them otherwise
  (``respelled``), a record may give a column two values under keys that
  differ only in case (a ``twin`` bad record), and the projection spells
  names as it likes;
- numbers at the edges: integers past 2^53 (``BIG``), in every format, also
  where ``qty`` widens to double; ``tags`` lists holding nulls and big
  integers, read or rescued;
- a value whose type clashes with its column (``CLASH`` in a json ``qty``),
  inside the sampled head or past it (``sample_bytes``), in the first file or
  a later one;
- byte order marks: UTF-8 (no part of the text) and UTF-16 (an unreadable
  file, ``DataFile.mark``);
- headerless csv (Drill's ``columns`` list), with records of another width;
- the rescued-data column (``evolution="rescue"``);
- projections of implicit columns alone, or of no column.

Bad records are written where a reference reader can say what the same
record means: malformed lines and twins in json lines, short and long rows
in csv. Long rows are never drawn with ``on_error="null"``, whose treatment
of a row with too many fields no reference shares.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume
from hypothesis import strategies as st

Value = int | float | str | bool | list[int | None] | None

DATA_COLUMNS = ("id", "qty", "name", "ok", "extra", "tags", "filename", "dir0")
"""Every data column there may be, in the order ``data_columns`` gives them."""
LATE_COLUMNS = ("extra", "tags")
"""Columns first seen past the first file."""
SHADOWING = ("filename", "dir0")
"""Data columns named like an implicit column; a data set has at most one."""
IMPLICIT_COLUMNS = ("filename", "filepath", "fqn", "suffix")
RESCUED = "_rescued_data"
GHOST = "ghost"
"""A projected column no file has: the scan gives nulls, as Drill does; headerless files,
whose fields have no names, refuse it (``DataSet.refuses_names``)."""

WORDS = ("a", "b c", "x,y", 'q"t', "é", "")
"""Text values: a space, the csv delimiter, a quote, a non-ASCII letter, empty text."""
NUMBERS = (0, 1, 2, 7, -3)
BIG = (2**53 + 1, -(2**53 + 1), 4025664719519337086)
"""Integers a double does not hold exactly."""
FRACTIONS = (0.5, 2.25, -1.5, 1e-3)
CLASH = "x"
"""A ``qty`` value of json text: a type no rule joins with numbers."""
TAGS = (1, 17, None, BIG[0])
HIVE_KEYS = ("month", "tag")
HIVE_INTS = ("1", "2", "3", "4")
HIVE_WORDS = ("a", "b", "c")
DIR_NAMES = ("2023", "2024", "x", "y")
BAD_ID_BASE = 1000
"""Ids of bad records (which keep their id when a policy keeps the row) start here."""
SMALL_SAMPLE = 48
"""``sample_bytes`` that sees about one json record: what follows is past the sample."""
_SUFFIX = re.compile(r"_\d+$")


def fold(name: str) -> str:
    """Names compare as the scan compares them (``connect_plugin.scanning.names``)."""
    return name.casefold()


def canonical(name: str) -> str:
    """The data column a name folds to (``QTY`` and DuckDB's ``QTY_1`` are ``qty``), or the
    name folded when it is no data column."""
    folded = fold(_SUFFIX.sub("", name))
    return folded if folded in DATA_COLUMNS else fold(name)


@dataclass(frozen=True)
class BadRecord:
    """A record no reader accepts as it is, written before row ``position`` of its file.

    ``kind``: ``truncated`` and ``garbage`` json lines; ``twin``, a json line giving
    ``name`` two values under keys that differ only in case; ``short`` and ``long``
    csv rows (one field fewer or more than the header or the first record).
    """

    position: int
    kind: str
    id: int


@dataclass(frozen=True)
class DataFile:
    """One file: its folders below the root, its columns in file order and its rows.

    ``spellings`` are its keys as the file spells them (its columns' names by default);
    rows ``respelled`` spell every key with its case swapped (json); ``mark`` is a byte
    order mark the file starts with (``utf-8`` or ``utf-16``).
    """

    folders: tuple[str, ...]
    stem: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    bad: tuple[BadRecord, ...] = ()
    spellings: tuple[str, ...] = ()
    respelled: tuple[int, ...] = ()
    mark: str = ""

    def relative(self, data_set: DataSet) -> str:
        return "/".join((*self.folders, f"{self.stem}.{data_set.suffix}"))

    def hive_values(self) -> dict[str, str]:
        return dict(folder.split("=", 1) for folder in self.folders if "=" in folder)

    def keys(self) -> tuple[str, ...]:
        return self.spellings or self.columns

    def clash_ids(self) -> tuple[int, ...]:
        """Ids of rows whose ``qty`` is text (``CLASH``)."""
        if "qty" not in self.columns:
            return ()
        index = self.columns.index("qty")
        return tuple(int(str(row[0])) for row in self.rows if isinstance(row[index], str))


@dataclass(frozen=True)
class DataSet:
    """Files of one format and layout under one root, and how the scan is asked to read them.

    ``projection`` is the scan's ``columns`` (None: the wildcard; ``()``: none);
    ``empty_is_null`` gives csv scans ``nullValue ''``, as Spark and DuckDB
    read by default; ``marker`` adds a ``_SUCCESS`` file every reader skips;
    ``rescue`` scans with ``evolution="rescue"``; ``sample_bytes`` is the scan's.
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
    rescue: bool = False
    sample_bytes: int | None = None

    @property
    def suffix(self) -> str:
        base = "json" if self.format == "json" else self.format
        return f"{base}.gz" if self.gzip else base

    @property
    def headerless(self) -> bool:
        return self.layout == "headerless"

    def listed(self) -> tuple[DataFile, ...]:
        """The files in the order the scan lists them (by path, folder by folder)."""
        return tuple(sorted(self.files, key=lambda f: f.relative(self).split("/")))

    def has_columns(self, data_file: DataFile) -> bool:
        """Whether a file shows columns to the scan: a json file without records has none."""
        return bool(data_file.rows) or self.format != "json"

    def spelling(self, column: str) -> str:
        """How the scan spells a data column: as the first file (listed) that has it does."""
        for data_file in self.listed():
            if self.has_columns(data_file) and column in data_file.columns:
                return data_file.keys()[data_file.columns.index(column)]
        return column

    def fixed(self) -> tuple[str, ...] | None:
        """Under rescue, the data columns the first file with columns fixes; else None."""
        if not self.rescue:
            return None
        first = next((f for f in self.listed() if self.has_columns(f)), None)
        return () if first is None else first.columns

    def data_columns(self) -> tuple[str, ...]:
        """The columns of the table, in the fixed order of ``DATA_COLUMNS``."""
        if self.headerless:
            return ("columns",)
        fixed = self.fixed()
        present = {
            name
            for data_file in self.files
            if self.has_columns(data_file)
            for name in data_file.columns
        }
        if fixed is not None:
            present &= set(fixed)
        return tuple(name for name in DATA_COLUMNS if name in present)

    def partition_columns(self) -> tuple[str, ...]:
        if self.partitioning == "hive":
            keys = {key for data_file in self.files for key in data_file.hive_values()}
            return tuple(key for key in HIVE_KEYS if key in keys)
        depth = max(len(data_file.folders) for data_file in self.files)
        data = set(self.data_columns())
        return tuple(f"dir{i}" for i in range(depth) if f"dir{i}" not in data)

    def columns(self) -> tuple[str, ...]:
        """The columns the scan gives: the projection (and the rescued column), or every
        data then partition column, data columns spelled as the scan spells them."""
        rescued = (RESCUED,) if self.rescue else ()
        if self.projection is not None:
            return self.projection + (rescued if self.projection else ())
        data = tuple(self.spelling(name) for name in self.data_columns())
        return data + self.partition_columns() + rescued

    def decodes(self, column: str) -> bool:
        """Whether the scan decodes the data column (it is read, not missing or rescued)."""
        if column not in self.data_columns():
            return False
        if self.projection is None:
            return True
        return any(canonical(name) == column for name in self.projection)

    def hive_is_int(self, key: str) -> bool:
        values = {f.hive_values()[key] for f in self.files if key in f.hive_values()}
        return all(value.lstrip("-").isdigit() for value in values)

    def bad_ids(self, data_file: DataFile) -> tuple[int, ...]:
        """Ids of the file's records that are bad for this scan: malformed ones always,
        twins where ``name`` is decoded, clashes where ``qty`` is (and not rescued)."""
        ids = [
            bad.id for bad in data_file.bad if bad.kind != "twin" or self.decodes("name")
        ]
        if self.decodes("qty") and not self.rescue:
            ids += data_file.clash_ids()
        return tuple(ids)

    def bad_files(self) -> tuple[DataFile, ...]:
        return tuple(data_file for data_file in self.files if self.bad_ids(data_file))

    def unreadable_files(self) -> tuple[DataFile, ...]:
        return tuple(data_file for data_file in self.files if data_file.mark == "utf-16")

    def refuses_names(self) -> bool:
        """Whether planning must refuse the projection: it names the ghost, a name that no
        field of a headerless file has (docs/scans.md: only ``columns[n]`` reaches them)."""
        projection = self.projection or ()
        return self.headerless and any(fold(name) == GHOST for name in projection)

    def options(self) -> dict[str, str]:
        """The scan's reader options (``options=`` of ``connect_plugin.scan``)."""
        options = dict(self.extra_options)
        if self.format == "csv":
            options["header"] = "false" if self.headerless else "true"
            if self.empty_is_null:
                options["nullValue"] = ""
        return options

    def write(self, root: Path) -> list[Path]:
        """Write every file below ``root``; returns their paths (the marker file excluded)."""
        paths = [self.write_file(root, data_file) for data_file in self.files]
        if self.marker:
            (root / "_SUCCESS").write_bytes(b"")
        return paths

    def write_file(self, root: Path, data_file: DataFile) -> Path:
        path = root / data_file.relative(self)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.format == "parquet":
            pq.write_table(_arrow_table(data_file), path)
            return path
        text = _text(self, data_file)
        if data_file.mark == "utf-16":
            payload = text.encode("utf-16")
        else:
            payload = (b"\xef\xbb\xbf" if data_file.mark == "utf-8" else b"") + text.encode()
        path.write_bytes(gzip.compress(payload, mtime=0) if self.gzip else payload)
        return path

    def describe(self, root: Path) -> str:
        """Every file's path and content, for a failure message."""
        parts = []
        for data_file in self.files:
            body = "(parquet) " + repr(data_file.rows) if self.format == "parquet" else None
            mark = f" ({data_file.mark} mark)" if data_file.mark else ""
            parts.append(f"--- {data_file.relative(self)}{mark}\n{body or _text(self, data_file)}")
        return f"root {root}\n" + "\n".join(parts)


def _arrow_table(data_file: DataFile) -> pa.Table:
    arrays = {}
    for index, (name, key) in enumerate(zip(data_file.columns, data_file.keys(), strict=True)):
        values = [row[index] for row in data_file.rows]
        arrays[key] = pa.array(values, type=_arrow_type(name, values))
    return pa.table(arrays) if arrays else pa.table({"id": pa.array([], pa.int64())})


def _arrow_type(name: str, values: list[Value]) -> pa.DataType:
    if name == "id":
        return pa.int64()
    if name == "qty":
        return pa.float64() if any(isinstance(v, float) for v in values) else pa.int64()
    if name == "ok":
        return pa.bool_()
    if name == "tags":
        return pa.list_(pa.int64())
    return pa.string()


def _record(data_file: DataFile, number: int) -> dict[str, Value]:
    keys = data_file.keys()
    if number in data_file.respelled:
        keys = tuple(key.swapcase() for key in keys)
    return dict(zip(keys, data_file.rows[number], strict=True))


def _text(data_set: DataSet, data_file: DataFile) -> str:
    if data_set.format == "csv":
        return _csv(data_set, data_file)
    records = [_record(data_file, number) for number in range(len(data_file.rows))]
    if data_set.layout == "array":
        return json.dumps(records, indent=1)
    if data_set.layout == "documents":
        return "\n".join(json.dumps(record, indent=2) for record in records)
    lines = [json.dumps(record) for record in records]
    name = data_file.keys()[data_file.columns.index("name")] if "name" in data_file.columns else "name"
    for bad in sorted(data_file.bad, key=lambda b: b.position, reverse=True):
        if bad.kind == "truncated":
            text = f'{{"id": {bad.id}, "name": '
        elif bad.kind == "twin":
            text = json.dumps({"id": bad.id, name: "a", name.swapcase(): "b"})
        else:
            text = "not json"
        lines.insert(bad.position, text)
    return "".join(line + "\n" for line in lines)


def _csv(data_set: DataSet, data_file: DataFile) -> str:
    lines = [[_csv_field(v) for v in row] for row in data_file.rows]
    width = len(data_file.columns)
    for bad in sorted(data_file.bad, key=lambda b: b.position, reverse=True):
        fields = [str(bad.id)] + ["w"] * (width - 1)
        lines.insert(bad.position, fields[:-1] if bad.kind == "short" else [*fields, "w"])
    header = [] if data_set.headerless else [list(data_file.keys())]
    return "".join(",".join(line) + "\n" for line in [*header, *lines])


def _csv_field(value: Value) -> str:
    """A field as text, quoted when it holds the delimiter or a quote; null and "" are empty."""
    if value is None:
        return ""
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"') else text


@dataclass(frozen=True)
class _Traits:
    """What a data set may hold beyond plain drift and bad records (drawn once per set)."""

    cases: bool = False
    big: bool = False
    clash: bool = False
    shadow: str | None = None
    small_sample: bool = False
    marks: bool = False


@st.composite
def data_sets(draw: st.DrawFn) -> DataSet:
    """A small data set: 1-5 files of 0-6 rows, partitioned, drifting, maybe with bad records
    and any of the edges of the module's docstring.

    At least one file holds a record: the references type no column of files
    without one (a json file without records has no columns), so data sets
    without records are fixed cases of the test instead.
    """
    file_format = draw(st.sampled_from(("json", "json", "csv", "parquet")))
    layouts = {
        "json": ("lines", "lines", "array", "documents"),
        "csv": ("header", "header", "headerless"),
    }
    layout = draw(st.sampled_from(layouts.get(file_format, ("parquet",))))
    partitioning = draw(st.sampled_from(("hive", "dirs")))
    folders = draw(_folders(partitioning))
    on_error = draw(st.sampled_from(("fail", "skip", "null", "reject")))
    rescue = layout != "headerless" and draw(st.integers(0, 5)) == 0
    traits = _Traits(
        cases=layout != "headerless" and draw(st.booleans()),
        big=draw(st.booleans()),
        clash=file_format == "json" and not rescue and draw(st.integers(0, 3)) == 0,
        shadow=None if layout == "headerless" else draw(st.sampled_from((None, None, *SHADOWING))),
        small_sample=file_format == "json" and draw(st.integers(0, 3)) == 0,
        marks=file_format != "parquet" and draw(st.integers(0, 4)) == 0,
    )
    kinds: dict[str, tuple[str, ...]] = {
        "lines": ("truncated", "garbage", "twin"),
        "header": ("short", "long"),
        "headerless": ("short", "long"),
    }
    bad_kinds = kinds.get(layout, ())
    if on_error == "null":
        bad_kinds = tuple(kind for kind in bad_kinds if kind != "long")
    if rescue or not traits.cases:
        bad_kinds = tuple(kind for kind in bad_kinds if kind != "twin")
    drift = layout != "headerless" and draw(st.booleans())
    fractional_sets = drift and not traits.small_sample and not rescue
    next_id = 0
    files = []
    for index, place in enumerate(folders):
        columns = ["id", "qty", "name", "ok"]
        if traits.shadow is not None:
            columns.append(traits.shadow)
        if drift:
            later = [c for c in LATE_COLUMNS if c != "tags" or file_format != "csv"] if index else []
            kept = [c for c in [*columns[1:], *later] if draw(st.booleans())]
            columns = ["id", *draw(st.permutations(kept))]
        fractional = fractional_sets and draw(st.booleans())
        rows = []
        for number in range(draw(st.integers(0, 6))):
            first = number == 0 and traits.small_sample
            rows.append(
                tuple(
                    draw(_value(name, next_id, fractional, traits, first, index == 0 and number == 0))
                    for name in columns
                )
            )
            next_id += 1
        bad: list[BadRecord] = []
        # A headerless file's first record sets the file's width: it is never a bad record.
        headerless_first = layout == "headerless" and not rows
        if bad_kinds and (file_format != "csv" or len(columns) > 1) and not headerless_first:
            # The first record of a file is its own sample's under a small sample.
            lowest = 1 if layout == "headerless" or traits.small_sample else 0
            for _ in range(draw(st.integers(0, 2) if draw(st.booleans()) else st.just(0))):
                kind = draw(st.sampled_from(bad_kinds))
                if kind == "twin" and "name" not in columns:
                    continue
                position = draw(st.integers(lowest, max(lowest, len(rows))))
                bad.append(BadRecord(position, kind, BAD_ID_BASE + next_id))
                next_id += 1
        spellings = tuple(draw(_spelled(name)) for name in columns) if traits.cases else ()
        respelled: tuple[int, ...] = ()
        if traits.cases and file_format == "json" and len(rows) > 1:
            respelled = tuple(draw(st.sets(st.integers(1, len(rows) - 1), max_size=2)))
        mark = draw(st.sampled_from(("", "", "utf-8", "utf-16"))) if traits.marks else ""
        files.append(
            DataFile(
                place,
                f"part{index}",
                tuple(columns),
                tuple(rows),
                tuple(bad),
                spellings,
                tuple(sorted(respelled)),
                mark,
            )
        )
    data_set = DataSet(
        file_format,
        layout,
        partitioning,
        tuple(files),
        on_error=on_error,
        gzip=file_format != "parquet" and draw(st.booleans()),
        empty_is_null=draw(st.booleans()) if file_format == "csv" else True,
        marker=draw(st.booleans()),
        rescue=rescue,
        sample_bytes=SMALL_SAMPLE if traits.small_sample else None,
    )
    assume(any(data_file.rows for data_file in files))
    assume(_clashes_follow_a_number(data_set))
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return data_set
    if choice == 1 and not data_set.headerless:
        return replace(data_set, projection=draw(_implicit_projection(data_set)))
    return replace(data_set, projection=draw(_projection(data_set)))


def _clashes_follow_a_number(data_set: DataSet) -> bool:
    """Whether the first ``qty`` value the scan sees, listed, is a number: the column's type
    is the first file's, and text first would make it a text column (no clash at all)."""
    for data_file in data_set.listed():
        if "qty" not in data_file.columns:
            continue
        index = data_file.columns.index("qty")
        for row in data_file.rows:
            if row[index] is not None:
                return not isinstance(row[index], str)
    return True


_FOLDING_SPELLINGS = (("ss", "\u00df"), ("ff", "\ufb00"), ("fi", "\ufb01"), ("k", "\u212a"), ("s", "\u017f"))
"""Letters and a character outside ASCII that case folding turns into them (the sharp s,
two ligatures, the Kelvin sign, the long s)."""


def _spelled(name: str) -> st.SearchStrategy[str]:
    """A name in another case, or with letters written as a character that folds to them."""
    folded = next((name.replace(a, b, 1) for a, b in _FOLDING_SPELLINGS if a in name), name)
    return st.sampled_from(
        (name, name, name.upper(), name.capitalize(), name.swapcase().title(), folded)
    )


def _projection(data_set: DataSet) -> st.SearchStrategy[tuple[str, ...]]:
    """``id`` and any of the data, partition, implicit and ghost columns, in any order, each
    spelled in any case."""
    partitions = list(data_set.partition_columns())
    if data_set.partitioning == "dirs":
        partitions.append(f"dir{len(partitions)}")
    if data_set.headerless:
        data = ["columns", *(f"columns[{i}]" for i in range(1, 4))]
        first = "columns[0]"
    else:
        data = list(data_set.data_columns()[1:])
        first = "id"
    others = [*data, *partitions, *IMPLICIT_COLUMNS, GHOST]
    names = st.lists(st.sampled_from(others), unique_by=fold, max_size=5).flatmap(
        lambda picked: st.permutations([first, *picked]).map(tuple)
    )
    return names.flatmap(lambda picked: st.tuples(*(_spelled(name) for name in picked)))


def _implicit_projection(data_set: DataSet) -> st.SearchStrategy[tuple[str, ...]]:
    """No column at all, or file and partition columns alone."""
    partitions = list(data_set.partition_columns())
    pool = [*IMPLICIT_COLUMNS, *partitions]
    picked = st.lists(st.sampled_from(pool), unique=True, max_size=3)
    return picked.flatmap(lambda names: st.tuples(*(_spelled(name) for name in names)))


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


def _value(
    name: str, row_id: int, fractional: bool, traits: _Traits, settled: bool, first: bool
) -> st.SearchStrategy[Value]:
    """A value of a column; ``settled``: the first row of a file under a small sample,
    whose values give the column's type (never null there)."""
    if name == "id":
        return st.just(row_id)
    if name == "qty":
        numbers = FRACTIONS if fractional else NUMBERS + (BIG if traits.big else ())
        drawn: st.SearchStrategy[Value] = st.sampled_from(numbers)
        if settled:
            return drawn
        if traits.clash and not first:
            drawn = st.one_of(drawn, st.just(CLASH))
        return st.one_of(st.none(), drawn)
    if name == "ok":
        return st.booleans() if settled else st.one_of(st.none(), st.booleans())
    if name == "tags":
        lists = st.lists(st.sampled_from(TAGS if traits.big else TAGS[:3]), max_size=3)
        return st.just([1]) if settled else st.one_of(st.none(), lists)
    return st.one_of(st.none(), st.sampled_from(WORDS))


NEW_COLUMNS = ("qty", "name", "ok", "extra")
"""Columns a file added after planning may bring that the planned table lacks."""


def added_file(data_set: DataSet, draw: st.DrawFn, number: int) -> DataFile:
    """A file added after planning: in a folder a file is in, of columns the table has (plain
    names), whole numbers, no bad record: what the planned schema reads as it is; and maybe
    a column the table lacks (``NEW_COLUMNS``), which the scan's columns, fixed when it was
    planned, leave out (or rescue)."""
    folders = draw(st.sampled_from(sorted({f.folders for f in data_set.files})))
    if data_set.headerless:
        columns = data_set.files[0].columns
    else:
        table = set(data_set.data_columns())
        columns = tuple(c for c in DATA_COLUMNS if c in table and (c == "id" or draw(st.booleans())))
        new = [c for c in NEW_COLUMNS if c not in table]
        if new and draw(st.integers(0, 2)) == 0:
            columns += (draw(st.sampled_from(new)),)
    traits = _Traits()
    first_id = 2 * BAD_ID_BASE + 10 * number
    rows = tuple(
        tuple(draw(_value(name, first_id + i, False, traits, False, False)) for name in columns)
        for i in range(draw(st.integers(1, 3)))
    )
    return DataFile(folders, f"added{number}", columns, rows)
