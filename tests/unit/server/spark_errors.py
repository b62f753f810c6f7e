"""The errors Spark Connect sends when a session or an operation is not there, as recorded.

``record(address)`` provokes each error once on a real Spark Connect server
and returns its shape: status code, message and the ``google.rpc.ErrorInfo``
detail, with the values that change from call to call (the handle, an error
id) replaced by placeholders. ``spark_errors.json`` holds what Spark 4.3
sent; the fake upstream of the unit tests answers with exactly these shapes,
and an integration test records them again and compares, so the fake cannot
drift from Spark unseen. Refresh the file with
``python -m tests.unit.server.spark_errors sc://host:port``.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.any_pb2 import Any as AnyProto
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status
from pyspark.sql.connect import proto as spark_proto
from pyspark.sql.connect.proto.base_pb2_grpc import SparkConnectServiceStub

FIXTURE = Path(__file__).with_name("spark_errors.json")
HANDLE = "{handle}"
ERROR_ID = "{error_id}"
USER = spark_proto.UserContext(user_id="recorder")


def _release_execute(stub: SparkConnectServiceStub, session_id: str, **fields: Any) -> object:
    request = spark_proto.ReleaseExecuteRequest(
        session_id=session_id, user_context=USER, operation_id=str(uuid.uuid4()), **fields
    )
    request.release_all.SetInParent()
    return stub.ReleaseExecute(request)


def _config(stub: SparkConnectServiceStub, session_id: str, **fields: Any) -> str:
    request = spark_proto.ConfigRequest(session_id=session_id, user_context=USER, **fields)
    request.operation.get_all.SetInParent()
    return str(stub.Config(request).server_side_session_id)


def _shape(error: grpc.RpcError, handle: str) -> dict[str, Any]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "Spark sent no status details"
    (detail,) = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info)
    metadata = {
        key: (ERROR_ID if key == "errorId" else value.replace(handle, HANDLE))
        for key, value in sorted(info.metadata.items())
    }
    return {
        "code": error.code().name,  # type: ignore[attr-defined]
        "message": (error.details() or "").replace(handle, HANDLE),  # type: ignore[attr-defined]
        "reason": info.reason,
        "domain": info.domain,
        "metadata": metadata,
    }


def record(address: str) -> dict[str, dict[str, Any]]:
    """Provoke each error on the server at ``sc://host:port`` and return its shape."""
    with grpc.insecure_channel(address.removeprefix("sc://").split("/")[0]) as channel:
        stub = SparkConnectServiceStub(channel)
        shapes: dict[str, dict[str, Any]] = {}

        def provoke(error_class: str, handle: str, call: Callable[[], object]) -> None:
            try:
                call()
            except grpc.RpcError as error:
                shapes[error_class] = _shape(error, handle)
                return
            raise AssertionError(f"{error_class}: the call succeeded")

        unknown = str(uuid.uuid4())
        provoke(
            "INVALID_HANDLE.SESSION_NOT_FOUND", unknown, lambda: _release_execute(stub, unknown)
        )
        live = str(uuid.uuid4())
        _config(stub, live)
        provoke(
            "INVALID_HANDLE.SESSION_CHANGED",
            live,
            lambda: _config(stub, live, client_observed_server_side_session_id=str(uuid.uuid4())),
        )
        operation = str(uuid.uuid4())
        reattach = spark_proto.ReattachExecuteRequest(
            session_id=live, user_context=USER, operation_id=operation
        )
        provoke(
            "INVALID_HANDLE.OPERATION_NOT_FOUND",
            operation,
            lambda: list(stub.ReattachExecute(reattach)),
        )
        stub.ReleaseSession(spark_proto.ReleaseSessionRequest(session_id=live, user_context=USER))
        provoke("INVALID_HANDLE.SESSION_CLOSED", live, lambda: _release_execute(stub, live))
        return shapes


def load() -> dict[str, dict[str, Any]]:
    recorded: dict[str, dict[str, Any]] = json.loads(FIXTURE.read_text())
    return recorded


def status_of(error_class: str, handle: str) -> grpc.Status:
    """The status Spark sends for ``error_class``, about ``handle``, built from the recording."""
    shape = load()[error_class]
    metadata = {
        key: (str(uuid.uuid4()) if value == ERROR_ID else value.replace(HANDLE, handle))
        for key, value in shape["metadata"].items()
    }
    info = error_details_pb2.ErrorInfo(
        reason=shape["reason"], domain=shape["domain"], metadata=metadata
    )
    detail = AnyProto()
    detail.Pack(info)
    status = status_pb2.Status(
        code=getattr(code_pb2, shape["code"]),
        message=shape["message"].replace(HANDLE, handle),
        details=[detail],
    )
    return rpc_status.to_status(status)


def rpc_error(error_class: str, handle: str) -> grpc.aio.AioRpcError:
    """The error a gRPC client of Spark raises for ``error_class`` about ``handle``."""
    status = status_of(error_class, handle)
    return grpc.aio.AioRpcError(
        status.code,
        grpc.aio.Metadata(),
        grpc.aio.Metadata(*status.trailing_metadata),
        status.details,
    )


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(record(sys.argv[1]), indent=2, sort_keys=True) + "\n")
