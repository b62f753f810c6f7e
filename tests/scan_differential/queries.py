"""Random sequences of queries on one scan, each as SQL (views, references) and as DataFrame calls.

Every query is a value with a Python ``repr``, so a find is kept as a
literal. A sequence runs on ONE scan DataFrame or ONE SQL view: pushed
filters, Spark Connect's plan cache, temporary views and ``cache()`` all
keep state between the queries of a sequence, and wrong answers hide there.

``Query.needs_bad_file`` answers, for a data set whose bad records must
fail the query (``on_error="fail"``), whether the query has to read one:
only a filter on a partition or file column can rule a file out, since
those have one value per file; a row limit may stop before any bad record.

A sequence may change the files once between its queries (``Change``: a
file deleted or added, the added one maybe with a column the scan lacks),
never while the scan is cached and never followed by a new scan: every
later query must read the files there are then, with the scan's columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.scan_differential.datasets import (
    CLASH,
    GHOST,
    IMPLICIT_COLUMNS,
    RESCUED,
    DataFile,
    DataSet,
    Value,
    added_file,
    canonical,
    data_sets,
    fold,
)

STEP_KINDS = (
    *("rows", "rows", "count", "count", "group", "distinct", "limit", "union", "join"),
    *("cache", "unpersist", "rescan"),
)
"""Queries twice as often as state changes; plain rows and counts most often."""
OPS = ("=", "<>", "<", ">=", "in", "is null", "is not null", "like")


@dataclass(frozen=True)
class Pred:
    """``column op value``, negated with SQL's three-valued NOT when ``negated``."""

    column: str
    op: str
    value: Any = None
    negated: bool = False

    def sql(self, quote: str, qualifier: str = "") -> str:
        column = f"{qualifier}{quote}{self.column}{quote}"
        if self.op == "in":
            text = f"{column} IN ({', '.join(literal(v) for v in self.value)})"
        elif self.op in ("is null", "is not null"):
            text = f"{column} {self.op.upper()}"
        elif self.op == "like":
            text = f"{column} LIKE {literal(self.value)}"
        else:
            text = f"{column} {self.op} {literal(self.value)}"
        return f"NOT ({text})" if self.negated else f"({text})"

    def on_file(self, value: Value) -> bool | None:
        """The predicate for a file's value of a per-file column, with SQL's nulls (``x IN
        (NULL)`` is null, never false, so ``NOT`` of it passes no file either)."""
        if self.op == "is null":
            result: bool | None = value is None
        elif self.op == "is not null":
            result = value is not None
        elif value is None or self.value is None:
            return None
        elif self.op == "in":
            if value in self.value:
                result = True
            elif None in self.value:
                return None
            else:
                result = False
        elif self.op == "like":
            pattern = "".join(".*" if c == "%" else re.escape(c) for c in self.value)
            result = re.fullmatch(pattern, str(value), re.DOTALL) is not None
        else:
            result = _compare(self.op, value, self.value)
        return (not result) if self.negated else result


@dataclass(frozen=True)
class Both:
    """``NOT (first AND second)`` (``OR`` when not ``conjunction``; no NOT when not
    ``negated``): a NOT over a condition that only partly decides files."""

    first: Pred
    second: Pred
    conjunction: bool = True
    negated: bool = True
    opaque: bool = True
    """``second`` written as ``(second) = TRUE``, which says the same and which no file
    pruning reads."""

    def sql(self, quote: str, qualifier: str = "") -> str:
        joiner = " AND " if self.conjunction else " OR "
        second = self.second.sql(quote, qualifier)
        if self.opaque:
            second = f"({second} = TRUE)"
        text = f"({self.first.sql(quote, qualifier)}{joiner}{second})"
        return f"NOT {text}" if self.negated else text


Filter = tuple[Pred | Both, ...]
"""Predicates joined with AND; empty for no filter."""


def where_sql(where: Filter, quote: str, qualifier: str = "") -> str:
    return " AND ".join(p.sql(quote, qualifier) for p in where) or "TRUE"


def literal(value: Value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + value.replace("'", "''") + "'"


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "=":
        return bool(left == right)
    if op == "<>":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    return bool(left >= right)


@dataclass(frozen=True)
class Rows:
    """Every row that passes the filter."""

    where: Filter = ()


@dataclass(frozen=True)
class Count:
    """``count()`` of the rows that pass (``df.count()`` itself when unfiltered)."""

    where: Filter = ()


@dataclass(frozen=True)
class GroupCount:
    """Rows per value of ``key``."""

    key: str
    where: Filter = ()


@dataclass(frozen=True)
class Distinct:
    columns: tuple[str, ...]
    where: Filter = ()


@dataclass(frozen=True)
class Limit:
    """At most ``n`` rows that pass: compared by size and as a sub-multiset."""

    n: int
    where: Filter = ()


@dataclass(frozen=True)
class Union:
    """The rows passing ``left`` followed by the rows passing ``right``, of the same scan."""

    left: Filter
    right: Filter


@dataclass(frozen=True)
class SelfJoin:
    """The scan joined with itself on ``id``, each side filtered: left id, right ``column``."""

    column: str
    left: Filter
    right: Filter


@dataclass(frozen=True)
class Cache:
    """``df.cache()`` / ``CACHE LAZY TABLE``: later queries read the cached rows."""


@dataclass(frozen=True)
class Unpersist:
    """``df.unpersist()`` / ``UNCACHE TABLE``."""


@dataclass(frozen=True)
class Rescan:
    """A new ``scan()`` with the same arguments / ``CREATE OR REPLACE`` of the same view."""


@dataclass(frozen=True)
class Change:
    """The files change after planning: file ``delete`` (an index of the data set's files)
    goes, or file ``add`` comes."""

    delete: int | None = None
    add: DataFile | None = None


Query = Rows | Count | GroupCount | Distinct | Limit | Union | SelfJoin
Step = Query | Cache | Unpersist | Rescan | Change


def reference_sql(query: Query, view: str, columns: Sequence[str], quote: str) -> str:
    """The query over a reference view, its columns listed (a limit is left to the comparison)."""
    listed = ", ".join(f"{quote}{c}{quote}" for c in columns)
    return _sql(query, view, listed, quote, with_limit=False)


def scan_sql(query: Query, view: str) -> str:
    """The query over the scan's SQL view, ``*`` where the scan's own column order shows."""
    return _sql(query, view, "*", "`", with_limit=True)


def _sql(query: Query, view: str, listed: str, quote: str, with_limit: bool) -> str:
    def q(name: str) -> str:
        return f"{quote}{name}{quote}"

    if isinstance(query, Rows):
        return f"SELECT {listed} FROM {view} WHERE {where_sql(query.where, quote)}"
    if isinstance(query, Count):
        return f"SELECT count(*) FROM {view} WHERE {where_sql(query.where, quote)}"
    if isinstance(query, GroupCount):
        key = q(query.key)
        return (
            f"SELECT {key}, count(*) FROM {view} WHERE {where_sql(query.where, quote)} "
            f"GROUP BY {key}"
        )
    if isinstance(query, Distinct):
        picked = ", ".join(q(c) for c in query.columns)
        return f"SELECT DISTINCT {picked} FROM {view} WHERE {where_sql(query.where, quote)}"
    if isinstance(query, Limit):
        limit = f" LIMIT {query.n}" if with_limit else ""
        return f"SELECT {listed} FROM {view} WHERE {where_sql(query.where, quote)}{limit}"
    if isinstance(query, Union):
        return (
            f"SELECT {listed} FROM {view} WHERE {where_sql(query.left, quote)} UNION ALL "
            f"SELECT {listed} FROM {view} WHERE {where_sql(query.right, quote)}"
        )
    left, right = where_sql(query.left, quote, "l."), where_sql(query.right, quote, "r.")
    return (
        f"SELECT l.{q('id')}, r.{q(query.column)} FROM {view} l JOIN {view} r "
        f"ON l.{q('id')} = r.{q('id')} WHERE {left} AND {right}"
    )


def needs_bad_file(
    query: Query, data_set: DataSet, root: Path, bad: Sequence[DataFile] | None = None
) -> bool:
    """Whether the query must read a record of a file with bad records (see the module);
    ``bad`` are those files where they are not the data set's own (after a ``Change``)."""
    bad_files = data_set.bad_files() if bad is None else tuple(bad)
    if isinstance(query, Limit):
        return False
    if isinstance(query, Union):
        return _reads_bad(query.left, data_set, root, bad_files) or _reads_bad(
            query.right, data_set, root, bad_files
        )
    if isinstance(query, SelfJoin):
        return _reads_bad(query.left, data_set, root, bad_files) and _reads_bad(
            query.right, data_set, root, bad_files
        )
    data_preds = [
        p for p in query.where if isinstance(p, Both) or not is_file_column(data_set, p.column)
    ]
    if len(data_preds) > 1:
        return False
    return _reads_bad(query.where, data_set, root, bad_files)


def _reads_bad(
    where: Filter, data_set: DataSet, root: Path, bad_files: Sequence[DataFile]
) -> bool:
    """Whether some bad file passes every predicate of ``where`` on per-file columns (never,
    said of a ``Both``, whose verdict on a file may depend on its rows)."""
    if any(isinstance(p, Both) for p in where):
        return False
    for data_file in bad_files:
        verdicts = [
            p.on_file(file_value(data_set, data_file, p.column, root))
            for p in where
            if isinstance(p, Pred) and is_file_column(data_set, p.column)
        ]
        if all(verdict is True for verdict in verdicts):
            return True
    return False


def is_file_column(data_set: DataSet, column: str) -> bool:
    """Columns with one value per file: partition and implicit columns, unless a column of
    the data has the name (the data's column wins)."""
    name = fold(column)
    if name in data_set.data_columns() and name not in data_set.partition_columns():
        return False
    return name in IMPLICIT_COLUMNS or name in data_set.partition_columns() or (
        data_set.partitioning == "dirs" and re.fullmatch(r"dir\d+", name) is not None
    )


def file_value(data_set: DataSet, data_file: DataFile, column: str, root: Path) -> Value:
    """The value a per-file column has for every row of ``data_file``."""
    path = root / data_file.relative(data_set)
    column = fold(column)
    if column == "filename":
        return path.name
    if column == "filepath":
        return str(path.parent)
    if column == "fqn":
        return str(path)
    if column == "suffix":
        return path.suffix.lstrip(".")
    if column.startswith("dir"):
        index = int(column[3:])
        return data_file.folders[index] if index < len(data_file.folders) else None
    value = data_file.hive_values().get(column)
    return int(value) if value is not None and data_set.hive_is_int(column) else value


def column_values(data_set: DataSet, column: str) -> list[Value]:
    """Values a filter on ``column`` may compare with: those in the data, as the scan types them."""
    if is_file_column(data_set, column):
        if fold(column) in ("filepath", "fqn"):
            return []
        placeholder = Path("/root")
        return [file_value(data_set, f, column, placeholder) for f in data_set.files]
    element = re.fullmatch(r"columns\[(\d+)\]", fold(column))
    name = canonical(column)
    values = [
        row[int(element.group(1))] if element else row[data_file.columns.index(name)]
        for data_file in data_set.files
        if element or name in data_file.columns
        for row in data_file.rows
        if not element or int(element.group(1)) < len(row)
    ]
    values = [v for v in values if v != CLASH and not isinstance(v, list)]
    if data_set.format == "csv":
        return [_as_csv_text(v) for v in values if v is not None] or ["a"]
    placeholder: Value = {"id": 0, "qty": 0, "ok": True}.get(name, "a")
    return [v for v in values if v is not None] or [placeholder]


def _as_csv_text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@st.composite
def preds(draw: st.DrawFn, data_set: DataSet, column: str) -> Pred:
    """A predicate on ``column`` that the column's type allows, its values from the data."""
    values = column_values(data_set, column)
    negated = draw(st.integers(0, 4)) == 0
    if fold(column) in ("filepath", "fqn"):
        folder = draw(st.sampled_from([f for d in data_set.files for f in d.folders] or ["x"]))
        ending = "" if fold(column) == "filepath" else "/%"
        return Pred(column, "like", f"%/{folder}" + ending, negated)
    kinds = {type(v) for v in values}
    is_bool = kinds == {bool}
    ops = ("=", "is null") if is_bool else OPS if kinds == {str} else OPS[:-1]
    op = draw(st.sampled_from(ops))
    if op in ("is null", "is not null"):
        return Pred(column, op, None, negated)
    if op == "in":
        picked = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True))
        return Pred(column, op, tuple(picked), negated)
    value = draw(st.sampled_from(values))
    if op == "like":
        return Pred(column, op, str(value)[:1] + "%", negated)
    return Pred(column, op, value, negated)


def scalar_columns(data_set: DataSet) -> list[str]:
    """The columns a filter or a group may name: not lists, the rescued column or the ghost."""
    lists = ("columns", "tags")
    return [
        c for c in data_set.columns()
        if fold(c) not in (fold(GHOST), fold(RESCUED)) and canonical(c) not in lists
    ]  # fmt: skip


@st.composite
def filters(draw: st.DrawFn, data_set: DataSet) -> Filter:
    """No filter, or one or two predicates, mostly on partition and file columns; some
    joined with another predicate on any column, mostly under a NOT."""
    columns = scalar_columns(data_set)
    if not columns:
        return ()
    per_file = [c for c in columns if is_file_column(data_set, c)]
    count = draw(st.sampled_from((0, 1, 1, 2)))
    picked: list[Pred | Both] = []
    for _ in range(count):
        pool = per_file if per_file and draw(st.integers(0, 2)) > 0 else columns
        found = draw(preds(data_set, draw(st.sampled_from(pool))))
        if draw(st.integers(0, 3)) == 0:
            other = draw(preds(data_set, draw(st.sampled_from(columns))))
            negated = draw(st.integers(0, 3)) > 0
            found = Both(found, other, draw(st.booleans()), negated, draw(st.booleans()))
        picked.append(found)
    return tuple(picked)


@st.composite
def steps(draw: st.DrawFn, data_set: DataSet) -> Step:
    if not data_set.columns():
        return Count(draw(filters(data_set)))
    scalars = scalar_columns(data_set)
    joinable = [c for c in data_set.columns() if fold(c) != fold(RESCUED)]
    has_id = any(fold(c) == "id" for c in data_set.columns())
    kinds = [k for k in STEP_KINDS if (k != "join" or has_id) and (scalars or k not in GROUPED)]
    kind = draw(st.sampled_from(kinds))
    if kind == "cache":
        return Cache()
    if kind == "unpersist":
        return Unpersist()
    if kind == "rescan":
        return Rescan()
    if kind in ("union", "join"):
        left, right = draw(filters(data_set)), draw(filters(data_set))
        if kind == "union":
            return Union(left, right)
        return SelfJoin(draw(st.sampled_from(joinable)), left, right)
    where = draw(filters(data_set))
    if kind == "group":
        return GroupCount(draw(st.sampled_from(scalars)), where)
    if kind == "distinct":
        picked = draw(st.lists(st.sampled_from(scalars), min_size=1, max_size=2, unique=True))
        return Distinct(tuple(picked), where)
    if kind == "limit":
        return Limit(draw(st.integers(0, 5)), where)
    return Rows(where) if kind == "rows" else Count(where)


GROUPED = ("group", "distinct")


@st.composite
def sequences(draw: st.DrawFn, data_set: DataSet) -> tuple[Step, ...]:
    """2-7 steps on one scan, and maybe one change of the files between them (not while
    the scan is cached, and no new scan after it)."""
    drawn = draw(st.lists(steps(data_set), min_size=2, max_size=7))
    if draw(st.integers(0, 3)) > 0:
        return tuple(drawn)
    cached = False
    free = []
    for position, step in enumerate(drawn):
        if not cached:
            free.append(position)
        cached = isinstance(step, Cache) or (cached and not isinstance(step, Unpersist))
    if not cached:
        free.append(len(drawn))
    at = draw(st.sampled_from(free))
    if len(data_set.files) > 1 and draw(st.booleans()):
        change = Change(delete=draw(st.integers(0, len(data_set.files) - 1)))
    else:
        change = Change(add=added_file(data_set, draw, 0))
    after = [step for step in drawn[at:] if not isinstance(step, Rescan)]
    return (*drawn[:at], change, *after)


@dataclass(frozen=True)
class Case:
    """A data set and the steps run on one scan of it (``frame``: a DataFrame; ``view``: SQL)."""

    data_set: DataSet
    steps: tuple[Step, ...]


def cases() -> st.SearchStrategy[Case]:
    """A data set, then a sequence of steps on one scan of it."""
    return data_sets().flatmap(lambda d: sequences(d).map(lambda steps: Case(d, steps)))
