"""Scans in the gateway: the plugin's ``Scan`` relation and SQL's scan views, read by Spark.

Owns turning a plugin ``Scan`` relation into a read of the scan data source
(``relation``), registered once in each session (``scan_sessions``, the
scans' own record of a session), with the row counts that send no rows to Spark
(``scan_counts``) and the files filters let it skip (``scan_pruning``), both
leaving whole the scans of plans a client cached (``cached_scans``); the
rows the scans of a query read, from the metrics Spark sends back
(``scan_rows``); ``CREATE TEMPORARY VIEW ... USING scan`` for every client
(``scan_views``); and the rejects table of ``on_error="reject"``, a temp
table of the session the scan fills (``rejects``).

The top of the handled requests: a scan's rejects table is created and read
as any temp table, and its handlers join the statements' registry. The scan
itself, what it reads and how, is ``connect_plugin.scanning``.

Imports from the server: ``model``, ``sessions``, ``statements``, ``table_files``, ``tables``, ``transport``.
"""
