"""The gateway's two gRPC sides, and what travels on them.

Owns the channels' settings (``channels``), who is calling (``auth``) and
Spark's token (``upstream_token``), which client sent a request
(``clients``), the service's methods as its descriptor gives them
(``service``), forwarding every RPC upstream (``forwarding``, as the
authenticated user, ``as_user``, with the accumulators kept from the Scala
client, ``observed_metrics``), what the
gateway's hooks and observers tell the forwarder (``interception``) and
decoding the plans in a request (``plans``); on the upstream side, the work
the gateway does in a user's Spark session (``upstream``) and whether the
upstream still has a session (``liveness``); and the one place
errors become a gRPC status (``status``, ``spark_status``).

The floor of the server: nothing here knows sessions, temp tables,
statements or scans. Where forwarding needs something from above (the metrics, the
hooks on intercepted RPCs, the observer of sessions), it is handed in as a
protocol.

Imports from the server: nothing.
"""
