"""DELETE, UPDATE, MERGE INTO and TRUNCATE on temp tables, each one atomic.

Each statement answers with the rows it changed, as Delta reports them, and
leaves the table as DuckDB leaves its own temp table after the same
statement. A statement that fails (a bad expression, a value the table
refuses, a MERGE matching one row twice) leaves the table exactly as it was
and one folder, its own. SHOW TEMPORARY TABLES counts rows right after every
change, INSERTs included.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import duckdb
import grpc
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.proto import base_pb2_grpc
from pyspark.sql.types import LongType

from connect_plugin.server.gateway import Gateway
from connect_plugin.server.statements.results import local_relation
from tests.integration.faults.gateway_process import wait_until
from tests.integration.support import pause, table_folders

ROWS = "(1, 10, 'a'), (2, 20, 'b'), (3, NULL, 'c'), (4, 40, NULL), (5, 50, 'e')"
OLD_FILES_GONE_TIMEOUT_S = 30.0
"""A read's call ends at the gateway just after its client has the answer; the files it
kept go then."""


def _rows(spark: SparkSession, name: str = "t") -> list[tuple[object, ...]]:
    return sorted((tuple(r) for r in spark.table(name).collect()), key=repr)


def _duck_rows(duck: duckdb.DuckDBPyConnection, name: str = "t") -> list[tuple[object, ...]]:
    return sorted(duck.sql(f"SELECT * FROM {name}").fetchall(), key=repr)


def _listed_rows(spark: SparkSession, name: str = "t") -> int:
    (row,) = [r for r in spark.sql("SHOW TEMPORARY TABLES").collect() if r["name"] == name]
    rows = row["rows"]
    assert isinstance(rows, int)
    return rows


@pytest.fixture
def duck() -> duckdb.DuckDBPyConnection:
    with duckdb.connect() as connection:
        connection.sql("CREATE TEMPORARY TABLE t (id INT, v INT, s VARCHAR)")
        connection.sql(f"INSERT INTO t VALUES {ROWS}")
        yield connection


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM t WHERE v > 15",
        "DELETE FROM t WHERE s = 'a' OR v IS NULL",
        "DELETE FROM t",
        "UPDATE t SET v = v * 2, s = s || '!' WHERE id >= 2",
        "UPDATE t AS x SET v = coalesce(x.v, -1)",
        "UPDATE t SET s = CASE WHEN v > 20 THEN 'big' ELSE 'small' END WHERE s IS NOT NULL",
        "TRUNCATE TABLE t",
    ],
)
def test_a_change_answers_its_count_and_leaves_the_rows_duckdb_leaves(
    spark: SparkSession,
    workspace: Path,
    duck: duckdb.DuckDBPyConnection,
    statement: str,
    fmt: str,
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE t (id INT, v INT, s STRING) USING {fmt}")
    spark.sql(f"INSERT INTO t VALUES {ROWS}")
    assert _listed_rows(spark) == 5
    (answer,) = spark.sql(statement).collect()
    (expected,) = duck.sql(statement.replace("TRUNCATE TABLE", "TRUNCATE")).fetchall()
    assert answer.asDict() == {"num_affected_rows": expected[0]}
    assert _rows(spark) == _duck_rows(duck)
    assert _listed_rows(spark) == len(_duck_rows(duck))
    assert len(table_folders(workspace, spark)) == 1


@pytest.mark.parametrize("statement", ["DELETE FROM t WHERE v > 15", "TRUNCATE TABLE t"])
def test_a_delete_right_after_an_insert_counts_the_rows_it_deleted(
    spark: SparkSession, duck: duckdb.DuckDBPyConnection, statement: str
) -> None:
    """An INSERT leaves the table's rows uncounted; a DELETE then counts what it deletes
    itself instead of taking the rows before less the rows written."""
    spark.sql("CREATE TEMPORARY TABLE t (id INT, v INT, s STRING)")
    spark.sql(f"INSERT INTO t VALUES {ROWS}")
    (answer,) = spark.sql(statement).collect()
    (expected,) = duck.sql(statement.replace("TRUNCATE TABLE", "TRUNCATE")).fetchall()
    assert answer.asDict() == {"num_affected_rows": expected[0]}
    assert _rows(spark) == _duck_rows(duck)
    assert _listed_rows(spark) == len(_duck_rows(duck))


def test_rows_whose_condition_is_null_stay(spark: SparkSession) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE t AS SELECT * FROM VALUES {ROWS} AS r(id, v, s)")
    spark.sql("DELETE FROM t WHERE v < 30")
    spark.sql("UPDATE t SET s = 'changed' WHERE v > 45")
    assert _rows(spark) == sorted(
        [(3, None, "c"), (4, 40, None), (5, 50, "changed")], key=repr
    )


MERGE = """
MERGE INTO t AS target USING (SELECT * FROM VALUES (2, 200, 'B'), (3, 300, 'C'), (4, 400, 'D'),
    (6, 600, 'F'), (7, 700, NULL) AS src(id, v, s)) AS source
ON target.id = source.id
WHEN MATCHED AND source.id = 4 THEN DELETE
WHEN MATCHED AND target.v IS NULL THEN UPDATE SET v = -source.v
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED AND source.s IS NOT NULL THEN INSERT (id, v) VALUES (source.id, source.v + 1)
WHEN NOT MATCHED BY SOURCE AND target.id = 1 THEN DELETE
WHEN NOT MATCHED BY SOURCE THEN UPDATE SET s = 'unmatched'
"""


@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_merge_applies_the_first_clause_that_holds_in_each_branch_like_duckdb(
    spark: SparkSession, workspace: Path, duck: duckdb.DuckDBPyConnection, fmt: str
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE t (id INT, v INT, s STRING) USING {fmt}")
    spark.sql(f"INSERT INTO t VALUES {ROWS}")
    (answer,) = spark.sql(MERGE).collect()
    (expected,) = duck.sql(MERGE).fetchall()
    assert answer.asDict() == {
        "num_affected_rows": expected[0],
        "num_updated_rows": 3,
        "num_deleted_rows": 2,
        "num_inserted_rows": 1,
    }
    assert _rows(spark) == _duck_rows(duck) == sorted(
        [(2, 200, "B"), (3, -300, "c"), (5, 50, "unmatched"), (6, 601, None)], key=repr
    )
    assert _listed_rows(spark) == 4
    assert len(table_folders(workspace, spark)) == 1


def test_merge_from_a_table_name_takes_its_name_as_alias(spark: SparkSession) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id, id * 10 AS v FROM range(4)")
    spark.sql("CREATE TEMPORARY TABLE changes AS SELECT id + 2 AS id, -id AS v FROM range(4)")
    (answer,) = spark.sql(
        "MERGE INTO t USING changes ON t.id = changes.id "
        "WHEN MATCHED THEN UPDATE SET t.v = changes.v WHEN NOT MATCHED THEN INSERT *"
    ).collect()
    assert tuple(answer) == (4, 2, 0, 2)
    assert _rows(spark) == [(0, 0), (1, 10), (2, 0), (3, -1), (4, -2), (5, -3)]


def test_a_merge_matching_one_row_twice_is_refused_and_changes_nothing(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id, id AS v FROM range(3)")
    spark.sql("CREATE TEMPORARY VIEW twice AS SELECT * FROM VALUES (1, 5), (1, 6) AS s(id, v)")
    before = _rows(spark)
    with pytest.raises(PySparkException) as refused:
        spark.sql("MERGE INTO t USING twice s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")
    assert refused.value.getCondition() == "MERGE_CARDINALITY_VIOLATION"
    assert "several rows of the source" in str(refused.value)
    assert _rows(spark) == before
    assert len(table_folders(workspace, spark)) == 1
    deleted = spark.sql("MERGE INTO t USING twice s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert tuple(deleted.collect()[0]) == (1, 0, 1, 0)
    assert _rows(spark) == [(0, 0), (2, 2)]


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        ("UPDATE t SET v = raise_error('no such luck') WHERE id = 2", "no such luck"),
        ("UPDATE t SET n = NULL WHERE id = 1", "declared NOT NULL"),
        ("UPDATE t SET v = 'text'", 'Column or field `v` is of type "STRING"'),
        ("UPDATE t SET v = nope", "`nope` cannot be resolved"),
        ("UPDATE t SET w = 1", "the table has no column [w]; its columns are id, v, n"),
        ("UPDATE t SET v = 1, v = 2", "column [v] is set twice"),
        ("DELETE FROM t WHERE v / 0 > 1", "DIVIDE_BY_ZERO"),
        ("DELETE FROM t WHERE", "expected a condition after WHERE"),
        ("MERGE INTO t USING t s ON t.id = s.id WHEN NOT MATCHED THEN DELETE", "takes INSERT"),
        ("TRUNCATE TABLE t PARTITION (id = 1)", "DELETE FROM t WHERE"),
        (
            "MERGE INTO t USING t s ON t.id = s.id WHEN MATCHED THEN DELETE "
            "WHEN MATCHED AND s.v > 1 THEN DELETE",
            "NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION",
        ),
    ],
)
def test_a_failing_change_leaves_the_table_as_it_was_and_no_folder(
    spark: SparkSession, workspace: Path, statement: str, said: str
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t (id INT, v INT, n STRING NOT NULL) USING orc")
    spark.sql("INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'y')")
    before = _rows(spark)
    folders = table_folders(workspace, spark)
    with pytest.raises(PySparkException, match=None) as refused:
        spark.sql(statement).collect()
    assert said in str(refused.value)
    assert _rows(spark) == before
    assert table_folders(workspace, spark) == folders
    assert _listed_rows(spark) == 2


def test_a_partitioned_table_keeps_its_partitions(spark: SparkSession, workspace: Path) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE t USING json PARTITIONED BY (k) AS "
        "SELECT id, id % 3 AS k FROM range(9)"
    )
    spark.sql("UPDATE t SET k = 7 WHERE k = 0")
    spark.sql("DELETE FROM t WHERE k = 1")
    (folder,) = table_folders(workspace, spark)
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["k=2", "k=7"]
    assert _rows(spark) == [(0, 7), (2, 2), (3, 7), (5, 2), (6, 7), (8, 2)]
    assert spark.table("t").columns == ["id", "k"]


def test_statements_on_other_tables_reach_spark_unchanged(
    spark: SparkSession, direct: SparkSession
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT 1 AS id")
    outcomes = []
    for session in (spark, direct):
        session.sql("CREATE OR REPLACE TEMPORARY VIEW plain AS SELECT 1 AS id")
        with pytest.raises(PySparkException) as refused:
            session.sql("DELETE FROM plain WHERE id = 1").collect()
        outcomes.append((type(refused.value).__name__, refused.value.getCondition()))
    assert outcomes[0] == outcomes[1]
    assert _rows(spark) == [(1,)]


def test_counts_follow_inserts_and_the_analysis_names_the_answer_columns(
    spark: SparkSession,
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t (id INT, v INT)")
    spark.sql("INSERT INTO t VALUES (1, 1), (2, 2)")
    spark.range(5).selectExpr("CAST(id AS INT)", "CAST(id AS INT)").write.insertInto("t")
    assert _listed_rows(spark) == 7
    spark.sql("INSERT OVERWRITE t VALUES (9, 9)")
    assert _listed_rows(spark) == 1
    assert spark.sql("UPDATE t SET v = 1").columns == ["num_affected_rows"]
    assert spark.sql("MERGE INTO t USING t s ON t.id = s.id WHEN MATCHED THEN DELETE").columns == [
        "num_affected_rows",
        "num_updated_rows",
        "num_deleted_rows",
        "num_inserted_rows",
    ]
    assert _listed_rows(spark) == 0


def test_a_view_replaced_behind_the_gateway_is_not_rewritten(
    spark: SparkSession, gateway: Gateway
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT 1 AS id")
    spark.sql("EXECUTE IMMEDIATE 'CREATE OR REPLACE TEMPORARY VIEW t AS SELECT 2 AS id'")
    with pytest.raises(PySparkException, match="dropped or replaced outside the gateway"):
        spark.sql("DELETE FROM t WHERE id = 2").collect()
    assert _rows(spark) == [(2,)]


def test_a_merge_without_matched_clauses_keeps_a_row_matched_twice_once(
    spark: SparkSession, duck: duckdb.DuckDBPyConnection
) -> None:
    spark.sql(f"CREATE TEMPORARY TABLE t AS SELECT * FROM VALUES {ROWS} AS r(id, v, s)")
    merge = (
        "MERGE INTO t USING (SELECT * FROM VALUES (1, 7, 'x'), (1, 8, 'y'), (9, 9, 'z') AS "
        "src(id, v, s)) AS s ON t.id = s.id WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.id > 3 THEN DELETE"
    )
    (answer,) = spark.sql(merge).collect()
    (expected,) = duck.sql(merge).fetchall()
    assert tuple(answer) == (expected[0], 0, 2, 1)
    assert _rows(spark) == _duck_rows(duck)


def test_a_reader_of_the_session_during_a_delete_sees_the_table_before_or_after(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE t USING json AS SELECT id, id % 2 AS k FROM range(0, 2000, 1, 2)"
    )
    counts: list[int] = []
    failures: list[BaseException] = []
    deleted = threading.Event()
    after: list[int] = []

    def read() -> None:
        while len(after) < 2:
            started_after = deleted.is_set()
            try:
                count = spark.table("t").where("k >= 0").count()
            except BaseException as exc:
                failures.append(exc)
                return
            (after if started_after else counts).append(count)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        (answer,) = spark.sql(f"DELETE FROM t WHERE k = 1 AND {pause(5)}").collect()
        deleted.set()
    finally:
        deleted.set()
        reader.join(timeout=300)
    assert failures == []
    assert answer.num_affected_rows == 1000
    assert counts
    assert set(counts) <= {2000, 1000}
    assert counts == sorted(counts, reverse=True)
    assert after == [1000, 1000]
    wait_until(
        lambda: len(table_folders(workspace, spark)) == 1,
        OLD_FILES_GONE_TIMEOUT_S,
        "the old files to go once the reads that began before the DELETE ended at the gateway",
    )


def _written_folder(workspace: Path, spark: SparkSession, before: list[Path]) -> bool:
    """Whether Spark is writing a new version of a table: a folder ``before`` lacks, with
    task files in it."""
    return any(
        folder not in before and any(folder.glob("_temporary/*"))
        for folder in table_folders(workspace, spark)
    )


def test_an_interrupted_update_leaves_the_table_as_it_was_and_no_folder(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql(
        "CREATE TEMPORARY TABLE t AS SELECT id, sha2(CAST(id AS STRING), 256) AS h "
        "FROM range(0, 2000, 1, 2)"
    )
    folders = table_folders(workspace, spark)
    outcome: dict[str, object] = {}

    def update() -> None:
        try:
            outcome["rows"] = spark.sql(f"UPDATE t SET h = upper(h) WHERE {pause(10)}").collect()
        except PySparkException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=update)
    worker.start()
    deadline = time.monotonic() + 120
    while not _written_folder(workspace, spark, folders) and time.monotonic() < deadline:
        time.sleep(0.02)
    interrupted = spark.interruptAll()
    worker.join(120)
    assert not worker.is_alive()
    assert interrupted, "no operation was running to interrupt"
    assert "error" in outcome, "the UPDATE ended before the interrupt; make it pause longer"
    assert "[t] was not changed" in str(outcome["error"])
    assert spark.sql("SELECT count_if(h = upper(h)) AS n FROM t").first().n == 0  # type: ignore[union-attr]
    assert table_folders(workspace, spark) == folders
    assert _listed_rows(spark) == 2000


def test_a_crashing_python_worker_fails_the_update_and_changes_nothing(
    spark: SparkSession, workspace: Path
) -> None:
    spark.sql("CREATE TEMPORARY TABLE t AS SELECT id, id * 2 AS v FROM range(1000)")
    folders = table_folders(workspace, spark)
    crash = F.udf(lambda v: os._exit(3), LongType(), useArrow=False)
    spark.udf.register("crash", crash)
    with pytest.raises(PySparkException) as refused:
        spark.sql("UPDATE t SET v = crash(v) WHERE id = 500").collect()
    assert "[t] was not changed" in str(refused.value)
    assert "crashed" in str(refused.value) or "exited unexpectedly" in str(refused.value)
    assert spark.sql("SELECT sum(v) AS s FROM t").first().s == 999000  # type: ignore[union-attr]
    assert table_folders(workspace, spark) == folders


def test_the_gateway_answers_a_change_as_spark_answers_a_command(
    spark: SparkSession, gateway: Gateway
) -> None:
    """The statement's counts come back as Spark sends a command's result, a LocalRelation
    then ResultComplete, from the gateway itself; the client's release of the operation
    is answered, and its DataFrame reads the counts back any number of times, from the
    gateway too (a LocalRelation the gateway did not send is Spark's to answer)."""
    spark.sql("CREATE TEMPORARY TABLE t USING parquet AS SELECT id FROM range(10)")
    changed = spark.sql("DELETE FROM t WHERE id < 3")
    assert changed.schema.simpleString() == "struct<num_affected_rows:bigint>"
    assert [r.asDict() for r in changed.collect()] == [{"num_affected_rows": 3}]
    assert [r.asDict() for r in changed.collect()] == [{"num_affected_rows": 3}]

    operation_id = str(uuid.uuid4())
    request = spark_proto.ExecutePlanRequest(
        session_id=spark.client._session_id,
        user_context=spark_proto.UserContext(user_id=spark.client._user_id),
        operation_id=operation_id,
    )
    request.plan.command.sql_command.input.sql.query = "UPDATE t SET id = -id WHERE id > 7"
    request.request_options.add().reattach_options.reattachable = True
    with grpc.insecure_channel(gateway.address.removeprefix("sc://")) as channel:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        responses = [
            r
            for r in stub.ExecutePlan(request)
            if r.WhichOneof("response_type") != "execution_progress"
        ]
        assert [r.WhichOneof("response_type") for r in responses] == [
            "sql_command_result",
            "result_complete",
        ]
        assert {r.operation_id for r in responses} == {operation_id}
        answer = responses[0].sql_command_result.relation
        assert answer.WhichOneof("rel_type") == "local_relation"
        counts = pa.ipc.open_stream(answer.local_relation.data).read_all()
        assert counts.to_pylist() == [{"num_affected_rows": 2}]

        def read(relation: spark_proto.Relation) -> list[spark_proto.ExecutePlanResponse]:
            query = spark_proto.ExecutePlanRequest()
            query.CopyFrom(request)
            query.operation_id = str(uuid.uuid4())
            query.plan.root.CopyFrom(relation)
            return list(stub.ExecutePlan(query))

        read_back = read(answer)
        assert [r.WhichOneof("response_type") for r in read_back] == [
            None,
            "arrow_batch",
            "result_complete",
        ]
        assert read_back[0].schema.struct.fields[0].name == "num_affected_rows"
        assert read_back[0].schema.struct.fields[0].data_type.HasField("long")
        assert read_back[1].arrow_batch.data == answer.local_relation.data
        unknown = local_relation([("num_affected_rows", "BIGINT")], [(41,)])
        (spark_rows,) = [r for r in read(unknown) if r.HasField("arrow_batch")]
        assert spark_rows.arrow_batch.data != unknown.local_relation.data, "Spark encodes anew"
        assert pa.ipc.open_stream(spark_rows.arrow_batch.data).read_all().to_pylist() == [
            {"num_affected_rows": 41}
        ]
        release = spark_proto.ReleaseExecuteRequest(
            session_id=request.session_id,
            user_context=request.user_context,
            operation_id=operation_id,
        )
        release.release_until.response_id = responses[0].response_id
        assert stub.ReleaseExecute(release).operation_id == operation_id
        release.release_all.SetInParent()
        stub.ReleaseExecute(release)
    assert sorted(r.id for r in spark.table("t").collect()) == [-9, -8, 3, 4, 5, 6, 7]

