"""The connect-plugin gateway: a Spark Connect server that forwards to Spark.

Its parts, from the floor up; each imports only parts listed above it here,
as its own docstring says (``tests/unit/server/test_server_layers.py`` holds
the code to that):

- ``model``: the gateway's statements, whichever way a client sent them, and
  the SQL pieces it writes for Spark;
- ``transport``: the gateway's two gRPC sides: channels, auth, forwarding,
  plan decoding, the upstream session (and whether it still has a session)
  and the status of errors;
- ``table_files``: a temp table's record and name, and the Spark side of its
  files: their view and their write;
- ``sessions``: the registry and its store, workspace files, quotas,
  liveness, a temp table's record, view and write, and each way a session
  ends or goes on (release, expiry, recovery, clone);
- ``monitoring``: the audit log and the Prometheus metrics;
- ``statements``: recognising SQL and plugin relations, the protected
  settings, the registry of handlers and the dispatch of a plan to them;
- ``tables``: the temp tables' statements: create, catalogue, insert, row
  changes, guards;
- ``scans``: the plugin's ``Scan`` relation, scan views and rejects tables.

On top, the composition root, which may import every part: ``gateway`` (the
process: ``Gateway`` and ``serve``) with ``intercept`` (its hooks on the RPCs
it does not just forward), ``statement_run`` (one ExecutePlan's statement
from recognition to release, with ``detached``, what is kept of it for a
client that reattaches, ``releases``, the releases of Spark's operations it
answers, and ``own_responses``, the responses the gateway makes itself) and ``start_checks`` (what it checks and claims before
anything slow starts), and ``stack`` (a gateway with the Spark Connect
server it fronts) with ``embedded`` (that server from the pyspark wheel,
started fast by ``connect_plugin.spark_processes``). This module re-exports
``Gateway`` and ``serve`` only.
"""

from __future__ import annotations

from connect_plugin.server.gateway import Gateway, serve

__all__ = ["Gateway", "serve"]
