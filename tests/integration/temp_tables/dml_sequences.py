"""Random sequences of statements on one table, written once for Spark and for DuckDB.

A sequence starts from a random table (format, partitioning, the type of
its column ``k``, which a partitioned table is partitioned by, a struct
among them, declared or made by a CTAS of no rows whose query types ``k``
by a literal, rows with NULLs and repeated ids) and runs INSERT (of values, or of the table's own
rows, led by WITH or Hive's FROM or not), INSERT OVERWRITE, DELETE, UPDATE,
MERGE INTO, TRUNCATE, CREATE OR REPLACE ... AS SELECT from the table itself
and the DataFrame writes
(``insertInto``, ``writeTo``, ``saveAsTable``) with random conditions and
values drawn from expressions both engines read the same way, the table
named bare or as ``session.t`` / ``system.session.t``; plus statements that
fail on a row (Spark's ``raise_error``), INSERTs Spark refuses for the
table's shape and PARTITION inserts into a table whose values the gateway
checks, which only the gateway runs: the reference for them is the table
unchanged, and the error of one refused for the table names it as the
statement does. PARTITION inserts and overwrites, static and dynamic, come
often, so they meet empty versions (no rows yet, after a DELETE or TRUNCATE).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import strategies as st

DML_RUNS = pytest.StashKey[list[str]]()
"""The random runs' lines in the session's "dml differential" summary."""
KEY_TYPE = "@K@"
"""Where a statement names the type of ``k``: it is written for each sequence's own."""
COLUMNS = f"id INT, k {KEY_TYPE}, v BIGINT, s STRING"
NAMES = ("id", "k", "v", "s")
"""The columns in declared order (Spark moves a partition column last)."""
FORMATS = ("parquet", "orc", "json", "csv")
SOURCE = "src"
QUALIFIED = ("t", "session.t", "system.session.t")
"""The names a statement may give the table: Spark 4.3 resolves a session's temporary views
by all three, and the gateway its temp tables."""
named = st.sampled_from(QUALIFIED)
WRITES = (
    "insertInto",
    "insertInto overwrite",
    "writeTo append",
    "writeTo overwrite",
    "saveAsTable append",
    "saveAsTable overwrite",
)
ALL_COLUMNS = ", ".join(NAMES)
MERGE_ON = (
    "t.id = src.id",
    "src.id = t.id",
    "src.k = t.k AND t.id = src.id",
    "t.id IS NOT DISTINCT FROM src.id",
)
"""A MERGE's join conditions: the gateway tells the table's rows in the join by the column
an equality compares (``id``, or ``k``, which may be NULL), or by a mark where none does."""
DATES = ("1969-12-31", "1970-01-01", "0001-01-01", "9999-12-31")
TIMESTAMPS = (
    "1969-12-31 23:59:59.999999",
    "1970-01-01 00:00:00",
    "1969-12-31 23:59:59.5",
    "9999-12-31 23:59:59.999999",
)
KEYS: dict[str, tuple[Callable[[int], str], str]] = {
    "INT": (str, "{}"),
    "STRING": (lambda n: f"'{'p' * (n + 1)}'", "length({})"),
    "DATE": (lambda n: f"DATE '{DATES[n]}'", "day({})"),
    "DOUBLE": (lambda n: f"{n}.5", "floor({})"),
    "TIMESTAMP": (lambda n: f"TIMESTAMP '{TIMESTAMPS[n]}'", "second({})"),
}
"""The types ``k`` is drawn from: the literal each of its values 0-3 is written as, and an
integer both engines compute from it the same way (for a ``BIGINT`` column). Dates and
timestamps are those at the epoch and the ends of their range (the session's time zone is
UTC, where Spark's TIMESTAMP literals mean what DuckDB's do). A ``DOUBLE`` partition
column's folders are named by text, so its values leave out ``-0.0``, which DuckDB takes as
``0.0`` and Spark's own files keep apart."""
STRUCT = "STRUCT"
"""A ``k`` of structs, ``STRUCT<x: BIGINT>``: drawn only for a table neither partitioned
nor csv (neither holds a struct), and written apart for each engine (``NESTED_KEYS``)."""
NESTED_KEYS: dict[str, tuple[Callable[[int], str], str, Callable[[int], str], str]] = {
    STRUCT: (
        lambda n: f"named_struct('x', CAST({n} AS BIGINT))",
        "STRUCT<x: BIGINT>",
        lambda n: "{'x': " + str(n) + "}",
        "STRUCT(x BIGINT)",
    ),
}
"""Per nested type of ``k``: its values 0-3 and its type for Spark, then for DuckDB. Spark's
``named_struct`` of a BIGINT literal has a field that cannot be NULL, which a table made by
its query once kept (and every later UPDATE, DELETE or MERGE failed, issue 45)."""
ORC_LATE_SECOND = (
    "SELECT 1 FROM t WHERE k >= TIMESTAMP '1969-12-31 23:59:59.001' AND k < TIMESTAMP "
    "'1970-01-01 00:00:00'"
)
"""Rows an orc table cannot hold (docs/temp-tables.md): a TIMESTAMP data column's values in
the last second before 1970, from its millisecond 1, which orc reads back a second late."""
_KEY_PARTS = re.compile(r"@(k|n):([^@]*)@")


def key(n: int) -> str:
    """Where a statement has the value ``n`` (0-3) of ``k``, written for its type later."""
    return f"@k:{n}@"


def key_number(column: str) -> str:
    """Where a statement has an integer computed from ``column``, a ``k`` of either table."""
    return f"@n:{column}@"


def render(sql: str, key_type: str, *, duckdb: bool = False) -> str:
    """``sql`` with the type, values and integers of ``k`` written for ``key_type``, in
    Spark's SQL or in DuckDB's."""
    if key_type in NESTED_KEYS:
        spark_literal, spark_type, duck_literal, duck_type = NESTED_KEYS[key_type]
        literal, type_name = (duck_literal, duck_type) if duckdb else (spark_literal, spark_type)
        number = "{}.x"
    else:
        literal, number = KEYS[key_type]
        type_name = key_type

    def one(found: re.Match[str]) -> str:
        kind, what = found.groups()
        return literal(int(what)) if kind == "k" else number.format(what)

    return _KEY_PARTS.sub(one, sql.replace(KEY_TYPE, type_name))


@dataclass(frozen=True)
class Statement:
    """One statement; ``duckdb`` None: only the gateway runs it, and it must fail there
    exactly when ``fails_when`` (a DuckDB query) finds a row."""

    spark: str
    duckdb: str | None
    fails_when: str | None = None
    names: str | None = None
    """For a statement that must fail: the table as the statement names it, which the first
    line of its error must show (never Spark's ``unknown``)."""
    cardinality: str | None = None
    """A DuckDB query that finds a row exactly when a MERGE must be refused for matching a
    table row with several source rows."""
    repeated: str | None = None
    """For a MERGE whose only ``WHEN MATCHED`` clause is an unconditional DELETE: a DuckDB
    query of the matches of the table's rows beyond the first of each. DuckDB counts such a
    row deleted once per match, the gateway once, as the table loses it once."""
    counts: bool = True
    """Whether both engines answer with the rows the statement changed (DuckDB's INSERT and
    CREATE answer a count, Spark's nothing or the table created)."""
    write: str | None = None
    """A DataFrame write of the rows of the query ``spark`` to ``target`` (one of
    ``WRITES``) instead of a SQL statement."""
    target: str = "t"
    overwriting: str | None = None
    """For ``writeTo(target).overwrite(condition)``: the condition, as SQL."""


@dataclass(frozen=True)
class Sequence:
    fmt: str
    partitioned: bool
    rows: tuple[str, ...]
    statements: tuple[Statement, ...]
    dynamic: bool = False
    """The session's ``spark.sql.sources.partitionOverwriteMode`` is ``dynamic``: an
    INSERT OVERWRITE of a partitioned table replaces the partitions it writes."""
    key: str = "INT"
    """The type of ``k`` (one of ``KEYS`` or ``NESTED_KEYS``)."""
    query: bool = False
    """The table is made by a CTAS of no rows whose query types ``k`` by a literal (which
    cannot be NULL, nor a struct's field), not declared."""

    @property
    def columns(self) -> str:
        """The table's columns, in DuckDB's SQL."""
        return render(COLUMNS, self.key, duckdb=True)

    @property
    def refused(self) -> str | None:
        """A DuckDB query that finds a row the table's format cannot hold (a statement that
        would leave one must fail and change nothing)."""
        if self.fmt == "orc" and not self.partitioned and self.key == "TIMESTAMP":
            return ORC_LATE_SECOND
        return None

    def create(self) -> str:
        """The table's CREATE, in Spark's SQL."""
        head = f"CREATE TEMPORARY TABLE t{{}} USING {self.fmt}{_partitioning(self.partitioned)}"
        if not self.query:
            return head.format(f" ({render(COLUMNS, self.key)})")
        typed = key(0) if self.key in NESTED_KEYS else f"CAST({key(0)} AS {KEY_TYPE})"
        query = (
            f"SELECT CAST(NULL AS INT) AS id, {typed} AS k, CAST(NULL AS BIGINT) AS v, "
            "CAST(NULL AS STRING) AS s WHERE FALSE"
        )
        return render(f"{head.format('')} AS {query}", self.key)

    def filling(self) -> Statement | None:
        """The INSERT of the sequence's first rows, for both engines."""
        if not self.rows:
            return None
        insert = f"INSERT INTO t ({', '.join(NAMES)}) VALUES {', '.join(self.rows)}"
        return Statement(
            render(insert, self.key), render(insert, self.key, duckdb=True), counts=False
        )

    def rendered(self) -> Sequence:
        """The sequence with each statement's ``k`` written for its type, in the SQL of the
        engine that runs it (its rows stay as drawn: ``filling`` writes them)."""

        def text(sql: str | None, duckdb: bool = True) -> str | None:
            return None if sql is None else render(sql, self.key, duckdb=duckdb)

        statements = tuple(
            dataclasses.replace(
                s,
                spark=render(s.spark, self.key),
                duckdb=text(s.duckdb),
                fails_when=text(s.fails_when),
                cardinality=text(s.cardinality),
                repeated=text(s.repeated),
                overwriting=text(s.overwriting, duckdb=False),
            )
            for s in self.statements
        )
        return dataclasses.replace(self, statements=statements)


def _partitioning(partitioned: bool) -> str:
    return " PARTITIONED BY (k)" if partitioned else ""


small = st.integers(-3, 12)
letters = st.sampled_from(["a", "b", "c", "zz"])


def _maybe(values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.just("NULL"), values)


@st.composite
def row(draw: st.DrawFn) -> str:
    ident = draw(st.integers(0, 8))
    k = draw(_maybe(st.integers(0, 3).map(key)))
    v = draw(_maybe(small.map(str)))
    s = draw(_maybe(letters.map(lambda c: f"'{c}'")))
    return f"({ident}, CAST({k} AS {KEY_TYPE}), CAST({v} AS BIGINT), CAST({s} AS STRING))"


def _atom(prefix: str) -> st.SearchStrategy[str]:
    return st.one_of(
        small.map(lambda n: f"{prefix}v > {n}"),
        st.integers(0, 3).map(lambda n: f"{prefix}k = {key(n)}"),
        letters.map(lambda c: f"{prefix}s = '{c}'"),
        st.just(f"{prefix}v IS NULL"),
        st.just(f"{prefix}s IS NOT NULL"),
        st.just(f"{prefix}id % 2 = 0"),
        st.just(f"{prefix}k IN ({key(0)}, {key(1)})"),
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
        st.just(key_number(f"{prefix}k")),
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
    return st.one_of(st.just("NULL"), st.integers(0, 3).map(key), st.just(f"{prefix}k"))


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
    values = f"({ALL_COLUMNS}) VALUES {', '.join(rows)}"
    return Statement(f"INSERT INTO {draw(named)} {values}", f"INSERT INTO t {values}", counts=False)


@st.composite
def delete(draw: st.DrawFn) -> Statement:
    where = _where(draw)
    return Statement(f"DELETE FROM {draw(named)}{where}", f"DELETE FROM t{where}")


@st.composite
def update(draw: st.DrawFn) -> Statement:
    change = f"SET {draw(assignments())}{_where(draw)}"
    return Statement(f"UPDATE {draw(named)} {change}", f"UPDATE t {change}")


@st.composite
def truncate(draw: st.DrawFn) -> Statement:
    return Statement(f"TRUNCATE TABLE {draw(named)}", "TRUNCATE t")


def _led(draw: st.DrawFn, insert: str, columns: str, where: str) -> str:
    """``insert`` (``INSERT INTO|OVERWRITE ... (columns)``) of ``columns`` of the table's
    rows ``where`` holds: as usually written, led by WITH, or led by Hive's FROM."""
    lead = draw(st.sampled_from(["", "WITH", "FROM"]))
    if lead == "WITH":
        return f"WITH n AS (SELECT {columns} FROM t{where}) {insert} SELECT * FROM n"
    if lead == "FROM":
        return f"FROM t {insert} SELECT {columns}{where}"
    return f"{insert} SELECT {columns} FROM t{where}"


@st.composite
def copy(draw: st.DrawFn) -> Statement:
    """An INSERT of rows the table itself holds."""
    where = _where(draw)
    return Statement(
        _led(draw, f"INSERT INTO {draw(named)} ({ALL_COLUMNS})", ALL_COLUMNS, where),
        f"INSERT INTO t ({ALL_COLUMNS}) SELECT {ALL_COLUMNS} FROM t{where}",
        counts=False,
    )


def overwrite(by_partition: bool) -> st.SearchStrategy[Statement]:
    """INSERT OVERWRITE with values, or with rows of the table itself."""

    @st.composite
    def overwritten(draw: st.DrawFn) -> Statement:
        head = f"INSERT OVERWRITE {draw(st.sampled_from(['', 'TABLE ']))}{draw(named)} ({ALL_COLUMNS})"
        if draw(st.booleans()):
            values = f"VALUES {', '.join(draw(st.lists(row(), min_size=1, max_size=4)))}"
            new = f"SELECT * FROM ({values}) AS {SOURCE}({ALL_COLUMNS})"
            return Statement(f"{head} {values}", _overwritten(new, by_partition), counts=False)
        where = _where(draw)
        query = f"SELECT {ALL_COLUMNS} FROM t{where}"
        led = _led(draw, head, ALL_COLUMNS, where)
        return Statement(led, _overwritten(query, by_partition), counts=False)

    return overwritten()


def _overwritten(new: str, by_partition: bool) -> str:
    """DuckDB's statement for an overwrite of the table by the rows of the query ``new``:
    of all its rows, or (Spark's dynamic partition overwrite) of those in the partitions
    the new rows fall in."""
    kept = (
        "NOT EXISTS (SELECT 1 FROM n WHERE n.k IS NOT DISTINCT FROM t.k)" if by_partition else "FALSE"
    )
    return (
        f"CREATE OR REPLACE TEMPORARY TABLE t AS WITH n AS ({new}) SELECT {ALL_COLUMNS} FROM t "
        f"WHERE {kept} UNION ALL SELECT {ALL_COLUMNS} FROM n"
    )


def replace(fmt: str, partitioned: bool) -> st.SearchStrategy[Statement]:
    """CREATE OR REPLACE of the table from its own rows, in its format and partitioning."""

    @st.composite
    def replaced(draw: st.DrawFn) -> Statement:
        query = f"SELECT {ALL_COLUMNS} FROM t{_where(draw)}"
        return Statement(
            f"CREATE OR REPLACE TEMPORARY TABLE {draw(named)} USING {fmt}"
            f"{_partitioning(partitioned)} AS {query}",
            f"CREATE OR REPLACE TEMPORARY TABLE t AS {query}",
            counts=False,
        )

    return replaced()


def dataframe_write(by_partition: bool) -> st.SearchStrategy[Statement]:
    """A DataFrame write of some rows to the table's name."""

    @st.composite
    def written(draw: st.DrawFn) -> Statement:
        values = f"VALUES {', '.join(draw(st.lists(row(), min_size=1, max_size=4)))}"
        rows = f"SELECT * FROM ({values}) AS {SOURCE}({ALL_COLUMNS})"
        how = draw(st.sampled_from(WRITES))
        appended = f"INSERT INTO t ({ALL_COLUMNS}) {values}"
        overwriting = draw(condition()) if how == "writeTo overwrite" else None
        reference = {
            "insertInto overwrite": _overwritten(rows, by_partition),
            "saveAsTable overwrite": _overwritten(rows, False),
            "writeTo overwrite": f"DELETE FROM t WHERE {overwriting}; {appended}",
        }.get(how, appended)
        return Statement(
            rows, reference, counts=False, write=how, target=draw(named), overwriting=overwriting
        )

    return written()


def failing(fmt: str, partitioned: bool) -> st.SearchStrategy[Statement]:
    """A change that fails on the row with one id: an UPDATE, an INSERT OVERWRITE or a
    CREATE OR REPLACE of the table from its own rows (in its format and partitioning, which
    it keeps when no row has that id)."""

    @st.composite
    def fails(draw: st.DrawFn) -> Statement:
        ident = draw(st.integers(0, 8))
        value = (
            f"CASE WHEN id = {ident} THEN CAST(raise_error('refused on purpose') AS BIGINT) "
            "ELSE v END"
        )
        changed = f"id, k, {value} AS v, s"
        rows = f"SELECT {changed} FROM t"
        sql = draw(
            st.sampled_from(
                [
                    f"UPDATE {draw(named)} SET v = {value}",
                    _led(draw, f"INSERT OVERWRITE {draw(named)} ({ALL_COLUMNS})", changed, ""),
                    f"CREATE OR REPLACE TEMPORARY TABLE {draw(named)} USING {fmt}"
                    f"{_partitioning(partitioned)} AS {rows}",
                ]
            )
        )
        return Statement(sql, None, fails_when=f"SELECT 1 FROM t WHERE id = {ident}")

    return fails()


@st.composite
def merge(draw: st.DrawFn) -> Statement:
    rows = draw(st.lists(row(), min_size=1, max_size=4))
    source = f"(SELECT * FROM (VALUES {', '.join(rows)}) AS {SOURCE}(id, k, v, s))"
    on = draw(st.sampled_from(MERGE_ON))
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
    target = f"{draw(named)}{draw(st.sampled_from(['', ' AS t', ' t']))}"
    rest = f"USING {source} AS {SOURCE} ON {on} {' '.join(clauses)}"
    checked = bool(matched) and not (len(matched) == 1 and clauses[0] == "WHEN MATCHED THEN DELETE")
    matches = f"SELECT count(*) AS n FROM t JOIN {source} AS {SOURCE} ON {on} GROUP BY t.rowid"
    cardinality = f"SELECT 1 FROM ({matches}) WHERE n > 1" if checked else None
    repeated = f"SELECT coalesce(sum(n - 1), 0) FROM ({matches})" if matched and not checked else None
    return Statement(
        f"MERGE INTO {target} {rest}",
        f"MERGE INTO t {rest}",
        cardinality=cardinality,
        repeated=repeated,
    )


def shown(name: str) -> str:
    """A table name as Spark shows it in an error: each part quoted."""
    return ".".join(f"`{part}`" for part in name.split("."))


@st.composite
def _data_row(draw: st.DrawFn, *, with_key: bool) -> str:
    """A row of the columns a PARTITION clause leaves to the query: ``id, v, s`` (and ``k``
    for a dynamic partition)."""
    ident = draw(st.integers(0, 8))
    v = draw(_maybe(small.map(str)))
    s = draw(_maybe(letters.map(lambda c: f"'{c}'")))
    k = f", CAST({draw(_maybe(st.integers(0, 3).map(key)))} AS {KEY_TYPE})" if with_key else ""
    return f"({ident}, CAST({v} AS BIGINT), CAST({s} AS STRING){k})"


def partition_insert(checked: bool, by_partition: bool) -> st.SearchStrategy[Statement]:
    """``INSERT INTO|OVERWRITE t PARTITION (k = value)`` or ``PARTITION (k)`` with values:
    Spark's own statement on the table's view. Into a table whose values the gateway checks
    (``checked``) it is refused, naming the table (docs/temp-tables.md)."""

    @st.composite
    def inserted(draw: st.DrawFn) -> Statement:
        name = draw(named)
        static = draw(st.booleans())
        value = key(draw(st.integers(0, 3)))
        spec = f"k = {value}" if static else "k"
        rows = draw(st.lists(_data_row(with_key=not static), min_size=1, max_size=3))
        into = draw(st.sampled_from(["INTO", "INTO TABLE", "OVERWRITE", "OVERWRITE TABLE"]))
        sql = f"INSERT {into} {name} PARTITION ({spec}) VALUES {', '.join(rows)}"
        if checked:
            return Statement(sql, None, fails_when="SELECT 1", names=name)
        given = "id, v, s" + ("" if static else ", k")
        new = f"SELECT * FROM (VALUES {', '.join(rows)}) AS {SOURCE}({given})"
        if static:
            new = f"SELECT id, CAST({value} AS {KEY_TYPE}) AS k, v, s FROM ({new})"
        appended = f"INSERT INTO t ({ALL_COLUMNS}) SELECT {ALL_COLUMNS} FROM ({new})"
        if not into.startswith("OVERWRITE"):
            return Statement(sql, appended, counts=False)
        if static:
            return Statement(sql, f"DELETE FROM t WHERE k = {value}; {appended}", counts=False)
        return Statement(sql, _overwritten(new, by_partition), counts=False)

    return inserted()


@st.composite
def misfit(draw: st.DrawFn) -> Statement:
    """An INSERT Spark refuses for the table's shape (too few or too many columns, a value
    of no type a column takes, a PARTITION clause naming no partition column): its error
    must name the table as the statement does."""
    name = draw(named)
    sql = draw(
        st.sampled_from(
            [
                f"INSERT INTO {name} VALUES (1, 2)",
                f"INSERT INTO {name} SELECT 1, 2, 3, 4, 5",
                f"INSERT INTO {name} ({ALL_COLUMNS}) SELECT 1, CAST(NULL AS {KEY_TYPE}), "
                "array(1), 'a'",
                f"INSERT INTO {name} PARTITION (v = 1) VALUES (1, {key(0)}, 'a')",
            ]
        )
    )
    return Statement(sql, None, fails_when="SELECT 1", names=name)


def emptying(fmt: str, partitioned: bool) -> st.SearchStrategy[Statement]:
    """A statement that leaves the table no rows: a DELETE of all, TRUNCATE, or a CREATE OR
    REPLACE of none (in the table's format and partitioning)."""
    return st.one_of(
        named.map(lambda name: Statement(f"DELETE FROM {name}", "DELETE FROM t")),
        named.map(lambda name: Statement(f"TRUNCATE TABLE {name}", "TRUNCATE t")),
        named.map(
            lambda name: Statement(
                f"CREATE OR REPLACE TEMPORARY TABLE {name} USING {fmt}"
                f"{_partitioning(partitioned)} AS SELECT {ALL_COLUMNS} FROM t WHERE FALSE",
                f"CREATE OR REPLACE TEMPORARY TABLE t AS SELECT {ALL_COLUMNS} FROM t WHERE FALSE",
                counts=False,
            )
        ),
    )


def _checked(fmt: str, key_type: str) -> bool:
    """Whether the gateway checks the values of a partitioned table's INSERTs (its string
    columns in json or csv, a string partition column): it refuses PARTITION inserts."""
    return fmt in ("json", "csv") or key_type == "STRING"


def statement(
    fmt: str, partitioned: bool, dynamic: bool, key_type: str
) -> st.SearchStrategy[Statement]:
    by_partition = partitioned and dynamic
    choices = [
        insert(),
        delete(),
        update(),
        merge(),
        merge(),
        truncate(),
        failing(fmt, partitioned),
        copy(),
        overwrite(by_partition),
        replace(fmt, partitioned),
        dataframe_write(by_partition),
        misfit(),
    ]
    if partitioned:
        choices += [partition_insert(_checked(fmt, key_type), by_partition)] * 2
    return st.one_of(*choices)


@st.composite
def sequences(draw: st.DrawFn) -> Sequence:
    fmt = draw(st.sampled_from(FORMATS))
    partitioned = draw(st.booleans())
    dynamic = draw(st.booleans())
    key_type = draw(st.sampled_from(list(KEYS)))
    rows = tuple(draw(st.lists(row(), max_size=6)))
    statements = draw(
        st.lists(statement(fmt, partitioned, dynamic, key_type), min_size=1, max_size=6)
    )
    if partitioned and draw(st.booleans()):
        # An empty version met by a PARTITION insert, the first statement or after one
        # that empties the table.
        at = draw(st.integers(0, len(statements)))
        inserted = partition_insert(_checked(fmt, key_type), dynamic)
        lead = draw(st.none() | emptying(fmt, partitioned))
        met = [draw(inserted)] if lead is None else [lead, draw(inserted)]
        statements[at:at] = met
    # Drawn last, so that the draws before them stay those of a given seed.
    query = draw(st.integers(0, 3)) == 0
    if not partitioned and fmt != "csv" and draw(st.integers(0, 3)) == 0:
        key_type = STRUCT
    return Sequence(
        fmt=fmt,
        partitioned=partitioned,
        rows=rows,
        statements=tuple(statements),
        dynamic=dynamic,
        key=key_type,
        query=query,
    )
