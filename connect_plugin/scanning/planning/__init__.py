"""Planning a scan on the driver: its files, their schema on read, the output columns.

Owns ``plan_scan`` and the ``ScanPlan`` it returns (``plan``), what goes
into it: a bounded sample of each file (``sampling``), the one table schema
settled from the samples and the provided schema (``schema_tracker``), the
implicit and partition columns a file's place gives (``implicit``) and the
output columns a projection names (``projection``); partition pruning,
which drops the files a query's filter rules out (``pruning``); and the
first plan of a scan kept in a file, whose columns its later plans keep
(``kept``).

Spark needs the schema before any task runs, so schema on read is settled
here, up front, from the request and what the formats say of each file; the
reader on the executors follows the plan without looking at the files again.

Imports from the scan: ``choices``, ``names``, ``files``, ``formats``, ``request``.
"""
