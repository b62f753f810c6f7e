"""What the gateway keeps about a session goes when Spark forgets the session.

Clients that scan files and then vanish without a ReleaseSession leave the
gateway holding state for their sessions (the scan source registered in
them). Once Spark no longer has those sessions (here: released straight at
Spark, as its own idle expiry would), the gateway's sweeper finds them gone
and forgets all of it. A session whose CTTAS failed holds nothing at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import connect_plugin
from connect_plugin.server.gateway import Gateway
from tests.integration.faults.gateway_process import wait_until
from tests.integration.support import Upstream, new_session, serving

SWEEP_INTERVAL_S = 0.2
FORGET_WAIT_S = 30.0


@pytest.fixture
def swept_gateway(upstream: Upstream, tmp_path: Path) -> Iterator[Gateway]:
    with serving(upstream, tmp_path / "ws", session_sweep_interval_s=SWEEP_INTERVAL_S) as running:
        yield running


def _vanish(session: SparkSession) -> tuple[str, str]:
    key = (session.client._user_id or "", session.client._session_id)
    session.release_session_on_close = False
    session.stop()
    return key


def test_sessions_spark_forgot_are_forgotten_by_the_gateway(
    swept_gateway: Gateway, upstream: Upstream, tmp_path: Path
) -> None:
    gateway = swept_gateway
    files = tmp_path / "json"
    files.mkdir()
    (files / "a.json").write_text(json.dumps({"n": 1}) + "\n")
    scanning = new_session(gateway.address)
    assert connect_plugin.scan(scanning, str(files), format="json", schema="n BIGINT").columns == [
        "n"
    ]
    failing = new_session(gateway.address)
    with pytest.raises(AnalysisException, match="unknown format"):
        failing.sql("CREATE TEMPORARY TABLE t USING nope AS SELECT 1 AS x").collect()
    vanished = [_vanish(scanning), _vanish(failing)]
    assert gateway.sessions.find(*vanished[0]) is not None, "kept while Spark has the session"
    assert gateway.sessions.find(*vanished[1]) is None, "a failed CTTAS leaves nothing behind"

    for _user_id, session_id in vanished:
        at_spark = SparkSession.builder.remote(
            f"{upstream.address}/;session_id={session_id}"
        ).create()
        at_spark.stop()
    wait_until(
        lambda: all(gateway.sessions.find(*key) is None for key in vanished),
        FORGET_WAIT_S,
        "the gateway to forget the sessions Spark forgot",
    )
    assert len(gateway.sessions) == 0
