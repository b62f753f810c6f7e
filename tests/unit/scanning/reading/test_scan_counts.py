"""A count is what reading gives: the same number, or the same error, for any file and scan.

``ScanReader.count_file`` is what ``df.count()`` runs in Spark's workers.
Hypothesis writes files with good and bad records (malformed json, csv
records with too few or too many fields, values that do not convert,
parquet values a provided schema cannot hold) and scans them with every
policy and several projections; the count is compared with the rows
``read_file`` gives for the same scan.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connect_plugin.errors import ScanError
from connect_plugin.scanning import ScanReader, ScanSpec, plan_scan
from tests.unit.scanning.scan_checks import write_json, write_parquet, write_text

POLICIES = ("fail", "skip", "null")

JSON_LINES = st.one_of(
    st.builds(lambda i: json.dumps({"id": i, "name": f"n{i}"}), st.integers(0, 9)),
    st.builds(lambda i: json.dumps({"id": f"x{i}"}), st.integers(0, 9)),
    st.sampled_from(['{"id": 1', "[1, 2]", "7", "", '{"id": 1} {"id": 2}']),
)
CSV_RECORDS = st.lists(st.integers(0, 9), min_size=1, max_size=4).map(
    lambda fields: ",".join(str(f) for f in fields)
)


def outcome(spec: ScanSpec) -> tuple[str, Any, Any]:
    """What reading gives and what counting gives: row totals, or the error raised.

    A scan that cannot be planned fails both the same way, in ``schema()``.
    """
    try:
        plan = plan_scan(spec)
    except ScanError as exc:
        return spec.on_error.value, type(exc).__name__, type(exc).__name__
    try:
        read: Any = sum(
            batch.num_rows for f in plan.files for batch in ScanReader(plan).read_file(f)
        )
    except ScanError as exc:
        read = type(exc).__name__
    try:
        counted: Any = sum(ScanReader(plan).count_file(f) for f in plan.files)
    except ScanError as exc:
        counted = type(exc).__name__
    return spec.on_error.value, read, counted


def assert_counts_read(spec: ScanSpec) -> None:
    policy, read, counted = outcome(spec)
    assert counted == read, f"on_error={policy}: reading gave {read}, counting {counted}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(JSON_LINES, min_size=1, max_size=12),
    policy=st.sampled_from(POLICIES),
    columns=st.sampled_from([None, ["id"], ["name"], [], ["filename"]]),
    schema=st.sampled_from([None, pa.schema([("id", pa.int64())])]),
)
@example(lines=['{"id": 1}', '{"id": 2', '{"id": 3}'], policy="fail", columns=None, schema=None)
def test_json_counts_are_reads(
    lines: list[str], policy: str, columns: list[str] | None, schema: pa.Schema | None
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_text(Path(folder) / "a.json", "".join(line + "\n" for line in lines))
        assert_counts_read(
            ScanSpec([str(path)], "json", columns=columns, on_error=policy, provided_schema=schema)
        )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(CSV_RECORDS, min_size=1, max_size=12),
    policy=st.sampled_from(POLICIES),
    header=st.booleans(),
    columns=st.sampled_from([None, [], ["a"]]),
)
@example(records=["1,2,3", "4,5", "6,7,8"], policy="fail", header=True, columns=None)
@example(records=["1,2,3", "4,5,6,7"], policy="skip", header=True, columns=[])
def test_csv_counts_are_reads(
    records: list[str], policy: str, header: bool, columns: list[str] | None
) -> None:
    if not header and columns == ["a"]:
        columns = ["columns[0]"]
    with tempfile.TemporaryDirectory() as folder:
        text = ("a,b,c\n" if header else "") + "".join(r + "\n" for r in records)
        path = write_text(Path(folder) / "a.csv", text)
        options = {"header": str(header).lower()}
        assert_counts_read(
            ScanSpec([str(path)], "csv", columns=columns, on_error=policy, options=options)
        )


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "schema",
    [None, pa.schema([("v", pa.int32())]), pa.schema([("v", pa.float64())])],
    ids=["footer", "narrowing", "widening"],
)
def test_parquet_counts_are_reads(tmp_path: Path, policy: str, schema: pa.Schema | None) -> None:
    """A provided type that cannot hold every value makes bad records, so only reading counts."""
    write_parquet(tmp_path / "a.parquet", pa.table({"v": pa.array([1, 2**40, 3], pa.int64())}))
    assert_counts_read(
        ScanSpec([str(tmp_path)], "parquet", on_error=policy, provided_schema=schema)
    )


def test_a_malformed_json_line_fails_the_count_as_it_fails_reading(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"id": 1}, '{"id": 2', {"id": 3}])
    assert outcome(ScanSpec([str(tmp_path)], "json")) == ("fail", "BadRecord", "BadRecord")
    assert outcome(ScanSpec([str(tmp_path)], "json", on_error="skip")) == ("skip", 2, 2)


def test_short_and_long_csv_records_are_bad_records(tmp_path: Path) -> None:
    write_text(tmp_path / "a.csv", "a,b,c\n1,2,3\n4,5\n6,7,8,9\n")
    header = {"header": "true"}
    spec = ScanSpec([str(tmp_path)], "csv", options=header)
    assert outcome(spec) == ("fail", "BadRecord", "BadRecord")
    assert outcome(ScanSpec([str(tmp_path)], "csv", options=header, on_error="skip")) == (
        "skip",
        1,
        1,
    )
    kept = ScanReader(plan_scan(ScanSpec([str(tmp_path)], "csv", options=header, on_error="null")))
    assert kept.read_table().to_pylist() == [
        {"a": "1", "b": "2", "c": "3"},
        {"a": "4", "b": "5", "c": None},
        {"a": "6", "b": "7", "c": "8"},
    ]
