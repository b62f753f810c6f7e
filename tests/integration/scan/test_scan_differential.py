"""Differential test of scans: random data sets and query sequences against Spark and DuckDB.

A case is a data set (``tests/scan_differential/datasets.py``: json lines,
arrays and documents, csv with and without a header, parquet; hive or
``dirN`` folders; drifting columns; bad records; every ``on_error``, rescue;
gzip; and what users write beyond what the scan expects: names in any case,
keys that give a column two values, data columns named like implicit ones,
byte order marks, integers past 2^53, lists with nulls, type clashes) and a
sequence of steps on ONE scan of it (``queries.py``): filters on partition,
file and data columns, then none; counts, groups, distinct, limits, unions
of differently filtered copies, self-joins, ``cache``/``unpersist``, a new
scan with the same arguments, and a file deleted or added between queries. ``test_sequences[frame]`` runs the steps on
one ``connect_plugin.scan`` DataFrame, ``test_sequences[view]`` on one
``CREATE TEMPORARY VIEW ... USING scan`` view. Each answer is compared
with the same query over ``spark.read`` and over DuckDB's readers of the
same files (``references.py``), and a query that has to read a bad
record under ``on_error="fail"`` must fail, whatever it is (``count()``
included).

Deliberate differences, never compared:
- types: numbers are compared as values (the scan widens whole numbers to
  bigint and int to double across files, Spark types hive keys as int):
  whole numbers exactly, other floats to 12 significant digits; csv is
  read as text by all three, since the scan keeps csv fields as strings;
- names: ``dirN`` and the implicit columns (``filename``, ``filepath``,
  ``fqn``, ``suffix``) are derived in the reference queries from each
  reader's file path; DuckDB's columns for the spellings of one key are
  made one; the scan's column order is not compared, only its set of
  columns (by name) and the rows as multisets;
- bad records of the scan that are good json to DuckDB (a key given twice
  in two cases, text in a number column) are dropped or nulled in its view
  by their ids, as the scan's policy says;
- a ``limit`` is compared by size and as a part of the unlimited rows;
- where a reference cannot say what the scan says (listed in
  ``references.py``), only the other one is asked.

The default run spends ``budget.DEFAULT_SECONDS`` between the two
generative tests, derandomized; ``--scan-fuzz-seconds N`` spends N seconds
on fresh cases and lists every kind of disagreement it found. Each find
is kept below as a fixed case (``FINDS``), run in every run.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

from tests.scan_differential import budget
from tests.scan_differential.datasets import BadRecord, DataFile, DataSet
from tests.scan_differential.driver import Explorer
from tests.scan_differential.queries import (
    Both,
    Change,
    Count,
    Distinct,
    GroupCount,
    Limit,
    Pred,
    Rows,
    SelfJoin,
    Union,
    cases,
)
from tests.scan_differential.runner import Case, Disagreement, run_case

GENERATIVE_TESTS = 2


@pytest.fixture(scope="module")
def connection() -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB in-process, on one thread: the machine's cores belong to Spark."""
    with duckdb.connect(config={"threads": 1}) as connection:
        yield connection


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh folder per case, so no scan sees another case's files or cached plan."""
    base = tmp_path_factory.mktemp("differential")
    return (base / f"case{n}" for n in itertools.count())


@pytest.mark.parametrize("route", ["frame", "view"])
def test_sequences(
    route: str,
    request: pytest.FixtureRequest,
    spark: SparkSession,
    connection: duckdb.DuckDBPyConnection,
    roots: Iterator[Path],
) -> None:
    config = request.config
    stats = budget.RouteStats(f"{route} sequences")
    config.stash.setdefault(budget.STATS, []).append(stats)
    explorer = Explorer(
        stats,
        budget.total_seconds(config) / GENERATIVE_TESTS,
        long_run=budget.requested_seconds(config) is not None,
        run=lambda case: run_case(case, route, next(roots), spark, connection),
    )
    try:
        explorer.explore(cases())
    except Exception as error:
        for found in explorer.finds.values():
            error.add_note(f"found before this error:\n{found}")
        raise
    if explorer.finds:
        pytest.fail("\n\n".join(str(found) for found in explorer.finds.values()), pytrace=False)


def _hive_json(months: int, rows: int) -> tuple[DataFile, ...]:
    return tuple(
        DataFile(
            (f"month={m}",),
            "part0",
            ("id", "name"),
            tuple((m * 100 + i, f"n{i}") for i in range(rows)),
        )
        for m in range(1, months + 1)
    )


def _two_folders() -> DataSet:
    """json lines in folders a (ids 1, 2) and b (id 3)."""
    return DataSet(
        "json",
        "lines",
        "dirs",
        (
            DataFile(("a",), "part0", ("id",), ((1,), (2,))),
            DataFile(("b",), "part1", ("id",), ((3,),)),
        ),
    )


def _months_changed() -> tuple[Change, Change]:
    """The first file (the only one with qty) goes; a file with extra comes to month=4."""
    added = DataFile(("month=4",), "added0", ("id", "extra"), ((2000, "e"),))
    return Change(delete=0), Change(add=added)


def _months(rescue: bool = False) -> DataSet:
    """month=3 with id and qty, month=4 with id and name."""
    return DataSet(
        "json",
        "lines",
        "hive",
        (
            DataFile(("month=3",), "part0", ("id", "qty"), ((1, 5),)),
            DataFile(("month=4",), "part1", ("id", "name"), ((2, "b"),)),
        ),
        rescue=rescue,
    )


FINDS: dict[str, tuple[str, Case]] = {
    "a pruned query after the files changed has the DataFrame's columns (issue 44, find 5)": (
        "frame",
        Case(
            _months(),
            (
                *_months_changed(),
                Rows((Pred("month", "=", 4),)),
                Count((Pred("month", "=", 4),)),
                Rows((Pred("month", "=", 3),)),
                Count((Pred("month", "=", 3),)),
                Count(),
            ),
        ),
    ),
    "a filter on the gone file's column under rescue, pruned (issue 44, find 5)": (
        "frame",
        Case(
            _months(rescue=True),
            (*_months_changed(), Rows((Pred("month", "=", 4), Pred("qty", "is null")))),
        ),
    ),
    "a hive filter sticks to the next groupBy (issue 23)": (
        "frame",
        Case(
            DataSet("json", "lines", "hive", _hive_json(4, 3)),
            (GroupCount("month"), Count((Pred("month", "=", 3),)), GroupCount("month")),
        ),
    ),
    "a hive filter sticks to the next count of a view (issue 23)": (
        "view",
        Case(
            DataSet("json", "lines", "hive", _hive_json(4, 3)),
            (Count((Pred("month", "=", 2),)), Count()),
        ),
    ),
    "a dir0 filter sticks to the next rows (issue 23)": (
        "frame",
        Case(
            _two_folders(),
            (Rows((Pred("dir0", "=", "a"),)), Rows()),
        ),
    ),
    "a self-join after a filter keeps every row (issue 23)": (
        "frame",
        Case(
            DataSet("json", "lines", "hive", _hive_json(2, 2)),
            (Rows((Pred("month", "=", 1),)), SelfJoin("month", (), ())),
        ),
    ),
    "a union after a filter on suffix loses every row (4-min run)": (
        "view",
        Case(
            DataSet(
                "parquet",
                "parquet",
                "hive",
                (DataFile(("month=b",), "part0", ("id", "qty"), ((0, None), (1, 2))),),
                projection=("suffix", "id"),
            ),
            (Distinct(("suffix",), (Pred("suffix", "<>", "parquet"),)), Union((), ())),
        ),
    ),
    "count() of json with a malformed line under fail succeeds (issue 23)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (DataFile((), "part0", ("id",), ((1,), (2,)), (BadRecord(1, "garbage", 1000),)),),
            ),
            (Count(),),
        ),
    ),
    "a short csv row is no bad record: skip keeps it (issue 23)": (
        "frame",
        Case(
            DataSet(
                "csv",
                "header",
                "dirs",
                (
                    DataFile(
                        (), "part0", ("id", "name"), ((1, "a"),), (BadRecord(1, "short", 1000),)
                    ),
                ),
                on_error="skip",
            ),
            (Count(), Rows()),
        ),
    ),
    "a csv file with a short row reads empty fields as '' despite nullValue '' (10-min run)": (
        "view",
        Case(
            DataSet(
                "csv",
                "header",
                "hive",
                (
                    DataFile(
                        ("month=1",),
                        "part0",
                        ("id", "qty"),
                        ((0, None), (1, 7)),
                        (BadRecord(0, "short", 1000),),
                    ),
                ),
                on_error="null",
            ),
            (GroupCount("qty"),),
        ),
    ),
    "count() of csv with a short row under null fails while reading pads it (10-min run)": (
        "frame",
        Case(
            DataSet(
                "csv",
                "header",
                "dirs",
                (DataFile((), "part0", ("id", "qty"), (), (BadRecord(0, "short", 1000),)),),
                on_error="null",
                projection=("id",),
            ),
            (Rows(), Count()),
        ),
    ),
    "a limit under fail returns a short csv row of a bad file (10-min run)": (
        "frame",
        Case(
            DataSet(
                "csv",
                "header",
                "hive",
                (
                    DataFile(("month=3",), "part0", ("id", "qty"), ((0, 1),)),
                    DataFile(
                        ("month=1",), "part1", ("id", "qty"), (), (BadRecord(0, "short", 1001),)
                    ),
                ),
            ),
            (Count((Pred("month", "=", 3),)), Limit(1, (Pred("month", "=", 1),))),
        ),
    ),
    "a json file of broken lines only is read as lines, not as one document (600 s run)": (
        "view",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (
                    DataFile((), "part0", ("id", "qty"), ((0, None), (1, None))),
                    DataFile(
                        (),
                        "part1",
                        ("id", "qty"),
                        (),
                        (BadRecord(0, "truncated", 1003), BadRecord(0, "truncated", 1004)),
                    ),
                ),
                on_error="null",
            ),
            (Rows(), Rows()),
        ),
    ),
    "files without a record or a partition, a named column (600 s run of the harness)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (DataFile((), "part0", ("id",), ()),),
                projection=("id",),
            ),
            (Rows(), Rows(), Count()),
        ),
    ),
    "NOT over a dir0 test AND a data test prunes the folder it names (review)": (
        "frame",
        Case(
            _two_folders(),
            (Rows((Both(Pred("dir0", "=", "a"), Pred("id", "=", 1)),)),),
        ),
    ),
    "keys of one file in two cases are one column (issue 44, finding 2)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (DataFile((), "part0", ("id", "qty"), ((0, 8), (1, 7)), respelled=(1,)),),
            ),
            (Rows(), Count()),
        ),
    ),
    "a record giving name two values, under null (issue 44, finding 2)": (
        "view",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (
                    DataFile(
                        (), "part0", ("id", "name"), ((0, "a"),), (BadRecord(1, "twin", 1001),)
                    ),
                ),
                on_error="null",
            ),
            (Rows(),),
        ),
    ),
    "a data column dir0 is not the folder, named or not (issue 44, finding 3)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (DataFile(("x", "y"), "part0", ("id", "dir0"), ((0, "mine"),)),),
                projection=("id", "DIR0", "dir1"),
            ),
            (Rows(),),
        ),
    ),
    "a csv header with a UTF-8 byte order mark (issue 44, finding 4)": (
        "view",
        Case(
            DataSet(
                "csv",
                "header",
                "dirs",
                (DataFile((), "part0", ("id", "name"), ((0, "a"),), mark="utf-8"),),
            ),
            (Rows(), Count()),
        ),
    ),
    "rescued lists keep their nulls (issue 44, finding 5)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (
                    DataFile((), "part0", ("id",), ((0,),)),
                    DataFile(
                        (), "part1", ("id", "tags"), ((1, [None, 17]), (2, [5, 13]), (3, [7]))
                    ),
                ),
                rescue=True,
            ),
            (Rows(),),
        ),
    ),
    "parquet integers past 2^53 widened to double (issue 44, finding 6)": (
        "frame",
        Case(
            DataSet(
                "parquet",
                "parquet",
                "dirs",
                (
                    DataFile((), "part0", ("id", "qty"), ((0, 4025664719519337086), (1, 2))),
                    DataFile((), "part1", ("id", "qty"), ((2, 0.5),)),
                ),
            ),
            (Rows(), Count()),
        ),
    ),
    "a headerless csv record of another width, under skip (issue 44, finding 7)": (
        "frame",
        Case(
            DataSet(
                "csv",
                "headerless",
                "dirs",
                (
                    DataFile(
                        (),
                        "part0",
                        ("id", "name"),
                        ((0, "a"), (1, "b")),
                        (BadRecord(1, "short", 1002),),
                    ),
                ),
                on_error="skip",
            ),
            (Rows(), Count()),
        ),
    ),
    "text among numbers inside the sample, under null (issue 44, finding 8)": (
        "view",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (DataFile((), "part0", ("id", "qty"), ((0, 1), (1, 2), (2, "x"))),),
                on_error="null",
            ),
            (Rows(), Count()),
        ),
    ),
    "a count of no column judges a malformed line under fail (issue 44, finding 9)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (DataFile((), "part0", ("id",), ((0,), (1,)), (BadRecord(1, "garbage", 1002),)),),
                projection=(),
            ),
            (Count(),),
        ),
    ),
    "a file deleted after planning is read by no query (issue 44, finding 9)": (
        "frame",
        Case(
            _two_folders(),
            (Count(), Change(delete=1), Rows(), Count(), Count((Pred("id", ">=", 0),))),
        ),
    ),
    "qty in two cases, a number under one and text under the other (20-min run, issue 44)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "hive",
                (
                    DataFile(
                        ("month=1",),
                        "part0",
                        ("id", "qty", "name", "ok", "filename"),
                        ((0, 0, None, False, None), (1, "x", None, None, None)),
                        respelled=(1,),
                    ),
                ),
                sample_bytes=48,
            ),
            (
                Change(add=DataFile(("month=1",), "added0", ("id",), ((2000,),))),
                Rows(),
                Rows(),
            ),
        ),
    ),
    "qty in four cases, past 2^53 under one and text under two (20-min run, issue 44)": (
        "view",
        Case(
            DataSet(
                "json",
                "lines",
                "hive",
                (
                    DataFile(("month=1", "tag=c"), "part0", ("id",), ((0,), (1,))),
                    DataFile(
                        ("month=1", "tag=a"),
                        "part1",
                        ("id", "extra", "tags", "qty", "name"),
                        (
                            (2, None, [1], -9_007_199_254_740_993, None),
                            (3, "x,y", [], "x", None),
                            (4, None, [9_007_199_254_740_993], None, "é"),
                            (5, None, [None], -3, ""),
                            (6, "x,y", [1, 1], 0, "a"),
                            (7, None, None, None, "a"),
                        ),
                        spellings=("Id", "Extra", "tags", "qty", "NAME"),
                        respelled=(1,),
                    ),
                    DataFile(
                        ("month=1", "tag=a"),
                        "part2",
                        ("id", "qty", "tags", "name"),
                        (
                            (8, 4_025_664_719_519_337_086, [1], None),
                            (9, "x", None, None),
                            (10, None, [], None),
                            (11, None, [], ""),
                        ),
                        spellings=("Id", "Qty", "TAGS", "name"),
                        respelled=(2, 3),
                    ),
                    DataFile(
                        ("month=1", "tag=a"),
                        "part3",
                        ("id", "name", "extra"),
                        ((12, None, None), (13, None, None), (14, None, None)),
                        (BadRecord(2, "twin", 1015), BadRecord(2, "twin", 1016)),
                        respelled=(2,),
                    ),
                    DataFile(
                        ("month=1", "tag=a"),
                        "part4",
                        ("id", "extra"),
                        (),
                        spellings=("Id", "extra"),
                    ),
                ),
                gzip=True,
                projection=("Id", "Extra", "FILENAME", "Name", "qty", "tag"),
                marker=True,
                sample_bytes=48,
            ),
            (
                Limit(4),
                Distinct(("qty", "Extra")),
                Rows((Pred("FILENAME", "=", "part4.json.gz"),)),
            ),
        ),
    ),
    "headerless csv files, all in UTF-16 (20-min run, issue 44)": (
        "frame",
        Case(
            DataSet(
                "csv",
                "headerless",
                "dirs",
                (DataFile((), "part0", ("id", "name"), ((0, "a"),), mark="utf-16"),),
            ),
            (Rows(), Count()),
        ),
    ),
    "a headerless csv file without records left alone (20-min run, issue 44)": (
        "view",
        Case(
            DataSet(
                "csv",
                "headerless",
                "dirs",
                (
                    DataFile((), "part0", ("id", "qty", "name", "ok"), ((0, 1, "a", True),)),
                    DataFile(("2023",), "part1", ("id", "qty", "name", "ok"), ()),
                ),
                empty_is_null=False,
            ),
            (Change(delete=0), Rows(), Rows()),
        ),
    ),
    "NOT over dir0 IN (NULL) passes no file: no bad record need fail it (20-min run, issue 44)": (
        "frame",
        Case(
            DataSet(
                "json",
                "lines",
                "dirs",
                (
                    DataFile(("2023",), "part0", ("id", "qty"), ((0, 0), (1, None))),
                    DataFile(
                        ("2023", "2023"),
                        "part1",
                        ("id", "qty"),
                        ((5, 0), (6, 7)),
                        (BadRecord(1, "garbage", 1009), BadRecord(0, "truncated", 1010)),
                    ),
                ),
                gzip=True,
            ),
            (Rows((Pred("dir0", "in", (None,), negated=True),)), Count()),
        ),
    ),
    "json tags lists, a spelling of them only empty or null (20-min run, issue 44)": (
        "frame",
        Case(
            DataSet(
                "json",
                "array",
                "dirs",
                (
                    DataFile(("2023",), "part0", ("id", "tags"), ((1, [1]),)),
                    DataFile(
                        (),
                        "part1",
                        ("id", "tags"),
                        ((7, [1]), (8, []), (9, None), (10, [])),
                        spellings=("Id", "tags"),
                        respelled=(1, 2),
                    ),
                ),
                gzip=True,
                projection=("Tags", "ID", "DIR0"),
            ),
            (Rows(), Union((Pred("ID", "is not null"),), (Pred("DIR0", "in", (None,)),))),
        ),
    ),
    "a named column of headerless csv is refused while planning (20-min run, issue 44)": (
        "view",
        Case(
            DataSet(
                "csv",
                "headerless",
                "hive",
                (DataFile(("month=1",), "part0", ("id", "qty"), ((0, None), (1, 7))),),
                gzip=True,
                projection=("suffix", "Columns[0]", "month", "ghost"),
            ),
            (Rows(), Count()),
        ),
    ),
    "a data column named filename, its only file deleted after planning (20-min run, issue 44)": (
        "frame",
        Case(
            DataSet(
                "json",
                "array",
                "dirs",
                (
                    DataFile(
                        (), "part0", ("id", "qty", "ok", "filename"), ((0, None, None, None),)
                    ),
                    DataFile((), "part1", ("id", "tags"), ((1, None),)),
                ),
            ),
            (Change(delete=0), Rows(), Rows()),
        ),
    ),
    "a column only null when planned, then a file with a boolean in it: text (20-min run, issue 44)": (
        "frame",
        Case(
            data_set=DataSet(
                format="json",
                layout="array",
                partitioning="hive",
                files=(
                    DataFile(
                        folders=("month=1", "tag=a"),
                        stem="part0",
                        columns=("id", "qty", "name", "ok"),
                        rows=((0, None, None, None),),
                        bad=(),
                        spellings=("id", "qty", "name", "ok"),
                        respelled=(),
                        mark="",
                    ),
                    DataFile(
                        folders=("month=1", "tag=a"),
                        stem="part1",
                        columns=("id", "qty", "name", "ok"),
                        rows=(),
                        bad=(),
                        spellings=("id", "qty", "name", "ok"),
                        respelled=(),
                        mark="",
                    ),
                    DataFile(
                        folders=("month=1", "tag=a"),
                        stem="part2",
                        columns=("id", "qty", "name", "ok"),
                        rows=(),
                        bad=(),
                        spellings=("id", "qty", "name", "ok"),
                        respelled=(),
                        mark="",
                    ),
                ),
                on_error="fail",
                gzip=False,
                projection=None,
                empty_is_null=True,
                marker=False,
                extra_options=(),
                rescue=False,
                sample_bytes=None,
            ),
            steps=(
                Change(
                    delete=None,
                    add=DataFile(
                        folders=("month=1", "tag=a"),
                        stem="added0",
                        columns=("id", "ok", "extra"),
                        rows=((2000, False, None),),
                        bad=(),
                        spellings=(),
                        respelled=(),
                        mark="",
                    ),
                ),
                Rows(where=()),
                Rows(where=()),
            ),
        ),
    ),
    "a spelling with a Kelvin sign, then a token of the name's length (20-min run, issue 44)": (
        "view",
        Case(
            data_set=DataSet(
                format="json",
                layout="lines",
                partitioning="hive",
                files=(
                    DataFile(
                        folders=("month=1", "tag=c"),
                        stem="part0",
                        columns=("id", "qty", "name", "ok", "dir0"),
                        rows=((0, None, None, None, None),),
                        bad=(),
                        spellings=("Id", "qty", "name", "Ok", "dir0"),
                        respelled=(),
                        mark="",
                    ),
                    DataFile(
                        folders=("month=1", "tag=a"),
                        stem="part1",
                        columns=("id", "qty", "name", "ok", "dir0"),
                        rows=((1, 0, None, None, None), (2, None, None, None, None)),
                        bad=(),
                        spellings=("Id", "qty", "name", "o\u212a", "dir0"),
                        respelled=(),
                        mark="",
                    ),
                    DataFile(
                        folders=("month=1", "tag=a"),
                        stem="part2",
                        columns=("id", "qty", "name", "ok", "dir0"),
                        rows=(
                            (3, None, None, None, None),
                            (4, None, None, None, None),
                            (5, None, None, None, None),
                            (6, None, None, None, None),
                        ),
                        bad=(BadRecord(position=0, kind="truncated", id=1007),),
                        spellings=("id", "qty", "name", "ok", "dir0"),
                        respelled=(1,),
                        mark="",
                    ),
                    DataFile(
                        folders=("month=1", "tag=a"),
                        stem="part3",
                        columns=("id", "qty", "name", "ok", "dir0"),
                        rows=(),
                        bad=(),
                        spellings=("id", "qty", "name", "ok", "dir0"),
                        respelled=(),
                        mark="",
                    ),
                ),
                on_error="skip",
                gzip=False,
                projection=("id", "qty", "ok", "filename", "name", "filepath"),
                empty_is_null=True,
                marker=True,
                extra_options=(),
                rescue=False,
                sample_bytes=None,
            ),
            steps=(
                Limit(n=0, where=()),
                Limit(n=5, where=(Pred(column="id", op="<>", value=0, negated=True),)),
            ),
        ),
    ),
}


@pytest.mark.parametrize("name", list(FINDS))
def test_find(
    name: str,
    spark: SparkSession,
    connection: duckdb.DuckDBPyConnection,
    roots: Iterator[Path],
) -> None:
    route, case = FINDS[name]
    try:
        run_case(case, route, next(roots), spark, connection)
    except Disagreement as found:
        pytest.fail(str(found), pytrace=False)
