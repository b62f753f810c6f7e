"""The committed generated code matches proto/ (regenerated into a temp dir)."""

from __future__ import annotations

import filecmp
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "connect_plugin" / "proto"


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate_protos", ROOT / "scripts" / "generate_protos.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_in_sync_with_proto_sources(tmp_path: Path) -> None:
    written = _generator().generate(tmp_path)
    assert {p.name for p in written} >= {"relations_pb2.py", "relations_pb2.pyi"}
    stale = [
        p.name
        for p in written
        if not (COMMITTED / p.name).is_file() or not filecmp.cmp(p, COMMITTED / p.name, shallow=False)
    ]
    if stale:
        pytest.fail(
            f"connect_plugin/proto is out of sync with proto/ ({', '.join(stale)}); "
            "run: python scripts/generate_protos.py"
        )


def test_every_proto_message_carries_a_session_id() -> None:
    from connect_plugin import proto
    from connect_plugin.proto import PLUGIN_RELATIONS as PLUGIN_MESSAGES

    assert set(PLUGIN_MESSAGES) == {
        f"connect_plugin.v1.{name}"
        for name in (
            "CreateTempTableAsSelect",
            "DropTempTable",
            "ListTempTables",
            "ReadTempTable",
            "Scan",
        )
    }
    for cls in PLUGIN_MESSAGES.values():
        assert "session_id" in cls.DESCRIPTOR.fields_by_name, cls.DESCRIPTOR.full_name
    assert proto.Scan.DESCRIPTOR.fields_by_name["schema"].message_type.full_name == (
        "spark.connect.DataType"
    )
