"""Which releases of a relayed operation the gateway answers, and which go to Spark."""

from __future__ import annotations

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.server.releases import RelayedReleases
from connect_plugin.server.sessions.registry import Session

KEY = ("user", "session", "operation")
SERVER_SIDE = "server-side-1"


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _response(server_side: str = SERVER_SIDE) -> bytes:
    return spark_proto.ExecutePlanResponse(
        session_id=KEY[1], operation_id=KEY[2], server_side_session_id=server_side
    ).SerializeToString()


def _release(
    until: str | None = "r1", key: tuple[str, str, str] = KEY, observed: str | None = None
) -> spark_proto.ReleaseExecuteRequest:
    request = spark_proto.ReleaseExecuteRequest(
        session_id=key[1],
        user_context=spark_proto.UserContext(user_id=key[0]),
        operation_id=key[2],
    )
    if until is None:
        request.release_all.SetInParent()
    else:
        request.release_until.response_id = until
    if observed is not None:
        request.client_observed_server_side_session_id = observed
    return request


def _relaying(every_s: float = 1.0, keep_s: float = 60.0) -> tuple[RelayedReleases, _Clock]:
    clock = _Clock()
    relayed = RelayedReleases(keep_s, every_s, clock, every_bytes=2**40)
    relayed.relaying(KEY)(_response())
    return relayed, clock


def test_a_release_until_is_answered_as_spark_answers_it() -> None:
    relayed, _ = _relaying()
    answer = relayed.answer(_release())
    assert answer == spark_proto.ReleaseExecuteResponse(
        session_id=KEY[1], server_side_session_id=SERVER_SIDE, operation_id=KEY[2]
    )


def test_one_release_until_goes_to_spark_every_every_s() -> None:
    relayed, clock = _relaying(every_s=1.0)
    assert relayed.answer(_release("r1")) is not None
    clock.now += 1.0
    assert relayed.answer(_release("r2")) is None
    assert relayed.answer(_release("r3")) is not None
    clock.now += 0.5
    assert relayed.answer(_release("r4")) is not None
    clock.now += 0.5
    assert relayed.answer(_release("r5")) is None


def test_one_release_until_goes_to_spark_every_every_bytes() -> None:
    clock = _Clock()
    relayed = RelayedReleases(60.0, 3600.0, clock, every_bytes=100)
    responded = relayed.relaying(KEY)
    responded(_response())
    assert relayed.answer(_release("r1")) is not None
    responded(b"x" * 100)
    assert relayed.answer(_release("r2")) is None
    assert relayed.answer(_release("r3")) is not None
    responded(b"x" * 60)
    assert relayed.answer(_release("r4")) is not None
    responded(b"x" * 60)
    assert relayed.answer(_release("r5")) is None


def test_release_all_goes_to_spark_and_later_release_untils_are_answered() -> None:
    relayed, clock = _relaying(every_s=1.0)
    assert relayed.answer(_release(None)) is None
    clock.now += 5.0
    assert relayed.answer(_release("r1")) is not None
    assert relayed.answer(_release(None)) is None


def test_releases_of_operations_it_does_not_relay_go_to_spark() -> None:
    relayed, _ = _relaying()
    assert relayed.answer(_release(key=("other user", KEY[1], KEY[2]))) is None
    assert relayed.answer(_release(key=(KEY[0], "other session", KEY[2]))) is None
    assert relayed.answer(_release(key=(KEY[0], KEY[1], "other operation"))) is None


def test_a_release_naming_another_server_side_session_goes_to_spark() -> None:
    relayed, _ = _relaying()
    assert relayed.answer(_release(observed="server-side-0")) is None
    assert relayed.answer(_release(observed=SERVER_SIDE)) is not None


def test_before_a_response_named_the_server_side_session_releases_go_to_spark() -> None:
    relayed = RelayedReleases(60.0, 1.0, _Clock())
    responded = relayed.relaying(KEY)
    assert relayed.answer(_release()) is None
    responded(_response())
    responded(_response("read only once"))
    assert relayed.answer(_release()).server_side_session_id == SERVER_SIDE  # type: ignore[union-attr]


def test_operations_are_forgotten_keep_s_after_their_last_release() -> None:
    relayed, clock = _relaying(every_s=3600.0, keep_s=60.0)
    clock.now += 30.0
    assert relayed.answer(_release()) is not None
    clock.now += 59.0
    relayed.relaying(("user", "session", "next"))
    assert len(relayed) == 2
    clock.now += 2.0
    relayed.relaying(("user", "session", "last"))
    assert len(relayed) == 2
    assert relayed.answer(_release()) is None


def test_a_session_that_ended_leaves_nothing() -> None:
    relayed, _ = _relaying()
    relayed.relaying(("user", "other session", "operation"))(_response())
    session = Session(KEY[0], KEY[1])
    assert not relayed.holds(session)
    relayed.let_go(session, ended=False)
    assert len(relayed) == 2
    relayed.let_go(session, ended=True)
    assert len(relayed) == 1
    assert relayed.answer(_release()) is None
