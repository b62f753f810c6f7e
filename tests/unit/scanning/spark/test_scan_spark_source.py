"""The Spark data source class run in-process, the way Spark's Python workers call it.

No Spark server: Spark's own worker helper ``records_to_arrow_batches``
checks the batches as the JVM side would receive them.
"""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.datasource import CaseInsensitiveDict, DataSourceReader
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    DateType,
    DecimalType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.worker.plan_data_source_read import records_to_arrow_batches

from connect_plugin.errors import InvalidScanSpec
from connect_plugin.scanning import ScanSpec
from connect_plugin.scanning.request.predicates import AllOf, PartitionFilter
from connect_plugin.scanning.spark.spark_source import (
    MIN_PARTITIONS_OPTION,
    SHORT_NAME,
    SPEC_OPTION,
    FileGroup,
    ScanDataSource,
    ScanSourceReader,
    spark_arrow_schema,
    spark_schema,
)
from tests.unit.scanning.scan_checks import write_json, write_parquet

TOKYO = datetime.timezone(datetime.timedelta(hours=9))


def source(spec: ScanSpec, **options: str) -> ScanDataSource:
    return ScanDataSource(CaseInsensitiveDict({SPEC_OPTION: spec.to_json(), **options}))


def spark_read(
    data_source: ScanDataSource, reader: ScanSourceReader, schema: StructType
) -> pa.Table:
    """Every partition's batches, passed through the check Spark applies to them."""
    batches: list[pa.RecordBatch] = []
    for partition in reader.partitions():
        output = reader.read(pickle.loads(pickle.dumps(partition)))
        batches += records_to_arrow_batches(output, 10_000, schema, data_source)
    return pa.Table.from_batches(batches, schema=to_arrow_schema(schema, timezone="UTC"))


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    write_json(tmp_path / "2023" / "a.json", [{"n": 1, "s": "x"}, {"n": 2}])
    write_json(tmp_path / "2024" / "b.json", [{"n": 3, "t": 1.5}])
    write_json(tmp_path / "2024" / "c.json", [{"n": 4}])
    return tmp_path


def test_name_schema_partitions_and_read(logs: Path) -> None:
    spec = ScanSpec([str(logs)], "json", columns=["*", "filename"])
    data_source = source(spec)
    assert ScanDataSource.name() == SHORT_NAME == "connect_plugin_scan"
    schema = data_source.schema()
    assert schema.simpleString() == (
        "struct<n:bigint,s:string,t:double,dir0:string,filename:string>"
    )
    shipped = pickle.loads(pickle.dumps(data_source))
    reader = shipped.reader(schema)
    assert type(reader) is ScanSourceReader
    partitions = reader.partitions()
    assert all(isinstance(p, FileGroup) for p in partitions)
    assert [p.index for p in partitions] == list(range(len(partitions)))
    table = spark_read(shipped, pickle.loads(pickle.dumps(reader)), schema)
    assert table.to_pylist() == [
        {"n": 1, "s": "x", "t": None, "dir0": "2023", "filename": "a.json"},
        {"n": 2, "s": None, "t": None, "dir0": "2023", "filename": "a.json"},
        {"n": 3, "s": None, "t": 1.5, "dir0": "2024", "filename": "b.json"},
        {"n": 4, "s": None, "t": None, "dir0": "2024", "filename": "c.json"},
    ]


def test_the_plan_travels_with_the_data_source(logs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark pickles the data source after schema(); reader() must not list and sample again."""
    data_source = source(ScanSpec([str(logs)], "json"))
    schema = data_source.schema()
    shipped = pickle.loads(pickle.dumps(data_source))
    import connect_plugin.scanning.spark.spark_source as binding

    def no_planning(spec: ScanSpec) -> None:
        raise AssertionError("planned twice")

    monkeypatch.setattr(binding, "plan_scan", no_planning)
    assert shipped.reader(schema).partitions()


def test_min_partitions_sets_how_many_groups_spark_gets(logs: Path) -> None:
    spec = ScanSpec([str(logs)], "json")
    one = source(spec, **{MIN_PARTITIONS_OPTION: "1"})
    assert len(one.reader(one.schema()).partitions()) == 1
    three = source(spec, **{MIN_PARTITIONS_OPTION: "3"})
    assert len(three.reader(three.schema()).partitions()) == 3
    with pytest.raises(InvalidScanSpec, match="'minPartitions' must be a whole number"):
        source(spec, **{MIN_PARTITIONS_OPTION: "many"}).reader(one.schema())


def test_the_reader_takes_no_filters_from_spark() -> None:
    """A reader that takes pushed filters is kept by Spark 4.1-4.3 for later queries."""
    assert ScanSourceReader.pushFilters is DataSourceReader.pushFilters


def test_the_specs_file_filter_prunes_partitions(logs: Path) -> None:
    condition = AllOf((PartitionFilter("eq", "dir0", "2024"), PartitionFilter("gt", "n", 3)))
    data_source = source(ScanSpec([str(logs)], "json", file_filter=condition))
    schema = data_source.schema()
    reader = data_source.reader(schema)
    files = [f.path for p in reader.partitions() for f in p.files]
    assert files == [str(logs / "2024" / "b.json"), str(logs / "2024" / "c.json")]
    assert spark_read(data_source, reader, schema).column("n").to_pylist() == [3, 4]


def test_a_spec_without_file_filter_reads_every_file(logs: Path) -> None:
    data_source = source(ScanSpec([str(logs)], "json"))
    reader = data_source.reader(data_source.schema())
    assert len([f for p in reader.partitions() for f in p.files]) == 3


def test_arrow_types_become_types_spark_reads_back(tmp_path: Path) -> None:
    table = pa.table(
        {
            "u8": pa.array([1], pa.uint8()),
            "u64": pa.array([2**63 + 1], pa.uint64()),
            "zoned": pa.array(
                [datetime.datetime(2024, 1, 1, 12, tzinfo=TOKYO)],
                pa.timestamp("ns", tz="Asia/Tokyo"),
            ),
            "naive": pa.array([datetime.datetime(2024, 1, 1)], pa.timestamp("ms")),
            "d64": pa.array([datetime.date(2024, 1, 2)], pa.date64()),
            "clock": pa.array([datetime.time(1, 2, 3)], pa.time64("us")),
            "big": pa.array(["x"], pa.large_string()),
            "cat": pa.array(["c"]).dictionary_encode(),
        }
    )
    write_parquet(tmp_path / "a.parquet", table)
    data_source = source(ScanSpec([str(tmp_path)], "parquet"))
    schema = data_source.schema()
    assert [f.dataType for f in schema.fields] == [
        ShortType(),
        DecimalType(20, 0),
        TimestampType(),
        TimestampNTZType(),
        DateType(),
        StringType(),
        StringType(),
        StringType(),
    ]
    (row,) = spark_read(data_source, data_source.reader(schema), schema).to_pylist()
    assert row["u64"] == 2**63 + 1
    assert row["u8"] == 1
    assert row["zoned"] == datetime.datetime(2024, 1, 1, 3, tzinfo=datetime.timezone.utc)
    assert row["clock"] == "01:02:03.000000"
    assert row["cat"] == "c"
    assert row["big"] == "x"


def test_spark_arrow_schema_is_what_spark_checks_batches_against() -> None:
    schema = pa.schema([("n", pa.int64()), ("l", pa.large_list(pa.large_string()))])
    assert spark_schema(schema).fields[0].dataType == LongType()
    assert spark_arrow_schema(schema) == pa.schema(
        [("n", pa.int64()), ("l", pa.list_(pa.field("element", pa.string())))]
    )


def test_an_empty_projection_yields_row_counts(logs: Path) -> None:
    data_source = source(ScanSpec([str(logs)], "json", columns=[]))
    schema = data_source.schema()
    assert schema.fields == []
    table = spark_read(data_source, data_source.reader(schema), schema)
    assert table.num_rows == 4
    assert table.num_columns == 0


def test_a_data_source_without_spec_says_how_to_read() -> None:
    with pytest.raises(InvalidScanSpec, match="needs the option 'spec'"):
        ScanDataSource(CaseInsensitiveDict({})).schema()


def test_a_read_reads_the_files_there_are_when_it_runs(logs: Path) -> None:
    """Spark keeps a planned reader with a plan it keeps; the files it reads are today's."""
    data_source = source(ScanSpec([str(logs)], "json", columns=["n"]), **{MIN_PARTITIONS_OPTION: "2"})
    schema = data_source.schema()
    reader = pickle.loads(pickle.dumps(data_source.reader(schema)))
    (logs / "2024" / "b.json").unlink()
    write_json(logs / "2025" / "d.json", [{"n": 5}, {"n": 6}])
    write_json(logs / "2025" / "e.json", [{"n": 7}])
    assert sorted(spark_read(data_source, reader, schema).column("n").to_pylist()) == [1, 2, 4, 5, 6, 7]
