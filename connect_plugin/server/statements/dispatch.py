"""Turning a client's plan into requests for the handlers, and their results back into the plan.

A plan may hold plugin relations anywhere (inside each other's inputs too)
and its root may be one of the gateway's SQL statements or a DataFrame
command a handler guards. Everything is recognised and checked first: an
unknown or misplaced plugin message, one of another session, or more than
one request that changes temp tables refuses the whole request before any
side effect. Then the handlers run, innermost plugin relations first, and
each handled node becomes the relation its handler gives, keeping its
``plan_id``; a handled statement becomes its result the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto

from connect_plugin.config import Config
from connect_plugin.errors import PlanError, SessionMismatch, UnknownExtension
from connect_plugin.server.model.statements import Statement
from connect_plugin.server.statements.handlers import CachedScans, Call, HandlerRegistry, Outcome
from connect_plugin.server.statements.recognition import (
    INLINE_CHARS,
    SqlText,
    first_keyword,
    recognise,
)
from connect_plugin.server.table_files.table_names import SESSION_QUALIFIED
from connect_plugin.server.transport.plans import Extension, extensions, replace_node, unpack

MAX_PLUGIN_NESTING = 32
"""Plugin relations inside plugin relations' inputs, at most (each level is decoded apart)."""


@dataclass
class Work:
    """One plugin relation to handle: where it sits, what it asks, what is inside it."""

    holder: spark_proto.Relation
    type_name: str
    statement: Statement
    inner: list[Work] = field(default_factory=list)

    def statements(self) -> list[Statement]:
        return [self.statement, *(s for w in self.inner for s in w.statements())]


class SqlSite:
    """Where a plan holds SQL text: a SqlCommand or a root SQL relation."""

    @classmethod
    def of(cls, plan: spark_proto.Plan) -> SqlSite | None:
        """The plan's SQL site, when it has one."""
        if plan.HasField("command"):
            return cls(plan) if plan.command.HasField("sql_command") else None
        return cls(plan) if plan.HasField("root") and plan.root.HasField("sql") else None

    def __init__(self, plan: spark_proto.Plan) -> None:
        self.plan = plan
        self.command = plan.HasField("command") and plan.command.HasField("sql_command")
        self.relation = spark_proto.SQL()
        if self.command:
            sql_command = plan.command.sql_command
            if sql_command.HasField("input") and sql_command.input.HasField("sql"):
                self.relation.CopyFrom(sql_command.input.sql)
            else:
                self.relation.query = sql_command.sql
                for key, value in sql_command.args.items():
                    self.relation.args[key].CopyFrom(value)
                self.relation.pos_args.extend(sql_command.pos_args)
                for key, expression in sql_command.named_arguments.items():
                    self.relation.named_arguments[key].CopyFrom(expression)
                self.relation.pos_arguments.extend(sql_command.pos_arguments)
        elif plan.HasField("root") and plan.root.HasField("sql"):
            self.relation.CopyFrom(plan.root.sql)

    @property
    def text(self) -> SqlText:
        return SqlText(self.relation.query, self.with_query)

    def with_query(self, query: str) -> spark_proto.Relation:
        """The same SQL relation (arguments included) with another query text."""
        relation = spark_proto.Relation()
        relation.sql.CopyFrom(self.relation)
        relation.sql.query = query
        return relation

    def put_result(self, result: spark_proto.Relation) -> None:
        if self.command:
            self.plan.command.sql_command.Clear()
            self.plan.command.sql_command.input.CopyFrom(result)
        else:
            replace_node(self.plan.root, result)


@dataclass(frozen=True)
class Recognised:
    """What the gateway handles in an ExecutePlan: the statement or (``command``) the
    DataFrame command at its plan's root, and its plugin relations (``works``)."""

    site: SqlSite | None
    root: Statement | None
    works: list[Work]
    command: bool = False

    def statements(self) -> list[Statement]:
        """Every statement handled, the root's first."""
        return [*([self.root] if self.root is not None else []), *self.plugin_statements()]

    def plugin_statements(self) -> list[Statement]:
        return [s for w in self.works for s in w.statements()]

    @property
    def answerable(self) -> bool:
        """Whether the gateway may answer the request itself: its whole plan is a command
        (a SQL command or a DataFrame command), with no plugin relation."""
        return not self.works and (self.command or (self.site is not None and self.site.command))

    def check_changes(self) -> None:
        """At most one request that changes temp tables, or none of it happens."""
        changing = [s for s in self.statements() if s.changes_tables]
        if len(changing) > 1:
            raise PlanError(
                "a request may change at most one temporary table, and this one holds "
                + ", ".join(r.describe() for r in changing)
                + "; send them one at a time"
            )

    def put_result(self, plan: spark_proto.Plan, result: spark_proto.Relation) -> None:
        """The root's result takes its place in the plan."""
        if self.command:
            replace_command(plan, result)
        else:
            assert self.site is not None, "only statements give results for the plan"
            self.site.put_result(result)


def replace_command(plan: spark_proto.Plan, result: spark_proto.Relation) -> None:
    """A command the gateway did itself (a DataFrame write into a temp table) becomes a SQL
    command of its result, so the client's request runs and answers as it would."""
    plan.command.Clear()
    plan.command.sql_command.input.CopyFrom(result)


class Dispatcher:
    """Finds the requests in a plan and runs them through the handlers."""

    def __init__(
        self,
        config: Config,
        registry: HandlerRegistry,
        has_tables: Callable[[str, str], bool],
    ) -> None:
        self._forwarded = config.forward_extensions
        self._registry = registry
        self._has_tables = has_tables

    def plugin_work(
        self, tree: Message, session_id: str, depth: int = 0, cached: CachedScans = ()
    ) -> list[Work]:
        """The plugin relations in ``tree`` (a request, or a plugin relation's input);
        ``cached``: the session's scans in persisted plans, which rewrites leave alone."""
        found = self._found(tree)
        for name in {e.type_name for e in found}:
            handler = self._registry.for_message(name)
            if handler is not None and handler.rewrite_plan(tree, cached):
                found = self._found(tree)
        works = []
        for extension in found:
            handler = self._registry.for_message(extension.type_name)
            assert handler is not None
            assert handler.message_type is not None
            message = unpack(extension.packed, handler.message_type)
            if message is None:
                raise PlanError(f"the [{extension.type_name}] message in the plan cannot be read")
            sent_for = getattr(message, "session_id", "")
            if sent_for != session_id:
                raise SessionMismatch(
                    f"a [{extension.type_name}] message for session [{sent_for}] was sent in "
                    f"session [{session_id}]; plugin messages may only act on their own session"
                )
            statement = handler.from_message(message)
            if statement.inputs() and depth >= MAX_PLUGIN_NESTING:
                raise PlanError(
                    f"plugin relations nest deeper than {MAX_PLUGIN_NESTING} inside each other"
                )
            inner = [
                w
                for r in statement.inputs()
                for w in self.plugin_work(r, session_id, depth + 1, cached)
            ]
            works.append(Work(extension.holder, extension.type_name, statement, inner))  # type: ignore[arg-type]
        return works

    def _found(self, tree: Message) -> list[Extension]:
        found = []
        for extension in extensions(tree):
            name = extension.type_name
            if self._forwarded and name.startswith(self._forwarded):
                continue
            if self._registry.for_message(name) is None:
                raise UnknownExtension(
                    f"the plan holds an extension message of type [{name}] that this "
                    "connect-plugin gateway does not know; known: "
                    + ", ".join(self._registry.message_names)
                )
            if extension.kind != "relation":
                raise PlanError(
                    f"[{name}] is a connect-plugin relation but was sent inside a Spark "
                    f"{extension.kind}, where only a {extension.kind} may stand; use it as a "
                    "DataFrame (relation) instead"
                )
            found.append(extension)
        return found

    async def recognise(
        self, request: spark_proto.ExecutePlanRequest, cached: CachedScans = ()
    ) -> Recognised | None:
        """The plugin relations of the request's plan and the statement or command at its
        root; None when it holds none of them."""
        works = self.plugin_work(request, request.session_id, cached=cached)
        site = SqlSite.of(request.plan)
        statement = await self.statement(request, site)
        command = self.command(request.plan) if statement is None else None
        if not works and statement is None and command is None:
            return None
        root = statement if statement is not None else command
        return Recognised(site, root, works, command=command is not None)

    async def statement(
        self, request: spark_proto.ExecutePlanRequest, site: SqlSite | None
    ) -> Statement | None:
        """The gateway's SQL statement at the root of the plan, if it holds one."""
        if site is None:
            return None
        text = site.relation.query
        if not text:
            return None
        keyword = first_keyword(text)
        if not keyword:
            return None
        has_tables = self._has_tables(
            request.user_context.user_id, request.session_id
        ) or bool(SESSION_QUALIFIED.search(text))
        rules = self._registry.rules(keyword, has_tables=has_tables)
        if not rules:
            return None
        if len(text) <= INLINE_CHARS:
            return recognise(site.text, rules)
        return await asyncio.to_thread(recognise, site.text, rules)

    def command(self, plan: spark_proto.Plan) -> Statement | None:
        return self._registry.from_plan(plan)

    async def run(self, works: list[Work], call: Call, *, analyze: bool) -> list[Outcome]:
        """Handle each plugin relation, inner ones first, putting each result in its place."""
        outcomes = []
        for work in works:
            outcomes += await self.run(work.inner, call, analyze=analyze)
            side = self._registry.analyze if analyze else self._registry.execute
            outcome = await side(call, work.statement)
            assert outcome.result is not None, f"{work.statement.describe()} gave no relation"
            replace_node(work.holder, outcome.result)
            outcomes.append(outcome)
        return outcomes
