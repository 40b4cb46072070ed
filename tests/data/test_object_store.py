"""The data functions on an object store: the session's S3 server (moto), reached via storage options."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow.parquet as pq
import pytest

from lance_sync.data import find_lance_datasets, inspect_location, inspect_locations
from lance_sync.data.materialize import materialize
from tests.data.tables import TYPED_SCHEMA, typed_table
from tests.servers import s3
from tests.servers.base import RunningServer

BUCKET = "lake"
#: the Spark test's own bucket: what it writes is not in the other tests' bucket, whatever the order
SPARK_BUCKET = "spark-lake"


@pytest.fixture(scope="module")
def storage_options(s3_server: RunningServer) -> dict[str, str]:
    """The session's S3 store, with this module's buckets and datasets."""
    options = s3.storage_options(s3_server.endpoint)
    s3.new_bucket(s3_server.endpoint, BUCKET)
    s3.new_bucket(s3_server.endpoint, SPARK_BUCKET)
    s3.s3_client(s3_server.endpoint).put_object(Bucket=BUCKET, Key="raw/part-0.parquet", Body=b"PAR1 not really")
    for key in ("a.lance", "team/b.lance"):
        lance.write_dataset(typed_table(4), f"s3://{BUCKET}/{key}", storage_options=options)
    return options


def test_locations_on_s3(storage_options):
    def status(uri: str) -> str:
        return inspect_location(uri, storage_options).status

    assert status(f"s3://{BUCKET}/a.lance") == "valid"
    assert status(f"s3a://{BUCKET}//team/b.lance/") == "valid"
    assert status(f"s3://{BUCKET}/nothing.lance") == "missing"
    assert status(f"s3://{BUCKET}/raw") == "not_lance"
    assert status(f"s3://{BUCKET}/raw/part-0.parquet") == "not_lance"


def test_discover_on_s3(storage_options):
    found = find_lance_datasets(f"s3://{BUCKET}", storage_options)
    assert found == [f"s3://{BUCKET}/a.lance", f"s3://{BUCKET}/team/b.lance"]


@pytest.mark.spark
def test_spark_writes_inspects_and_discovers_on_s3(spark_settings, storage_options, tmp_path: Path):
    pq.write_table(typed_table(12), tmp_path / "part-0.parquet")
    location = f"s3://{SPARK_BUCKET}/t.lance"
    source = {"format": "parquet", "path": str(tmp_path)}
    result = materialize(source, location, None, "create", spark_settings, storage_options)
    assert (result.row_count, result.schema) == (12, TYPED_SCHEMA)

    reports = inspect_locations(
        [location], storage_options, engine="spark", spark_settings=spark_settings
    )
    assert (reports[0].status, reports[0].row_count) == ("valid", 12)
    found = find_lance_datasets(
        f"s3://{SPARK_BUCKET}/", storage_options, engine="spark", spark_settings=spark_settings
    )
    assert location in found
