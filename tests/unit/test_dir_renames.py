"""The dir driver's RenameTable: one manifest commit that gives the table's row its new id.

The table keeps its location, properties and dataset (the dataset's version too); pylance,
reading the manifest itself, finds it under the new id only. Races are replayed as in
test_dir_concurrency.py: the driver is handed a manifest read before another writer's commit.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.dataset import MergeInsertBuilder
from lance.namespace import DirectoryNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    ListTablesRequest,
    RenameTableRequest,
)
from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.model.marks import OWNER_KEY
from tests.support.dir_catalog import (
    connect,
    hand_stale_manifest,
    manifest,
    properties_of,
    table_rows,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def driver(root: Path) -> DirNamespace:
    """Namespaces `ns` and `other`, and the table ns$t: a dataset of 3 rows with properties."""
    driver = connect(root)
    for name in ("ns", "other"):
        driver.create_namespace(CreateNamespaceRequest(id=[name]))
    location = root / "data" / "t.lance"
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(location))
    driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(location),
                                             properties={OWNER_KEY: "o", "tier": "gold"}))
    driver.waits = []  # type: ignore[attr-defined]
    driver.client.sleep = driver.waits.append  # type: ignore[attr-defined]
    return driver


def rename(driver: DirNamespace, source: list[str], name: str, namespace: list[str] | None = None) -> None:
    driver.rename_table(RenameTableRequest(id=source, new_table_name=name, new_namespace_id=namespace))


def test_a_rename_rewrites_the_row_in_one_commit_and_keeps_the_table(driver: DirNamespace, root: Path):
    before = table_rows(root)["ns$t"][0]
    dataset_version = lance.dataset(str(root / "data" / "t.lance")).version
    manifest_version = manifest(root).version
    calls = driver.api_calls
    rename(driver, ["ns", "t"], "renamed")
    assert manifest(root).version == manifest_version + 1
    assert driver.api_calls - calls == 2  # the manifest opened once, one merge commit
    rows = table_rows(root)
    assert "ns$t" not in rows and rows["ns$renamed"] == [{**before, "object_id": "ns$renamed"}]
    described = driver.describe_table(DescribeTableRequest(id=["ns", "renamed"]))
    assert described.location.endswith("/data/t.lance") and described.properties == {OWNER_KEY: "o", "tier": "gold"}
    assert lance.dataset(described.location).version == dataset_version
    assert lance.dataset(described.location).count_rows() == 3
    # pylance itself (which has no rename) sees the table under its new name only
    native = DirectoryNamespace(root=str(root))
    assert native.list_tables(ListTablesRequest(id=["ns"])).tables == ["renamed"]
    with pytest.raises(TableNotFoundError):
        native.describe_table(DescribeTableRequest(id=["ns", "t"]))


def test_a_move_to_another_namespace_is_the_same_rewrite(driver: DirNamespace, root: Path):
    driver.rename_table({"id": ["ns", "t"], "new_table_name": "moved", "new_namespace_id": ["other"]})
    assert driver.get_table_info(("ns", "t")) is None
    info = driver.get_table_info(("other", "moved"))
    assert info is not None and info.location.endswith("/data/t.lance")
    assert info.properties == {OWNER_KEY: "o", "tier": "gold"}
    snapshot = driver.snapshot()
    assert snapshot is not None and [i.id for i in snapshot.tables_in(("other",))] == [("other", "moved")]
    assert snapshot.tables_in(("ns",)) == []


def test_a_table_at_pylance_s_own_location_keeps_it(driver: DirNamespace, root: Path):
    driver.declare_table(DeclareTableRequest(id=["ns", "native"]))
    location = driver.describe_table(DescribeTableRequest(id=["ns", "native"])).location
    rename(driver, ["ns", "native"], "kept", ["other"])
    assert driver.describe_table(DescribeTableRequest(id=["other", "kept"])).location == location
    # a new table of the old name gets a location of its own
    driver.declare_table(DeclareTableRequest(id=["ns", "native"]))
    assert driver.describe_table(DescribeTableRequest(id=["ns", "native"])).location != location


def test_errors_change_nothing(driver: DirNamespace, root: Path):
    driver.declare_table(DeclareTableRequest(id=["other", "taken"], location=str(root / "taken")))
    driver.create_namespace(CreateNamespaceRequest(id=["ns", "sub"]))
    rows, version = table_rows(root), manifest(root).version
    with pytest.raises(TableNotFoundError):
        rename(driver, ["ns", "absent"], "x")
    with pytest.raises(TableNotFoundError):  # a namespace is not a table
        rename(driver, ["ns", "sub"], "x")
    with pytest.raises(NamespaceNotFoundError):
        rename(driver, ["ns", "t"], "x", ["missing"])
    with pytest.raises(TableAlreadyExistsError):
        rename(driver, ["ns", "t"], "taken", ["other"])
    with pytest.raises(TableAlreadyExistsError):  # the id of a namespace is taken too
        rename(driver, ["ns", "t"], "sub")
    with pytest.raises(InvalidInputError):
        rename(driver, ["ns", "t"], "t")
    with pytest.raises(InvalidInputError):
        rename(driver, ["ns", "t"], "a$b")
    with pytest.raises(UnsupportedOperationError):  # pylance finds root-level tables by directory
        rename(driver, ["ns", "t"], "top", [])
    assert table_rows(root) == rows and manifest(root).version == version


def test_a_repeated_rename_meets_table_not_found_and_the_table_where_it_went(driver: DirNamespace, root: Path):
    """What the runner sees when it sends a rename again after losing the first answer."""
    rename(driver, ["ns", "t"], "renamed")
    with pytest.raises(TableNotFoundError):
        rename(driver, ["ns", "t"], "renamed")
    info = driver.get_table_info(("ns", "renamed"))
    assert info is not None and info.location.endswith("/data/t.lance")


def test_a_rename_that_lost_to_a_declare_of_its_destination_is_refused(driver: DirNamespace, root: Path):
    stale = manifest(root)
    connect(root).declare_table(DeclareTableRequest(id=["ns", "new"], location=str(root / "theirs")))
    hand_stale_manifest(driver, stale)
    with pytest.raises(TableAlreadyExistsError):
        rename(driver, ["ns", "t"], "new")
    rows = table_rows(root)
    assert rows["ns$new"][0]["location"] == "theirs" and len(rows["ns$t"]) == 1
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_rename_that_raced_a_property_update_carries_it(driver: DirNamespace, root: Path):
    stale = manifest(root)
    connect(root).update_table_properties(("ns", "t"), {"theirs": "1"}, [])
    hand_stale_manifest(driver, stale)
    rename(driver, ["ns", "t"], "new")
    rows = table_rows(root)
    assert "ns$t" not in rows and len(rows["ns$new"]) == 1
    assert properties_of(rows["ns$new"][0]) == {OWNER_KEY: "o", "tier": "gold", "theirs": "1"}
    assert len(driver.waits) == 1


def test_a_rename_of_a_table_deregistered_meanwhile_is_not_found(driver: DirNamespace, root: Path):
    stale = manifest(root)
    DirectoryNamespace(root=str(root)).deregister_table(DeregisterTableRequest(id=["ns", "t"]))
    hand_stale_manifest(driver, stale)
    with pytest.raises(TableNotFoundError):
        rename(driver, ["ns", "t"], "new")
    assert not {"ns$t", "ns$new"} & set(table_rows(root))


def test_a_rename_whose_commit_fails_leaves_the_table_as_it_was(driver: DirNamespace, root: Path,
                                                                monkeypatch: pytest.MonkeyPatch):
    def failing_execute(self, data, *args, **kwargs):
        raise OSError("LanceError(IO): No space left on device, /rust/lance/src/io.rs:1:1")

    monkeypatch.setattr(MergeInsertBuilder, "execute", failing_execute)
    with pytest.raises(InternalError, match="rename table ns\\$t to ns\\$new"):
        rename(driver, ["ns", "t"], "new")
    assert set(table_rows(root)) == {"ns$t"}


def test_a_commit_the_store_failed_on_the_way_is_worth_trying_again(driver: DirNamespace, root: Path,
                                                                     monkeypatch: pytest.MonkeyPatch):
    """A request that object_store gave up on (a reset, a 5xx) is ServiceUnavailable, which apply
    retries after reading back what it finds; the table is as it was."""
    def failing_execute(self, data, *args, **kwargs):
        raise OSError("LanceError(IO): Generic S3 error: Error performing PUT http://127.0.0.1:1/b/x in "
                      "1ms - HTTP error: error sending request, /rust/lance/src/io.rs:1:1")

    monkeypatch.setattr(MergeInsertBuilder, "execute", failing_execute)
    with pytest.raises(ServiceUnavailableError, match="rename table ns\\$t to ns\\$new in .*: the store failed"):
        rename(driver, ["ns", "t"], "new")
    assert set(table_rows(root)) == {"ns$t"}


def test_capabilities(driver: DirNamespace):
    capabilities = driver.capabilities()
    assert (capabilities.rename_table, capabilities.move_table, capabilities.move_fixed_levels) == (True, True, 0)
    assert capabilities.update_table_location


def test_a_location_change_rewrites_the_row_location_only(driver: DirNamespace, root: Path):
    """One commit; the id, properties and both datasets stay; a row there already is left alone."""
    before = {k: v for k, v in table_rows(root)["ns$t"][0].items() if k != "location"}
    version = manifest(root).version
    driver.update_table_location(("ns", "t"), str(root / "data" / "moved.lance"))
    assert table_rows(root)["ns$t"][0]["location"] == "data/moved.lance"
    assert {k: v for k, v in table_rows(root)["ns$t"][0].items() if k != "location"} == before
    assert manifest(root).version == version + 1
    assert lance.dataset(str(root / "data" / "t.lance")).count_rows() == 3
    assert not (root / "data" / "moved.lance").exists()
    driver.update_table_location(("ns", "t"), "data/moved.lance")  # relative: from the root; there already
    assert manifest(root).version == version + 1


def test_location_change_errors_come_before_any_change(driver: DirNamespace, root: Path, tmp_path: Path):
    version = manifest(root).version
    with pytest.raises(TableNotFoundError):
        driver.update_table_location(("ns", "absent"), str(root / "data" / "x.lance"))
    with pytest.raises(InvalidInputError, match="outside the root"):
        driver.update_table_location(("ns", "t"), str(tmp_path / "elsewhere.lance"))
    with pytest.raises(UnsupportedOperationError, match="root level"):
        driver.update_table_location(("t",), str(root / "data" / "x.lance"))
    assert manifest(root).version == version


def test_a_location_change_that_lost_to_another_writer_is_tried_again(driver: DirNamespace, root: Path):
    """Another writer moved the row between the read and the commit: the conditional update
    matches nothing, and the change is made again on a fresh read."""
    stale = manifest(root)
    other = connect(root)
    other.update_table_location(("ns", "t"), str(root / "data" / "theirs.lance"))
    hand_stale_manifest(driver, stale)
    driver.update_table_location(("ns", "t"), str(root / "data" / "mine.lance"))
    assert table_rows(root)["ns$t"][0]["location"] == "data/mine.lance"
