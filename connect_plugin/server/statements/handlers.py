"""One path for everything the gateway handles: a registry of handlers, one per statement type.

A handler declares how its statement is recognised (a plugin message type, a
SQL grammar rule with its first keywords, a DataFrame command) and what it
does with it, on two sides: ``analyze`` answers AnalyzePlan with no side
effect, ``execute`` does the work for ExecutePlan. Adding a plugin message
or a statement is one handler class, registered where the gateway lists
its handlers (``gateway.py``).

A statement is read by the first rule of its first keyword that recognises
it, so where handlers share a keyword their order decides: a scan view's
``CREATE TEMPORARY VIEW ... USING`` is a temp view's statement too. That
order is stated once, per keyword, in the table the registry is given
(``SqlOrder``), never by the list the handlers come in; the registry refuses
handlers sharing a keyword that the table does not order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import NotSupportedYet
from connect_plugin.server.model.statements import Statement
from connect_plugin.server.statements import results
from connect_plugin.server.statements.recognition import Cursor, Rule
from connect_plugin.server.table_files.writes import ProgressSink
from connect_plugin.server.transport.upstream import SessionContext

R = TypeVar("R", bound=Statement)

CachedScans = Collection[bytes]
"""The keys of a session's scans in plans it persisted, which rewrites leave whole (see
``scans.cached_scans``)."""


@dataclass(frozen=True)
class Call:
    """The client call a request came in: whose session, and where progress goes."""

    context: SessionContext
    progress: ProgressSink


@dataclass(frozen=True)
class Outcome:
    """What handling a statement gives.

    ``result``: the relation that takes the place of the plugin node or the
    statement (None: the request goes to Spark as it came); ``after``: work
    to do once Spark has run the request successfully; ``answer``: the
    result's rows as a ``LocalRelation``, for a statement that is the client's
    whole request: the gateway then answers it itself, as Spark answers a
    command, and Spark is not asked (``after`` still runs before the last
    response); ``table``: the temp table a statement Spark runs writes into,
    as the client named it, quoted as Spark quotes names: Spark's errors,
    which call it ``unknown``, name it so.
    """

    result: spark_proto.Relation | None = None
    after: Callable[[], Awaitable[None]] | None = None
    answer: spark_proto.Relation | None = None
    table: str = ""

    @classmethod
    def of_rows(cls, columns: Sequence[tuple[str, str]], rows: Sequence[results.Row]) -> Outcome:
        """A result whose rows the gateway knows: answered by the gateway where it can be."""
        return cls(
            results.result_relation(columns, rows), answer=results.local_relation(columns, rows)
        )


FORWARD = Outcome()


class Handler(Generic[R]):
    """Recognises one statement type and handles it.

    Subclasses set ``statement_type`` and whichever recognisers apply:
    ``message_type`` with ``from_message``; ``sql_keywords`` (the statement's
    first words) with ``parse``; ``from_plan`` for DataFrame commands.
    ``needs_tables``: the SQL is only worth reading in a session that has
    temp tables (it guards them; in other sessions it is Spark's alone).
    """

    statement_type: ClassVar[type[Statement]]
    message_type: ClassVar[type[Message] | None] = None
    sql_keywords: ClassVar[frozenset[str]] = frozenset()
    needs_tables: ClassVar[bool] = False

    # Recognisers are pure functions of what the client sent: they may run on a
    # worker thread (long SQL) and need no handler state.

    @classmethod
    def from_message(cls, message: Any) -> R:
        raise NotImplementedError(f"{cls.__name__} has no plugin message")

    @classmethod
    def parse(cls, cursor: Cursor) -> R | None:
        return None

    @classmethod
    def from_plan(cls, plan: spark_proto.Plan) -> R | None:
        return None

    def rewrite_plan(self, tree: Message, cached: CachedScans) -> bool:
        """Rewrite a plan tree holding this handler's message before dispatch; True if changed.

        ``cached``: the session's scans in plans it persisted, to be left as they are.
        """
        return False

    async def analyze(self, call: Call, request: R) -> Outcome:
        raise NotSupportedYet(f"{request.describe()} cannot be analysed")

    async def execute(self, call: Call, request: R) -> Outcome:
        raise NotImplementedError


_BASE_FROM_PLAN = Handler.from_plan.__func__  # type: ignore[attr-defined]


SqlOrder = Mapping[str, Sequence[type[Handler[Any]]]]
"""Per first keyword, the handler classes sharing it, in the order their rules are tried."""


class HandlerRegistry:
    """The gateway's handlers, looked up by statement type, message type and SQL keyword.

    ``sql_order``: for every first keyword more than one handler reads, the
    order their rules are tried in; the order of ``handlers`` itself never
    matters.
    """

    def __init__(self, handlers: Iterable[Handler[Any]], sql_order: SqlOrder | None = None) -> None:
        self._handlers = tuple(handlers)
        self._by_statement = {h.statement_type: h for h in self._handlers}
        self._by_message = {
            h.message_type.DESCRIPTOR.full_name: h
            for h in self._handlers
            if h.message_type is not None
        }
        self._commands = [h for h in self._handlers if type(h).from_plan.__func__ is not _BASE_FROM_PLAN]  # type: ignore[attr-defined]
        self._by_keyword = _ordered_by_keyword(self._handlers, sql_order or {})

    @property
    def handlers(self) -> tuple[Handler[Any], ...]:
        return self._handlers

    @property
    def message_names(self) -> list[str]:
        return sorted(self._by_message)

    def for_message(self, type_name: str) -> Handler[Any] | None:
        return self._by_message.get(type_name)

    def for_statement(self, statement: Statement) -> Handler[Any]:
        return self._by_statement[type(statement)]

    def rules(self, keyword: str, *, has_tables: bool) -> list[Rule]:
        """The grammar rules worth trying on a statement that starts with ``keyword``."""
        return [
            h.parse
            for h in self._by_keyword.get(keyword, ())
            if has_tables or not h.needs_tables
        ]

    def from_plan(self, plan: spark_proto.Plan) -> Statement | None:
        for handler in self._commands:
            found: Statement | None = handler.from_plan(plan)
            if found is not None:
                return found
        return None

    async def analyze(self, call: Call, statement: Statement) -> Outcome:
        outcome: Outcome = await self.for_statement(statement).analyze(call, statement)
        return outcome

    async def execute(self, call: Call, statement: Statement) -> Outcome:
        outcome: Outcome = await self.for_statement(statement).execute(call, statement)
        return outcome


def _ordered_by_keyword(
    handlers: Sequence[Handler[Any]], sql_order: SqlOrder
) -> dict[str, tuple[Handler[Any], ...]]:
    """Each first keyword's handlers in the stated order; an error if a shared one has none."""
    by_keyword: dict[str, list[Handler[Any]]] = {}
    for handler in handlers:
        for keyword in handler.sql_keywords:
            by_keyword.setdefault(keyword, []).append(handler)
    ordered: dict[str, tuple[Handler[Any], ...]] = {}
    for keyword, sharing in by_keyword.items():
        if len(sharing) > 1:
            stated = list(sql_order.get(keyword, ()))
            unordered = sorted(type(h).__name__ for h in sharing if type(h) not in stated)
            if unordered:
                raise ValueError(
                    f"handlers {', '.join(unordered)} share the first keyword {keyword} with "
                    f"other handlers but have no place in its order; list every handler of "
                    f"{keyword} in the SQL order the registry is given (gateway.SQL_ORDER)"
                )
            sharing.sort(key=lambda h: stated.index(type(h)))
        ordered[keyword] = tuple(sharing)
    return ordered
