from __future__ import annotations

import datetime
from pathlib import Path

from pyspark.sql.types import IntegerType, StructField, StructType

from connect_plugin.server.table_files.temp_table import TempTable
from connect_plugin.server.tables.partition_folders import folder_name, laid_out, null_partition


def unescaped(name: str) -> str:
    """Spark's ``ExternalCatalogUtils.unescapePathName``."""
    out, i = [], 0
    while i < len(name):
        if name[i] == "%" and i + 2 < len(name):
            try:
                out.append(chr(int(name[i + 1 : i + 3], 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(name[i])
        i += 1
    return "".join(out)


def table(location: Path, *columns: str) -> TempTable:
    schema = StructType([StructField("a", IntegerType())])
    for column in columns:
        schema.add(StructField(column, IntegerType()))
    return TempTable(
        name="t",
        location=location,
        format="parquet",
        schema_json=schema.json(),
        partition_columns=tuple(c.upper() for c in columns),
        options={},
        rows=0,
        created=datetime.datetime.now(datetime.timezone.utc),
    )


def test_folder_names_read_back_as_the_column_and_never_hide() -> None:
    for name in ("b", "_p", ".p", "a/b=c %", "Ü q", "x.y", "%41", "q`t", "tab\there"):
        escaped = folder_name(name)
        assert unescaped(escaped) == name
        assert "/" not in escaped
        assert "=" not in escaped
        assert not escaped.startswith(".")
    assert folder_name("Ü q") == "Ü%20q"


def test_the_null_partition_nests_the_columns_in_partition_order(tmp_path: Path) -> None:
    found = null_partition(table(tmp_path, "c", "b"))
    assert found == tmp_path / "c=__HIVE_DEFAULT_PARTITION__" / "b=__HIVE_DEFAULT_PARTITION__"


def test_laid_out_means_partition_folders_and_no_data_files_at_the_root(tmp_path: Path) -> None:
    plain = table(tmp_path)
    assert laid_out(plain)
    partitioned = table(tmp_path, "b")
    (tmp_path / "_SUCCESS").touch()
    assert not laid_out(partitioned)
    (tmp_path / "b=1").mkdir()
    (tmp_path / ".part-0.crc").touch()
    assert laid_out(partitioned)
    (tmp_path / "part-0.parquet").touch()
    assert not laid_out(partitioned)
