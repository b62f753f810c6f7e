"""What the gateway handles itself: recognising SQL statements and plugin relations, and one way to handle them.

Owns recognising the SQL statements the gateway answers, without stalling
anyone (``recognition``); the settings a client may not change, wherever a
``SET`` or a Config RPC tries (``config_guard``); the small result tables of plugin statements
(``results``); the registry of handlers, one per statement type, and the order
in which those sharing a first keyword are tried (``handlers``); and turning
a client's plan into statements for the handlers and their results back into
the plan (``dispatch``).

The handlers of temp tables and of scans register here and stand above; a
statement's handler may write a session's temp table, so this package stands
on the sessions.

Imports from the server: ``model``, ``sessions``, ``table_files``, ``transport``.
"""
