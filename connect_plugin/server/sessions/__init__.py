"""Sessions as the gateway keeps them, with their temp tables, from start to end.

Owns the registry of sessions (``registry``), the one writer of a
session's fields, which asks the other parts keeping something per session
whether it holds anything and tells them when it goes; where it survives
the gateway (``store``, in the gateway's own private files,
``private_files``); each session's folder (``workspace``); what a user may
hold (``quotas``); and each way a session ends or goes on: its release
(``release``, which stops its writes and its Python workers too), the
expiry of idle and lost ones (``expiry``), the start-up repair
(``recovery``) and its clone (``clone``).

A session's life stands on its tables' files (``table_files``: their views
and writes), the transport and the model; which statements make or change
a table is decided above.

Imports from the server: ``model``, ``table_files``, ``transport``.
"""
