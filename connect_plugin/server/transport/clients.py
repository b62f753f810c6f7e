"""Which Spark Connect client sent a request, for the few answers that differ by client.

Every Spark Connect request names its client in ``client_type``, the user
agent. The Scala client (``spark-connect-client-jvm``) always puts a
``scala/<version>`` word in it, whatever its application adds in front.
It gets results without the Python accumulator metrics it cannot read
(``observed_metrics``), and error statuses whose class its error templates
know (``status``).
"""

from __future__ import annotations

from google.protobuf.message import Message


def is_scala_client(request: Message | None) -> bool:
    """Whether ``request`` comes from the Scala client (False when there is no request)."""
    client_type = str(getattr(request, "client_type", ""))
    return any(word.startswith("scala/") for word in client_type.split())
