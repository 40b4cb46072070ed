"""lancedb and pylance use every driver the way they use any Lance Namespace.

lancedb (`connect_namespace("lance-sync-<type>", properties)`) calls the driver from its Rust
core with dict requests: CreateNamespace, ListNamespaces, DescribeNamespace, DeclareTable
(create_table declares, then writes the data itself), ListTables (include_declared),
DescribeTable (open, add, search), DropTable and DropNamespace. pylance
(`namespace_client=`) sends the generated models: DeclareTable for mode "create",
DescribeTable for "append", "overwrite" and reads.
"""

from __future__ import annotations

import random

import lance
import lance_namespace
import lancedb
import pyarrow as pa
import pytest
from lance_namespace import DescribeTableRequest
from lancedb.index import FTS, IvfFlat

from lance_sync.drivers import impl_name, register
from lance_sync.drivers.base import SyncNamespace
from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness

pytestmark = pytest.mark.servers

ROWS = 300  # enough to train a small IVF index


def documents(first_id: int = 0) -> pa.Table:
    generator = random.Random(first_id)
    return pa.table({
        "id": pa.array(range(first_id, first_id + ROWS), pa.int64()),
        "vector": pa.array([[generator.random(), generator.random()] for _ in range(ROWS)],
                           pa.list_(pa.float32(), 2)),
        "text": [f"topic{i % 7} common words" for i in range(first_id, first_id + ROWS)],
    })


def connect(harness: Harness) -> tuple[SyncNamespace, lancedb.DBConnection]:
    """The driver, and lancedb connected by the driver's registered name and string properties."""
    register()
    driver = harness.driver()
    return driver, lancedb.connect_namespace(impl_name(harness.backend_type), driver.config.to_properties())


def location_of(driver: SyncNamespace, table_id: list[str]) -> str:
    location = driver.describe_table(DescribeTableRequest(id=table_id)).location
    assert location
    return location


def test_lancedb_creates_writes_searches_and_drops_through_the_driver(harness: Harness):
    driver, db = connect(harness)
    namespace = list(harness.new_namespace_id())
    db.create_namespace(namespace, properties={"team": "search"})
    assert namespace[-1] in db.list_namespaces(namespace[:-1]).namespaces
    assert db.describe_namespace(namespace).properties.get("team") == "search"

    name = harness.unique("docs")
    table_id = [*namespace, name]
    db.create_table(name, documents(), namespace_path=namespace)
    assert db.list_tables(namespace_path=namespace).tables == [name]
    location = location_of(driver, table_id)
    assert lance.dataset(location).count_rows() == ROWS  # the data is where the catalog points

    table = db.open_table(name, namespace_path=namespace)
    table.add(documents(first_id=ROWS))
    table.create_index("vector", config=IvfFlat(num_partitions=2))
    table.create_index("text", config=FTS())
    table = db.open_table(name, namespace_path=namespace)
    assert table.count_rows() == 2 * ROWS
    nearest = table.search([0.5, 0.5]).limit(3).to_list()
    assert len(nearest) == 3 and nearest[0]["_distance"] <= nearest[-1]["_distance"]
    assert {row["id"] % 7 for row in table.search("topic3", query_type="fts").limit(500).to_list()} == {3}
    assert table.search().where("id < 10").to_arrow().num_rows == 10
    assert {index.index_type for index in table.list_indices()} == {"IvfFlat", "FTS"}

    if harness.behaviour.drop_table:
        db.drop_table(name, namespace_path=namespace)
        with pytest.raises(ValueError):
            lance.dataset(location)
    else:
        with pytest.raises(RuntimeError, match="DropTable is not supported.*DeregisterTable"):
            db.drop_table(name, namespace_path=namespace)
        driver.deregister_table({"id": table_id})  # a mapping, as lancedb sends requests
        assert lance.dataset(location).count_rows() == 2 * ROWS
    assert db.list_tables(namespace_path=namespace).tables == []
    db.drop_namespace(namespace)
    assert driver.get_namespace_info(tuple(namespace)) is None


def test_lancedb_create_table_into_a_missing_namespace_is_refused(harness: Harness):
    _, db = connect(harness)
    missing = list(harness.new_namespace_id())
    with pytest.raises(RuntimeError, match="NamespaceNotFoundError"):
        db.create_table(harness.unique("t"), documents(), namespace_path=missing)


def test_pylance_creates_appends_overwrites_and_reads_through_a_connected_driver(harness: Harness):
    register()
    driver = harness.driver()
    client = lance_namespace.connect(impl_name(harness.backend_type), driver.config.to_properties())
    assert type(client) is type(driver)
    namespace = harness.new_namespace_id()
    driver.create_namespace({"id": list(namespace)})
    table_id = [*namespace, harness.unique("w")]
    first, second = documents(), documents(first_id=ROWS)

    lance.write_dataset(first, namespace_client=client, table_id=table_id)
    lance.write_dataset(second, namespace_client=client, table_id=table_id, mode="append")
    assert lance.dataset(namespace_client=client, table_id=table_id).count_rows() == 2 * ROWS
    lance.write_dataset(second, namespace_client=client, table_id=table_id, mode="overwrite")
    read = lance.dataset(namespace_client=client, table_id=table_id)
    assert read.to_table().equals(second) and read.version == 3
    with pytest.raises(Exception, match="(?i)already exists"):
        lance.write_dataset(first, namespace_client=client, table_id=table_id)


def test_describe_table_with_vended_credentials_answers_the_configured_storage_options(harness: Harness):
    """No backend here vends credentials: the storage options of the configuration are the answer."""
    driver = harness.driver()
    namespace = harness.new_namespace_id()
    driver.create_namespace({"id": list(namespace)})
    table_id = [*namespace, harness.unique("v")]
    declared = driver.declare_table({"id": table_id, "location": harness.location(table_id[-1])})
    described = driver.describe_table({"id": table_id, "vend_credentials": True})
    assert normalize_location(described.location) == normalize_location(declared.location)
    assert (described.storage_options or {}) == driver.storage_options()
