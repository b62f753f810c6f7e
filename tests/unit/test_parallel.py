"""The suite's two workers take the longest units of work first."""

from __future__ import annotations

from pathlib import Path

from tests.parallel import longest_first, recorded_durations, unit_of

ROOT = Path(__file__).parents[2]


def test_install_tests_are_one_unit_and_other_files_their_own() -> None:
    assert unit_of("tests/integration/installs/test_compat.py::test_a[4.0.0]") == (
        "tests/integration/installs/"
    )
    assert unit_of("tests/unit/test_parallel.py::test_x") == "tests/unit/test_parallel.py"


def test_recorded_seconds_order_the_units_and_unknown_ones_count_their_tests() -> None:
    tests = {"many_quick.py": 40, "one_long.py": 1, "new.py": 5, "middle.py": 3}
    durations = {"many_quick.py": 2.0, "one_long.py": 90.0, "middle.py": 10.0}
    assert longest_first(tests, durations) == ["one_long.py", "middle.py", "new.py", "many_quick.py"]


def test_the_recorded_durations_name_units_of_the_suite() -> None:
    """A unit renamed or removed since the record: ``./dev test --record-durations`` drops
    it."""
    recorded = recorded_durations()
    assert recorded
    assert [unit for unit in recorded if not (ROOT / unit).exists()] == []
