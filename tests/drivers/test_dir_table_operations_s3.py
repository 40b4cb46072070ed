"""The spec's table operations on a dataset in S3 (moto's server), through the `dir` driver.

The conformance suite proves them on every backend with local datasets; here the dataset, and
the `_versions` listing that ListTableVersions reads, are on an object store reached with the
backend's storage options only (no AWS environment), as every driver opens it.
"""

from __future__ import annotations

import uuid

import lance
import lance_namespace
import pyarrow as pa
import pytest

from lance_sync.drivers import impl_name, register
from tests.servers.base import RunningServer
from tests.servers.s3 import new_bucket, storage_options

pytestmark = pytest.mark.servers


def test_indexes_tags_versions_and_columns_on_s3(s3_server: RunningServer, monkeypatch: pytest.MonkeyPatch):
    for variable in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(variable, raising=False)
    bucket = new_bucket(s3_server.endpoint, f"ops-{uuid.uuid4().hex[:10]}")
    options = storage_options(s3_server.endpoint)
    register()
    client = lance_namespace.connect(impl_name("dir"), {
        "root": f"s3://{bucket}/lake", **{f"storage.{key}": value for key, value in options.items()}})
    client.create_namespace({"id": ["sales"]})
    table_id = ["sales", "orders"]
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), namespace_client=client,
                        table_id=table_id, storage_options=options)

    client.create_table_scalar_index({"id": table_id, "column": "id", "index_type": "BTREE"})
    assert [i.index_name for i in client.list_table_indices({"id": table_id}).indexes] == ["id_idx"]
    client.create_table_tag({"id": table_id, "tag": "stable", "version": 1})
    assert client.get_table_tag_version({"id": table_id, "tag": "stable"}).version == 1
    added = client.alter_table_add_columns({"id": table_id, "new_columns": [{"name": "twice", "expression": "id * 2"}]})

    versions = client.list_table_versions({"id": table_id}).versions
    assert [v.version for v in versions] == [1, 2, added.version] == [1, 2, 3]
    location = client.describe_table({"id": table_id}).location
    assert all(v.manifest_path.startswith(f"s3://{bucket}/") and v.manifest_size for v in versions), versions
    dataset = lance.dataset(location, storage_options=options)
    assert dataset.schema.names == ["id", "twice"] and dataset.tags.list()["stable"]["version"] == 1
