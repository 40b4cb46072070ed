"""`df.write.format("lance")` in every Spark save mode, on lance-sync's session and on a user's."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_sync.spark
from lance_sync.data.lance_source import LanceDatasetExistsError, LanceWriter, _Target
from lance_sync.data.spark_session import activate_in_this_thread


def ids(dataset_path: Path) -> list[int]:
    return sorted(lance.dataset(str(dataset_path)).to_table()["id"].to_pylist())


@pytest.mark.spark
def test_every_save_mode(spark, tmp_path: Path):
    location = str(tmp_path / "t.lance")
    spark.range(3).write.format("lance").save(location)  # ErrorIfExists, Spark's default
    assert ids(tmp_path / "t.lance") == [0, 1, 2]

    for refused in (lambda w: w.save(location), lambda w: w.mode("error").save(location),
                    lambda w: w.save(location, mode="errorifexists")):
        with pytest.raises(Exception, match="already exists at .*save mode ErrorIfExists"):
            refused(spark.range(5, 6).write.format("lance"))
    spark.range(7, 8).write.format("lance").mode("ignore").save(location)
    assert lance.dataset(location).version == 1 and ids(tmp_path / "t.lance") == [0, 1, 2]

    spark.range(3, 5).write.format("lance").mode("append").save(location)
    assert ids(tmp_path / "t.lance") == [0, 1, 2, 3, 4]
    spark.range(9, 10).write.format("lance").mode("overwrite").save(location)
    assert ids(tmp_path / "t.lance") == [9]

    fresh = str(tmp_path / "ignored-then-made.lance")
    spark.range(2).write.mode("ignore").save(fresh, format="lance")
    assert ids(tmp_path / "ignored-then-made.lance") == [0, 1]


@pytest.mark.spark
def test_a_session_of_ones_own_after_install(spark, tmp_path: Path):
    """Save modes change only on sessions the format was installed on."""
    mine = spark.newSession()
    location = str(tmp_path / "mine.lance")
    try:
        with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
            mine.range(2).write.format("lance").save(location)
        assert lance_sync.spark.install(mine) is mine
        mine.range(2).write.format("lance").save(location)
        assert ids(tmp_path / "mine.lance") == [0, 1]
        assert mine.read.format("lance").load(location).count() == 2
    finally:
        activate_in_this_thread(spark)  # install made `mine` this thread's active session


@pytest.mark.spark
def test_other_formats_keep_spark_s_own_modes(spark, tmp_path: Path):
    location = str(tmp_path / "p")
    spark.range(2).write.format("parquet").save(location)
    with pytest.raises(Exception, match="PATH_ALREADY_EXISTS|already exists"):
        spark.range(2).write.format("parquet").save(location)
    spark.range(2).write.format("parquet").mode("ignore").save(location)
    assert spark.read.parquet(location).count() == 2


@pytest.mark.parametrize("save_mode", ["errorifexists", "ignore", None])
def test_a_dataset_made_during_the_job_is_never_overwritten(tmp_path: Path, save_mode: str | None):
    """The writer's own steps, with another writer's create between the tasks and the commit:
    ErrorIfExists and Append fail, Ignore leaves the dataset; only this job's files go."""
    location = str(tmp_path / "raced.lance")
    schema = pa.schema([pa.field("id", pa.int64())])
    writer = LanceWriter(_Target(location, {}), schema, overwrite=False, read_version=None,
                         location_existed=False, save_mode=save_mode)
    message = writer.write(iter([pa.record_batch([pa.array([1, 2], pa.int64())], schema=schema)]))
    other = lance.write_dataset(pa.table({"id": pa.array([7], pa.int64())}), location)
    files_before = sorted(p.name for p in (tmp_path / "raced.lance" / "data").iterdir())

    if save_mode == "ignore":
        writer.commit([message])
    else:
        with pytest.raises(LanceDatasetExistsError, match="another writer created"):
            writer.commit([message])
    assert ids(tmp_path / "raced.lance") == [7] and lance.dataset(location).version == other.version
    other_files = {f.path for fragment in other.get_fragments() for f in fragment.metadata.files}
    assert sorted(p.name for p in (tmp_path / "raced.lance" / "data").iterdir()) == sorted(other_files)
    assert len(files_before) == len(other_files) + 1
