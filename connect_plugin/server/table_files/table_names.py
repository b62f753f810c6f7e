"""How temporary tables are named: the qualifiers Spark gives them, and what a new one may be called.

Spark qualifies a session's temporary views as ``session.`` (or
``system.session.``), so the gateway's temp tables take the same
qualifiers wherever they are named; Drill's ``tmp.`` is refused with a
message that says what to write instead. Creating, resolving and
recognising tables all follow these rules, so they live apart from any one
of them (the SQL recogniser, the table lookups, the creator).
"""

from __future__ import annotations

import re

from connect_plugin.errors import TempTableError
from connect_plugin.server.model.statements import Name

MAX_NAME_LENGTH = 128
SESSION_QUALIFIERS = ("session", "system.session")
"""How Spark qualifies a session's temporary views, and so its temp tables."""
SESSION_QUALIFIED = re.compile(r"\bsession`?\s*\.", re.IGNORECASE)
"""Text that may name something ``session.``-qualified: a cheap test before parsing."""
RETIRED_QUALIFIER = "tmp"
"""Drill's qualifier of temp tables, which Spark resolves nowhere."""


def retired(name: Name) -> TempTableError:
    return TempTableError(
        f"[{name}]: the {RETIRED_QUALIFIER}. qualifier of temporary tables is retired, since "
        f"Spark reads it as a database; write session.{name.name}, as Spark qualifies "
        f"temporary views (Spark 4.1 and later), or plainly {name.name}"
    )


def check_table_name(name: Name) -> str:
    """The bare name of a temp table to create, or a clear error for a bad one."""
    qualifier = None if name.qualifier is None else name.qualifier.lower()
    if qualifier == RETIRED_QUALIFIER:
        raise retired(name)
    if qualifier is not None and qualifier not in SESSION_QUALIFIERS:
        raise TempTableError(
            "Temporary tables are not allowed to be created outside of default temporary "
            f"workspace [session]: [{name}] is not a valid temporary table name; use a plain "
            "name or session.<name>"
        )
    bare = name.name
    if not bare.strip() or len(bare) > MAX_NAME_LENGTH or any(ord(ch) < 32 for ch in bare):
        raise TempTableError(
            f"[{bare}] is not a valid temporary table name: names need 1 to "
            f"{MAX_NAME_LENGTH} printable characters"
        )
    return bare
