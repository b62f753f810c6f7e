"""What a client asks the gateway to do, and the SQL the gateway writes for Spark.

Owns the gateway's statements, whichever way a client sent them (a plugin
message, a SQL statement, a DataFrame command), with the names they give
(``statements``), and the literals and identifiers the gateway splices into
what it sends Spark (``spark_sql``).

The floor of the server beside ``transport``: plain values, which neither
travel nor act. A statement may carry what a scan asks for (the scan's
options), from the scan's public names.

Imports from the server: nothing.
"""
