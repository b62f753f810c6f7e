"""ConfigGuard: which SQL texts, Config requests and plans change a protected setting."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import SettingProtected
from connect_plugin.server.statements.config_guard import ConfigGuard

ROOT = Path("/srv/gateway-workspace")
COMMITTER = "spark.sql.sources.outputCommitterClass"


@pytest.fixture
def guard() -> ConfigGuard:
    return ConfigGuard(ROOT)


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (f"SET {COMMITTER}=false", COMMITTER),
        (f"set `{COMMITTER}` = false", COMMITTER),
        (f"/* x */ SET {COMMITTER.upper()} = false", COMMITTER.upper()),
        ("SET spark.sql.sources.commitProtocolClass=my.Protocol", "commitProtocolClass"),
        ("SET spark.sql.sources.outputCommitterClass=my.Committer", "outputCommitterClass"),
        ("SET spark.datasource.connect_plugin_scan.spec={}", "connect_plugin_scan.spec"),
        (f"RESET {COMMITTER}", COMMITTER),
        ("RESET", "RESET without a key"),
        ("reset ;", "RESET without a key"),
        ("SET spark.sql.shuffle.partitions=3; RESET", "RESET without a key"),
        (f"SELECT 1; SET {COMMITTER}=false", COMMITTER),
        (f"BEGIN DECLARE x INT; SET {COMMITTER} = false; END", COMMITTER),
        ("BEGIN SELECT 1; RESET; END", "RESET without a key"),
        (f"EXECUTE IMMEDIATE 'SET {COMMITTER}=false'", COMMITTER),
        ("BEGIN EXECUTE IMMEDIATE 'RESET'; END", "RESET without a key"),
        (f"EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE \\'RESET {COMMITTER}\\''", COMMITTER),
        ("EXECUTE IMMEDIATE 'SET spark.sql.sources.' 'outputCommitterClass=false'", COMMITTER),
        (f"SET spark.my.path={ROOT}/elsewhere", str(ROOT)),
        (f"SET spark.my.path='{ROOT}'", str(ROOT)),
        (f"SET {COMMITTER}='unterminated", COMMITTER),
    ],
)
def test_changes_of_protected_settings_are_refused(
    guard: ConfigGuard, sql: str, named: str
) -> None:
    with pytest.raises(SettingProtected, match=named.replace("$", r"\$")) as refused:
        guard.check_sql(sql)
    assert "docs/security.md" in str(refused.value) or "RESET key" in str(refused.value) or (
        "folder of your own" in str(refused.value)
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        f"SET {COMMITTER}",
        "SET",
        "SET -v",
        "SET spark.sql.shuffle.partitions=3",
        "RESET spark.sql.shuffle.partitions",
        f"SELECT '{COMMITTER}' AS k -- SET {COMMITTER}=false",
        f"SELECT 'SET {COMMITTER}=false', 'RESET'",
        "SELECT 1 AS reset_count",
        "SELECT `reset` FROM t",
        "EXECUTE IMMEDIATE 'SELECT 1 AS reset_x'",
        f"SELECT '{ROOT}' AS where_it_is",
    ],
)
def test_reads_and_other_settings_pass(guard: ConfigGuard, sql: str) -> None:
    guard.check_sql(sql)


def _config(**operation: spark_proto.ConfigRequest.Operation) -> spark_proto.ConfigRequest:
    return spark_proto.ConfigRequest(session_id="s", operation=operation["op"])


def test_config_set_and_unset_of_protected_keys_are_refused(guard: ConfigGuard) -> None:
    pairs = [spark_proto.KeyValue(key="spark.a", value="1"), spark_proto.KeyValue(key=COMMITTER)]
    setting = spark_proto.ConfigRequest.Operation(set=spark_proto.ConfigRequest.Set(pairs=pairs))
    with pytest.raises(SettingProtected, match=COMMITTER):
        guard.check_config(_config(op=setting))
    unset = spark_proto.ConfigRequest.Operation(
        unset=spark_proto.ConfigRequest.Unset(keys=["spark.sql.sources.commitProtocolClass"])
    )
    with pytest.raises(SettingProtected, match="commitProtocolClass"):
        guard.check_config(_config(op=unset))
    rooted = spark_proto.ConfigRequest.Operation(
        set=spark_proto.ConfigRequest.Set(
            pairs=[spark_proto.KeyValue(key="spark.a", value=f"file://{ROOT}/x")]
        )
    )
    with pytest.raises(SettingProtected, match=r"\[spark\.a\]"):
        guard.check_config(_config(op=rooted))


def test_config_reads_and_other_keys_pass(guard: ConfigGuard) -> None:
    get = spark_proto.ConfigRequest.Operation(get=spark_proto.ConfigRequest.Get(keys=[COMMITTER]))
    guard.check_config(_config(op=get))
    setting = spark_proto.ConfigRequest.Operation(
        set=spark_proto.ConfigRequest.Set(pairs=[spark_proto.KeyValue(key="spark.a", value="1")])
    )
    guard.check_config(_config(op=setting))


def _nested_sql_plan(query: str) -> spark_proto.ExecutePlanRequest:
    inner = spark_proto.Relation()
    inner.sql.query = query
    relation = spark_proto.Relation()
    relation.set_op.left_input.range.end = 1
    relation.set_op.right_input.project.input.CopyFrom(inner)
    request = spark_proto.ExecutePlanRequest(session_id="s")
    request.plan.root.CopyFrom(relation)
    return request


def test_sql_deep_inside_a_plan_is_found(guard: ConfigGuard) -> None:
    with pytest.raises(SettingProtected, match=COMMITTER):
        asyncio.run(guard.check_plan(_nested_sql_plan(f"SET {COMMITTER}=false")))
    asyncio.run(guard.check_plan(_nested_sql_plan("SELECT 1")))
    command = spark_proto.ExecutePlanRequest(session_id="s")
    command.plan.command.sql_command.input.sql.query = "RESET"
    with pytest.raises(SettingProtected, match="RESET"):
        asyncio.run(guard.check_plan(command))


def test_long_sql_is_checked_too(guard: ConfigGuard) -> None:
    padding = "SELECT 1 AS x UNION ALL " * 50_000
    with pytest.raises(SettingProtected, match=COMMITTER):
        asyncio.run(guard.check_plan(_nested_sql_plan(f"{padding}SELECT 2; SET {COMMITTER}=false")))


def test_sql_texts_skip_literals_and_local_data(guard: ConfigGuard) -> None:
    request = _nested_sql_plan("SELECT 1")
    local = request.plan.root.set_op.left_input
    local.local_relation.data = f"SET {COMMITTER}=false".encode()
    assert list(ConfigGuard.sql_texts(request)) == ["SELECT 1"]


def test_reads_of_settings_are_told_from_changes() -> None:
    def request(op: str) -> spark_proto.ConfigRequest:
        built = spark_proto.ConfigRequest()
        getattr(built.operation, op).SetInParent()
        return built

    assert all(ConfigGuard.reads(request(op)) for op in ("get", "get_with_default", "get_option", "get_all"))
    assert not any(ConfigGuard.reads(request(op)) for op in ("set", "unset", "is_modifiable"))


def test_secret_values_are_redacted_as_spark_redacts_them() -> None:
    response = spark_proto.ConfigResponse(session_id="s", server_side_session_id="t")
    response.pairs.add(key="spark.connect.authenticate.token", value="tok")
    response.pairs.add(key="spark.hadoop.fs.s3a.secret.key", value="abc")
    response.pairs.add(key="spark.hadoop.fs.s3a.access.key", value="AKIA")
    response.pairs.add(key="spark.my.url", value="jdbc://h?password=x")
    response.pairs.add(key="spark.sql.shuffle.partitions", value="4")
    response.pairs.add(key="spark.some.token")
    redacted = spark_proto.ConfigResponse.FromString(ConfigGuard.redact(response.SerializeToString()))
    values = {pair.key: pair.value if pair.HasField("value") else None for pair in redacted.pairs}
    assert values == {
        "spark.connect.authenticate.token": "*********(redacted)",
        "spark.hadoop.fs.s3a.secret.key": "*********(redacted)",
        "spark.hadoop.fs.s3a.access.key": "*********(redacted)",
        "spark.my.url": "*********(redacted)",
        "spark.sql.shuffle.partitions": "4",
        "spark.some.token": None,
    }
    assert redacted.server_side_session_id == "t"
    plain = spark_proto.ConfigResponse(session_id="s")
    plain.pairs.add(key="spark.sql.shuffle.partitions", value="4")
    assert ConfigGuard.redact(plain.SerializeToString()) == plain.SerializeToString()
