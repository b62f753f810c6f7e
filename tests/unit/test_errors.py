"""Scan errors marked by a worker are found again in Spark's text, and nothing else is."""

from __future__ import annotations

import pytest

from connect_plugin.errors import (
    MARK_SEARCH_LIMIT,
    MARKED_MESSAGE_LIMIT,
    BadRecord,
    InvalidScanSpec,
    Marked,
    ScanPathNotFound,
    find_marked,
    marked_message,
    scan_error_classes,
)

MISSING = "path '/data/x' does not exist (looked for /data/x); check the path"

DATA_SOURCE_ERROR = (
    "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
    "Traceback (most recent call last):\n"
    '  File "/site/connect_plugin/scanning/spark/worker_errors.py", line 46, in call\n'
    "    raise reportable(exc) from None\n"
    '  File "/site/connect_plugin/scanning/files/files.py", line 89, in _expand\n'
    "    raise ScanPathNotFound(\n"
    "connect_plugin.errors.ScanPathNotFound: [CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] "
    f"{MISSING}\n"
    " SQLSTATE: 38000"
)
"""What Spark 4.3 says when ``schema()`` raises a marked ``ScanPathNotFound``."""


def test_a_marked_message_leads_with_the_class_on_one_line() -> None:
    exc = BadRecord("file f.json, line 2: malformed json\n(Expecting value)")
    assert marked_message(exc) == (
        "[CONNECT_PLUGIN.SCAN_BAD_RECORD] file f.json, line 2: malformed json (Expecting value)"
    )


def test_marking_twice_changes_nothing() -> None:
    exc = ScanPathNotFound(MISSING)
    exc.args = (marked_message(exc),)
    assert marked_message(exc) == f"[CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] {MISSING}"


def test_every_scan_error_has_a_class_of_the_scan() -> None:
    classes = scan_error_classes()
    assert "CONNECT_PLUGIN.SCAN" in classes
    assert InvalidScanSpec.error_class == "CONNECT_PLUGIN.SCAN"
    assert {
        "CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND",
        "CONNECT_PLUGIN.SCAN_UNREADABLE_FILE",
        "CONNECT_PLUGIN.SCAN_BAD_RECORD",
        "CONNECT_PLUGIN.SCAN_NEW_COLUMNS",
        "CONNECT_PLUGIN.SCAN_SCHEMA_CONFLICT",
        "CONNECT_PLUGIN.SCAN_MISSING_COLUMN",
    } <= classes
    assert all(c.startswith("CONNECT_PLUGIN.SCAN") for c in classes)


def test_the_mark_is_found_in_sparks_text() -> None:
    assert find_marked(DATA_SOURCE_ERROR) == Marked("CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND", MISSING)
    assert find_marked(DATA_SOURCE_ERROR).first_line == (  # type: ignore[union-attr]
        f"[CONNECT_PLUGIN.SCAN_PATH_NOT_FOUND] {MISSING}"
    )


def test_the_mark_is_found_without_a_traceback() -> None:
    hidden = (
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
        "connect_plugin.errors.BadRecord: [CONNECT_PLUGIN.SCAN_BAD_RECORD] line 2: bad\n"
        " SQLSTATE: 38000"
    )
    assert find_marked(hidden) == Marked("CONNECT_PLUGIN.SCAN_BAD_RECORD", "line 2: bad")


def test_the_last_mark_wins() -> None:
    text = (
        "connect_plugin.errors.BadRecord: [CONNECT_PLUGIN.SCAN_BAD_RECORD] first\n"
        "During handling of the above exception, another exception occurred:\n"
        "connect_plugin.errors.UnreadableFile: [CONNECT_PLUGIN.SCAN_UNREADABLE_FILE] second\n"
    )
    assert find_marked(text) == Marked("CONNECT_PLUGIN.SCAN_UNREADABLE_FILE", "second")


@pytest.mark.parametrize(
    "text",
    [
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `t` cannot be found. SQLSTATE: 42P01",
        "[PYTHON_EXCEPTION] ...\nValueError: [CONNECT_PLUGIN.SCAN_BAD_RECORD] a user's own text",
        "connect_plugin.errors.BadRecord: [CONNECT_PLUGIN.SCAN_NO_SUCH_CLASS] made up",
        "connect_plugin.errors.BadRecord: [CONNECT_PLUGIN.QUOTA_EXCEEDED] not a scan class",
        "connect_plugin.errors.BadRecord: CONNECT_PLUGIN.SCAN_BAD_RECORD without brackets",
        "",
    ],
)
def test_no_other_text_is_taken_for_a_scan_error(text: str) -> None:
    assert find_marked(text) is None


def test_a_long_message_is_cut_on_the_first_line() -> None:
    text = f"connect_plugin.errors.BadRecord: [CONNECT_PLUGIN.SCAN_BAD_RECORD] {'x' * 5000}\n"
    found = find_marked(text)
    assert found is not None
    assert len(found.message) == MARKED_MESSAGE_LIMIT
    assert found.message.endswith("...")


def test_the_search_is_bounded_to_the_end_of_the_text() -> None:
    mark = "connect_plugin.errors.BadRecord: [CONNECT_PLUGIN.SCAN_BAD_RECORD] bad\n"
    assert find_marked(mark + "y" * (MARK_SEARCH_LIMIT - len(mark))) is not None
    assert find_marked(mark + "y" * MARK_SEARCH_LIMIT) is None
