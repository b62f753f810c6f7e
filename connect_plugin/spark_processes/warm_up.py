"""A warm start for the embedded server: one scan before the first user's.

A freshly started Spark Connect server spends seconds on its first query
(classes loaded, code generated, the first Python workers started) and the
workers compile what has no bytecode yet. ``warm_up`` runs one small scan in
a session of its own, straight on the embedded server (which only the
gateway's own machine reaches), then releases the session and stops its
Python workers, so the first user's first scan costs what any later
session's does. ``connect_plugin`` itself is compiled first, so that
workers of an editable install find its bytecode too.
"""

from __future__ import annotations

import compileall
import logging
import os
import tempfile
import time
from pathlib import Path

import connect_plugin
from connect_plugin.scanning import ScanOptions
from connect_plugin.scanning.spark import SPEC_OPTION, ScanDataSource
from connect_plugin.spark_processes.python_daemons import stop_session

log = logging.getLogger(__name__)

ROWS = 100


def compile_package() -> bool:
    """Write bytecode for every module of ``connect_plugin`` where its folder is writable."""
    folder = Path(connect_plugin.__file__).parent
    return bool(compileall.compile_dir(folder, quiet=2, workers=1))


def warm_up(
    address: str, data_dir: Path | None = None, run_as: tuple[int, int] | None = None
) -> float:
    """Run one scan on the Spark Connect server at ``address``; the seconds it took. Its file
    goes in a new folder in ``data_dir`` (default: the system's temporary folder), given to
    ``run_as`` (uid, gid), the user the server runs as, when that is another."""
    from pyspark.sql import SparkSession

    started = time.monotonic()
    if not compile_package():
        log.info("connect_plugin could not be compiled in place; workers compile it themselves")
    with tempfile.TemporaryDirectory(prefix="connect-plugin-warm-up-", dir=data_dir) as folder:
        data = Path(folder) / "rows.json"
        data.write_text("".join(f'{{"id": {i}, "name": "n{i}"}}\n' for i in range(ROWS)))
        if run_as is not None:
            os.lchown(data, *run_as)
            os.lchown(folder, *run_as)
        spec = ScanOptions.parse({"path": str(data), "format": "json"}).to_spec()
        spark = SparkSession.builder.remote(address).create()
        try:
            server_side = spark.client._server_session_id
            spark.dataSource.register(ScanDataSource)
            reader = spark.read.format(ScanDataSource.name()).option(SPEC_OPTION, spec.to_json())
            counted = reader.load().where("id >= 0").count()
            server_side = spark.client._server_session_id or server_side
        finally:
            spark.stop()
    if counted != ROWS:
        log.warning("the warm-up scan counted %d rows of %d", counted, ROWS)
    stop_session(
        server_side or "", level=logging.DEBUG, uids=None if run_as is None else {run_as[0]}
    )
    seconds = time.monotonic() - started
    log.info("warmed up Spark and its Python workers in %.1f s", seconds)
    return seconds
