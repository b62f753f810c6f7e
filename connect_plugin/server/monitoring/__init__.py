"""What the gateway tells its operators: the audit log and the Prometheus metrics.

Owns the audit log, one JSON line per statement handled and per refusal
(``audit``), and the metrics of what the gateway does, never of who asked
(``metrics``).

Both watch from the side: the metrics read the session registry at each
scrape and what the expiry and the start-up recovery did, the audit log is
written to the gateway's private files. The forwarder counts calls through
its ``CallMetrics`` protocol, so nothing under here names them.

Imports from the server: ``model``, ``sessions``, ``transport``.
"""
