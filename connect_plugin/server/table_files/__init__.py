"""A temporary table's files, and the Spark side of them: its record, name, view and write.

Owns a temporary table as the gateway knows it (``temp_table``: its name,
folder, format, schema, rows) and how one may be named (``table_names``);
the temporary view of the user's session that gives its files their name,
read with the schema they were written with (``views``); and Spark's write
of its files, with their rows counted, and the stopping of such a write
(``writes``).

A session's registry records tables and the statements decide when they
are made, changed or dropped, both above; this package does the Spark work
of a table for them, in the user's own upstream session.

Imports from the server: ``model``, ``transport``.
"""
