"""Sessions as the gateway keeps them, with their temp tables' files and views, from start to end.

Owns a temporary table as the gateway knows it (``temp_table``) and how one
is named (``table_names``); the registry of sessions (``registry``), the one
writer of a session's fields, which asks the other parts keeping something
per session whether it holds anything and tells them when it goes; where
it survives the gateway (``store``, in the gateway's own private files,
``private_files``); each session's folder (``workspace``); what a user may
hold (``quotas``); whether the upstream still has a session (``liveness``);
the Spark side of a temp table, its view (``views``) and the write of its
files (``writes``); and each way a session ends or goes on: its release
(``release``, which stops its Python workers too), the expiry of idle and
lost ones (``expiry``), the start-up repair (``recovery``) and its clone
(``clone``).

A session's life and its tables' files stand only on the transport (the
upstream session they work in, plan pieces) and the model (the names
statements give, the SQL pieces sent); which statements make or change a
table is decided above.

Imports from the server: ``model``, ``transport``.
"""
