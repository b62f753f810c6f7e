"""What a scan asks for: the request, from each route's words to one spec that travels.

Owns ``ScanOptions``, the one model every route into a scan becomes (the
client's keywords, the plugin's ``Scan`` message, SQL ``OPTIONS``:
``options``), the kinds of option and how each sits in the message
(``option_kinds``), ``ScanSpec``, the frozen value the gateway hands Spark as
JSON (``spec``), and the file filter it carries for pruning (``predicates``).

A request names its format through the format registry and takes its batch
limits from the loader, so it stands on both; what a request means for the
files (their schema, the output columns, the batches) is decided above it.

Imports from the scan: ``choices``, ``names``, ``files``, ``formats``, ``loader``.
"""
