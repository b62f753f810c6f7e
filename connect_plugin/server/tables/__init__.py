"""Temporary tables by statement: create, find, read, insert into, change and guard them.

Owns what each format holds exactly (``lossless``) and the values it
refuses as they are written (``value_checks``, ``inserts``); ``CREATE
TEMPORARY TABLE``, its input (``table_input``) and every step it may undo
(``create``); the partition folders every version of a partitioned table
shows Spark (``partition_folders``); a session's tables once they exist:
find, list, read, drop (``catalog``); the handlers of temp-table requests (``table_handlers``);
``DELETE``, ``UPDATE``, ``MERGE INTO`` and ``TRUNCATE`` (``row_change_plans``,
``row_changes``); the Spark statements that would break a temp table behind
the gateway's back (``guards``); and the database named like the tables'
qualifier (``qualifier_database``).

A table's record, name, view and files belong to its session, below; the
handlers here register with the statements' registry.

Imports from the server: ``model``, ``sessions``, ``statements``, ``transport``.
"""
