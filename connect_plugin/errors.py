"""One error hierarchy for the whole project.

Every error a user can cause names the thing it is about (table, file, column,
line) and says what to do. The gateway maps these classes to gRPC status codes
in one place (``connect_plugin.server.status``); nothing else decides codes.
"""

from __future__ import annotations


class ConnectPluginError(Exception):
    """Base class of every error raised by connect-plugin."""


class ConfigError(ConnectPluginError):
    """A setting is missing, malformed or contradicts another one."""


class EnvironmentProblem(ConnectPluginError):
    """The machine lacks something the embedded stack needs (Java, ports, jars)."""


class UpstreamUnavailable(ConnectPluginError):
    """The Spark Connect server the gateway fronts cannot be reached or did not start."""


class PlanError(ConnectPluginError):
    """A plan sent by a client is malformed or uses something the gateway does not know."""


class UnknownExtension(PlanError):
    """A plan holds an extension message the gateway has no handler for."""


class NotSupportedYet(PlanError):
    """A plugin message is known but the gateway cannot execute it in this version."""


class SessionMismatch(ConnectPluginError):
    """A plugin message carries a session id other than the session of its request."""


class ScanError(ConnectPluginError):
    """Base class of errors raised by the scan framework."""
