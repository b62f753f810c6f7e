"""Partition pruning: filters on dirN and hive columns skip files before they are opened."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from connect_plugin.scanning import PartitionFilter, ScanReader, ScanSpec, plan_scan, prune
from connect_plugin.scanning.planning.plan import ScanPlan
from connect_plugin.scanning.request.predicates import AllOf, AnyOf, FileFilter, NoneOf
from tests.unit.scanning.scan_checks import write_json


@pytest.fixture
def positional(tmp_path: Path) -> ScanPlan:
    write_json(tmp_path / "2023" / "a.json", [{"n": 1}])
    write_json(tmp_path / "2024" / "01" / "b.json", [{"n": 2}])
    write_json(tmp_path / "2024" / "02" / "c.json", [{"n": 3}])
    write_json(tmp_path / "top.json", [{"n": 4}])
    return plan_scan(ScanSpec([str(tmp_path)], "json"))


def kept(plan: ScanPlan, *filters: FileFilter) -> list[str]:
    return [os.path.basename(found.path) for found in prune(plan, filters)]


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (PartitionFilter("eq", "dir0", "2024"), ["b.json", "c.json"]),
        (PartitionFilter("eq", "DIR1", "02"), ["c.json"]),
        (PartitionFilter("eq", "dir0", "2024", negated=True), ["a.json"]),
        (PartitionFilter("in", "dir0", ("2023", "2025")), ["a.json"]),
        (PartitionFilter("in", "dir0", ("2025", None)), []),
        (PartitionFilter("in", "dir0", ("2025", None), negated=True), []),
        (PartitionFilter("is_null", "dir0"), ["top.json"]),
        (PartitionFilter("is_not_null", "dir1"), ["b.json", "c.json"]),
        (PartitionFilter("gt", "dir0", "2023"), ["b.json", "c.json"]),
        (PartitionFilter("le", "dir0", "2023"), ["a.json"]),
        (PartitionFilter("lt", "dir1", "02"), ["b.json"]),
        (PartitionFilter("ge", "dir1", "02"), ["c.json"]),
        (PartitionFilter("eq_null_safe", "dir1", None), ["a.json", "top.json"]),
        (PartitionFilter("starts_with", "dir0", "20"), ["a.json", "b.json", "c.json"]),
        (PartitionFilter("ends_with", "dir0", "3"), ["a.json"]),
        (PartitionFilter("contains", "dir1", "2"), ["c.json"]),
    ],
)
def test_filters_on_dir_columns(
    positional: ScanPlan, found: PartitionFilter, expected: list[str]
) -> None:
    assert kept(positional, found) == expected


def test_implicit_file_columns_prune_too(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", [{"n": 1}])
    write_json(tmp_path / "b.json", [{"n": 2}])
    plan = plan_scan(ScanSpec([str(tmp_path)], "json", columns=["n", "filename"]))
    assert kept(plan, PartitionFilter("eq", "FILENAME", "b.json")) == ["b.json"]


def test_filters_combine_with_and(positional: ScanPlan) -> None:
    assert kept(
        positional, PartitionFilter("eq", "dir0", "2024"), PartitionFilter("eq", "dir1", "01")
    ) == ["b.json"]


def test_a_filter_on_a_table_column_keeps_every_file(positional: ScanPlan) -> None:
    assert len(prune(positional, [PartitionFilter("eq", "n", 1)])) == 4


@pytest.mark.parametrize(
    "found",
    [PartitionFilter("eq", "dir0", 2024), PartitionFilter("gt", "dir0", True)],
    ids=["number against a string", "boolean"],
)
def test_values_that_do_not_compare_keep_the_file(
    positional: ScanPlan, found: PartitionFilter
) -> None:
    """Only a null directory value (unknown under any comparison) lets such a filter drop a file."""
    assert kept(positional, found) == ["a.json", "b.json", "c.json"]


def test_hive_columns_compare_by_their_type(tmp_path: Path) -> None:
    for year, month in ((2022, 11), (2023, 2), (2023, 12)):
        write_json(tmp_path / f"year={year}" / f"month={month}" / "f.json", [{"n": year}])
    plan = plan_scan(ScanSpec([str(tmp_path)], "json", partitioning="hive"))

    def years(*filters: PartitionFilter) -> list[Any]:
        return [ScanReader(plan).read_table(prune(plan, filters)).column("n").to_pylist()]

    assert years(PartitionFilter("eq", "year", 2023)) == [[2023, 2023]]
    assert years(PartitionFilter("ge", "month", 10)) == [[2022, 2023]]
    assert years(PartitionFilter("eq", "year", "2023")) == [[2022, 2023, 2023]]


def test_pruned_files_are_never_opened(tmp_path: Path) -> None:
    write_json(tmp_path / "good" / "a.json", [{"n": 1}])
    write_json(tmp_path / "bad" / "b.json", [{"n": 2}])
    plan = plan_scan(ScanSpec([str(tmp_path)], "json"))
    (tmp_path / "bad" / "b.json").write_text("{broken\n")
    files = prune(plan, [PartitionFilter("eq", "dir0", "good")])
    assert ScanReader(plan).read_table(files).column("n").to_pylist() == [1]


def test_unknown_operators_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown filter operator 'like'"):
        PartitionFilter("like", "dir0", "x")


def test_or_and_not_follow_three_valued_logic(positional: ScanPlan) -> None:
    in_2023 = PartitionFilter("eq", "dir0", "2023")
    month_02 = PartitionFilter("eq", "dir1", "02")
    assert kept(positional, AnyOf((in_2023, month_02))) == ["a.json", "c.json"]
    assert kept(positional, NoneOf(AnyOf((in_2023, month_02)))) == ["b.json"]
    assert kept(positional, NoneOf(in_2023)) == ["b.json", "c.json"]
    assert kept(positional, AnyOf((in_2023, PartitionFilter("is_null", "dir0")))) == [
        "a.json",
        "top.json",
    ]


def test_a_column_with_values_per_row_may_be_anything(positional: ScanPlan) -> None:
    """``dir0 = '2023' OR n = 4`` may hold in any file; AND with it changes nothing."""
    on_rows = PartitionFilter("eq", "n", 4)
    in_2023 = PartitionFilter("eq", "dir0", "2023")
    assert len(kept(positional, AnyOf((in_2023, on_rows)))) == 4
    assert kept(positional, AllOf((in_2023, on_rows))) == ["a.json"]
    assert len(kept(positional, NoneOf(on_rows))) == 4


def test_numbers_compare_as_spark_compares_them(tmp_path: Path) -> None:
    """A double partition value against a decimal literal compares as doubles (0.1 = 0.1)."""
    for value in ("0.1", "2.5", "NaN"):
        write_json(tmp_path / f"x={value}" / "f.json", [{"n": 1}])
    plan = plan_scan(ScanSpec([str(tmp_path)], "json", partitioning="hive"))

    def folders(*filters: PartitionFilter) -> list[str]:
        return sorted(f.dirs[0] for f in prune(plan, filters))

    assert folders(PartitionFilter("eq", "x", Decimal("0.1"))) == ["x=0.1", "x=NaN"]
    assert folders(PartitionFilter("gt", "x", 1)) == ["x=2.5", "x=NaN"]
    assert folders(PartitionFilter("lt", "x", 2.5)) == ["x=0.1", "x=NaN"]
