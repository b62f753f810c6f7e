"""What a temporary table may be called, and how its qualifiers are read."""

from __future__ import annotations

import pytest

from connect_plugin.errors import TempTableError
from connect_plugin.server.model.statements import Name
from connect_plugin.server.table_files.table_names import check_table_name


def test_table_name_rules() -> None:
    assert check_table_name(Name(("SESSION", "x"))) == "x"
    assert check_table_name(Name(("system", "Session", "x"))) == "x"
    with pytest.raises(TempTableError, match=r"outside of default temporary workspace \[session\]"):
        check_table_name(Name(("other", "x")))
    with pytest.raises(TempTableError, match=r"tmp\. qualifier of temporary tables is retired"):
        check_table_name(Name(("tmp", "x")))
    with pytest.raises(TempTableError, match="not a valid temporary table name"):
        check_table_name(Name(("a\tb",)))
    with pytest.raises(TempTableError, match="not a valid temporary table name"):
        check_table_name(Name(("x" * 129,)))
