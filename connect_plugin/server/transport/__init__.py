"""The gateway's two gRPC sides, and what travels on them.

Owns the channels' settings (``channels``), who is calling (``auth``) and
Spark's token (``upstream_token``), which client sent a request
(``clients``), forwarding every RPC upstream (``forwarding``, with the
accumulators kept from the Scala client, ``observed_metrics``), decoding the
plans in a request (``plans``) and what a client asks the gateway to do
(``requests``); on the upstream side, the work the gateway does in a user's
Spark session (``upstream``) and the SQL text and plan pieces it sends
(``spark_sql``); and the one place errors become a gRPC status (``status``).

The floor of the server: nothing here knows sessions, temp tables or
statements. Where forwarding needs something from above (the metrics, the
hooks on intercepted RPCs, the observer of sessions), it is handed in as a
protocol.

Imports from the server: nothing.
"""
