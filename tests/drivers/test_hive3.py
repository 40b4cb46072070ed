"""The Hive driver against the real Hive Metastore 2.3 and the project's Hive 3.x server.

Database and table calls run against both (`hive` fixture: the default catalog on HMS 2.3, a
catalog of its own on the Hive 3 server); catalog calls against the Hive 3 server, and their
refusal against HMS 2.3. pymetastore is the independent client that looks through. The pool
and timeout tests use loopback sockets of their own: a counting proxy in front of the
metastore, a server that never answers and one that hangs up. Tests that count requests on
the server skip against an external server.
"""

from __future__ import annotations

import math
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lance
import lance_namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceExistsRequest,
    RegisterTableRequest,
    RenameTableRequest,
    TableExistsRequest,
)
from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pymetastore.hive_metastore.ttypes import GetTableRequest, Table

from lance_sync.apply.lease import Leases, lease_stores
from lance_sync.drivers import register
from lance_sync.drivers.base import Identifier
from lance_sync.drivers.hive3 import driver as hive3
from lance_sync.drivers.hive3 import transport
from lance_sync.drivers.hive3.driver import Hive3Namespace
from lance_sync.drivers.hive3.objects import database_ref
from lance_sync.model.errors import ConfigError
from tests.conformance.harness_hive3 import Hive3Harness
from tests.conformance.harness_hms import HmsHarness
from tests.servers.base import RunningServer, free_port
from tests.servers.hive_checks import external_table
from tests.servers.hive_support import hive_client

register()  # lance_namespace.connect("lance-sync-<type>", ...) builds lance-sync's drivers

pytestmark = pytest.mark.servers


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=[HmsHarness, Hive3Harness], ids=["hms", "hive3"])
def hive(request: pytest.FixtureRequest, tmp_path: Path) -> HmsHarness:
    """Databases of the default catalog on HMS 2.3, or of catalog `lance_cat` on the Hive 3 server."""
    return request.param(request.getfixturevalue(request.param.server_fixture), tmp_path)


def make_driver(hive: HmsHarness, **properties: str) -> Hive3Namespace:
    return Hive3Namespace(**{**hive.config(), **properties})


@pytest.fixture
def driver(hive: HmsHarness) -> Iterator[Hive3Namespace]:
    driver = make_driver(hive)
    yield driver
    driver.close()


@pytest.fixture
def database(hive: HmsHarness, driver: Hive3Namespace) -> Identifier:
    namespace = hive.new_namespace_id()
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    return namespace


@pytest.fixture
def counted(hive: HmsHarness) -> HmsHarness:
    if hive.server.external:
        pytest.skip("request counting is a feature of the project's servers")
    return hive


def declare(driver: Hive3Namespace, table_id: Identifier, location: str | Path | None = None, **properties: str):
    return driver.declare_table(DeclareTableRequest(
        id=list(table_id), location=str(location) if location else None, properties=properties or None))


def stored_table(hive: HmsHarness, table_id: Identifier) -> Table:
    catalog, database, name = table_id
    with hive_client(hive.server.endpoint) as client:
        return client.get_table_req(GetTableRequest(dbName=database, tblName=name, catName=catalog)).table


def all_names(call: Callable, request_type: type, id: Identifier, attribute: str, limit: int) -> list[list[str]]:
    pages, token = [], None
    while True:
        response = call(request_type(id=list(id), page_token=token, limit=limit))
        pages.append(list(getattr(response, attribute)))
        token = response.page_token
        if not token:
            return pages


def seed_tables(hive: HmsHarness, namespace: Identifier, names: list[str], foreign: set[str] = frozenset()) -> None:
    """Tables made with pymetastore (8 connections): Lance tables, and Parquet ones for `foreign`."""
    catalog, database = namespace

    def create(batch: list[str]) -> None:
        with hive_client(hive.server.endpoint) as client:
            for name in batch:
                if name in foreign:
                    hive.create_foreign_table(namespace, name)
                else:
                    client.create_table(external_table(database, name, hive.location(name), catalog=catalog))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, [names[i::8] for i in range(8)]))


# --- configuration ----------------------------------------------------------------------------

def test_config_defaults_and_string_properties():
    driver = lance_namespace.connect("lance-sync-hive3", {"uri": "thrift://127.0.0.1:9083",
                                                          "client.pool-size": "5",
                                                          "client.socket-timeout-sec": "2.5",
                                                          "storage.region": "us-west-2"})
    assert isinstance(driver, Hive3Namespace)
    assert (driver.config.client_pool_size, driver.config.client_socket_timeout) == (5, 2.5)
    assert driver.storage_options() == {"region": "us-west-2"}
    defaults = Hive3Namespace(uri="thrift://127.0.0.1:9083")
    assert (defaults.config.client_pool_size, defaults.config.client_socket_timeout) == (3, 60)
    assert defaults.config.root == str(Path.cwd())
    assert defaults.api_calls == 0  # nothing is sent before the first operation


@pytest.mark.parametrize("properties", [{}, {"uri": "http://127.0.0.1:9083"}, {"uri": "thrift://host"},
                                        {"uri": "thrift://h:1", "client.pool-size": "0"},
                                        {"uri": "thrift://h:1", "client.socket-timeout-sec": "-1"},
                                        {"uri": "thrift://h:1", "lease": "row"}])
def test_bad_config_is_a_config_error(properties: dict[str, str]):
    with pytest.raises(ConfigError):
        Hive3Namespace(**properties)


@pytest.mark.parametrize(("parts", "ok"), [(("hive", "sales_2"), True), (("Hive", "sales"), False),
                                           (("hive", "a-b"), False), (("hive", "é"), False)])
def test_manifest_names_follow_hive_rules(parts: Identifier, ok: bool):
    problem = Hive3Namespace.check_namespace_id(parts, Hive3Namespace.config_model(uri="thrift://h:1"))
    assert (problem is None) is ok


# --- databases (both servers) -------------------------------------------------------------------

def test_database_fields_round_trip(hive: HmsHarness, driver: Hive3Namespace, tmp_path: Path):
    namespace = hive.new_namespace_id()
    location = tmp_path / "db_here"
    properties = {"team": "sales", "database.description": "sales team",
                  "database.location-uri": location.as_uri(), "database.owner": "alice",
                  "database.owner-type": "role"}
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace), properties=properties))
    described = driver.describe_namespace(DescribeNamespaceRequest(id=list(namespace))).properties
    assert described == {**properties, "database.location-uri": str(location), "database.owner-type": "ROLE"}
    assert location.is_dir()  # HMS made it
    driver.namespace_exists(NamespaceExistsRequest(id=list(namespace)))


def test_create_database_modes(hive: HmsHarness, driver: Hive3Namespace):
    namespace = list(hive.new_namespace_id())
    driver.create_namespace(CreateNamespaceRequest(id=namespace, properties={"team": "a", "keep": "1"}))
    declare(driver, (*namespace, "t"), hive.location("t"))
    with pytest.raises(NamespaceAlreadyExistsError):
        driver.create_namespace(CreateNamespaceRequest(id=namespace, properties={"team": "b"}))
    kept = driver.create_namespace(CreateNamespaceRequest(id=namespace, mode="ExistOk", properties={"team": "b"}))
    assert {k: kept.properties.get(k) for k in ("team", "keep")} == {"team": "a", "keep": "1"}
    driver.create_namespace(CreateNamespaceRequest(id=namespace, mode="Overwrite", properties={"team": "c"}))
    after = driver.describe_namespace(DescribeNamespaceRequest(id=namespace)).properties
    assert (after["team"], "keep" in after) == ("c", False)
    assert driver.get_table_info((*namespace, "t")) is not None  # overwrite keeps the tables
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=namespace, mode="replace"))


@pytest.mark.parametrize("name", ["has space", "a.b", "dollar$", "é", "@lance_cat#x", ""])
def test_invalid_names_are_invalid_input(hive: HmsHarness, driver: Hive3Namespace, database: Identifier, name: str):
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[hive.parent_namespace()[0], name]))
    with pytest.raises(InvalidInputError):
        declare(driver, (*database, name), hive.location("x"))


def test_names_are_stored_lower_case(hive: HmsHarness, driver: Hive3Namespace):
    name = unique("Mixed")
    driver.create_namespace(CreateNamespaceRequest(id=[*hive.parent_namespace(), name]))
    listed = all_names(driver.list_namespaces, ListNamespacesRequest, hive.parent_namespace(), "namespaces", 1000)
    assert name.lower() in sum(listed, []) and name not in sum(listed, [])
    driver.describe_namespace(DescribeNamespaceRequest(id=[*hive.parent_namespace(), name]))  # any case finds it


def test_list_databases_sorted_and_paged(hive: HmsHarness, driver: Hive3Namespace):
    made = sorted(unique(f"pg{i}") for i in range(5))
    for name in made:
        driver.create_namespace(CreateNamespaceRequest(id=[*hive.parent_namespace(), name]))
    pages = all_names(driver.list_namespaces, ListNamespacesRequest, hive.parent_namespace(), "namespaces", 2)
    names = sum(pages, [])
    assert names == sorted(names) and len(names) == len(set(names)) and set(made) <= set(names)
    assert all(len(page) == 2 for page in pages[:-1]) and pages[-1]
    with pytest.raises(InvalidInputError):
        driver.list_namespaces(ListNamespacesRequest(id=list(hive.parent_namespace()), limit=0))


def test_database_has_no_child_namespaces(driver: Hive3Namespace, database: Identifier):
    assert driver.list_namespaces(ListNamespacesRequest(id=list(database))).namespaces == []
    assert list(driver.list_namespace_infos(database)) == []
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[*database, "deeper"]))


def test_missing_database(hive: HmsHarness, driver: Hive3Namespace):
    missing = list(hive.new_namespace_id())
    for call in (lambda: driver.describe_namespace(DescribeNamespaceRequest(id=missing)),
                 lambda: driver.namespace_exists(NamespaceExistsRequest(id=missing)),
                 lambda: driver.list_namespaces(ListNamespacesRequest(id=missing)),
                 lambda: driver.list_tables(ListTablesRequest(id=missing)),
                 lambda: list(driver.list_table_infos(tuple(missing))),
                 lambda: driver.update_namespace_properties(tuple(missing), {"a": "1"}, []),
                 lambda: declare(driver, (*missing, "t"), hive.location("t"))):
        with pytest.raises(NamespaceNotFoundError):
            call()
    assert driver.get_namespace_info(tuple(missing)) is None


def test_drop_database(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    """Restrict counts non-Lance tables too; a missing database is NamespaceNotFound on both
    servers (HMS 2.3 answers MetaException with a NullPointerException); Skip ignores it."""
    hive.create_foreign_table(database, "foreign")
    with pytest.raises(NamespaceNotEmptyError):
        driver.drop_namespace(DropNamespaceRequest(id=list(database)))
    with hive_client(hive.server.endpoint) as client:
        client.drop_table(database_ref(*database), "foreign", False)
    driver.drop_namespace(DropNamespaceRequest(id=list(database)))
    assert driver.get_namespace_info(database) is None
    with pytest.raises(NamespaceNotFoundError):
        driver.drop_namespace(DropNamespaceRequest(id=list(database)))
    driver.drop_namespace(DropNamespaceRequest(id=list(database), mode="Skip"))
    with pytest.raises(InvalidInputError):
        driver.drop_namespace(DropNamespaceRequest(id=list(database), behavior="purge"))


def test_cascade_drop_keeps_table_data(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    location = hive.location("kept")
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), location)
    declare(driver, (*database, "kept"), location)
    hive.create_foreign_table(database, "foreign")
    driver.drop_namespace(DropNamespaceRequest(id=list(database), behavior="Cascade"))
    assert driver.get_namespace_info(database) is None
    assert lance.dataset(location).count_rows() == 3
    assert (hive.data_root / "foreign_parquet").is_dir()


def test_default_database_is_never_dropped(driver: Hive3Namespace):
    with pytest.raises(InvalidInputError):
        driver.drop_namespace(DropNamespaceRequest(id=["hive", "default"], behavior="Cascade"))
    assert driver.get_namespace_info(("hive", "default")) is not None


def test_update_namespace_properties(hive: HmsHarness, driver: Hive3Namespace):
    namespace = hive.new_namespace_id()
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace), properties={
        "keep": "1", "change": "old", "drop": "x", "database.owner": "alice", "database.description": "d"}))
    driver.update_namespace_properties(namespace, {"change": "new", "add": "2", "database.owner": "bob",
                                                   "database.owner-type": "GROUP"}, ["drop"])
    properties = driver.get_namespace_info(namespace).properties
    assert {k: properties.get(k) for k in ("keep", "change", "add", "drop", "database.owner",
                                           "database.owner-type", "database.description")} == \
        {"keep": "1", "change": "new", "add": "2", "drop": None, "database.owner": "bob",
         "database.owner-type": "GROUP", "database.description": "d"}
    for removal in ("database.owner", "database.description"):
        with pytest.raises(InvalidInputError):
            driver.update_namespace_properties(namespace, {}, [removal])
    with pytest.raises(InvalidInputError):
        driver.update_namespace_properties(namespace, {"database.owner-type": "ANYONE"}, [])


def test_database_description_and_location_change_only_on_hive3(hive: HmsHarness, driver: Hive3Namespace,
                                                                database: Identifier, tmp_path: Path):
    """HMS 2.3 keeps them on alter_database: the driver refuses before sending anything."""
    change = {"database.description": "renamed", "database.location-uri": str(tmp_path / "moved")}
    if isinstance(hive, Hive3Harness):
        driver.update_namespace_properties(database, change, [])
        assert {k: driver.get_namespace_info(database).properties[k] for k in change} == change
        return
    before = driver.get_namespace_info(database).properties
    with pytest.raises(UnsupportedOperationError, match="before 3.0"):
        driver.update_namespace_properties(database, {**change, "other": "x"}, [])
    assert driver.get_namespace_info(database).properties == before


# --- tables (both servers) ----------------------------------------------------------------------

def test_declare_table_as_external_lance_table(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    table_id = (*database, "orders")
    declared = declare(driver, table_id, hive.location("orders"), tier="gold", table_type="iceberg", EXTERNAL="no")
    assert declared.location == hive.location("orders")
    assert declared.properties == {"tier": "gold", "table_type": "lance"}
    hive.check_lance_table(table_id, hive.location("orders"), {"tier": "gold"})
    stored = stored_table(hive, table_id)
    assert stored.catName in (None, database[0])  # HMS 2.3 has no catalogs
    assert stored.sd.location.startswith("file:/")  # local paths are sent as file: URIs
    with pytest.raises(TableAlreadyExistsError):
        declare(driver, table_id, hive.location("other"))


def test_declare_without_location_uses_root(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    """{root}/{catalog}/{database}/{table}.lance; HMS makes the empty directory and pylance writes into it."""
    name = unique("Auto")
    declared = declare(driver, (*database, name))
    expected = hive.data_root / database[0] / database[1] / f"{name.lower()}.lance"
    assert declared.location == str(expected)
    assert expected.is_dir() and not any(expected.iterdir())
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    lance.write_dataset(data, declared.location)
    assert lance.dataset(namespace_client=driver, table_id=[*database, name]).to_table().equals(data)


def test_relative_and_uri_locations_are_normalized(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    relative = declare(driver, (*database, "rel"), "nested/rel.lance")
    assert relative.location == str(hive.data_root / "nested" / "rel.lance")
    uri = (hive.data_root / "as_uri.lance").as_uri() + "/"
    declare(driver, (*database, "uri"), uri)
    assert stored_table(hive, (*database, "uri")).sd.location == f"file:{hive.data_root}/as_uri.lance"
    described = driver.describe_table(DescribeTableRequest(id=[*database, "uri"]))
    assert described.location == str(hive.data_root / "as_uri.lance")


def test_describe_table(hive: HmsHarness, database: Identifier):
    driver = make_driver(hive, **{"storage.region": "us-west-2"})
    declare(driver, (*database, "t"), hive.location("t"), tier="gold")
    described = driver.describe_table(DescribeTableRequest(id=[*database, "t"], version=3))
    assert (described.table, described.namespace, described.location) == ("t", list(database), hive.location("t"))
    # HMS's own bookkeeping (EXTERNAL, transient_lastDdlTime, ...) is not a Lance property
    assert described.properties == {"tier": "gold", "table_type": "lance"}
    assert described.storage_options == {"region": "us-west-2"}
    assert "transient_lastDdlTime" in stored_table(hive, (*database, "t")).parameters
    driver.table_exists(TableExistsRequest(id=[*database, "t"]))


def test_missing_table(driver: Hive3Namespace, database: Identifier):
    table_id = [*database, "absent"]
    for call in (lambda: driver.describe_table(DescribeTableRequest(id=table_id)),
                 lambda: driver.table_exists(TableExistsRequest(id=table_id)),
                 lambda: driver.deregister_table(DeregisterTableRequest(id=table_id)),
                 lambda: driver.update_table_properties(tuple(table_id), {"a": "1"}, [])):
        with pytest.raises(TableNotFoundError):
            call()
    assert driver.get_table_info(tuple(table_id)) is None
    with pytest.raises(TableNotFoundError):  # in a missing database too
        driver.describe_table(DescribeTableRequest(id=[database[0], unique("nodb"), "t"]))


def test_foreign_table_is_refused_but_listed_as_non_lance(hive: HmsHarness, driver: Hive3Namespace,
                                                         database: Identifier):
    hive.create_foreign_table(database, "parquet_t")
    table_id = (*database, "parquet_t")
    for call in (lambda: driver.describe_table(DescribeTableRequest(id=list(table_id))),
                 lambda: driver.table_exists(TableExistsRequest(id=list(table_id))),
                 lambda: driver.deregister_table(DeregisterTableRequest(id=list(table_id))),
                 lambda: driver.update_table_properties(table_id, {"a": "1"}, []),
                 lambda: driver.register_table(RegisterTableRequest(id=list(table_id), location="x",
                                                                    mode="Overwrite"))):
        with pytest.raises(InvalidInputError):
            call()
    assert stored_table(hive, table_id).parameters.get("a") is None
    info = driver.get_table_info(table_id)
    assert info is not None and not info.is_lance
    assert [(i.id, i.is_lance) for i in driver.list_table_infos(database)] == [(table_id, False)]
    assert driver.list_tables(ListTablesRequest(id=list(database))).tables == []


def test_managed_table_marked_lance_is_not_a_lance_table(hive: HmsHarness, driver: Hive3Namespace,
                                                        database: Identifier):
    """Without EXTERNAL=TRUE HMS stores MANAGED_TABLE: not a Lance table by the spec's test."""
    table = external_table(database[1], "managed", hive.location("managed"), catalog=database[0])
    del table.parameters["EXTERNAL"]
    with hive_client(hive.server.endpoint) as client:
        client.create_table(table)
    assert stored_table(hive, (*database, "managed")).tableType == "MANAGED_TABLE"
    with pytest.raises(InvalidInputError):
        driver.describe_table(DescribeTableRequest(id=[*database, "managed"]))


def test_deregister_keeps_data(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    location = hive.location("d")
    lance.write_dataset(pa.table({"id": [1]}), location)
    declare(driver, (*database, "d"), location, tier="gold")
    response = driver.deregister_table(DeregisterTableRequest(id=[*database, "d"]))
    assert (response.location, response.properties) == (location, {"tier": "gold", "table_type": "lance"})
    assert driver.get_table_info((*database, "d")) is None
    assert lance.dataset(location).count_rows() == 1


def test_register_table(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    table_id = [*database, "r"]
    driver.register_table(RegisterTableRequest(id=table_id, location=hive.location("r1"), properties={"v": "1"}))
    with pytest.raises(TableAlreadyExistsError):
        driver.register_table(RegisterTableRequest(id=table_id, location=hive.location("r2")))
    driver.register_table(RegisterTableRequest(id=table_id, location=hive.location("r2"), mode="Overwrite",
                                               properties={"v": "2"}))
    info = driver.get_table_info(tuple(table_id))
    assert (info.location, info.properties) == (hive.location("r2"), {"v": "2", "table_type": "lance"})


def test_update_table_properties_keeps_the_rest_of_the_table(hive: HmsHarness, driver: Hive3Namespace,
                                                            database: Identifier):
    table_id = (*database, "u")
    declare(driver, table_id, hive.location("u"), keep="1", change="old", drop="x")
    before = stored_table(hive, table_id)
    driver.update_table_properties(table_id, {"change": "new", "add": "2", "table_type": "LANCE"}, ["drop"])
    after = stored_table(hive, table_id)
    assert {k: after.parameters.get(k) for k in ("keep", "change", "add", "drop", "EXTERNAL")} == \
        {"keep": "1", "change": "new", "add": "2", "drop": None, "EXTERNAL": "TRUE"}
    assert (after.tableType, after.sd.location, after.createTime, after.sd.serdeInfo.name) == \
        (before.tableType, before.sd.location, before.createTime, before.sd.serdeInfo.name)
    assert driver.get_table_info(table_id).is_lance


def test_list_tables_lance_only_sorted_and_paged(hive: HmsHarness, driver: Hive3Namespace, database: Identifier,
                                                monkeypatch: pytest.MonkeyPatch):
    """Pages of 3 over 10 Lance and 4 Parquet tables, fetched in object batches of 4."""
    monkeypatch.setattr(hive3, "TABLE_BATCH_SIZE", 4)
    lance_names = [f"l{i:02d}" for i in range(10)]
    foreign = {"l00a", "l03a", "l05a", "zz"}
    seed_tables(hive, database, lance_names + sorted(foreign), foreign)
    pages = all_names(driver.list_tables, ListTablesRequest, database, "tables", 3)
    assert sum(pages, []) == lance_names
    assert all(len(page) == 3 for page in pages[:-1])
    assert driver.list_tables(ListTablesRequest(id=list(database))).tables == lance_names
    infos = list(driver.list_table_infos(database))
    assert [i.id[-1] for i in infos] == sorted(lance_names + list(foreign))
    assert {i.id[-1] for i in infos if not i.is_lance} == foreign
    assert all(i.location == hive.location(i.id[-1]) for i in infos if i.is_lance)


def test_empty_database_lists_nothing(driver: Hive3Namespace, database: Identifier):
    assert driver.list_tables(ListTablesRequest(id=list(database))).tables == []
    assert list(driver.list_table_infos(database)) == []


# --- renames and location changes ---------------------------------------------------------------

#: parameters HMS maintains itself, which an alter may refresh
HMS_BOOKKEEPING = {"transient_lastDdlTime", "numFiles", "totalSize"}


def rename(driver: Hive3Namespace, source: Identifier, name: str, database: Identifier | None = None) -> None:
    driver.rename_table(RenameTableRequest(id=list(source), new_table_name=name,
                                           new_namespace_id=list(database) if database is not None else None))


def kept_fields(table: Table) -> tuple:
    """What a rename or location change must keep of a stored table."""
    parameters = {k: v for k, v in table.parameters.items() if k not in HMS_BOOKKEEPING}
    return table.createTime, table.tableType, table.owner, parameters, table.sd.serdeInfo.name


@pytest.fixture
def lance_table(hive: HmsHarness, driver: Hive3Namespace, database: Identifier) -> Identifier:
    """database$t: a Lance dataset of 3 rows, registered with properties; its create time a
    second in the past, so that a create time set anew would differ."""
    location = hive.location("t")
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), location)
    declare(driver, (*database, "t"), location, tier="gold")
    time.sleep(1.1)
    return (*database, "t")


def test_rename_keeps_create_time_location_and_parameters(hive: HmsHarness, driver: Hive3Namespace,
                                                          lance_table: Identifier):
    before = stored_table(hive, lance_table)
    version = lance.dataset(hive.location("t")).version
    calls = driver.api_calls
    rename(driver, lance_table, "renamed")
    assert driver.api_calls - calls == 3  # get the source, look for the destination, alter
    after = stored_table(hive, (*lance_table[:-1], "renamed"))
    assert kept_fields(after) == kept_fields(before)
    assert after.sd.location == before.sd.location  # an external table's data is never moved
    assert (lance.dataset(hive.location("t")).version, lance.dataset(hive.location("t")).count_rows()) == (version, 3)
    assert not (Path(hive.location("t")).parent / "renamed").exists()
    assert driver.get_table_info(lance_table) is None
    hive.check_lance_table((*lance_table[:-1], "renamed"), hive.location("t"), {"tier": "gold"})


def test_move_between_databases_of_one_catalog(hive: HmsHarness, driver: Hive3Namespace, lance_table: Identifier):
    other = hive.new_namespace_id()
    driver.create_namespace(CreateNamespaceRequest(id=list(other)))
    before = stored_table(hive, lance_table)
    driver.rename_table({"id": list(lance_table), "new_table_name": "moved", "new_namespace_id": list(other)})
    after = stored_table(hive, (*other, "moved"))
    assert after.dbName == other[1] and kept_fields(after) == kept_fields(before)
    assert after.sd.location == before.sd.location
    assert [i.id for i in driver.list_table_infos(other)] == [(*other, "moved")]
    assert list(driver.list_table_infos(lance_table[:-1])) == []


def test_rename_errors_change_nothing(hive: HmsHarness, driver: Hive3Namespace, lance_table: Identifier):
    database = lance_table[:-1]
    declare(driver, (*database, "taken"), hive.location("taken"))
    hive.create_foreign_table(database, "foreign")
    before = stored_table(hive, lance_table)
    with pytest.raises(TableNotFoundError):
        rename(driver, (*database, "absent"), "x")
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        rename(driver, (*database, "foreign"), "x")
    with pytest.raises(NamespaceNotFoundError):
        rename(driver, lance_table, "x", (database[0], unique("nodb")))
    with pytest.raises(TableAlreadyExistsError):
        rename(driver, lance_table, "taken")
    with pytest.raises(TableAlreadyExistsError):  # a table that is not a Lance table too
        rename(driver, lance_table, "foreign")
    with pytest.raises(UnsupportedOperationError, match="first 1 level"):  # tables stay in their catalog
        rename(driver, lance_table, "x", ("other_cat", database[1]))
    with pytest.raises(InvalidInputError):
        rename(driver, lance_table, "t")
    with pytest.raises(InvalidInputError):
        rename(driver, lance_table, "has space")
    assert kept_fields(stored_table(hive, lance_table)) == kept_fields(before)
    assert sorted(i.id[-1] for i in driver.list_table_infos(database)) == ["foreign", "t", "taken"]


def test_a_repeated_rename_meets_table_not_found_and_the_table_where_it_went(hive: HmsHarness,
                                                                             driver: Hive3Namespace,
                                                                             lance_table: Identifier):
    """What apply's runner sees when it sends a rename again after losing the first answer."""
    rename(driver, lance_table, "renamed")
    with pytest.raises(TableNotFoundError):
        rename(driver, lance_table, "renamed")
    info = driver.get_table_info((*lance_table[:-1], "renamed"))
    assert info is not None and info.location == hive.location("t")


def test_a_table_without_external_true_is_never_renamed(driver: Hive3Namespace, lance_table: Identifier,
                                                        monkeypatch: pytest.MonkeyPatch):
    """HMS moves a renamed table's data unless EXTERNAL=TRUE: a table read without it is refused."""
    read = driver.client.lance_table

    def without_external(*args: str) -> Table:
        table = read(*args)
        del table.parameters["EXTERNAL"]
        return table

    monkeypatch.setattr(driver.client, "lance_table", without_external)
    with pytest.raises(InvalidInputError, match="EXTERNAL=TRUE"):
        rename(driver, lance_table, "renamed")
    monkeypatch.undo()
    assert driver.get_table_info(lance_table) is not None


def test_update_table_location_keeps_create_time_and_parameters(hive: HmsHarness, driver: Hive3Namespace,
                                                                lance_table: Identifier):
    before = stored_table(hive, lance_table)
    driver.update_table_location(lance_table, hive.location("moved"))
    after = stored_table(hive, lance_table)
    assert kept_fields(after) == kept_fields(before)
    assert after.sd.location == f"file:{hive.location('moved')}"
    hive.check_lance_table(lance_table, hive.location("moved"), {"tier": "gold"})
    calls = driver.api_calls
    driver.update_table_location(lance_table, (Path(hive.location("moved"))).as_uri() + "/")  # already there
    assert driver.api_calls - calls == 1
    driver.update_table_location(lance_table, "relative/moved.lance")  # taken from the root, as a declare
    assert driver.get_table_info(lance_table).location == str(hive.data_root / "relative" / "moved.lance")


def test_update_table_location_errors(hive: HmsHarness, driver: Hive3Namespace, database: Identifier):
    hive.create_foreign_table(database, "foreign")
    with pytest.raises(TableNotFoundError):
        driver.update_table_location((*database, "absent"), hive.location("x"))
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        driver.update_table_location((*database, "foreign"), hive.location("x"))
    assert stored_table(hive, (*database, "foreign")).sd.location != f"file:{hive.location('x')}"


def test_capabilities_name_renames_moves_and_location_changes(driver: Hive3Namespace):
    capabilities = driver.capabilities()
    assert (capabilities.rename_table, capabilities.move_table, capabilities.move_fixed_levels,
            capabilities.update_table_location) == (True, True, 1, True)


def test_sixteen_threads_declare_and_describe_at_once(hive: HmsHarness, counted: HmsHarness,
                                                     database: Identifier):
    driver = make_driver(hive)
    driver.get_namespace_info(database)  # catalog detection, where there is any, happens first
    names = [unique(f"c{i}") for i in range(64)]
    counted.reset_requests()
    before = driver.api_calls

    def declare_then_describe(name: str) -> str:
        declare(driver, (*database, name), hive.location(name), name=name)
        return driver.describe_table(DescribeTableRequest(id=[*database, name])).properties["name"]

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(declare_then_describe, names)) == names
    assert sorted(driver.list_tables(ListTablesRequest(id=list(database))).tables) == sorted(names)
    # create_table + get_table_req per table; get_all_tables + one object batch for the listing
    assert counted.requests_served() == driver.api_calls - before == 2 * len(names) + 2


def test_pylance_writes_and_reads_through_the_driver(hive: HmsHarness, database: Identifier):
    driver = lance_namespace.connect("lance-sync-hive3", {k: str(v) for k, v in hive.config().items()})
    table_id = [*database, "w"]
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array(["a", "b"])})
    lance.write_dataset(data, namespace_client=driver, table_id=table_id)
    assert lance.dataset(namespace_client=driver, table_id=table_id).to_table().equals(data)
    lance.write_dataset(data, namespace_client=driver, table_id=table_id, mode="append")
    assert lance.dataset(namespace_client=driver, table_id=table_id).count_rows() == 4


# --- request counts -----------------------------------------------------------------------------

def test_operations_cost_the_fewest_calls(hive: HmsHarness, counted: HmsHarness, driver: Hive3Namespace):
    """Each after the driver knows whether the metastore has catalogs (here: get_catalog)."""
    namespace = hive.new_namespace_id()
    driver.get_namespace_info(hive.parent_namespace())
    expected = [
        (lambda: driver.create_namespace(CreateNamespaceRequest(id=list(namespace))), 1),
        (lambda: declare(driver, (*namespace, "t"), hive.location("t")), 1),
        (lambda: driver.describe_table(DescribeTableRequest(id=[*namespace, "t"])), 1),
        (lambda: driver.get_table_info((*namespace, "t")), 1),
        (lambda: driver.update_table_properties((*namespace, "t"), {"a": "1"}, []), 2),
        (lambda: driver.list_tables(ListTablesRequest(id=list(namespace))), 2),
        (lambda: driver.deregister_table(DeregisterTableRequest(id=[*namespace, "t"])), 2),
        (lambda: driver.list_tables(ListTablesRequest(id=list(namespace))), 2),  # empty: + get_database
        (lambda: driver.update_namespace_properties(namespace, {"a": "1"}, []), 2),
        (lambda: driver.drop_namespace(DropNamespaceRequest(id=list(namespace))), 1),
    ]
    for call, calls in expected:
        counted.reset_requests()
        before = driver.api_calls
        call()
        assert (counted.requests_served(), driver.api_calls - before) == (calls, calls)


def test_list_table_infos_of_a_batch_and_one_more_costs_three_calls(hive: HmsHarness, counted: HmsHarness,
                                                                     driver: Hive3Namespace, database: Identifier):
    """get_all_tables + ceil(301 / 300) get_table_objects_by_name_req = 3 calls; no per-table call
    (one table more than a batch: the fewest that need a second batch)."""
    tables = hive3.TABLE_BATCH_SIZE + 1
    names = [f"t{i:04d}" for i in range(tables)]
    seed_tables(hive, database, names, foreign={"t0007"})
    driver.get_namespace_info(database)  # catalog detection, where there is any, happens first
    counted.reset_requests()
    infos = list(driver.list_table_infos(database))
    expected = 1 + math.ceil(tables / hive3.TABLE_BATCH_SIZE)
    assert counted.requests_served() == expected == 3
    assert [i.id[-1] for i in infos] == names
    assert [i.id[-1] for i in infos if not i.is_lance] == ["t0007"]
    counted.reset_requests()
    assert len(driver.list_tables(ListTablesRequest(id=list(database))).tables) == tables - 1
    assert counted.requests_served() == expected


def test_list_namespace_infos_costs_a_listing_and_a_get_per_database(hive: HmsHarness, counted: HmsHarness,
                                                                     driver: Hive3Namespace):
    driver.create_namespace(CreateNamespaceRequest(id=list(hive.new_namespace_id()), properties={"m": "1"}))
    counted.reset_requests()
    infos = list(driver.list_namespace_infos(hive.parent_namespace()))
    assert counted.requests_served() == 1 + len(infos)
    assert all(info.id[:-1] == hive.parent_namespace() for info in infos)


# --- catalogs: the Hive 3 server ----------------------------------------------------------------

@pytest.fixture
def hive3_driver(hive3_server: RunningServer, tmp_path: Path) -> Iterator[Hive3Namespace]:
    driver = Hive3Namespace(uri=hive3_server.endpoint, root=str(tmp_path))
    yield driver
    driver.close()


def test_catalog_lifecycle(hive3_server: RunningServer, hive3_driver: Hive3Namespace, tmp_path: Path):
    name = unique("cat")
    hive3_driver.create_namespace(CreateNamespaceRequest(id=[name], properties={"catalog.description": "lake"}))
    location = tmp_path / "_catalogs" / name
    assert location.is_dir()
    assert hive3_driver.describe_namespace(DescribeNamespaceRequest(id=[name])).properties == \
        {"catalog.description": "lake", "catalog.location-uri": str(location)}
    assert name in sum(all_names(hive3_driver.list_namespaces, ListNamespacesRequest, (), "namespaces", 2), [])
    with pytest.raises(NamespaceAlreadyExistsError):
        hive3_driver.create_namespace(CreateNamespaceRequest(id=[name]))
    hive3_driver.create_namespace(CreateNamespaceRequest(id=[name], mode="ExistOk"))
    hive3_driver.create_namespace(CreateNamespaceRequest(id=[name], mode="Overwrite",
                                                         properties={"catalog.description": "new"}))
    hive3_driver.update_namespace_properties((name,), {"catalog.location-uri": str(tmp_path / "moved")}, [])
    assert hive3_driver.get_namespace_info((name,)).properties == \
        {"catalog.description": "new", "catalog.location-uri": str(tmp_path / "moved")}
    with pytest.raises(InvalidInputError, match="no property map"):
        hive3_driver.update_namespace_properties((name,), {"team": "x"}, [])
    with pytest.raises(InvalidInputError, match="cannot be removed"):
        hive3_driver.update_namespace_properties((name,), {}, ["catalog.description"])
    assert [i.id for i in hive3_driver.list_namespace_infos((name,))] == [(name, "default")]
    hive3_driver.drop_namespace(DropNamespaceRequest(id=[name]))
    assert hive3_driver.get_namespace_info((name,)) is None
    with pytest.raises(NamespaceNotFoundError):
        hive3_driver.drop_namespace(DropNamespaceRequest(id=[name]))
    hive3_driver.drop_namespace(DropNamespaceRequest(id=[name], mode="Skip"))


def test_catalog_properties_beyond_its_fields_are_refused(hive3_driver: Hive3Namespace):
    name = unique("cat")
    with pytest.raises(InvalidInputError, match="no property map"):
        hive3_driver.create_namespace(CreateNamespaceRequest(id=[name], properties={"lance_sync.owner": "me"}))
    assert hive3_driver.get_namespace_info((name,)) is None


def test_catalog_children_and_drop(hive3_driver: Hive3Namespace, tmp_path: Path):
    name = unique("cat")
    hive3_driver.create_namespace(CreateNamespaceRequest(id=[name]))
    hive3_driver.create_namespace(CreateNamespaceRequest(id=[name, "sales"]))
    location = str(tmp_path / "data" / "t.lance")
    lance.write_dataset(pa.table({"id": [1, 2]}), location)
    declare(hive3_driver, (name, "sales", "t"), location)
    declare(hive3_driver, (name, "default", "d"), tmp_path / "data" / "d.lance")
    assert hive3_driver.list_namespaces(ListNamespacesRequest(id=[name])).namespaces == ["default", "sales"]
    with pytest.raises(NamespaceNotEmptyError):
        hive3_driver.drop_namespace(DropNamespaceRequest(id=[name]))
    hive3_driver.drop_namespace(DropNamespaceRequest(id=[name], behavior="Cascade"))
    assert hive3_driver.get_namespace_info((name,)) is None
    assert lance.dataset(location).count_rows() == 2
    assert not (tmp_path / "_catalogs" / name).exists()  # HMS deletes a dropped catalog's directory


def test_missing_catalog(hive3_driver: Hive3Namespace):
    missing = unique("nocat")
    for call in (lambda: hive3_driver.describe_namespace(DescribeNamespaceRequest(id=[missing])),
                 lambda: hive3_driver.list_namespaces(ListNamespacesRequest(id=[missing])),
                 lambda: hive3_driver.create_namespace(CreateNamespaceRequest(id=[missing, "db"])),
                 lambda: hive3_driver.drop_namespace(DropNamespaceRequest(id=[missing], behavior="Cascade"))):
        with pytest.raises(NamespaceNotFoundError):
            call()


def test_default_catalog_is_never_dropped(hive3_driver: Hive3Namespace):
    with pytest.raises(InvalidInputError):
        hive3_driver.drop_namespace(DropNamespaceRequest(id=["hive"]))


def test_catalog_api_detected_once(hive3_server: RunningServer, hive3_driver: Hive3Namespace):
    assert hive3_driver.capabilities().creatable_namespace_levels == (1, 2)
    calls = hive3_driver.api_calls
    hive3_driver.capabilities()
    assert hive3_driver.api_calls == calls


# --- catalogs: HMS 2.3 has no catalog API ------------------------------------------------------

@pytest.fixture
def hms_driver(hms_server: RunningServer, tmp_path: Path) -> Iterator[Hive3Namespace]:
    driver = Hive3Namespace(uri=hms_server.endpoint, root=str(tmp_path))
    yield driver
    driver.close()


def test_catalog_operations_on_hms2_are_unsupported(hms_driver: Hive3Namespace, tmp_path: Path):
    """A clear error naming the missing catalog API: never an empty list, never a crash."""
    for call in (lambda: hms_driver.list_namespaces(ListNamespacesRequest(id=[])),
                 lambda: list(hms_driver.list_namespace_infos(())),
                 lambda: hms_driver.create_namespace(CreateNamespaceRequest(id=["lake"])),
                 lambda: hms_driver.drop_namespace(DropNamespaceRequest(id=["lake"], mode="Skip")),
                 lambda: hms_driver.describe_namespace(DescribeNamespaceRequest(id=["lake"])),
                 lambda: hms_driver.create_namespace(CreateNamespaceRequest(id=["lake", "db"])),
                 lambda: hms_driver.list_namespaces(ListNamespacesRequest(id=["lake"])),
                 lambda: hms_driver.list_tables(ListTablesRequest(id=["lake", "db"])),
                 lambda: declare(hms_driver, ("lake", "db", "t"), tmp_path / "t.lance"),
                 lambda: hms_driver.update_namespace_properties(("hive",), {"catalog.description": "x"}, [])):
        with pytest.raises(UnsupportedOperationError, match="no catalog API"):
            call()
    assert hms_driver.capabilities().creatable_namespace_levels == (2, 2)
    # the default catalog exists implicitly: it describes as empty and lists its databases
    assert hms_driver.describe_namespace(DescribeNamespaceRequest(id=["hive"])).properties == {}
    assert "default" in hms_driver.list_namespaces(ListNamespacesRequest(id=["hive"])).namespaces


def test_no_catalog_api_is_detected_once(hms_server: RunningServer, hms_driver: Hive3Namespace):
    if hms_server.external:
        pytest.skip("request counting is a feature of the project's servers")
    hms_server.reset_request_count()
    for _ in range(3):
        with pytest.raises(UnsupportedOperationError):
            hms_driver.list_namespaces(ListNamespacesRequest(id=[]))
        with pytest.raises(UnsupportedOperationError):
            hms_driver.describe_namespace(DescribeNamespaceRequest(id=["lake", "db"]))
    assert hms_server.requests_served() == hms_driver.api_calls == 1


def test_protocol_error_discards_the_connection(hms_server: RunningServer, tmp_path: Path):
    """HMS 2.3 leaves a connection out of step after a request missing a required field: the
    next call on it would hang. The driver closes it, so the next call gets a fresh one. The
    refusal is final (the same request would be refused again): an InternalError, not retried."""
    driver = Hive3Namespace(uri=hms_server.endpoint, root=str(tmp_path), **{"client.pool-size": "1",
                                                                            "client.socket-timeout-sec": "10"})
    with pytest.raises(InternalError, match=r"hive3: get_table_req .*TApplicationException PROTOCOL_ERROR"):
        driver.client.send("get_table_req", GetTableRequest(tblName="x"))
    assert driver.api_calls == 1 and driver.client.pool.idle() == 0
    assert "default" in driver.list_namespaces(ListNamespacesRequest(id=["hive"])).namespaces


# --- the connection pool and timeouts ----------------------------------------------------------

class LoopbackServer:
    """Accepts connections on 127.0.0.1 and hands each to `serve`; counts what it accepted."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self._serve = serve
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"thrift://127.0.0.1:{self._listener.getsockname()[1]}"
        self.accepted = 0
        self.open = 0
        self.most_open = 0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self.open += 1
                self.most_open = max(self.most_open, self.open)
                self._sockets.append(connection)
            threading.Thread(target=self._run, args=(connection,), daemon=True).start()

    def _run(self, connection: socket.socket) -> None:
        try:
            self._serve(connection)
        except OSError:
            pass
        finally:
            connection.close()
            with self._lock:
                self.open -= 1

    def cut(self) -> None:
        """Hang up every open connection."""
        with self._lock:
            for connection in self._sockets:
                with suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._listener.close()
        self.cut()


@contextmanager
def loopback_server(serve: Callable[[socket.socket], None]) -> Iterator[LoopbackServer]:
    server = LoopbackServer(serve)
    try:
        yield server
    finally:
        server.close()


def proxy_to(endpoint: str) -> Callable[[socket.socket], None]:
    """A serve function forwarding each connection to the metastore at `endpoint`."""
    target = urlsplit(endpoint)

    def serve(client: socket.socket) -> None:
        with socket.create_connection((target.hostname, target.port)) as upstream:
            pump = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            pump.start()
            _pump(client, upstream)
            pump.join()

    return serve


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    for end in (source, target):
        with suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


def never_answers(connection: socket.socket) -> None:
    while connection.recv(65536):
        pass


def hangs_up(connection: socket.socket) -> None:
    connection.recv(65536)


def pooled_driver(endpoint: str, root: Path, **properties: str) -> Hive3Namespace:
    return Hive3Namespace(uri=endpoint, root=str(root), **properties)


@pytest.fixture
def connections_opened(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every connection the driver opens, counted on the client side."""
    opened: list[object] = []

    class Counted(transport.MetastoreConnection):
        def __init__(self, *args) -> None:
            opened.append(self)
            super().__init__(*args)

    monkeypatch.setattr(transport, "MetastoreConnection", Counted)
    return opened


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "condition not met in 30 s"
        time.sleep(0.01)


def test_pool_size_is_respected_and_connections_are_reused_never_shared(
        hms_server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with loopback_server(proxy_to(hms_server.endpoint)) as proxy:
        driver = pooled_driver(proxy.endpoint, tmp_path, **{"client.pool-size": "2"})
        in_use: set[int] = set()
        shared: list[int] = []
        lock = threading.Lock()
        acquire, release = driver.client.pool.acquire, driver.client.pool.release

        def tracked_acquire(fresh: bool = False):
            connection = acquire(fresh)
            with lock:
                if id(connection) in in_use:
                    shared.append(id(connection))
                in_use.add(id(connection))
            return connection

        def tracked_release(connection, reusable):
            with lock:
                in_use.discard(id(connection))
            release(connection, reusable)

        monkeypatch.setattr(driver.client.pool, "acquire", tracked_acquire)
        monkeypatch.setattr(driver.client.pool, "release", tracked_release)
        with ThreadPoolExecutor(16) as pool:
            found = list(pool.map(lambda _: driver.get_namespace_info(("hive", "default")), range(96)))
        assert all(info is not None for info in found)
        assert shared == []
        assert proxy.most_open <= 2 and proxy.accepted <= 2 < driver.api_calls


def test_connections_are_opened_lazily(hms_server: RunningServer, tmp_path: Path):
    with loopback_server(proxy_to(hms_server.endpoint)) as proxy:
        driver = pooled_driver(proxy.endpoint, tmp_path)
        assert proxy.accepted == 0
        driver.get_namespace_info(("hive", "default"))
        driver.get_namespace_info(("hive", "default"))
        assert proxy.accepted == 1


def test_a_connection_closed_by_the_server_is_replaced(hms_server: RunningServer, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch):
    with loopback_server(proxy_to(hms_server.endpoint)) as proxy:
        driver = pooled_driver(proxy.endpoint, tmp_path, **{"client.pool-size": "1"})
        driver.get_namespace_info(("hive", "default"))
        cut(proxy)
        assert driver.get_namespace_info(("hive", "default")) is not None  # found closed while idle
        assert proxy.accepted == 2
        # when the closed connection is not noticed before use: a read is retried once...
        monkeypatch.setattr(transport.MetastoreConnection, "is_open", lambda self: True)
        cut(proxy)
        assert driver.get_namespace_info(("hive", "default")) is not None
        assert proxy.accepted == 3
        # ...a write is not
        cut(proxy)
        with pytest.raises(ServiceUnavailableError):
            driver.create_namespace(CreateNamespaceRequest(id=["hive", unique("never")]))
        assert proxy.accepted == 3
        assert driver.get_namespace_info(("hive", "default")) is not None  # the broken one was discarded
        assert proxy.accepted == 4


def cut(proxy: LoopbackServer) -> None:
    proxy.cut()
    wait_for(lambda: proxy.open == 0)


def test_a_read_is_retried_a_write_never(tmp_path: Path, connections_opened: list[object]):
    with loopback_server(hangs_up) as server:
        driver = pooled_driver(server.endpoint, tmp_path, **{"client.max-retries": "2"})
        with pytest.raises(ServiceUnavailableError, match="get_database .*gave up after 3 attempts"):
            driver.describe_namespace(DescribeNamespaceRequest(id=["hive", "db"]))
        assert len(connections_opened) == 3
        with pytest.raises(ServiceUnavailableError, match="create_database .*may have received the request and carried it out"):
            driver.create_namespace(CreateNamespaceRequest(id=["hive", "db"]))
        assert len(connections_opened) == 4


def test_socket_timeout_bounds_every_call(tmp_path: Path, connections_opened: list[object]):
    """A server that accepts and never answers: each attempt fails after the socket timeout
    and its connection is not kept; a read is retried client.max-retries times, a write not."""
    with loopback_server(never_answers) as server:
        driver = pooled_driver(server.endpoint, tmp_path, **{"client.socket-timeout-sec": "0.3",
                                                             "client.max-retries": "1"})
        driver.client.sleep = lambda seconds: None
        started = time.monotonic()
        with pytest.raises(ServiceUnavailableError, match="get_table_req .*no answer within 0.3s"):
            driver.describe_table(DescribeTableRequest(id=["hive", "db", "t"]))
        assert len(connections_opened) == 2 and 0.6 <= time.monotonic() - started < 5
        with pytest.raises(ServiceUnavailableError, match="create_database .*no answer within 0.3s"):
            driver.create_namespace(CreateNamespaceRequest(id=["hive", "db"]))
        assert len(connections_opened) == 3 and driver.client.pool.idle() == 0


def test_unreachable_metastore_is_service_unavailable(tmp_path: Path):
    driver = pooled_driver(f"thrift://127.0.0.1:{free_port()}", tmp_path)
    slept: list[float] = []
    driver.client.sleep = slept.append
    for call, name in ((lambda: driver.list_namespaces(ListNamespacesRequest(id=[])), "get_catalogs"),
                       (lambda: driver.describe_namespace(DescribeNamespaceRequest(id=["hive", "db"])),
                        "get_database"),
                       (lambda: list(driver.list_table_infos(("hive", "db"))), "get_all_tables")):
        with pytest.raises(ServiceUnavailableError, match=f"{name}: cannot connect .*gave up after 4 attempts"):
            call()
    assert driver.api_calls == 0 and len(slept) == 9


@pytest.mark.parametrize("lease", ["lock-api", "table"])
def test_an_apply_lease_never_waits_for_the_connections_of_the_apply_workers(hive: HmsHarness, lease: str,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """Guards: lease calls go over a connection of their own. Sent through the pool, a lease
    waited behind 16 apply workers on 3 connections and expired in a 10,000-table apply (issue
    50). The workers' pool is made to refuse every call, so the code before fails at once."""
    if lease == "lock-api" and hive.server_fixture != "hms_server":
        pytest.skip("the Hive 3 test server has no lock API")
    driver = make_driver(hive, lease=lease)
    try:
        def busy(*_: Any, **__: Any) -> Any:
            raise AssertionError("a lease call waited for a connection of the apply's workers")

        owner = unique("pool")
        leases = Leases(lease_stores({"b": driver}, {"b": [(*hive.parent_namespace(), "sales")]}, owner), owner,
                        sleep=lambda _: None)
        leases.acquire(timeout=0)  # the view lease's database, made once per owner before any apply work
        leases.release()
        monkeypatch.setattr(driver.client.pool, "acquire", busy)
        leases.acquire(timeout=0)
        [store] = leases.held
        held = store.register.read()
        assert held is not None
        renewed = store.register.swap(held, held.record.renewed(60))
        assert renewed is not None and store.register.remove(renewed)  # a renewal, then the release
        assert store.register.read() is None
    finally:
        driver.close()
