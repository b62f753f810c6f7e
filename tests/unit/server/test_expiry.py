"""The session watch without Spark: activity counting, lost-session signals, an unreachable upstream.

The upstream channel points at a port nobody listens on, so probes fail the
way an unreachable server does: nothing may be deleted then.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path

import grpc
import pytest
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import ConfigError
from connect_plugin.server.embedded import free_port
from connect_plugin.server.expiry import SessionWatch, spark_duration_s
from connect_plugin.server.session_store import StoredSession, TableState, TempTable
from connect_plugin.server.temp_tables import TempTables
from tests.unit.server.spark_errors import rpc_error

USER = "ann"
CHANGED = "INVALID_HANDLE.SESSION_CHANGED"


def _config(workspace: Path, **settings: float) -> Config:
    return Config(
        port=0,
        upstream=f"sc://127.0.0.1:{free_port()}",
        workspace=workspace,
        conf_dir=None,
        recovery_timeout_s=2.0,
        **settings,  # type: ignore[arg-type]
    )


def _request(session_id: str) -> spark_proto.ConfigRequest:
    return spark_proto.ConfigRequest(
        session_id=session_id, user_context=spark_proto.UserContext(user_id=USER)
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60m", 3600.0), ("3600s", 3600.0), ("1h", 3600.0), ("5min", 300.0), ("1500", 1.5), ("2 d", 172800.0)],
)
def test_spark_durations(text: str, seconds: float) -> None:
    assert spark_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5 fortnights", "-1s"])
def test_unreadable_spark_durations(text: str) -> None:
    assert spark_duration_s(text) is None


def test_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="session_idle_timeout_s"):
        _config(tmp_path, session_idle_timeout_s=-1.0)
    with pytest.raises(ConfigError, match="session_sweep_interval_s"):
        _config(tmp_path, session_sweep_interval_s=0.0)


def test_unreachable_upstream_expires_and_drops_nothing_and_signals_drop_lost_sessions(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    config = _config(workspace, session_idle_timeout_s=0.01)
    forgotten: list[tuple[str, str, str | None]] = []

    async def scenario() -> None:
        channel = grpc.aio.insecure_channel(config.upstream_target)
        tables = TempTables(config, channel)

        async def forget(user_id: str, session_id: str, gone: str | None) -> bool:
            forgotten.append((user_id, session_id, gone))
            return await tables.release(user_id, session_id, gone)

        watch = SessionWatch(config, tables, forget)
        try:
            await tables.start()
            session_ids = [str(uuid.uuid4()) for _ in range(4)]
            for session_id in session_ids:
                location = tables.workspace.new_table_folder(session_id)
                table = TempTable(
                    "t", location, "parquet", "{}", (), {}, 1,
                    datetime.datetime.now(datetime.timezone.utc),
                )  # fmt: skip
                entry = tables.registry.session(USER, session_id)
                tables.registry.store.add_table(
                    StoredSession(USER, session_id, "server-1", 1.0), table, TableState.READY
                )
                entry.server_side_session_id = "server-1"
                entry.tables[table.key] = table
            await watch.start()

            stranger = watch.begin(_request(str(uuid.uuid4())))
            assert stranger is not None
            watch.end(stranger)
            assert stranger not in watch._seen, "sessions without tables are not remembered"

            busy = watch.begin(_request(session_ids[0]))
            assert busy == (USER, session_ids[0])
            await asyncio.sleep(0.05)
            await watch.sweep()  # idle beyond the timeout, but the upstream cannot be asked
            assert forgotten == []
            assert all((workspace / s).is_dir() for s in session_ids)

            watch.responded((USER, session_ids[1]), "server-1")
            watch.responded((USER, session_ids[1]), "server-2")
            watch.failed((USER, session_ids[2]), rpc_error(CHANGED, session_ids[2]))
            # Found lost, but a CTTAS records a new upstream session before the cleanup runs.
            watch.failed((USER, session_ids[3]), rpc_error(CHANGED, session_ids[3]))
            renewed = tables.registry.find(USER, session_ids[3])
            assert renewed is not None
            renewed.server_side_session_id = "server-3"
            watch.end(busy)
            for _ in range(10):
                await asyncio.sleep(0.01)
            assert sorted(forgotten) == sorted((USER, s, "server-1") for s in session_ids[1:])
            assert (workspace / session_ids[0]).is_dir()
            assert not (workspace / session_ids[1]).exists()
            assert not (workspace / session_ids[2]).exists()
            assert (workspace / session_ids[3]).is_dir()
            assert tables.registry.find(USER, session_ids[0]) is not None
            assert tables.registry.find(USER, session_ids[3]) is renewed
            assert sorted(watch.figures.gone) == sorted(session_ids[1:3])
        finally:
            await watch.stop()
            await tables.stop()
            await channel.close()

    asyncio.run(scenario())
