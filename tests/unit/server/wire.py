"""Protobuf wire bytes built by hand: plans nested deeper than any encoder will nest them."""

from __future__ import annotations

from pyspark.sql.connect.proto import base_pb2, relations_pb2


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def nested_projections(levels: int, request: base_pb2.ExecutePlanRequest | None = None) -> bytes:
    """An ExecutePlanRequest whose plan is ``levels`` projections over ``range(1)``."""
    payload = relations_pb2.Relation(range=relations_pb2.Range(end=1)).SerializeToString()
    project = relations_pb2.Relation.DESCRIPTOR.fields_by_name["project"].number
    child = relations_pb2.Project.DESCRIPTOR.fields_by_name["input"].number
    for _ in range(levels):
        payload = field(project, field(child, payload))
    root = base_pb2.Plan.DESCRIPTOR.fields_by_name["root"].number
    plan = base_pb2.ExecutePlanRequest.DESCRIPTOR.fields_by_name["plan"].number
    head = b"" if request is None else request.SerializeToString()
    return head + field(plan, field(root, payload))
