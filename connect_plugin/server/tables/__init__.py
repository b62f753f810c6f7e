"""Temporary tables by statement: create, find, read, insert into, change and guard them.

Owns what each format holds exactly (``lossless``) and the values it
refuses as they are written (``value_checks``) or before (orc's zeros of
both signs, ``zero_signs``); ``CREATE TEMPORARY TABLE`` and its input
(``create``, ``table_input``); a new version of a table,
written and named or undone (``versions``), and a table rewritten whole by
a plan of its new rows (``rewrites``); the partition folders every version
of a partitioned table shows Spark (``partition_folders``); a session's
tables once they exist: find, list, read, drop (``catalog``); the handlers
of temp-table statements (``table_handlers``); ``INSERT`` (``inserts``, its
rows checked as they are written, ``insert_rows``, and its overwrites,
``overwrites``); ``DELETE``, ``UPDATE``, ``MERGE INTO`` and ``TRUNCATE``
(``row_changes``, their query ``row_change_plans``); the Spark statements
that would break a temp table behind the gateway's back (``guards``); and
the database named like the tables' qualifier (``qualifier_database``).

A table's record, name, view and files belong to its session, below; the
handlers here register with the statements' registry.

Imports from the server: ``model``, ``sessions``, ``statements``, ``table_files``, ``transport``.
"""
