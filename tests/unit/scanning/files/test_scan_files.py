"""File listing, scan roots, implicit values, hive partitions and balanced file groups."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect_plugin.errors import ScanPathNotFound
from connect_plugin.scanning.files.files import ScanFile, file_groups, list_files, max_depth
from connect_plugin.scanning.planning.implicit import (
    dir_value,
    file_value,
    hive_columns,
    hive_pairs,
    infer_hive_type,
)


def touch(root: Path, *relative: str) -> None:
    for name in relative:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")


def names(files: list[ScanFile], root: Path) -> list[str]:
    return [os.path.relpath(found.path, root) for found in files]


def test_a_directory_lists_its_files_sorted_and_skips_hidden_ones(tmp_path: Path) -> None:
    touch(tmp_path, "b.json", "a/z.json", "a/b/c.json", "_SUCCESS", ".x.crc", "_tmp/d.json")
    files = list_files([str(tmp_path)])
    assert names(files, tmp_path) == ["a/b/c.json", "a/z.json", "b.json"]
    assert {found.root for found in files} == {str(tmp_path)}
    assert [found.dirs for found in files] == [("a", "b"), ("a",), ()]
    assert max_depth(files) == 2


def test_a_file_path_is_its_own_root_and_has_no_directories(tmp_path: Path) -> None:
    touch(tmp_path, "x/y/f.json")
    (found,) = list_files([str(tmp_path / "x" / "y" / "f.json")])
    assert found.root == str(tmp_path / "x" / "y")
    assert found.dirs == ()
    assert found.size == 3
    assert found.mtime_ns > 0


def test_a_glob_roots_at_its_first_wildcard_and_matches_directories(tmp_path: Path) -> None:
    touch(tmp_path, "2023/01/a.json", "2023/02/b.json", "2024/01/c.csv", "other/d.json")
    files = list_files([str(tmp_path / "202*")])
    assert names(files, tmp_path) == ["2023/01/a.json", "2023/02/b.json", "2024/01/c.csv"]
    assert [found.dirs for found in files] == [("2023", "01"), ("2023", "02"), ("2024", "01")]
    only_json = list_files([str(tmp_path / "*" / "*" / "*.json")])
    assert names(only_json, tmp_path) == ["2023/01/a.json", "2023/02/b.json"]
    assert {found.root for found in only_json} == {str(tmp_path)}


def test_paths_keep_their_order_and_a_file_listed_twice_stays_at_its_first_place(
    tmp_path: Path,
) -> None:
    touch(tmp_path, "b/1.json", "a/2.json")
    files = list_files([str(tmp_path / "b"), str(tmp_path / "a"), str(tmp_path / "b" / "1.json")])
    assert names(files, tmp_path) == ["b/1.json", "a/2.json"]
    assert files[0].root == str(tmp_path / "b")


def test_relative_paths_and_file_urls_are_read_as_local_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path, "d/f.json")
    monkeypatch.chdir(tmp_path)
    assert list_files(["d"])[0].path == str(tmp_path / "d" / "f.json")
    assert list_files([f"file://{tmp_path}/d"])[0].path == str(tmp_path / "d" / "f.json")


def test_missing_paths_and_empty_globs_are_errors_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(ScanPathNotFound, match=r"path '.*nothing' does not exist"):
        list_files([str(tmp_path / "nothing")])
    with pytest.raises(ScanPathNotFound, match=r"glob '.*\*\.csv' matches no file"):
        list_files([str(tmp_path / "*.csv")])
    with pytest.raises(ScanPathNotFound, match=r"its directory .* does not exist"):
        list_files([str(tmp_path / "gone" / "*.csv")])


def test_an_empty_directory_is_an_empty_scan(tmp_path: Path) -> None:
    assert list_files([str(tmp_path)]) == []


def test_implicit_values_follow_drill(tmp_path: Path) -> None:
    path = str(tmp_path / "logs" / "2024" / "05" / "a.b.json")
    found = ScanFile(path, str(tmp_path / "logs"), 1, 1)
    assert file_value("filename", found) == "a.b.json"
    assert file_value("suffix", found) == "json"
    assert file_value("fqn", found) == path
    assert file_value("filepath", found) == str(tmp_path / "logs" / "2024" / "05")
    assert [dir_value(i, found) for i in range(3)] == ["2024", "05", None]
    assert file_value("suffix", ScanFile("/d/README", "/d", 1, 1)) == ""
    assert file_value("suffix", ScanFile("/d/.hidden", "/d", 1, 1)) == ""


def test_hive_directories_give_typed_partition_columns() -> None:
    files = [
        ScanFile("/t/year=2023/city=Paris/x=1.5/a.json", "/t", 1, 1),
        ScanFile("/t/year=2024/city=New%20York/x=2/b.json", "/t", 1, 1),
        ScanFile("/t/year=__HIVE_DEFAULT_PARTITION__/City=3/x=3/c.json", "/t", 1, 1),
    ]
    assert hive_pairs(files[1]) == {"year": "2024", "city": "New York", "x": "2"}
    assert hive_pairs(files[2])["year"] is None
    columns = hive_columns(files)
    assert list(columns) == ["year", "city", "x"]
    assert columns["year"] == ("year", pa.int64())
    assert columns["city"] == ("city", pa.string())
    assert columns["x"] == ("x", pa.float64())


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "-2"], pa.int64()),
        (["1", "2.5", "1e3"], pa.float64()),
        (["1", "abc"], pa.string()),
        (["99999999999999999999"], pa.float64()),
        ([], pa.int64()),
    ],
)
def test_hive_type_inference(values: list[str], expected: pa.DataType) -> None:
    assert infer_hive_type(values) == expected


def scan_files(sizes: list[int]) -> list[ScanFile]:
    return [ScanFile(f"/d/{i:04}.json", "/d", size, 1) for i, size in enumerate(sizes)]


def test_groups_are_contiguous_runs_balanced_by_bytes() -> None:
    files = scan_files([10, 10, 10, 10, 40])
    groups = file_groups(files, min_groups=2)
    assert [found for group in groups for found in group] == files
    assert [sum(f.size for f in group) for group in groups] == [40, 40]


def test_group_count_follows_target_bytes_and_never_passes_the_file_count() -> None:
    files = scan_files([100] * 10)
    assert len(file_groups(files, target_bytes=250)) == 4
    assert len(file_groups(files[:3], min_groups=8)) == 3
    assert file_groups([], min_groups=4) == []


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=40),
    wanted=st.integers(min_value=1, max_value=12),
)
def test_groups_keep_every_file_once_in_order(sizes: list[int], wanted: int) -> None:
    files = scan_files(sizes)
    groups = file_groups(files, min_groups=wanted)
    assert all(groups)
    assert [found for group in groups for found in group] == files
    assert len(groups) == min(wanted, len(files))
