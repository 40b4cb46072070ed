"""materialize and the lance format: sources, modes, types Spark loses, failures, reading back."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lance_sync.data import file_source
from lance_sync.data.file_source import configures_file_reading, group_files, plain_parquet_files
from lance_sync.data.lance_source import lance_options
from lance_sync.data.materialize import MaterializeError, materialize, source_schema
from lance_sync.data.spark_session import SparkJobError
from lance_sync.model.arrow_types import schema_from_columns
from tests.data.tables import TYPED_SCHEMA, data_files, referenced_files, typed_table

pytestmark = pytest.mark.spark


@pytest.fixture
def parquet_source(tmp_path: Path) -> dict:
    directory = tmp_path / "parquet"
    directory.mkdir()
    pq.write_table(typed_table(30), directory / "part-0.parquet")
    pq.write_table(typed_table(20, first_id=30), directory / "part-1.parquet")
    return {"format": "parquet", "path": str(directory)}


def sorted_rows(location: Path) -> pa.Table:
    return lance.dataset(str(location)).to_table().sort_by("id")


def test_parquet_source_keeps_the_types_spark_loses(
    spark, spark_settings, parquet_source, tmp_path
):
    location = tmp_path / "t.lance"
    result = materialize(parquet_source, str(location), None, "create", spark_settings)
    assert (result.version, result.row_count) == (1, 50)
    assert result.schema == TYPED_SCHEMA
    assert sorted_rows(location).equals(typed_table(50))


def test_csv_source_with_casts(spark, spark_settings, tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text("id,seen,name\n1,2024-01-01 00:00:00.250,a\n2,2024-01-02 10:00:00,b\n")
    source = {
        "format": "csv",
        "path": str(csv),
        "options": {"header": True},
        "casts": {"id": "uint32", "seen": "timestamp[ms]"},
    }
    expected = schema_from_columns(
        [
            {"name": "id", "type": "uint32"},
            {"name": "seen", "type": "timestamp[ms]"},
            {"name": "name", "type": "string"},
        ]
    )
    assert source_schema(source, spark_settings) == expected
    location = tmp_path / "t.lance"
    result = materialize(source, str(location), None, "create", spark_settings)
    assert result.schema == expected
    table = sorted_rows(location)
    assert table.column("seen").to_pylist()[0].isoformat() == "2024-01-01T00:00:00.250000"


def test_json_source_into_a_declared_schema(spark, spark_settings, tmp_path):
    rows = typed_table(5).to_pylist()
    lines = [json.dumps({**row, "seen": row["seen"].isoformat()}) for row in rows]
    (tmp_path / "rows.json").write_text("\n".join(lines))
    source = {
        "format": "json",
        "path": str(tmp_path / "*.json"),
        "casts": {"seen": "timestamp[ms]"},
    }
    location = tmp_path / "t.lance"
    result = materialize(source, str(location), TYPED_SCHEMA, "create", spark_settings)
    assert (result.schema, result.row_count) == (TYPED_SCHEMA, 5)
    assert sorted_rows(location).equals(typed_table(5))


def test_overwrite_replaces_and_create_refuses_an_existing_dataset(
    spark, spark_settings, parquet_source, make_dataset
):
    location = make_dataset("t.lance", rows=3)
    with pytest.raises(MaterializeError, match="location is valid"):
        materialize(parquet_source, str(location), None, "create", spark_settings)
    result = materialize(parquet_source, str(location), None, "overwrite", spark_settings)
    assert (result.version, result.row_count, result.schema) == (2, 50, TYPED_SCHEMA)


def test_append_through_the_lance_format_keeps_the_dataset_schema(spark, make_dataset):
    location = make_dataset("t.lance", rows=10)
    from lance_sync.data.arrow_spark import spark_compatible

    rows = typed_table(5, first_id=10)
    as_spark_holds = pa.schema([f.with_type(spark_compatible(f.type)) for f in rows.schema])
    frame = spark.createDataFrame(rows.cast(as_spark_holds)).repartition(2)
    frame.write.format("lance").mode("append").save(str(location))
    dataset = lance.dataset(str(location))
    assert (dataset.version, dataset.schema) == (2, TYPED_SCHEMA)
    assert sorted_rows(location).equals(typed_table(15))


def test_read_back_through_spark(spark, make_dataset):
    location = make_dataset("t.lance", rows=10)
    lance.write_dataset(typed_table(5, first_id=10), str(location), mode="append")
    frame = spark.read.format("lance").load(str(location))
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema] == [
        ("id", "bigint"),
        ("vector", "array<float>"),
        ("seen", "timestamp_ntz"),
        ("name", "string"),
    ]
    back = frame.orderBy("id").toArrow()
    assert back.column("id").to_pylist() == list(range(15))
    assert back.column("vector").to_pylist() == typed_table(15).column("vector").to_pylist()


def test_lance_source_round_trip(spark, spark_settings, make_dataset, tmp_path):
    source = {"format": "lance", "path": str(make_dataset("source.lance", rows=12))}
    result = materialize(
        source, str(tmp_path / "copy.lance"), TYPED_SCHEMA, "create", spark_settings
    )
    assert result.row_count == 12
    assert sorted_rows(tmp_path / "copy.lance").equals(typed_table(12))


def test_mismatched_columns_are_refused_before_writing(
    spark, spark_settings, parquet_source, tmp_path
):
    location = tmp_path / "t.lance"
    narrow = TYPED_SCHEMA.remove(TYPED_SCHEMA.get_field_index("name"))
    with pytest.raises(MaterializeError, match="not in the schema name"):
        materialize(parquet_source, str(location), narrow, "create", spark_settings)
    with pytest.raises(MaterializeError, match="casts name columns the source lacks: nope"):
        materialize(
            {**parquet_source, "casts": {"nope": "int8"}},
            str(location),
            None,
            "create",
            spark_settings,
        )
    assert not location.exists()


def failing_frame(spark):
    """Four partitions of 1,000 ids; the very last row is -1, which cannot become a uint32.

    The first partitions write their fragments before the last one fails, so the abort has
    files of successful tasks to remove.
    """
    from pyspark.sql import functions as F

    ids = F.when(F.col("id") == 3999, F.lit(-1)).otherwise(F.col("id"))
    return spark.range(0, 4000, 1, 4).select(ids.alias("id"), F.lit("x").alias("name"))


FAILING_SCHEMA = schema_from_columns(
    [{"name": "id", "type": "uint32"}, {"name": "name", "type": "string"}]
)


def test_failed_create_leaves_nothing(spark, tmp_path):
    location = tmp_path / "t.lance"
    with pytest.raises(Exception, match="not in range"):
        failing_frame(spark).write.format("lance").mode("append").options(
            **lance_options(FAILING_SCHEMA)
        ).save(str(location))
    assert not location.exists()


def test_failed_append_leaves_no_version_and_no_orphan_files(spark, tmp_path):
    location = tmp_path / "t.lance"
    lance.write_dataset(
        pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=FAILING_SCHEMA), str(location)
    )
    with pytest.raises(Exception, match="not in range"):
        failing_frame(spark).write.format("lance").mode("append").save(str(location))
    assert lance.dataset(str(location)).version == 1
    assert data_files(location) == referenced_files(location)


def test_an_empty_source_makes_an_empty_dataset(spark, spark_settings, tmp_path):
    (tmp_path / "empty").mkdir()
    pq.write_table(typed_table(0), tmp_path / "empty" / "part-0.parquet")
    location = tmp_path / "t.lance"
    source = {"format": "parquet", "path": str(tmp_path / "empty")}
    result = materialize(source, str(location), None, "create", spark_settings)
    assert (result.version, result.row_count, result.schema) == (1, 0, TYPED_SCHEMA)
    assert spark.read.format("lance").load(str(location)).count() == 0


# --- plain Parquet sources: the write tasks read the files themselves --------------------------------


def test_group_files_balances_bytes_and_slices_a_file_larger_than_a_share():
    groups = [json.loads(g) for g in group_files([f"f{i}" for i in range(5)], [10, 10, 10, 10, 20], 2)]
    assert sorted(sum({"f4": 20}.get(path, 10) for path, _, _ in group) for group in groups) == [30, 30]
    assert [json.loads(g) for g in group_files(["big"], [100], 2)] == [[["big", 0, 2]], [["big", 1, 2]]]
    assert [json.loads(g) for g in group_files(["empty"], [0], 2)] == [[["empty", 0, 1]]]


def test_group_files_makes_tasks_of_at_most_task_bytes_in_multiples_of_the_parallelism(monkeypatch):
    monkeypatch.setattr(file_source, "TASK_BYTES", 10)
    groups = [json.loads(g) for g in group_files([f"f{i}" for i in range(9)], [6] * 9, 2)]
    assert len(groups) == 6  # 54 bytes: 6 tasks of 10 bytes at most, a multiple of 2
    assert sorted(len(group) for group in groups) == [1, 1, 1, 2, 2, 2]


def through_spark_rows(source: dict) -> dict:
    """The same source, read by Spark's reader: any reader option makes materialize use it."""
    return {**source, "options": {"mergeSchema": "false"}}


def read_by_tasks(spark, source: dict) -> list[list] | None:
    """The file slices each write task reads, or None when Spark reads the source."""
    files = plain_parquet_files(source)
    if files is None:
        return None
    groups = group_files(files, [Path(f).stat().st_size for f in files], spark.sparkContext.defaultParallelism)
    return [json.loads(group) for group in groups]


def test_plain_parquet_files_are_what_spark_reads_and_nothing_spark_would_read_otherwise(tmp_path):
    (tmp_path / "src").mkdir()
    for name in ("part-1.parquet", "part-0.parquet"):
        pq.write_table(typed_table(2), tmp_path / "src" / name)
    for hidden in ("_SUCCESS", ".part-0.parquet.crc"):
        (tmp_path / "src" / hidden).write_text("")
    (tmp_path / "src" / "_temporary").mkdir()
    source = {"format": "parquet", "path": f"file://{tmp_path}/src/"}
    assert plain_parquet_files(source) == [str(tmp_path / "src" / f"part-{i}.parquet") for i in (0, 1)]
    one = str(tmp_path / "src" / "part-1.parquet")
    assert plain_parquet_files({**source, "path": one}) == [one]
    for other in ({"options": {"mergeSchema": "true"}}, {"casts": {"id": "int64"}}, {"format": "csv"},
                  {"path": f"{tmp_path}/src/*.parquet"}, {"path": "s3://bucket/src"},
                  {"path": str(tmp_path / "src" / "_SUCCESS")}, {"path": str(tmp_path / "nothing")}):
        assert plain_parquet_files({**source, **other}) is None, other
    (tmp_path / "src" / "_common_metadata").write_text("")  # Spark takes the schema from it
    assert plain_parquet_files(source) is None
    (tmp_path / "src" / "_common_metadata").unlink()
    (tmp_path / "src" / "more").mkdir()  # Spark lists it, and looks for partitions
    assert plain_parquet_files(source) is None
    (tmp_path / "cases").mkdir()
    pq.write_table(pa.table({"id": [1], "ID": [2]}), tmp_path / "cases" / "part-0.parquet")
    assert plain_parquet_files({**source, "path": str(tmp_path / "cases")}) is None


def test_a_session_that_sets_how_spark_reads_files_reads_with_spark(spark):
    assert not configures_file_reading(spark.conf.getAll)
    spark.conf.set("spark.sql.parquet.binaryAsString", "true")
    try:
        assert configures_file_reading(spark.conf.getAll)
    finally:
        spark.conf.unset("spark.sql.parquet.binaryAsString")


def test_source_schema_of_a_plain_parquet_source_is_what_spark_infers(spark_settings, parquet_source):
    assert source_schema(parquet_source, spark_settings) == TYPED_SCHEMA
    assert source_schema(through_spark_rows(parquet_source), spark_settings) == TYPED_SCHEMA


def test_the_tasks_read_a_plain_parquet_source_as_spark_would(spark, spark_settings, parquet_source, tmp_path):
    assert len(read_by_tasks(spark, parquet_source)) == 2  # two files, local[2]
    assert read_by_tasks(spark, through_spark_rows(parquet_source)) is None
    direct = materialize(parquet_source, str(tmp_path / "direct.lance"), None, "create", spark_settings)
    rows = materialize(through_spark_rows(parquet_source), str(tmp_path / "rows.lance"), None, "create",
                       spark_settings)
    assert (direct.version, direct.row_count, direct.schema) == (rows.version, rows.row_count, rows.schema)
    assert sorted_rows(tmp_path / "direct.lance").equals(sorted_rows(tmp_path / "rows.lance"))
    assert sorted_rows(tmp_path / "direct.lance").equals(typed_table(50))


def test_one_file_is_split_by_row_groups_between_tasks(spark, spark_settings, tmp_path):
    (tmp_path / "one").mkdir()
    pq.write_table(typed_table(40), tmp_path / "one" / "part-0.parquet", row_group_size=10)
    source = {"format": "parquet", "path": str(tmp_path / "one")}
    assert [[unit[1:] for unit in group] for group in read_by_tasks(spark, source)] == [[[0, 2]], [[1, 2]]]
    result = materialize(source, str(tmp_path / "t.lance"), None, "create", spark_settings)
    assert result.row_count == 40
    assert sorted_rows(tmp_path / "t.lance").equals(typed_table(40))


def test_a_column_a_file_lacks_reads_as_nulls_as_in_spark(spark, spark_settings, tmp_path):
    (tmp_path / "src").mkdir()
    pq.write_table(typed_table(3), tmp_path / "src" / "part-0.parquet")
    pq.write_table(typed_table(2, first_id=3).drop_columns(["name"]), tmp_path / "src" / "part-1.parquet")
    source = {"format": "parquet", "path": str(tmp_path / "src")}
    assert read_by_tasks(spark, source) is not None
    materialize(source, str(tmp_path / "direct.lance"), TYPED_SCHEMA, "create", spark_settings)
    materialize(through_spark_rows(source), str(tmp_path / "rows.lance"), TYPED_SCHEMA, "create", spark_settings)
    direct = sorted_rows(tmp_path / "direct.lance")
    assert direct.column("name").to_pylist() == ["row-0", "row-1", "row-2", None, None]
    assert direct.equals(sorted_rows(tmp_path / "rows.lance"))


def test_partition_columns_leave_the_reading_to_spark(spark, spark_settings, tmp_path):
    for day in (1, 2):
        (tmp_path / "src" / f"day={day}").mkdir(parents=True)
        pq.write_table(typed_table(2, first_id=10 * day), tmp_path / "src" / f"day={day}" / "part-0.parquet")
    source = {"format": "parquet", "path": str(tmp_path / "src")}
    assert read_by_tasks(spark, source) is None
    result = materialize(source, str(tmp_path / "t.lance"), None, "create", spark_settings)
    assert (result.row_count, result.schema.names) == (4, [*TYPED_SCHEMA.names, "day"])


def test_a_failed_write_of_files_read_by_the_tasks_leaves_nothing(spark, spark_settings, tmp_path):
    (tmp_path / "src").mkdir()
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), tmp_path / "src" / "part-0.parquet")
    pq.write_table(pa.table({"id": pa.array([5, -1], pa.int64())}), tmp_path / "src" / "part-1.parquet")
    source = {"format": "parquet", "path": str(tmp_path / "src")}
    assert len(read_by_tasks(spark, source)) == 2
    location = tmp_path / "t.lance"
    with pytest.raises(SparkJobError) as failure:
        materialize(source, str(location), FAILING_SCHEMA.remove(1), "create", spark_settings)
    assert "Integer value -1 not in range" in str(failure.value.__cause__)
    assert not location.exists()
