"""Reading a planned scan: batches of the output schema, file after file.

Owns ``ScanReader`` (``scanner``), which takes each file the columnar way,
through its format's pyarrow reader, and conforms the batches to the plan's
output columns (``conform``); the row path, which reads on record by record
through a ``ResultSetLoader`` where pyarrow gave up and applies the
``on_error`` policy (``rowpath``); and the rejects files that
``on_error="reject"`` writes (``rejects``).

It runs where Spark's tasks run (the gateway only reads the rejects files
back) and follows the plan it is given, so it stands on the planning layer
and everything below it, and knows nothing of Spark.

Imports from the scan: ``choices``, ``names``, ``files``, ``formats``,
``loader``, ``planning``, ``request``.
"""
