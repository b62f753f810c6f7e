"""Scan errors leave the methods Spark calls with their class first and a short traceback.

Spark's worker prints the traceback it catches (``traceback.format_exception``)
into its own message; these tests print it the same way.
"""

from __future__ import annotations

import pickle
import traceback
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from connect_plugin.errors import (
    BadRecord,
    ScanError,
    ScanInternalError,
    ScanPathNotFound,
    UnreadableFile,
    find_marked,
)
from connect_plugin.scanning import ScanSpec
from connect_plugin.scanning.spark.spark_source import SPEC_OPTION, ScanDataSource
from connect_plugin.scanning.spark.worker_errors import reading, reported, reported_batches


def printed(exc: BaseException) -> str:
    """The traceback as Spark's worker prints it into the error it sends the JVM."""
    return "".join(traceback.TracebackException.from_exception(exc, compact=True).format())


def frames_below_the_test(exc: BaseException) -> list[str]:
    """The functions of the traceback below the test that called (Spark's worker, there)."""
    return [frame.name for frame in traceback.extract_tb(exc.__traceback__)][1:]


def deep(depth: int) -> None:
    if depth == 0:
        try:
            raise OSError("[Errno 13] Permission denied")
        except OSError as cause:
            raise UnreadableFile(f"cannot read file /d/f.json: {cause}") from cause
    deep(depth - 1)


@reported
def plan(depth: int) -> None:
    deep(depth)


@reported_batches
def batches(depth: int) -> Iterator[int]:
    yield 1
    deep(depth)


def test_a_scan_error_leaves_marked_with_the_frame_that_raised_it() -> None:
    with pytest.raises(UnreadableFile) as caught:
        plan(40)
    text = printed(caught.value)
    assert text.splitlines()[-1] == (
        "connect_plugin.errors.UnreadableFile: [CONNECT_PLUGIN.SCAN_UNREADABLE_FILE] "
        "cannot read file /d/f.json: [Errno 13] Permission denied"
    )
    assert frames_below_the_test(caught.value) == ["call", "deep"]
    assert "direct cause" not in text
    assert len(text) < 800


def test_a_scan_error_raised_while_draining_batches_leaves_marked() -> None:
    drained = []
    with pytest.raises(UnreadableFile) as caught:
        drained.extend(batches(40))
    assert drained == [1]
    assert find_marked(printed(caught.value)) is not None
    assert frames_below_the_test(caught.value) == ["call", "deep"]


def test_another_exception_leaves_as_an_internal_scan_error_its_trace_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @reported
    def broken() -> None:
        raise KeyError("missing")

    with pytest.raises(ScanInternalError) as caught:
        broken()
    found = find_marked(printed(caught.value))
    assert found is not None
    assert found.error_class == "CONNECT_PLUGIN.SCAN_INTERNAL"
    assert found.message.startswith(
        "the scan failed planning the scan with an error of its own code (KeyError: 'missing')"
    )
    assert frames_below_the_test(caught.value) == ["call"]
    (record,) = caplog.records
    assert record.exc_info is not None
    logged = "".join(traceback.format_exception(*record.exc_info))
    assert "KeyError: 'missing'" in logged
    assert 'raise KeyError("missing")' in logged


@pytest.mark.parametrize(
    ("raised", "error_type", "cause"),
    [
        (pa.ArrowKeyError("No match for FieldRef.Name(id)"), UnreadableFile, "ArrowKeyError"),
        (pa.ArrowInvalid("JSON parse error:\n  Invalid value"), UnreadableFile, "ArrowInvalid"),
        (FileNotFoundError(2, "No such file or directory"), UnreadableFile, "FileNotFoundError"),
        (ZeroDivisionError("division by zero"), ScanInternalError, "ZeroDivisionError"),
    ],
)
def test_an_exception_reading_a_file_names_the_file(
    raised: Exception, error_type: type[ScanError], cause: str
) -> None:
    @reported_batches
    def read() -> Iterator[int]:
        yield 1
        with reading("/d/f.json"):
            raise raised

    with pytest.raises(error_type) as caught:
        list(read())
    found = find_marked(printed(caught.value))
    assert found is not None
    assert found.error_class == error_type.error_class
    assert "file /d/f.json" in found.message
    assert f"{cause}: " in found.message
    assert "\n" not in str(caught.value)


def test_what_spark_calls_on_the_data_source_is_reported(tmp_path: Path) -> None:
    spec = ScanSpec([str(tmp_path / "nothing")], "json")
    data_source = ScanDataSource(CaseInsensitiveDict({SPEC_OPTION: spec.to_json()}))
    with pytest.raises(ScanPathNotFound) as caught:
        data_source.schema()
    found = find_marked(printed(caught.value))
    assert found is not None
    assert found.error_class == "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND"
    assert found.message.startswith(f"path '{tmp_path / 'nothing'}' does not exist")


def test_what_spark_calls_on_the_reader_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"a": 1}\n{"a": \n')
    spec = ScanSpec([str(tmp_path)], "json")
    data_source = ScanDataSource(CaseInsensitiveDict({SPEC_OPTION: spec.to_json()}))
    reader = pickle.loads(pickle.dumps(data_source.reader(data_source.schema())))
    (partition,) = reader.partitions()
    with pytest.raises(BadRecord) as caught:
        list(reader.read(partition))
    found = find_marked(printed(caught.value))
    assert found is not None
    assert found.error_class == "CONNECT_PLUGIN.SCAN_BAD_RECORD"
    assert found.message.startswith(f"file {tmp_path / 'bad.json'}, line 2: malformed json")


def test_a_scan_error_is_marked_once() -> None:
    @reported
    def twice() -> None:
        plan(0)

    with pytest.raises(ScanError) as caught:
        twice()
    assert str(caught.value).count("[CONNECT_PLUGIN.SCAN_UNREADABLE_FILE]") == 1
