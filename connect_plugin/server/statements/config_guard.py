"""Session settings a client may not change, because the gateway relies on them.

Protected: every setting of the scan data source (``spark.datasource.connect_plugin_scan.*``), Spark's commit
protocol and output committer classes (temp tables are written through
them), and any setting whose value names the workspace root. A client
changes settings through the Config RPC (``spark.conf.set``/``unset``,
``SparkSession.builder.config``) and through SQL: ``SET k=v``, ``RESET k``
and a bare ``RESET`` (which would reset the protected ones too), in any
statement of a text, inside ``BEGIN ... END`` blocks and in the string
literal of ``EXECUTE IMMEDIATE``, wherever a SQL relation or command sits in
a plan. Each is refused with ``SettingProtected`` naming the key.

Secrets never leave through settings: a Config RPC that reads settings
(``spark.conf.get``, ``getAll``, ``get`` with a default, ``get_option``)
gets the value of every key that looks like a secret, or whose value does,
replaced by Spark's own ``*********(redacted)``, by Spark's default
``spark.redaction.regex``. Spark servers before 4.3 answer such a read with
the value itself, Spark Connect's own ``spark.connect.authenticate.token``
and ``spark.hadoop.fs.s3a.secret.key`` included, when they were set as
confs; SQL ``SET`` is redacted by Spark itself on every version.

Most SQL never comes near a protected key: a text is tokenized only when a
plain search finds a protected key, the workspace root, ``RESET`` or
``IMMEDIATE`` (whose literal may be pieced together: 'SET a' '=b') in it;
long texts are tokenized on a worker thread. Reading a protected setting
(``SET k`` without a value, ``spark.conf.get``) stays allowed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from google.protobuf.message import Message
from pyspark.sql.connect import proto as spark_proto
from sqlglot import Dialect, Token, TokenError, TokenType

from connect_plugin.errors import PlanError, SettingProtected
from connect_plugin.scanning.spark import SHORT_NAME
from connect_plugin.server.transport.plans import plan_nodes

PROTECTED_KEYS: dict[str, str] = {
    "spark.sql.sources.commitProtocolClass": "writing temporary tables",
    "spark.sql.sources.outputCommitterClass": "writing temporary tables",
}
"""Settings the gateway relies on, with what for."""
PROTECTED_PREFIXES: dict[str, str] = {
    f"spark.datasource.{SHORT_NAME}.": f"its scan data source [{SHORT_NAME}]",
}
INLINE_CHARS = 4096
"""SQL texts up to this long are tokenized on the event loop; longer ones on a worker thread."""
MAX_NESTING = 8
"""How deep ``EXECUTE IMMEDIATE`` literals inside literals are looked into."""

SECRET = re.compile(r"(?i)secret|password|token|access[.]?key")
"""Spark's default ``spark.redaction.regex``: keys (or values) that hold secrets."""
REDACTED = "*********(redacted)"
"""What Spark shows in place of a secret."""
READS = frozenset(("get", "get_with_default", "get_option", "get_all"))
"""The Config operations that answer with settings' values."""
PLAN_COMPRESSION_KEY = "spark.connect.session.planCompression.threshold"
"""Plans above this size a client compresses (Spark 4.1 and later); the gateway cannot read
a compressed plan, so it answers -1 (never) to clients that ask."""

_SPARK = Dialect.get_or_raise("spark")
_SEPARATOR = TokenType.SEMICOLON


SUBSTITUTION = re.compile(rb"\$\{(?:(\w+?):)?([^}]*)\}")
"""A reference Spark's SQL parser replaces by a value (``spark.sql.variable.substitute``):
``${key}`` and ``${spark:key}``, ``${sparkconf:key}``, ``${hiveconf:key}``,
``${hivevar:key}`` by a setting; ``${env:NAME}`` and ``${system:name}`` by the
server's environment variable or JVM system property."""
SERVER_SIDE = frozenset((b"env", b"system"))


def screen_substitutions(request: bytes) -> None:
    """Refuse a request that would have Spark substitute a secret into its SQL.

    Spark substitutes ``${...}`` in every text it parses (queries,
    expressions), so ``SELECT '${env:SPARK_CONNECT_AUTHENTICATE_TOKEN}'``
    answers with the server's token: a reference to the server's environment
    or system properties, or to a setting whose name looks like a secret, is
    refused wherever it stands in the request (a setting's value too, which
    is substituted when read).
    """
    if b"${" not in request:
        return
    for found in SUBSTITUTION.finditer(request):
        prefix = (found.group(1) or b"").lower()
        key = found.group(2).decode("utf-8", errors="replace")
        if prefix in SERVER_SIDE or SECRET.search(key):
            reference = found.group(0).decode("utf-8", errors="replace")
            raise SettingProtected(
                f"the request holds [{reference}], which Spark would replace by "
                + (
                    "a value of the Spark server's own environment or system properties"
                    if prefix in SERVER_SIDE
                    else "a setting that holds a secret"
                )
                + "; the gateway refuses such references (docs/security.md, \"Protected "
                'settings"). Pass the value as a parameter or literal instead'
            )


class ConfigGuard:
    """Refuses requests that change a protected session setting."""

    def __init__(self, workspace: Path) -> None:
        root = Path(workspace).absolute()
        self._roots = tuple(dict.fromkeys(str(p) for p in (root, root.resolve())))
        words = (*PROTECTED_KEYS, *PROTECTED_PREFIXES, *self._roots, "reset", "immediate")
        self._words = tuple(dict.fromkeys(w.lower() for w in words))

    def _suspect(self, text: str) -> bool:
        """Whether ``text`` may change a protected setting (plain substring search)."""
        lowered = text.lower()
        return any(word in lowered for word in self._words)

    def check_config(self, request: spark_proto.ConfigRequest) -> None:
        """A Config RPC that sets or unsets a protected key."""
        operation = request.operation
        kind = operation.WhichOneof("op_type")
        if kind == "set":
            for pair in operation.set.pairs:
                self._check_setting(pair.key, pair.value if pair.HasField("value") else "")
        elif kind == "unset":
            for key in operation.unset.keys:
                self._check_setting(key, "")

    @staticmethod
    def reads(request: spark_proto.ConfigRequest) -> bool:
        """Whether a Config RPC answers with settings' values (and so needs ``redact``)."""
        return request.operation.WhichOneof("op_type") in READS

    @staticmethod
    def redact(response: bytes) -> bytes:
        """A Config response with the values of secrets replaced, as Spark shows them, and plan
        compression off."""
        answer = spark_proto.ConfigResponse.FromString(response)
        secrets = [
            pair
            for pair in answer.pairs
            if pair.HasField("value") and (SECRET.search(pair.key) or SECRET.search(pair.value))
        ]
        compression = [pair for pair in answer.pairs if pair.key == PLAN_COMPRESSION_KEY]
        if not secrets and not compression:
            return response
        for pair in secrets:
            pair.value = REDACTED
        for pair in compression:
            pair.value = "-1"
        return answer.SerializeToString()

    async def check_plan(self, request: Message) -> None:
        """No compressed plan, and every SQL text inside the request's plan nodes."""
        for plan in plan_nodes(request, spark_proto.Plan):
            kind = plan.WhichOneof("op_type")
            if kind == "compressed_operation" or (kind is None and plan.ByteSize()):
                raise PlanError(
                    "the request's plan is compressed (or of a kind this gateway's pyspark does "
                    "not know), which the gateway cannot read, and so "
                    "cannot check or carry out; set the client's "
                    f"{PLAN_COMPRESSION_KEY} to -1 (the gateway answers -1 to clients that ask)"
                )
        for text in self.sql_texts(request):
            if not self._suspect(text):
                continue
            if len(text) > INLINE_CHARS:
                await asyncio.to_thread(self.check_sql, text)
            else:
                self.check_sql(text)

    @staticmethod
    def sql_texts(request: Message) -> Iterator[str]:
        """The SQL of every SQL relation and SQL command in ``request``."""
        for node in plan_nodes(request, spark_proto.Relation, spark_proto.Command):
            if isinstance(node, spark_proto.Relation) and node.WhichOneof("rel_type") == "sql":
                yield node.sql.query
            elif isinstance(node, spark_proto.Command) and node.sql_command.sql:
                yield node.sql_command.sql

    def check_sql(self, text: str, nesting: int = 0) -> None:
        """Every SET, RESET and EXECUTE IMMEDIATE literal of one SQL text.

        sqlglot keeps the rest of an ``EXECUTE`` statement as one string
        token (``IMMEDIATE 'literal' ...``), which is looked into the same way.
        """
        if nesting > MAX_NESTING or not self._suspect(text):
            return
        tokens = _tokens(text)
        for at, token in enumerate(tokens):
            word = token.text.upper() if token.token_type is not TokenType.STRING else ""
            if word == "SET":
                key, value = _assignment(text, tokens, at + 1)
                if key and value is not None:
                    self._check_setting(key, value)
            elif word == "RESET":
                key, _ = _assignment(text, tokens, at + 1)
                if not key:
                    raise SettingProtected(
                        "RESET without a key would also reset the settings the gateway relies "
                        f"on ({', '.join(_protected_names())}); reset the settings you changed "
                        "by name instead (RESET key)"
                    )
                self._check_setting(key, "")
            elif word in ("EXECUTE", "IMMEDIATE"):
                self.check_sql(_literal(tokens, at + 1), nesting + 1)

    def _check_setting(self, key: str, value: str) -> None:
        reason = _protection(key)
        if reason is not None:
            raise SettingProtected(
                f"the session setting [{key}] cannot be changed through the gateway: it relies "
                f"on it for {reason}; leave it as the gateway sets it (docs/security.md, "
                '"Protected settings")'
            )
        root = next((r for r in self._roots if r in value), None)
        if root is not None:
            raise SettingProtected(
                f"the session setting [{key}] cannot name the gateway's workspace [{root}]: "
                "the workspace holds every session's temporary tables; point it at a folder "
                "of your own"
            )


def _protection(key: str) -> str | None:
    """What the gateway needs ``key`` for; None when the key is not protected."""
    lowered = key.strip().lower()
    for name, reason in PROTECTED_KEYS.items():
        if lowered == name.lower():
            return reason
    for prefix, reason in PROTECTED_PREFIXES.items():
        if lowered.startswith(prefix.lower()):
            return reason
    return None


def _protected_names() -> Iterable[str]:
    return (*PROTECTED_KEYS, *(p + "*" for p in PROTECTED_PREFIXES))


def _tokens(text: str) -> list[Token]:
    """Spark SQL tokens of ``text``; of a text that does not tokenize, the ones before the fault."""
    tokenizer = _SPARK.tokenizer_class(dialect=_SPARK)
    try:
        return list(tokenizer.tokenize(text))
    except TokenError:
        return list(tokenizer.tokens)


def _literal(tokens: list[Token], start: int) -> str:
    """The string literal starting at ``start``; Spark joins adjacent literals ('a' 'b')."""
    parts = []
    for token in tokens[start:]:
        if token.token_type is not TokenType.STRING:
            break
        parts.append(token.text)
    return "".join(parts)


def _assignment(text: str, tokens: list[Token], start: int) -> tuple[str, str | None]:
    """Key and value of ``SET key = value`` (or ``RESET key``) whose key starts at ``start``.

    The value is None when there is no ``=`` (``SET key`` only reads the setting).
    """
    end = start
    while end < len(tokens) and tokens[end].token_type not in (TokenType.EQ, _SEPARATOR):
        end += 1
    key = "".join(t.text for t in tokens[start:end])
    if end >= len(tokens) or tokens[end].token_type is not TokenType.EQ:
        return key, None
    stop = end + 1
    while stop < len(tokens) and tokens[stop].token_type is not _SEPARATOR:
        stop += 1
    value_end = tokens[stop].start if stop < len(tokens) else len(text)
    return key, text[tokens[end].end + 1 : value_end]
