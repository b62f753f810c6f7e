"""A database named like the temp tables' qualifier: said at start-up, never reached by accident.

Spark reads ``session.t`` as the session's temporary view ``t`` when there is
one, and otherwise as table ``t`` of a database named ``session``, if the
catalog has one. A statement the gateway recognises that names
``session.t`` where the session has no temporary table or view ``t`` would
so act on a permanent table: with such a database in the catalog it is
refused, naming ``spark_catalog.session.t`` for the permanent table. The
gateway also says at start-up when the database exists. ``system.session.t``
is never a permanent table and is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from pyspark.sql.connect import proto as spark_proto

from connect_plugin.errors import AmbiguousQualifier, ConnectPluginError
from connect_plugin.server.model.statements import Name, Statement
from connect_plugin.server.table_files.table_names import SESSION_QUALIFIERS
from connect_plugin.server.table_files.views import temp_view_names
from connect_plugin.server.transport.upstream import Upstream, UpstreamSession

log = logging.getLogger(__name__)

QUALIFIER = SESSION_QUALIFIERS[0]


async def has_database(upstream: UpstreamSession) -> bool:
    """Whether Spark's catalog has a database named like the qualifier."""
    relation = spark_proto.Relation()
    relation.sql.query = f"SHOW DATABASES LIKE '{QUALIFIER}'"
    return bool(await upstream.rows(relation))


async def refuse_if_ambiguous(upstream: UpstreamSession, request: Statement) -> None:
    """Refuse a statement Spark is about to run on ``session.<name>`` when that name is no
    temporary view of the session but a database ``session`` exists."""
    name = getattr(request, "name", None)
    if not request.names_existing or not isinstance(name, Name):
        return
    if name.qualifier is None or name.qualifier.lower() != QUALIFIER:
        return
    if not await has_database(upstream):
        return
    if name.name.lower() in await temp_view_names(upstream):
        return
    raise AmbiguousQualifier(
        f"{request.describe()}: [{name}] is no temporary table or view of this session, "
        f"and the catalog has a database named {QUALIFIER}, so Spark would act on its "
        f"permanent table; the statement was not run. Write spark_catalog.{name} for the "
        f"permanent table, or create the temporary table first"
    )


async def warn_at_start(upstream: Upstream, timeout_s: float) -> None:
    """Log a warning when the catalog has a database named like the qualifier.

    Asked in a session of the gateway's own, released afterwards; a Spark
    server that does not answer yet is only noted.
    """
    session = upstream.stored("", str(uuid.uuid4()))
    try:
        found = await asyncio.wait_for(has_database(session), timeout_s)
    except (asyncio.TimeoutError, ConnectPluginError) as exc:
        log.info("cannot ask the catalog for a database named %s now: %s", QUALIFIER, exc)
        found = False
    with contextlib.suppress(asyncio.TimeoutError, ConnectPluginError):
        await asyncio.wait_for(session.release_session(), timeout_s)
    if found:
        log.warning(
            "The catalog has a database named %s, which Spark also reads as the qualifier of "
            "temporary tables and views: statements naming %s.<name> where the session has no "
            "temporary table or view <name> are refused; spark_catalog.%s.<name> names the "
            "permanent table",
            QUALIFIER,
            QUALIFIER,
            QUALIFIER,
        )
