"""Random sequences of statements on one table, written once for Spark and for DuckDB.

A sequence starts from a random table (format, partitioning, rows with
NULLs and repeated ids) and runs INSERT, DELETE, UPDATE, MERGE INTO and
TRUNCATE with random conditions and values drawn from expressions both
engines read the same way, plus statements that fail on a row (Spark's
``raise_error``), which only the gateway runs: the reference for them is the
table unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import strategies as st

DML_RUNS = pytest.StashKey[list[str]]()
"""The random runs' lines in the session's "dml differential" summary."""
COLUMNS = "id INT, k INT, v BIGINT, s STRING"
NAMES = ("id", "k", "v", "s")
"""The columns in declared order (Spark moves a partition column last)."""
FORMATS = ("parquet", "orc", "json", "csv")
SOURCE = "src"


@dataclass(frozen=True)
class Statement:
    """One statement; ``duckdb`` None: only the gateway runs it, and it must fail there
    exactly when ``fails_when`` (a DuckDB query) finds a row."""

    spark: str
    duckdb: str | None
    fails_when: str | None = None
    cardinality: str | None = None
    """A DuckDB query that finds a row exactly when a MERGE must be refused for matching a
    table row with several source rows."""


@dataclass(frozen=True)
class Sequence:
    fmt: str
    partitioned: bool
    rows: tuple[str, ...]
    statements: tuple[Statement, ...]

    def create(self) -> str:
        partitioning = " PARTITIONED BY (k)" if self.partitioned else ""
        return f"CREATE TEMPORARY TABLE t ({COLUMNS}) USING {self.fmt}{partitioning}"


small = st.integers(-3, 12)
letters = st.sampled_from(["a", "b", "c", "zz"])


def _maybe(values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.just("NULL"), values)


@st.composite
def row(draw: st.DrawFn) -> str:
    ident = draw(st.integers(0, 8))
    k = draw(_maybe(st.integers(0, 3).map(str)))
    v = draw(_maybe(small.map(str)))
    s = draw(_maybe(letters.map(lambda c: f"'{c}'")))
    return f"({ident}, CAST({k} AS INT), CAST({v} AS BIGINT), CAST({s} AS STRING))"


def _atom(prefix: str) -> st.SearchStrategy[str]:
    return st.one_of(
        small.map(lambda n: f"{prefix}v > {n}"),
        st.integers(0, 3).map(lambda n: f"{prefix}k = {n}"),
        letters.map(lambda c: f"{prefix}s = '{c}'"),
        st.just(f"{prefix}v IS NULL"),
        st.just(f"{prefix}s IS NOT NULL"),
        st.just(f"{prefix}id % 2 = 0"),
        st.just(f"{prefix}k IN (0, 1)"),
    )


def condition(prefix: str = "") -> st.SearchStrategy[str]:
    return st.recursive(
        _atom(prefix),
        lambda inner: st.one_of(
            st.tuples(inner, inner).map(lambda p: f"({p[0]} AND {p[1]})"),
            st.tuples(inner, inner).map(lambda p: f"({p[0]} OR {p[1]})"),
            inner.map(lambda c: f"NOT ({c})"),
        ),
        max_leaves=3,
    )


def number(prefix: str = "") -> st.SearchStrategy[str]:
    return st.one_of(
        small.map(lambda n: f"{prefix}v + {n}"),
        st.just(f"{prefix}v * 2"),
        st.just(f"-{prefix}v"),
        small.map(lambda n: f"coalesce({prefix}v, {n})"),
        small.map(str),
        st.just("NULL"),
        st.just(f"{prefix}k"),
        st.tuples(condition(prefix), small).map(
            lambda p: f"CASE WHEN {p[0]} THEN {prefix}v ELSE {p[1]} END"
        ),
    )


def text(prefix: str = "") -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(f"{prefix}s || 'x'"),
        st.just(f"upper({prefix}s)"),
        letters.map(lambda c: f"'{c}'"),
        st.just("NULL"),
        st.just(f"coalesce({prefix}s, 'z')"),
    )


def part(prefix: str = "") -> st.SearchStrategy[str]:
    return st.one_of(st.just("NULL"), st.integers(0, 3).map(str), st.just(f"{prefix}k"))


@st.composite
def assignments(draw: st.DrawFn, prefix: str = "") -> str:
    chosen = draw(st.sets(st.sampled_from(["k", "v", "s"]), min_size=1))
    values = {"k": part(prefix), "v": number(prefix), "s": text(prefix)}
    return ", ".join(f"{c} = {draw(values[c])}" for c in sorted(chosen))


def _where(draw: st.DrawFn) -> str:
    found = draw(st.none() | condition())
    return "" if found is None else f" WHERE {found}"


@st.composite
def insert(draw: st.DrawFn) -> Statement:
    rows = draw(st.lists(row(), min_size=1, max_size=4))
    sql = f"INSERT INTO t ({', '.join(NAMES)}) VALUES {', '.join(rows)}"
    return Statement(sql, sql)


@st.composite
def delete(draw: st.DrawFn) -> Statement:
    sql = f"DELETE FROM t{_where(draw)}"
    return Statement(sql, sql)


@st.composite
def update(draw: st.DrawFn) -> Statement:
    sql = f"UPDATE t SET {draw(assignments())}{_where(draw)}"
    return Statement(sql, sql)


def truncate() -> st.SearchStrategy[Statement]:
    return st.just(Statement("TRUNCATE TABLE t", "TRUNCATE t"))


@st.composite
def failing(draw: st.DrawFn) -> Statement:
    ident = draw(st.integers(0, 8))
    sql = (
        f"UPDATE t SET v = CASE WHEN id = {ident} THEN CAST(raise_error('refused on purpose') "
        "AS BIGINT) ELSE v END"
    )
    return Statement(sql, None, fails_when=f"SELECT 1 FROM t WHERE id = {ident}")


@st.composite
def merge(draw: st.DrawFn) -> Statement:
    rows = draw(st.lists(row(), min_size=1, max_size=4))
    source = f"(SELECT * FROM (VALUES {', '.join(rows)}) AS {SOURCE}(id, k, v, s))"
    on = "t.id = src.id"
    if draw(st.booleans()):
        on += f" AND {draw(condition('src.'))}"
    clauses = []
    matched = draw(st.lists(st.sampled_from(["update", "update *", "delete"]), max_size=2))
    for at, action in enumerate(matched):
        last = at == len(matched) - 1
        guard = draw((st.none() if last else st.nothing()) | condition("t."))
        head = "WHEN MATCHED" + ("" if guard is None else f" AND {guard}")
        if action == "delete":
            clauses.append(f"{head} THEN DELETE")
        elif action == "update *":
            clauses.append(f"{head} THEN UPDATE SET *")
        else:
            clauses.append(f"{head} THEN UPDATE SET {draw(assignments('src.'))}")
    inserts = draw(st.integers(0, 2))
    for at in range(inserts):
        guard = draw((st.none() if at == inserts - 1 else st.nothing()) | condition("src."))
        head = "WHEN NOT MATCHED" + ("" if guard is None else f" AND {guard}")
        if draw(st.booleans()):
            clauses.append(f"{head} THEN INSERT *")
        else:
            clauses.append(
                f"{head} THEN INSERT (id, v) VALUES (src.id, {draw(number('src.'))})"
            )
    unmatched = draw(st.integers(0, 2))
    for at in range(unmatched):
        guard = draw((st.none() if at == unmatched - 1 else st.nothing()) | condition("t."))
        head = "WHEN NOT MATCHED BY SOURCE" + ("" if guard is None else f" AND {guard}")
        if draw(st.booleans()):
            clauses.append(f"{head} THEN DELETE")
        else:
            clauses.append(f"{head} THEN UPDATE SET {draw(assignments('t.'))}")
    if not clauses:
        clauses.append("WHEN NOT MATCHED THEN INSERT *")
    sql = f"MERGE INTO t USING {source} AS {SOURCE} ON {on} {' '.join(clauses)}"
    checked = bool(matched) and not (len(matched) == 1 and clauses[0] == "WHEN MATCHED THEN DELETE")
    cardinality = (
        f"SELECT 1 FROM t JOIN {source} AS {SOURCE} ON {on} GROUP BY t.rowid HAVING count(*) > 1"
        if checked
        else None
    )
    return Statement(sql, sql, cardinality=cardinality)


def statement() -> st.SearchStrategy[Statement]:
    return st.one_of(insert(), delete(), update(), merge(), merge(), truncate(), failing())


@st.composite
def sequences(draw: st.DrawFn) -> Sequence:
    return Sequence(
        fmt=draw(st.sampled_from(FORMATS)),
        partitioned=draw(st.booleans()),
        rows=tuple(draw(st.lists(row(), max_size=6))),
        statements=tuple(draw(st.lists(statement(), min_size=1, max_size=6))),
    )
