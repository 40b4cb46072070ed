"""The Lance Namespace spec's table operations answer on every backend, for lancedb and pylance.

Indexes, tags, versions and columns live in the Lance dataset, not in the catalog: each driver
answers CreateTableIndex, CreateTableScalarIndex, ListTableIndices, DescribeTableIndexStats,
DropTableIndex, ListTableTags, CreateTableTag, UpdateTableTag, GetTableTagVersion,
DeleteTableTag, ListTableVersions, DescribeTableVersion and AlterTable{Add,Alter,Drop}Columns on
the dataset at the table's location (lance_sync/drivers/support/table_ops.py). lancedb reaches
the driver through `connect_namespace(...).namespace_client()` and sends dicts; pylance's
namespace client (`lance_namespace.connect`) sends the generated models. What the driver
changes, lancedb's table and pylance's dataset see, and the other way round.
"""

from __future__ import annotations

import random

import lance
import lance_namespace
import lancedb
import pyarrow as pa
import pytest
from lance_namespace import (
    AlterTableAddColumnsRequest,
    AlterTableAlterColumnsRequest,
    AlterTableDropColumnsRequest,
    CreateTableTagRequest,
    DeleteTableTagRequest,
    DescribeTableVersionRequest,
    GetTableTagVersionRequest,
    ListTableTagsRequest,
    ListTableVersionsRequest,
    UpdateTableTagRequest,
)
from lance_namespace.errors import (
    ErrorCode,
    LanceNamespaceError,
)
from lance_namespace_urllib3_client.models import AddColumnsEntry, AlterColumnsEntry

from lance_sync.drivers import impl_name, register
from lance_sync.drivers.base import SyncNamespace
from tests.conformance.harness import Harness, new_namespace

ROWS = 300  # enough to train a two-partition IVF index
DIMENSIONS = 4


def rows(first_id: int = 0) -> pa.Table:
    generator = random.Random(first_id)
    return pa.table({
        "id": pa.array(range(first_id, first_id + ROWS), pa.int64()),
        "vector": pa.array([[generator.random() for _ in range(DIMENSIONS)] for _ in range(ROWS)],
                           pa.list_(pa.float32(), DIMENSIONS)),
        "price": pa.array([float(i % 50) for i in range(first_id, first_id + ROWS)], pa.float32()),
    })


def lancedb_table(harness: Harness) -> tuple[SyncNamespace, lancedb.DBConnection, list[str], list[str]]:
    """lancedb connected by the driver's registered name, a table it created with data, and the
    driver lancedb holds (`namespace_client()`): (driver, db, namespace, table id)."""
    register()
    db = lancedb.connect_namespace(impl_name(harness.backend_type), harness.driver().config.to_properties())
    driver = db.namespace_client()
    assert isinstance(driver, SyncNamespace)
    namespace = list(new_namespace(harness, driver))
    name = harness.unique("ops")
    db.create_table(name, rows(), namespace_path=namespace)
    return driver, db, namespace, [*namespace, name]


def pylance_table(harness: Harness) -> tuple[SyncNamespace, list[str]]:
    """pylance's namespace client for the backend, and a table it wrote through it."""
    register()
    client = lance_namespace.connect(impl_name(harness.backend_type), harness.driver().config.to_properties())
    assert isinstance(client, SyncNamespace)
    table_id = [*new_namespace(harness, client), harness.unique("ops")]
    lance.write_dataset(rows(), namespace_client=client, table_id=table_id)
    return client, table_id


def error_code(call, request) -> ErrorCode:
    with pytest.raises(LanceNamespaceError) as raised:
        call(request)
    return raised.value.code


def test_indexes_made_through_the_driver_are_lancedbs_and_the_other_way_round(harness: Harness):
    """Guards CreateTableIndex (vector), CreateTableScalarIndex, ListTableIndices,
    DescribeTableIndexStats and DropTableIndex: each works on the dataset lancedb reads."""
    driver, db, namespace, table_id = lancedb_table(harness)
    driver.create_table_scalar_index({"id": table_id, "column": "id", "index_type": "BTREE"})
    created = driver.create_table_index({"id": table_id, "column": "vector", "index_type": "IVF_FLAT",
                                         "num_partitions": 2, "distance_type": "cosine", "name": "near"})
    assert created.transaction_id
    table = db.open_table(table_id[-1], namespace_path=namespace)
    table.create_index("price", index_type="BITMAP")  # lancedb's own, on the dataset

    listed = driver.list_table_indices({"id": table_id}).indexes
    assert {(i.index_name, tuple(i.columns)) for i in listed} == {
        ("id_idx", ("id",)), ("near", ("vector",)), ("price_idx", ("price",))}
    assert {i.name for i in table.list_indices()} == {"id_idx", "near", "price_idx"}
    assert all(i.num_indexed_rows == ROWS and i.num_unindexed_rows == 0 and i.index_uuid for i in listed)
    first = driver.list_table_indices({"id": table_id, "limit": 2})
    rest = driver.list_table_indices({"id": table_id, "limit": 2, "page_token": first.page_token})
    assert [i.index_name for i in first.indexes + rest.indexes] == ["id_idx", "near", "price_idx"]
    assert rest.page_token is None

    table.add(rows(first_id=ROWS))
    stats = driver.describe_table_index_stats({"id": table_id, "index_name": "near"})
    assert (stats.index_type, stats.distance_type) == ("IVF_FLAT", "cosine")
    assert (stats.num_indexed_rows, stats.num_unindexed_rows) == (ROWS, ROWS)
    assert table.index_stats("near").num_unindexed_rows == ROWS
    plan = table.search([0.5] * DIMENSIONS).limit(3).explain_plan()
    assert "name=near" in plan  # lancedb searches with the index the driver built

    driver.drop_table_index({"id": table_id, "index_name": "near"})
    table.checkout_latest()
    assert {i.name for i in table.list_indices()} == {"id_idx", "price_idx"}


def test_tags_and_versions_through_pylances_namespace_client(harness: Harness):
    """Guards CreateTableTag, UpdateTableTag, GetTableTagVersion, ListTableTags, DeleteTableTag,
    ListTableVersions and DescribeTableVersion with pylance's request models: a tag the driver
    makes opens that version in pylance, and the versions answered are the dataset's."""
    client, table_id = pylance_table(harness)
    lance.write_dataset(rows(first_id=ROWS), namespace_client=client, table_id=table_id, mode="append")
    client.create_table_tag(CreateTableTagRequest(id=table_id, tag="stable", version=1))
    assert lance.dataset(namespace_client=client, table_id=table_id, version="stable").count_rows() == ROWS
    client.update_table_tag(UpdateTableTagRequest(id=table_id, tag="stable", version=2))
    assert client.get_table_tag_version(GetTableTagVersionRequest(id=table_id, tag="stable")).version == 2
    dataset = lance.dataset(namespace_client=client, table_id=table_id)
    dataset.tags.create("first", 1)  # pylance's own, on the dataset
    tags = client.list_table_tags(ListTableTagsRequest(id=table_id)).tags
    assert {name: tag.version for name, tag in tags.items()} == {"first": 1, "stable": 2}
    assert all(tag.manifest_size > 0 for tag in tags.values())
    client.delete_table_tag(DeleteTableTagRequest(id=table_id, tag="stable"))
    assert set(dataset.tags.list()) == {"first"}

    versions = client.list_table_versions(ListTableVersionsRequest(id=table_id)).versions
    assert [v.version for v in versions] == [v["version"] for v in dataset.versions()] == [1, 2]
    assert all(v.manifest_path.endswith(".manifest") and v.manifest_size and v.timestamp_millis
               for v in versions)
    newest = client.list_table_versions(ListTableVersionsRequest(id=table_id, descending=True, limit=1))
    assert [v.version for v in newest.versions] == [2] and newest.page_token == "2"
    older = client.list_table_versions(ListTableVersionsRequest(id=table_id, descending=True, limit=1,
                                                                page_token=newest.page_token))
    assert [v.version for v in older.versions] == [1]
    latest = client.describe_table_version(DescribeTableVersionRequest(id=table_id)).version
    assert latest == versions[-1]
    assert client.describe_table_version(DescribeTableVersionRequest(id=table_id, version=1)).version == versions[0]


def test_columns_are_added_altered_and_dropped_in_place(harness: Harness):
    """Guards AlterTableAddColumns, AlterTableAlterColumns and AlterTableDropColumns: the schema
    lancedb and pylance read changes, the rows stay, and each answers the version it wrote."""
    driver, db, namespace, table_id = lancedb_table(harness)
    added = driver.alter_table_add_columns(AlterTableAddColumnsRequest(
        id=table_id, new_columns=[AddColumnsEntry(name="double_id", expression="id * 2")]))
    table = db.open_table(table_id[-1], namespace_path=namespace)
    assert table.version == added.version
    assert table.search().where("id = 7").to_arrow()["double_id"].to_pylist() == [14]

    altered = driver.alter_table_alter_columns(AlterTableAlterColumnsRequest(id=table_id, alterations=[
        AlterColumnsEntry(path="double_id", rename="twice"),
        AlterColumnsEntry(path="price", data_type={"type": "float64"})]))
    assert altered.version == added.version + 1
    table.checkout_latest()
    assert table.schema.field("twice").type == pa.int64() and table.schema.field("price").type == pa.float64()

    dropped = driver.alter_table_drop_columns(AlterTableDropColumnsRequest(id=table_id, columns=["twice"]))
    location = driver.describe_table({"id": table_id}).location
    dataset = lance.dataset(location, storage_options=driver.storage_options() or None)
    assert dataset.version == dropped.version and dataset.schema.names == ["id", "vector", "price"]
    assert dataset.count_rows() == ROWS


def test_table_operations_answer_the_specs_error_codes(harness: Harness):
    """Guards the error answers: a missing table (4), index (6), index name in use (7), tag (8),
    tag name in use (9), version (11), column (12); requests Lance refuses or that lack a
    field (13); a branch other than main (0). They match pylance's DirectoryNamespace."""
    client, table_id = pylance_table(harness)
    missing = [*table_id[:-1], harness.unique("missing")]
    for call, request in [
        (client.list_table_indices, {"id": missing}),
        (client.create_table_index, {"id": missing, "column": "id", "index_type": "BTREE"}),
        (client.list_table_tags, {"id": missing}),
        (client.create_table_tag, {"id": missing, "tag": "t", "version": 1}),
        (client.list_table_versions, {"id": missing}),
        (client.alter_table_drop_columns, {"id": missing, "columns": ["id"]}),
    ]:
        assert error_code(call, request) == ErrorCode.TABLE_NOT_FOUND, call.__name__
    declared = [*table_id[:-1], harness.unique("declared")]
    client.declare_table({"id": declared, "location": harness.location(declared[-1])})
    assert error_code(client.list_table_tags, {"id": declared}) == ErrorCode.TABLE_NOT_FOUND

    client.create_table_scalar_index({"id": table_id, "column": "id", "index_type": "BTREE"})
    client.create_table_tag({"id": table_id, "tag": "stable", "version": 1})
    expected = [
        (client.describe_table_index_stats, {"index_name": "nope"}, ErrorCode.TABLE_INDEX_NOT_FOUND),
        (client.drop_table_index, {"index_name": "nope"}, ErrorCode.TABLE_INDEX_NOT_FOUND),
        (client.create_table_index, {"column": "id", "index_type": "BTREE"}, ErrorCode.TABLE_INDEX_ALREADY_EXISTS),
        (client.get_table_tag_version, {"tag": "nope"}, ErrorCode.TABLE_TAG_NOT_FOUND),
        (client.update_table_tag, {"tag": "nope", "version": 1}, ErrorCode.TABLE_TAG_NOT_FOUND),
        (client.delete_table_tag, {"tag": "nope"}, ErrorCode.TABLE_TAG_NOT_FOUND),
        (client.create_table_tag, {"tag": "stable", "version": 1}, ErrorCode.TABLE_TAG_ALREADY_EXISTS),
        (client.create_table_tag, {"tag": "later", "version": 99}, ErrorCode.TABLE_VERSION_NOT_FOUND),
        (client.describe_table_version, {"version": 99}, ErrorCode.TABLE_VERSION_NOT_FOUND),
        (client.alter_table_drop_columns, {"columns": ["nope"]}, ErrorCode.TABLE_COLUMN_NOT_FOUND),
        (client.alter_table_alter_columns, {"alterations": [{"path": "nope", "rename": "x"}]},
         ErrorCode.TABLE_COLUMN_NOT_FOUND),
        (client.create_table_index, {"column": "nope", "index_type": "BTREE", "name": "n"},
         ErrorCode.TABLE_COLUMN_NOT_FOUND),
        (client.drop_table_index, {}, ErrorCode.INVALID_INPUT),
        (client.create_table_tag, {"tag": "no_version"}, ErrorCode.INVALID_INPUT),
        (client.create_table_index, {"column": "id", "index_type": "NOPE"}, ErrorCode.INVALID_INPUT),
        (client.create_table_scalar_index, {"column": "vector", "index_type": "IVF_FLAT"}, ErrorCode.INVALID_INPUT),
        (client.create_table_index, {"column": "price", "index_type": "BTREE", "num_partitions": 2},
         ErrorCode.INVALID_INPUT),
        (client.alter_table_add_columns, {"new_columns": [{"name": "empty"}]}, ErrorCode.INVALID_INPUT),
        (client.alter_table_add_columns, {"new_columns": [{"name": "id", "expression": "id"}]},
         ErrorCode.INVALID_INPUT),
        (client.alter_table_alter_columns, {"alterations": [{"path": "id", "data_type": {"type": "nope"}}]},
         ErrorCode.INVALID_INPUT),
        (client.create_table_tag, {"tag": "b", "version": 1, "branch": "dev"}, ErrorCode.UNSUPPORTED),
    ]
    for call, fields, code in expected:
        assert error_code(call, {"id": table_id, **fields}) == code, (call.__name__, fields)
    assert lance.dataset(namespace_client=client, table_id=table_id).version == 2  # the index; nothing else
