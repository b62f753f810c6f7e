"""Generate connect_plugin/proto/*_pb2.py(i) from proto/connect_plugin/v1/*.proto.

Spark's .proto sources are not shipped with pyspark, so the imports of our
protos are resolved from the descriptors compiled into the installed pyspark
(``--descriptor_set_in``): the generated code always matches the Spark
Connect protocol of the pyspark in use. Imports are rewritten to the Python
packages that hold the generated modules (pyspark's and ours), the same way
pyspark post-processes its own generated code.

Usage: python scripts/generate_protos.py [OUT_DIR]   (default: connect_plugin/proto)
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor
from grpc_tools import protoc
from pyspark.sql.connect.proto import relations_pb2, types_pb2

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "proto"
PROTO_PACKAGE_DIR = PROTO_ROOT / "connect_plugin" / "v1"
DEFAULT_OUT = ROOT / "connect_plugin" / "proto"

IMPORT_REWRITES = (
    (re.compile(r"^from spark\.connect import ", re.M), "from pyspark.sql.connect.proto import "),
    (re.compile(r"^from connect_plugin\.v1 import ", re.M), "from connect_plugin.proto import "),
)


def _spark_descriptor_set() -> bytes:
    """Serialise the transitive closure of the Spark protos ours import."""
    seen: dict[str, FileDescriptor] = {}

    def visit(fd: FileDescriptor) -> None:
        if fd.name in seen:
            return
        for dep in fd.dependencies:
            visit(dep)
        seen[fd.name] = fd

    for module in (relations_pb2, types_pb2):
        visit(module.DESCRIPTOR)
    fds = descriptor_pb2.FileDescriptorSet()
    for fd in seen.values():
        fd.CopyToProto(fds.file.add())
    return fds.SerializeToString()


def generate(out_dir: Path) -> list[Path]:
    """Compile every plugin .proto into ``out_dir``; return the files written."""
    sources = sorted(PROTO_PACKAGE_DIR.glob("*.proto"))
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        descriptor_set = tmp_path / "spark.pb"
        descriptor_set.write_bytes(_spark_descriptor_set())
        build = tmp_path / "build"
        build.mkdir()
        args = [
            "grpc_tools.protoc",
            f"--descriptor_set_in={descriptor_set}",
            f"--proto_path={PROTO_ROOT}",
            f"--python_out={build}",
            f"--pyi_out={build}",
            *(str(src.relative_to(PROTO_ROOT)) for src in sources),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed: {' '.join(args)}")
        for generated in sorted((build / "connect_plugin" / "v1").iterdir()):
            text = generated.read_text()
            for pattern, replacement in IMPORT_REWRITES:
                text = pattern.sub(replacement, text)
            target = out_dir / generated.name
            target.write_text(text)
            written.append(target)
    return written


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    for path in generate(out_dir):
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
