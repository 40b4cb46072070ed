"""The Iceberg REST driver against upstream Iceberg's CatalogHandlers (tests/servers/iceberg_rest.py).

pyiceberg's RestCatalog is the independent client that checks what the driver wrote. Retries,
403/5xx/429 and connection failures use a small scripted HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import lance
import lance_namespace
import pyarrow as pa
import pytest
import urllib3
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
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    ThrottlingError,
    UnauthenticatedError,
    UnsupportedOperationError,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lance_sync.drivers import register
from lance_sync.drivers.base import Capabilities
from lance_sync.drivers.iceberg.driver import LOAD_PARALLELISM, IcebergNamespace
from lance_sync.drivers.support.retry import ServerError
from lance_sync.model.errors import ConfigError
from tests.servers import iceberg_rest
from tests.servers.base import RunningServer, free_port

register()  # lance_namespace.connect("lance-sync-<type>", ...) builds lance-sync's drivers

pytestmark = pytest.mark.servers

WAREHOUSE = iceberg_rest.WAREHOUSE
TOKEN = "static-token-3f9a"
CLIENT_ID = "lance-sync"
SECRET = "client-secret-7c1e"
SPECIAL_NAMES = ["with space", "ünïcødé ☃", "100%", "dotted.name", "dollar$sign", "slash/name",
                 "plus+name", "%2F-lookalike"]
TABLES_ROUTE = "GET /v1/{prefix}/namespaces/{namespace}/tables"
LOAD_ROUTE = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"
TOKEN_ROUTE = "POST /v1/oauth/tokens"
CONFIG_ROUTE = "GET /v1/config"


def make_driver(server: RunningServer | str, root: Path, **properties: Any) -> IcebergNamespace:
    endpoint = server if isinstance(server, str) else server.endpoint
    return IcebergNamespace(endpoint=endpoint, root=str(root), **properties)


def routes(server: RunningServer) -> dict[str, int]:
    return server.extra["requests_by_route"]()


@pytest.fixture
def driver(iceberg_server: RunningServer, tmp_path: Path) -> IcebergNamespace:
    return make_driver(iceberg_server, tmp_path)


@pytest.fixture
def catalog(iceberg_server: RunningServer) -> RestCatalog:
    return RestCatalog("check", uri=iceberg_server.endpoint, warehouse=WAREHOUSE)


@pytest.fixture
def namespace(driver: IcebergNamespace) -> tuple[str, ...]:
    """A fresh top-level namespace (the server is shared by the session)."""
    id = (WAREHOUSE, f"ns_{uuid.uuid4().hex[:10]}")
    driver.create_namespace(CreateNamespaceRequest(id=list(id)))
    return id


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A second server that needs a bearer token: the static TOKEN or one issued for the credential."""
    server = iceberg_rest.start(tmp_path_factory.mktemp("iceberg_auth"), token=TOKEN,
                                credential=f"{CLIENT_ID}:{SECRET}")
    try:
        yield server
    finally:
        server.stop()


def declare(driver: IcebergNamespace, table_id: tuple[str, ...], location: str | None = None,
            **properties: str) -> None:
    driver.declare_table(DeclareTableRequest(id=list(table_id), location=location,
                                             properties=properties or None))


def names_of(driver: IcebergNamespace, call, request_type, id, attribute: str,
             limit: int | None = None) -> list[str]:
    names, token = [], None
    while True:
        response = call(request_type(id=list(id), page_token=token, limit=limit))
        names.extend(getattr(response, attribute))
        token = response.page_token
        if not token:
            return names


# --- configuration -----------------------------------------------------------------------------


def test_endpoint_must_be_http_or_https(tmp_path):
    with pytest.raises(ConfigError, match="endpoint: .*must start with http:// or https://"):
        make_driver("localhost:8181", tmp_path)


def test_credential_needs_both_parts_and_is_never_echoed(tmp_path):
    with pytest.raises(ConfigError, match="client_id:client_secret") as error:
        make_driver("http://127.0.0.1:1", tmp_path, credential="only-a-secret-value")
    assert "only-a-secret-value" not in str(error.value)


def test_one_way_to_authenticate(tmp_path):
    with pytest.raises(ConfigError, match="auth_token or credential, not both") as error:
        make_driver("http://127.0.0.1:1", tmp_path, auth_token=TOKEN, credential=f"{CLIENT_ID}:{SECRET}")
    assert TOKEN not in str(error.value) and SECRET not in str(error.value)


def test_connect_takes_string_properties_with_timeouts_in_milliseconds(tmp_path):
    driver = lance_namespace.connect("lance-sync-iceberg", {
        "endpoint": "http://127.0.0.1:1/", "root": str(tmp_path), "connect_timeout": "500",
        "read_timeout": "2000", "max_retries": "0", "storage.region": "eu-west-1"})

    assert isinstance(driver, IcebergNamespace)
    assert driver.client.http.timeout == (0.5, 2.0)
    assert driver.client.http.max_retries == 0
    assert driver.storage_options() == {"region": "eu-west-1"}
    defaults = make_driver("http://127.0.0.1:1", tmp_path)
    assert defaults.client.http.timeout == (10.0, 30.0) and defaults.client.http.max_retries == 3


@pytest.mark.parametrize("key, value", [("connect_timeout", "0"), ("max_retries", "-1"),
                                        ("read_timeout", "soon")])
def test_bad_numbers_are_config_errors(tmp_path, key, value):
    with pytest.raises(ConfigError, match=key):
        make_driver("http://127.0.0.1:1", tmp_path, **{key: value})


def test_identifiers_and_capabilities():
    assert IcebergNamespace.parse_identifier("lakehouse.sales.orders") == ("lakehouse", "sales", "orders")
    assert IcebergNamespace.parse_identifier(["lakehouse", "a.b", "t"]) == ("lakehouse", "a.b", "t")
    assert IcebergNamespace.format_identifier(("lakehouse", "a.b")) == "['lakehouse', 'a.b']"
    assert IcebergNamespace.check_namespace_id(("lakehouse", ".."), None) is not None
    assert IcebergNamespace.check_namespace_id(("lakehouse", "a b%$"), None) is None
    capabilities = make_driver("http://127.0.0.1:1", Path("/tmp")).capabilities()
    assert capabilities == Capabilities(update_table_location=True, rename_table=True, move_table=True,
                                        move_fixed_levels=1, creatable_namespace_levels=(2, None))


# --- warehouse and prefix ----------------------------------------------------------------------


def test_config_prefix_is_fetched_once_per_warehouse(iceberg_server, tmp_path):
    driver = make_driver(iceberg_server, tmp_path)
    iceberg_server.reset_request_count()

    def work(i: int) -> None:
        driver.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE]))
        driver.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE]))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(work, range(32)))

    counts = routes(iceberg_server)
    assert counts[CONFIG_ROUTE] == 1
    assert counts["GET /v1/{prefix}/namespaces"] == 32
    assert driver.client.prefixes == {WAREHOUSE: iceberg_rest.PREFIX}


def test_without_a_config_prefix_the_warehouse_name_is_the_prefix(tmp_path):
    server = iceberg_rest.start(tmp_path / "server", prefix=WAREHOUSE, announce_prefix=False)
    try:
        driver = make_driver(server, tmp_path)
        declare_and_describe = (WAREHOUSE, "sales", "orders")
        driver.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, "sales"]))
        declare(driver, declare_and_describe, str(tmp_path / "orders.lance"))
        described = driver.describe_table(DescribeTableRequest(id=list(declare_and_describe)))
    finally:
        server.stop()

    assert driver.client.prefixes == {WAREHOUSE: WAREHOUSE}
    assert described.location == str(tmp_path / "orders.lance")


def test_warehouse_level(driver):
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE])).properties == {}
    driver.namespace_exists(NamespaceExistsRequest(id=[WAREHOUSE]))
    assert driver.list_tables(ListTablesRequest(id=[WAREHOUSE])).tables == []
    assert list(driver.list_table_infos((WAREHOUSE,))) == []
    with pytest.raises(UnsupportedOperationError):
        driver.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE]))
    with pytest.raises(UnsupportedOperationError):
        driver.drop_namespace(DropNamespaceRequest(id=[WAREHOUSE]))
    with pytest.raises(UnsupportedOperationError, match="cannot list warehouses"):
        driver.list_namespaces(ListNamespacesRequest(id=[]))
    with pytest.raises(UnsupportedOperationError):
        list(driver.list_namespace_infos(()))


def test_unknown_warehouse(driver):
    with pytest.raises(NamespaceNotFoundError, match="warehouse 'nowhere' not found"):
        driver.list_namespaces(ListNamespacesRequest(id=["nowhere"]))
    with pytest.raises(NamespaceNotFoundError):
        driver.describe_namespace(DescribeNamespaceRequest(id=["nowhere", "ns"]))
    with pytest.raises(NamespaceNotFoundError):
        driver.declare_table(DeclareTableRequest(id=["nowhere", "ns", "t"]))
    with pytest.raises(TableNotFoundError):
        driver.describe_table(DescribeTableRequest(id=["nowhere", "ns", "t"]))
    assert driver.get_table_info(("nowhere", "ns", "t")) is None
    assert driver.get_namespace_info(("nowhere",)) is None


# --- namespaces --------------------------------------------------------------------------------


def test_create_describe_list_nested(driver, namespace, catalog):
    child = (*namespace, "child")
    created = driver.create_namespace(CreateNamespaceRequest(id=list(child), properties={"team": "sales"}))

    assert created.properties == {"team": "sales"}
    assert catalog.load_namespace_properties(child[1:])["team"] == "sales"
    assert driver.describe_namespace(DescribeNamespaceRequest(id=list(child))).properties["team"] == "sales"
    assert namespace[-1] in names_of(driver, driver.list_namespaces, ListNamespacesRequest, [WAREHOUSE],
                                     "namespaces")
    assert driver.list_namespaces(ListNamespacesRequest(id=list(namespace))).namespaces == ["child"]
    driver.namespace_exists(NamespaceExistsRequest(id=list(child)))
    with pytest.raises(NamespaceNotFoundError):
        driver.namespace_exists(NamespaceExistsRequest(id=[*namespace, "absent"]))


def test_create_modes(driver, namespace):
    id = [*namespace, "modes"]
    driver.create_namespace(CreateNamespaceRequest(id=id, properties={"a": "1"}))

    with pytest.raises(NamespaceAlreadyExistsError, match="AlreadyExistsException"):
        driver.create_namespace(CreateNamespaceRequest(id=id, mode="Create"))
    kept = driver.create_namespace(CreateNamespaceRequest(id=id, mode="exist_ok", properties={"b": "2"}))
    assert kept.properties == {"a": "1"}
    replaced = driver.create_namespace(CreateNamespaceRequest(id=id, mode="Overwrite", properties={"b": "2"}))
    assert replaced.properties == {"b": "2"}
    assert driver.describe_namespace(DescribeNamespaceRequest(id=id)).properties == {"b": "2"}
    declare(driver, (*id, "t"))
    driver.create_namespace(CreateNamespaceRequest(id=id, mode="Overwrite", properties={"c": "3"}))
    assert driver.describe_namespace(DescribeNamespaceRequest(id=id)).properties == {"c": "3"}
    assert driver.get_table_info((*id, "t")) is not None  # the namespace is never dropped
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=id, mode="Replace"))


def test_create_under_a_missing_parent_is_namespace_not_found(driver, namespace, catalog):
    orphan = (*namespace, "missing", "orphan")

    with pytest.raises(NamespaceNotFoundError, match="Parent namespace not found"):
        driver.create_namespace(CreateNamespaceRequest(id=list(orphan)))
    assert catalog.list_namespaces(namespace[1:]) == []  # the upstream server would have created it


def test_list_and_describe_missing_namespaces(driver, namespace):
    missing = [*namespace, "absent"]
    with pytest.raises(NamespaceNotFoundError, match="NoSuchNamespaceException"):
        driver.list_namespaces(ListNamespacesRequest(id=missing))
    with pytest.raises(NamespaceNotFoundError):
        driver.describe_namespace(DescribeNamespaceRequest(id=missing))
    with pytest.raises(NamespaceNotFoundError):
        driver.list_tables(ListTablesRequest(id=missing))
    with pytest.raises(NamespaceNotFoundError):
        list(driver.list_table_infos(tuple(missing)))
    with pytest.raises(NamespaceNotFoundError):
        list(driver.list_namespace_infos(tuple(missing)))
    assert driver.get_namespace_info(tuple(missing)) is None


def test_drop_namespace(driver, namespace, catalog):
    parent = [*namespace, "parent"]
    driver.create_namespace(CreateNamespaceRequest(id=parent))
    driver.create_namespace(CreateNamespaceRequest(id=[*parent, "child"]))

    driver.drop_namespace(DropNamespaceRequest(id=[*namespace, "absent"]))  # the spec: succeeds
    driver.drop_namespace(DropNamespaceRequest(id=[*namespace, "absent"], mode="Fail"))
    with pytest.raises(NamespaceNotEmptyError, match="child namespaces"):
        driver.drop_namespace(DropNamespaceRequest(id=parent))  # upstream would drop it
    assert catalog.namespace_exists(tuple(parent[1:]))
    with pytest.raises(UnsupportedOperationError, match="Restrict"):
        driver.drop_namespace(DropNamespaceRequest(id=parent, behavior="Cascade"))
    declare(driver, (*parent, "child", "t"))
    with pytest.raises(NamespaceNotEmptyError, match="NamespaceNotEmptyException"):
        driver.drop_namespace(DropNamespaceRequest(id=[*parent, "child"]))

    driver.deregister_table(DeregisterTableRequest(id=[*parent, "child", "t"]))
    driver.drop_namespace(DropNamespaceRequest(id=[*parent, "child"]))
    driver.drop_namespace(DropNamespaceRequest(id=parent))
    assert not catalog.namespace_exists(tuple(parent[1:]))


def test_update_namespace_properties(driver, namespace, catalog):
    driver.update_namespace_properties(namespace, {"a": "1", "b": "2"}, [])
    driver.update_namespace_properties(namespace, {"b": "3"}, ["a", "never-set"])

    properties = catalog.load_namespace_properties(namespace[1:])
    assert properties.get("b") == "3" and "a" not in properties
    with pytest.raises(NamespaceNotFoundError):
        driver.update_namespace_properties((*namespace, "absent"), {"x": "1"}, [])


def test_list_namespace_infos_follows_pages(iceberg_server, driver, namespace):
    for i in range(5):
        driver.create_namespace(CreateNamespaceRequest(id=[*namespace, f"c{i}"], properties={"i": str(i)}))
    driver.bulk_page_size = 2
    iceberg_server.reset_request_count()

    infos = list(driver.list_namespace_infos(namespace))

    assert [(info.id[-1], info.properties["i"]) for info in infos] == [(f"c{i}", str(i)) for i in range(5)]
    counts = routes(iceberg_server)
    assert counts["GET /v1/{prefix}/namespaces"] == 3
    assert counts["GET /v1/{prefix}/namespaces/{namespace}"] == 5
    paged = names_of(driver, driver.list_namespaces, ListNamespacesRequest, namespace, "namespaces", limit=2)
    assert paged == [f"c{i}" for i in range(5)]


# --- tables ------------------------------------------------------------------------------------


def test_declare_creates_the_companion_iceberg_table(driver, namespace, catalog, tmp_path):
    location = str(tmp_path / "orders.lance")
    response = driver.declare_table(DeclareTableRequest(id=[*namespace, "orders"], location=location,
                                                        properties={"tier": "gold"}))

    assert response.location == location
    assert response.properties["table_type"] == "lance"
    table = catalog.load_table((*namespace[1:], "orders"))
    assert table.location() == location
    assert table.properties["table_type"] == "lance" and table.properties["tier"] == "gold"
    assert [(f.field_id, f.name, str(f.field_type), f.required) for f in table.schema().fields] == \
        [(1, "dummy", "string", False)]


def test_declare_default_location_and_errors(driver, namespace, tmp_path):
    response = driver.declare_table(DeclareTableRequest(id=[*namespace, "a/b%c"]))

    assert response.location == f"{tmp_path}/{WAREHOUSE}/{namespace[1]}/a%2Fb%25c"
    with pytest.raises(TableAlreadyExistsError, match="AlreadyExistsException"):
        declare(driver, (*namespace, "a/b%c"))
    with pytest.raises(NamespaceNotFoundError):
        declare(driver, (*namespace, "absent", "t"))
    with pytest.raises(InvalidInputError, match=r"\[warehouse, namespace\.\.\., table\]"):
        declare(driver, (WAREHOUSE, "t"))


def test_describe_table(iceberg_server, namespace, catalog, tmp_path):
    driver = make_driver(iceberg_server, tmp_path, **{"storage.region": "eu-west-1"})
    location = str(tmp_path / "t.lance")
    declare(driver, (*namespace, "t"), location, tier="gold")

    described = driver.describe_table(DescribeTableRequest(id=[*namespace, "t"]))

    assert (described.table, described.namespace, described.location) == ("t", list(namespace), location)
    assert described.properties["tier"] == "gold"
    assert described.storage_options == {"region": "eu-west-1"}
    assert described.version is None and described.var_schema is None
    with pytest.raises(TableNotFoundError, match="NoSuchTableException"):
        driver.describe_table(DescribeTableRequest(id=[*namespace, "absent"]))
    with pytest.raises(TableNotFoundError):
        driver.describe_table(DescribeTableRequest(id=[*namespace, "absent_ns", "t"]))
    with pytest.raises(UnsupportedOperationError, match="load_detailed_metadata"):
        driver.describe_table(DescribeTableRequest(id=[*namespace, "t"], load_detailed_metadata=True))
    driver.table_exists(TableExistsRequest(id=[*namespace, "t"]))
    with pytest.raises(TableNotFoundError):
        driver.table_exists(TableExistsRequest(id=[*namespace, "absent"]))


def test_foreign_tables_are_seen_but_not_lance(driver, namespace, catalog):
    schema = Schema(NestedField(1, "id", LongType(), required=False))
    catalog.create_table((*namespace[1:], "plain"), schema, properties={"owner": "etl"})
    catalog.create_table((*namespace[1:], "shouting"), schema, properties={"table_type": "LANCE"})
    catalog.create_table((*namespace[1:], "hive"), schema, properties={"table_type": "hive"})
    declare(driver, (*namespace, "lance"))

    assert driver.list_tables(ListTablesRequest(id=list(namespace))).tables == ["lance", "shouting"]
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        driver.describe_table(DescribeTableRequest(id=[*namespace, "plain"]))
    with pytest.raises(InvalidInputError, match="table_type=hive"):
        driver.deregister_table(DeregisterTableRequest(id=[*namespace, "hive"]))
    plain = driver.get_table_info((*namespace, "plain"))
    assert plain is not None and not plain.is_lance and plain.properties["owner"] == "etl"
    infos = {info.id[-1]: info.is_lance for info in driver.list_table_infos(namespace)}
    assert infos == {"plain": False, "shouting": True, "hive": False, "lance": True}


def test_list_tables_pages(driver, namespace):
    for i in range(7):
        declare(driver, (*namespace, f"t{i}"))

    first = driver.list_tables(ListTablesRequest(id=list(namespace), limit=3))
    assert first.tables == ["t0", "t1", "t2"] and first.page_token
    paged = names_of(driver, driver.list_tables, ListTablesRequest, namespace, "tables", limit=3)
    assert paged == [f"t{i}" for i in range(7)]


def test_deregister_keeps_data_and_iceberg_metadata(driver, namespace, catalog, tmp_path):
    location = str(tmp_path / "kept.lance")
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), location)
    declare(driver, (*namespace, "kept"), location)
    metadata_location = catalog.load_table((*namespace[1:], "kept")).metadata_location

    response = driver.deregister_table(DeregisterTableRequest(id=[*namespace, "kept"]))

    assert response.location == location
    assert driver.get_table_info((*namespace, "kept")) is None
    assert lance.dataset(location).count_rows() == 3
    # purgeRequested=false: the metadata file survives, so Iceberg can register it again
    catalog.register_table((*namespace[1:], "again"), metadata_location)
    with pytest.raises(TableNotFoundError):
        driver.deregister_table(DeregisterTableRequest(id=[*namespace, "kept"]))


def test_register_table(driver, namespace, tmp_path):
    location = str(tmp_path / "existing.lance")
    registered = driver.register_table(RegisterTableRequest(id=[*namespace, "r"], location=location,
                                                            properties={"k": "v"}))

    assert registered.location == location
    assert driver.get_table_info((*namespace, "r")).properties["k"] == "v"
    with pytest.raises(TableAlreadyExistsError):
        driver.register_table(RegisterTableRequest(id=[*namespace, "r"], location=location))
    moved = str(tmp_path / "moved.lance")
    driver.register_table(RegisterTableRequest(id=[*namespace, "r"], location=moved, mode="Overwrite",
                                               properties={"k": "w"}))
    info = driver.get_table_info((*namespace, "r"))
    assert (info.location, info.properties["k"]) == (moved, "w")


def test_update_table_properties(iceberg_server, driver, namespace, catalog):
    declare(driver, (*namespace, "t"), keep="1", change="old", drop="x")
    iceberg_server.reset_request_count()

    driver.update_table_properties((*namespace, "t"), {"change": "new", "add": "2"}, ["drop"])

    assert routes(iceberg_server) == {LOAD_ROUTE: 1, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}": 1}
    properties = catalog.load_table((*namespace[1:], "t")).properties
    assert {k: properties.get(k) for k in ("keep", "change", "add", "drop", "table_type")} == \
        {"keep": "1", "change": "new", "add": "2", "drop": None, "table_type": "lance"}
    with pytest.raises(TableNotFoundError):
        driver.update_table_properties((*namespace, "absent"), {"a": "1"}, [])


def test_update_of_a_replaced_table_is_a_concurrent_modification(driver, namespace, catalog):
    declare(driver, (*namespace, "t"))
    identifier = (*namespace[1:], "t")
    send = driver.client.http.request

    def replace_after_load(method: str, path: str, **kwargs: Any) -> Any:
        answer = send(method, path, **kwargs)
        if method == "GET" and path.endswith("/tables/t"):
            catalog.drop_table(identifier)
            catalog.create_table(identifier, Schema(), properties={"table_type": "lance"})
        return answer

    driver.client.http.request = replace_after_load
    with pytest.raises(ConcurrentModificationError, match="UUID does not match"):
        driver.update_table_properties((*namespace, "t"), {"a": "1"}, [])
    assert "a" not in catalog.load_table(identifier).properties


@pytest.mark.parametrize("name", SPECIAL_NAMES)
def test_special_names_round_trip(driver, namespace, catalog, name):
    special = (*namespace, name)
    table = (*special, name)
    driver.create_namespace(CreateNamespaceRequest(id=list(special), properties={"name": name}))
    driver.create_namespace(CreateNamespaceRequest(id=[*special, "child"]))
    declare(driver, table, tier="gold")

    assert name in driver.list_namespaces(ListNamespacesRequest(id=list(namespace))).namespaces
    assert driver.list_namespaces(ListNamespacesRequest(id=list(special))).namespaces == ["child"]
    assert driver.describe_namespace(DescribeNamespaceRequest(id=list(special))).properties["name"] == name
    assert driver.list_tables(ListTablesRequest(id=list(special))).tables == [name]
    assert [info.id for info in driver.list_table_infos(special)] == [table]
    assert driver.describe_table(DescribeTableRequest(id=list(table))).table == name
    driver.update_table_properties(table, {"tier": "silver"}, [])
    assert catalog.load_table(table[1:]).properties["tier"] == "silver"  # pyiceberg finds the same table
    driver.deregister_table(DeregisterTableRequest(id=list(table)))
    driver.drop_namespace(DropNamespaceRequest(id=[*special, "child"]))
    driver.drop_namespace(DropNamespaceRequest(id=list(special)))
    assert name not in driver.list_namespaces(ListNamespacesRequest(id=list(namespace))).namespaces


@pytest.mark.parametrize("name", ["", ".", "..", "a\x1fb"])
def test_unaddressable_names_are_invalid_input(driver, namespace, name):
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[*namespace, name]))
    with pytest.raises(InvalidInputError):
        declare(driver, (*namespace, name))


# --- renames and location changes -------------------------------------------------------------

RENAME_ROUTE = "POST /v1/{prefix}/tables/rename"
COMMIT_ROUTE = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"


def rename(driver: IcebergNamespace, source: tuple[str, ...], name: str,
           namespace: tuple[str, ...] | None = None) -> None:
    driver.rename_table(RenameTableRequest(id=list(source), new_table_name=name,
                                           new_namespace_id=list(namespace) if namespace is not None else None))


def test_rename_keeps_the_table_uuid_location_and_properties(iceberg_server, driver, namespace, catalog,
                                                             tmp_path):
    declare(driver, (*namespace, "t"), str(tmp_path / "t.lance"), tier="gold")
    before = catalog.load_table((*namespace[1:], "t")).metadata
    iceberg_server.reset_request_count()

    rename(driver, (*namespace, "t"), "renamed")

    assert routes(iceberg_server) == {LOAD_ROUTE: 1, RENAME_ROUTE: 1}
    after = catalog.load_table((*namespace[1:], "renamed")).metadata
    assert after.table_uuid == before.table_uuid and after.location == before.location
    assert after.properties == before.properties and after.properties["tier"] == "gold"
    assert not catalog.table_exists((*namespace[1:], "t"))
    assert driver.get_table_info((*namespace, "t")) is None


def test_move_to_another_namespace_keeps_the_table_uuid(driver, namespace, catalog, tmp_path):
    child = (*namespace, "child")
    driver.create_namespace(CreateNamespaceRequest(id=list(child)))
    declare(driver, (*namespace, "t"), str(tmp_path / "t.lance"))
    uuid_before = catalog.load_table((*namespace[1:], "t")).metadata.table_uuid

    driver.rename_table({"id": [*namespace, "t"], "new_table_name": "moved", "new_namespace_id": list(child)})

    moved = catalog.load_table((*child[1:], "moved"))
    assert moved.metadata.table_uuid == uuid_before and moved.location() == str(tmp_path / "t.lance")
    assert [i.id for i in driver.list_table_infos(child)] == [(*child, "moved")]
    assert list(driver.list_table_infos(namespace)) == []


@pytest.mark.parametrize("name", SPECIAL_NAMES)
def test_rename_to_special_names(driver, namespace, catalog, name):
    declare(driver, (*namespace, "t"))
    rename(driver, (*namespace, "t"), name)
    assert catalog.table_exists((*namespace[1:], name))
    assert driver.get_table_info((*namespace, name)) is not None


def test_rename_errors_change_nothing(driver, namespace, catalog, tmp_path):
    declare(driver, (*namespace, "t"), str(tmp_path / "t.lance"))
    declare(driver, (*namespace, "taken"))
    catalog.create_table((*namespace[1:], "foreign"), Schema(NestedField(1, "id", LongType(), required=False)))
    uuid_before = catalog.load_table((*namespace[1:], "t")).metadata.table_uuid
    with pytest.raises(TableNotFoundError):
        rename(driver, (*namespace, "absent"), "x")
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        rename(driver, (*namespace, "foreign"), "x")
    with pytest.raises(NamespaceNotFoundError):
        rename(driver, (*namespace, "t"), "x", (*namespace, "missing"))
    with pytest.raises(TableAlreadyExistsError):  # the catalog's 409
        rename(driver, (*namespace, "t"), "taken")
    with pytest.raises(TableAlreadyExistsError):  # a table that is not a Lance table too
        rename(driver, (*namespace, "t"), "foreign")
    with pytest.raises(UnsupportedOperationError, match="first 1 level"):  # a warehouse is a catalog
        rename(driver, (*namespace, "t"), "x", ("elsewhere", *namespace[1:]))
    with pytest.raises(InvalidInputError):
        rename(driver, (*namespace, "t"), "t")
    assert catalog.load_table((*namespace[1:], "t")).metadata.table_uuid == uuid_before
    assert sorted(identifier[-1] for identifier in catalog.list_tables(namespace[1:])) == ["foreign", "t", "taken"]


def test_a_repeated_rename_meets_table_not_found_and_the_table_where_it_went(driver, namespace, tmp_path):
    """What apply's runner sees when it sends a rename again after losing the first answer."""
    declare(driver, (*namespace, "t"), str(tmp_path / "t.lance"))
    rename(driver, (*namespace, "t"), "renamed")
    with pytest.raises(TableNotFoundError):
        rename(driver, (*namespace, "t"), "renamed")
    info = driver.get_table_info((*namespace, "renamed"))
    assert info is not None and info.location == str(tmp_path / "t.lance")


def test_update_table_location_keeps_the_table_uuid(iceberg_server, driver, namespace, catalog, tmp_path):
    declare(driver, (*namespace, "t"), str(tmp_path / "t.lance"), tier="gold")
    before = catalog.load_table((*namespace[1:], "t")).metadata
    iceberg_server.reset_request_count()

    driver.update_table_location((*namespace, "t"), f"file://{tmp_path}/moved.lance/")

    assert routes(iceberg_server) == {LOAD_ROUTE: 1, COMMIT_ROUTE: 1}
    after = catalog.load_table((*namespace[1:], "t")).metadata
    assert after.table_uuid == before.table_uuid and after.location == str(tmp_path / "moved.lance")
    assert after.properties == before.properties
    assert driver.describe_table(DescribeTableRequest(id=[*namespace, "t"])).location == str(tmp_path / "moved.lance")
    iceberg_server.reset_request_count()
    driver.update_table_location((*namespace, "t"), str(tmp_path / "moved.lance"))  # already there
    assert routes(iceberg_server) == {LOAD_ROUTE: 1}


def test_update_table_location_errors(driver, namespace, catalog, tmp_path):
    catalog.create_table((*namespace[1:], "foreign"), Schema(NestedField(1, "id", LongType(), required=False)))
    with pytest.raises(TableNotFoundError):
        driver.update_table_location((*namespace, "absent"), str(tmp_path / "x"))
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        driver.update_table_location((*namespace, "foreign"), str(tmp_path / "x"))
    assert catalog.load_table((*namespace[1:], "foreign")).location() != str(tmp_path / "x")


def test_location_change_of_a_replaced_table_is_a_concurrent_modification(driver, namespace, catalog, tmp_path):
    declare(driver, (*namespace, "t"), str(tmp_path / "t.lance"))
    identifier = (*namespace[1:], "t")
    send = driver.client.http.request

    def replace_after_load(method: str, path: str, **kwargs: Any) -> Any:
        answer = send(method, path, **kwargs)
        if method == "GET" and path.endswith("/tables/t"):
            catalog.drop_table(identifier)
            catalog.create_table(identifier, Schema(), location=str(tmp_path / "new.lance"),
                                 properties={"table_type": "lance"})
        return answer

    driver.client.http.request = replace_after_load
    with pytest.raises(ConcurrentModificationError, match="UUID does not match"):
        driver.update_table_location((*namespace, "t"), str(tmp_path / "moved.lance"))
    assert catalog.load_table(identifier).location() == str(tmp_path / "new.lance")


# --- bulk reads: call counts, parallel loads, failures -----------------------------------------


@pytest.fixture(scope="module")
def big_namespace(iceberg_server, tmp_path_factory) -> tuple[str, ...]:
    """A namespace with 500 Lance tables (seeded by the driver, 8 threads)."""
    driver = make_driver(iceberg_server, tmp_path_factory.mktemp("big"))
    namespace = (WAREHOUSE, f"big_{uuid.uuid4().hex[:8]}")
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: declare(driver, (*namespace, f"t{i:03d}"), tier=str(i)), range(500)))
    return namespace


@pytest.mark.parametrize("page_size, pages", [(None, 1), (100, 5)])
def test_reading_500_tables_costs_list_pages_plus_500_loads(iceberg_server, big_namespace, tmp_path,
                                                            page_size, pages):
    driver = make_driver(iceberg_server, tmp_path)
    driver.bulk_page_size = page_size
    driver.get_namespace_info(big_namespace)  # warms the config cache
    calls_before = driver.api_calls
    iceberg_server.reset_request_count()

    infos = list(driver.list_table_infos(big_namespace))

    assert [info.id[-1] for info in infos] == [f"t{i:03d}" for i in range(500)]
    assert all(info.is_lance and info.properties["tier"] == str(int(info.id[-1][1:])) for info in infos)
    assert routes(iceberg_server) == {TABLES_ROUTE: pages, LOAD_ROUTE: 500}
    assert driver.api_calls - calls_before == pages + 500


def test_loads_run_in_parallel(iceberg_server, big_namespace, tmp_path):
    """The first LOAD_PARALLELISM loads wait for each other: serial loads would break the barrier."""
    driver = make_driver(iceberg_server, tmp_path)
    barrier = threading.Barrier(LOAD_PARALLELISM, timeout=60)
    held, lock = [0], threading.Lock()
    send = driver.client.http.request

    def meet_the_others(method: str, path: str, **kwargs: Any) -> Any:
        if method == "GET" and "/tables/" in path:
            with lock:
                held[0] += 1
                wait = held[0] <= LOAD_PARALLELISM
            if wait:
                barrier.wait()
        return send(method, path, **kwargs)

    driver.client.http.request = meet_the_others
    assert len(list(driver.list_table_infos(big_namespace))) == 500
    assert held[0] == 500


def test_a_plan_loads_tables_on_its_own_pool_only(iceberg_server, big_namespace, tmp_path):
    """observe() runs the loads as parts on its pool: never more loads in flight than its
    parallelism, and no pool of the driver's own beneath it."""
    from lance_sync.manifest import load_manifest
    from lance_sync.plan.observe import observe

    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text(f"version: 1\nowner: o\nbackends:\n  ice: {{type: iceberg, endpoint: "
                        f"'{iceberg_server.endpoint}'}}\nnamespaces:\n  - {{backend: ice, id: "
                        f"'{WAREHOUSE}.{big_namespace[1]}'}}\n")
    state = load_manifest([str(manifest)])
    driver = make_driver(iceberg_server, tmp_path)
    send, lock, in_flight, most = driver.client.http.send, threading.Lock(), [0], [0]

    def counted(method: str, target: str, **kwargs: Any) -> urllib3.BaseHTTPResponse:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            return send(method, target, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    driver.client.http.send = counted
    live = observe(state, {"ice": driver}, parallelism=3)
    assert len([key for key in live.tables if key[1][:-1] == big_namespace]) == 500
    assert most[0] == 3
    assert not driver._loads._threads  # the driver's own pool never started


def fake_answer(status: int, body: dict) -> urllib3.HTTPResponse:
    return urllib3.HTTPResponse(io.BytesIO(json.dumps(body).encode()), status=status, preload_content=False,
                                headers={"Content-Type": "application/json"})


def test_a_failed_load_fails_the_listing(iceberg_server, big_namespace, tmp_path):
    driver = make_driver(iceberg_server, tmp_path)
    driver.client.http.sleep = lambda seconds: None
    send = driver.client.http.send
    unavailable = {"error": {"message": "injected", "type": "ServiceUnavailableException", "code": 503}}

    def fail_t250(method: str, target: str, **kwargs: Any) -> urllib3.HTTPResponse:
        if method == "GET" and target.endswith("/tables/t250"):
            return fake_answer(503, unavailable)
        return send(method, target, **kwargs)

    driver.client.http.send = fail_t250
    with pytest.raises(ServiceUnavailableError, match="t250"):
        list(driver.list_table_infos(big_namespace))
    with pytest.raises(ServiceUnavailableError):
        names_of(driver, driver.list_tables, ListTablesRequest, big_namespace, "tables", limit=100)
    with pytest.raises(ServiceUnavailableError):
        driver.get_table_info((*big_namespace, "t250"))


def test_a_table_dropped_between_list_and_load_is_absent(iceberg_server, big_namespace, tmp_path):
    """A 404 on load is the server's answer that the table is gone, not a failure."""
    driver = make_driver(iceberg_server, tmp_path)
    send = driver.client.http.send
    gone = {"error": {"message": "Table does not exist", "type": "NoSuchTableException", "code": 404}}

    def drop_t007(method: str, target: str, **kwargs: Any) -> urllib3.HTTPResponse:
        if method == "GET" and target.endswith("/tables/t007"):
            return fake_answer(404, gone)
        return send(method, target, **kwargs)

    driver.client.http.send = drop_t007
    names = [info.id[-1] for info in driver.list_table_infos(big_namespace)]
    assert len(names) == 499 and "t007" not in names


def test_sixteen_threads_declare_and_describe(iceberg_server, namespace, tmp_path):
    driver = make_driver(iceberg_server, tmp_path)
    iceberg_server.reset_request_count()

    def declare_then_describe(i: int) -> str:
        declare(driver, (*namespace, f"c{i}"), str(tmp_path / f"c{i}"), n=str(i))
        return driver.describe_table(DescribeTableRequest(id=[*namespace, f"c{i}"])).properties["n"]

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(declare_then_describe, range(64))) == [str(i) for i in range(64)]
    counts = routes(iceberg_server)
    assert counts[CONFIG_ROUTE] == 1 and counts[LOAD_ROUTE] == 64


# --- pylance through the driver ----------------------------------------------------------------


def test_pylance_writes_and_reads_through_the_driver(driver, namespace, catalog, tmp_path):
    table_id = [*namespace, "events"]
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})

    lance.write_dataset(data, namespace_client=driver, table_id=table_id)
    lance.write_dataset(data, namespace_client=driver, table_id=table_id, mode="append")

    location = f"{tmp_path}/{WAREHOUSE}/{namespace[1]}/events"
    assert lance.dataset(location).count_rows() == 6
    assert lance.dataset(namespace_client=driver, table_id=table_id).count_rows() == 6
    table = catalog.load_table((*namespace[1:], "events"))
    assert table.location() == location and table.properties["table_type"] == "lance"


# --- authentication ----------------------------------------------------------------------------


def test_bearer_token(auth_server, tmp_path):
    driver = make_driver(auth_server, tmp_path, auth_token=TOKEN)
    driver.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, f"b_{uuid.uuid4().hex[:8]}"]))

    with pytest.raises(UnauthenticatedError, match="401"):
        make_driver(auth_server, tmp_path).list_namespaces(ListNamespacesRequest(id=[WAREHOUSE]))
    with pytest.raises(UnauthenticatedError) as error:
        make_driver(auth_server, tmp_path, auth_token="wrong-token-9d2").list_namespaces(
            ListNamespacesRequest(id=[WAREHOUSE]))
    assert "wrong-token-9d2" not in str(error.value)


def test_oauth2_token_is_fetched_once_for_all_threads(auth_server, tmp_path):
    driver = make_driver(auth_server, tmp_path, credential=f"{CLIENT_ID}:{SECRET}")
    auth_server.reset_request_count()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda _: driver.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE])), range(32)))

    counts = routes(auth_server)
    assert counts[TOKEN_ROUTE] == 1 and counts["GET /v1/{prefix}/namespaces"] == 32
    assert driver.api_calls == 1 + 1 + 32  # token, config, lists


def test_oauth2_token_is_renewed_on_expiry_and_once_on_401(auth_server, tmp_path):
    driver = make_driver(auth_server, tmp_path, credential=f"{CLIENT_ID}:{SECRET}")
    now = [1000.0]
    driver.client.auth.clock = lambda: now[0]
    list_top = ListNamespacesRequest(id=[WAREHOUSE])
    driver.list_namespaces(list_top)
    auth_server.reset_request_count()

    now[0] += 3600 * 0.9  # the server's tokens live 3600 s
    driver.list_namespaces(list_top)
    assert routes(auth_server) == {TOKEN_ROUTE: 1, "GET /v1/{prefix}/namespaces": 1}

    driver.client.auth._token = "revoked-by-the-server"
    driver.list_namespaces(list_top)
    assert routes(auth_server) == {TOKEN_ROUTE: 2, "GET /v1/{prefix}/namespaces": 3}


def test_oauth2_wrong_secret_is_unauthenticated_without_the_secret(auth_server, tmp_path):
    driver = make_driver(auth_server, tmp_path, credential=f"{CLIENT_ID}:not-the-secret-41")

    with pytest.raises(UnauthenticatedError, match="invalid_client") as error:
        driver.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE]))
    assert "not-the-secret-41" not in str(error.value)
    assert "not-the-secret-41" not in repr(driver.config)


# --- retries and error statuses (scripted server) ----------------------------------------------


class ScriptedServer:
    """HTTP on 127.0.0.1: GET /v1/config answers a prefix, other requests get the scripted answers
    in order (the last one repeats). Records every request as "METHOD path"."""

    def __init__(self, *answers: tuple[int, dict[str, str], Any]):
        self.answers = list(answers)
        self.seen: list[str] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                script.seen.append(f"{self.command} {self.path.split('?')[0]}")
                if self.path.startswith("/v1/config"):
                    status, headers, body = 200, {}, {"defaults": {"prefix": "p"}, "overrides": {}}
                else:
                    status, headers, body = script.answers.pop(0) if len(script.answers) > 1 \
                        else script.answers[0]
                payload = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_HEAD = answer

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def scripted(request) -> Iterator[ScriptedServer]:
    server = ScriptedServer(*request.param)
    yield server
    server.close()


def scripted_driver(server: ScriptedServer, tmp_path: Path, **properties: Any) -> tuple[IcebergNamespace, list]:
    driver = make_driver(server.endpoint, tmp_path, **properties)
    sleeps: list[float] = []
    driver.client.http.sleep = sleeps.append
    return driver, sleeps


def iceberg_error(status: int, kind: str) -> dict:
    return {"error": {"message": f"scripted {kind}", "type": kind, "code": status,
                      "stack": ["at org.apache.iceberg.Secret.internal(Secret.java:1)"]}}


OK_NAMESPACE = (200, {}, {"namespace": ["ns"], "properties": {"a": "1"}})


@pytest.mark.parametrize("scripted, error", [
    ([(403, {}, iceberg_error(403, "ForbiddenException"))], PermissionDeniedError),
    ([(401, {}, iceberg_error(401, "NotAuthorizedException"))], UnauthenticatedError),
    ([(400, {}, iceberg_error(400, "BadRequestException"))], InvalidInputError),
    ([(406, {}, iceberg_error(406, "UnsupportedOperationException"))], UnsupportedOperationError),
    ([(500, {}, iceberg_error(500, "RuntimeException"))], ServerError),  # Internal (18), transient
], indirect=["scripted"], ids=["403", "401", "400", "406", "500"])
def test_error_statuses(scripted, tmp_path, error):
    driver, _ = scripted_driver(scripted, tmp_path, max_retries=0)
    with pytest.raises(error) as raised:
        driver.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, "ns"]))
    assert type(raised.value) is error
    assert "scripted" in str(raised.value) and "Secret.java" not in str(raised.value)


@pytest.mark.parametrize("scripted", [[(500, {}, iceberg_error(500, "RuntimeException")),
                                       (502, {}, None), OK_NAMESPACE]], indirect=True)
def test_server_errors_are_retried_for_reads(scripted, tmp_path):
    driver, sleeps = scripted_driver(scripted, tmp_path)
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, "ns"])).properties == {"a": "1"}
    assert scripted.seen == ["GET /v1/config", *["GET /v1/p/namespaces/ns"] * 3]
    assert len(sleeps) == 2


@pytest.mark.parametrize("scripted", [[(503, {}, iceberg_error(503, "ServiceUnavailableException"))]],
                         indirect=True)
def test_unavailable_after_max_retries(scripted, tmp_path):
    driver, sleeps = scripted_driver(scripted, tmp_path, max_retries=2)
    with pytest.raises(ServiceUnavailableError):
        driver.describe_table(DescribeTableRequest(id=[WAREHOUSE, "ns", "t"]))
    assert scripted.seen.count("GET /v1/p/namespaces/ns/tables/t") == 3 and len(sleeps) == 2


@pytest.mark.parametrize("scripted", [[(429, {"Retry-After": "7"}, None), OK_NAMESPACE]], indirect=True)
def test_throttling_honours_retry_after(scripted, tmp_path):
    driver, sleeps = scripted_driver(scripted, tmp_path)
    driver.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, "ns"]))
    assert sleeps == [7.0]


@pytest.mark.parametrize("scripted", [[(429, {"Retry-After": "1"}, None)]], indirect=True)
def test_throttled_to_the_end_is_throttling(scripted, tmp_path):
    driver, sleeps = scripted_driver(scripted, tmp_path, max_retries=1)
    with pytest.raises(ThrottlingError):
        driver.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE]))
    assert sleeps == [1.0]


@pytest.mark.parametrize("scripted", [[(500, {}, iceberg_error(500, "RuntimeException")), OK_NAMESPACE]],
                         indirect=True)
def test_a_create_is_not_repeated_after_a_500(scripted, tmp_path):
    driver, _ = scripted_driver(scripted, tmp_path)
    with pytest.raises(InternalError):
        driver.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, "ns"]))
    assert scripted.seen == ["GET /v1/config", "POST /v1/p/namespaces"]


LANCE_TABLE = (200, {}, {"metadata": {"format-version": 2, "table-uuid": "u-1", "location": "/lake/t",
                                      "properties": {"table_type": "lance"}}})


@pytest.mark.parametrize("scripted, error", [
    ([LANCE_TABLE, OK_NAMESPACE, (404, {}, iceberg_error(404, "NoSuchNamespaceException"))], NamespaceNotFoundError),
    ([LANCE_TABLE, OK_NAMESPACE, (404, {}, iceberg_error(404, "NoSuchTableException"))], TableNotFoundError),
    ([LANCE_TABLE, OK_NAMESPACE, (406, {}, iceberg_error(406, "UnsupportedOperationException"))],
     UnsupportedOperationError),
    ([LANCE_TABLE, OK_NAMESPACE, (500, {}, iceberg_error(500, "RuntimeException")), (204, {}, None)],
     ServerError),  # Internal (18), not sent again: the catalog may have renamed it
], indirect=["scripted"], ids=["namespace-dropped-meanwhile", "table-dropped-meanwhile", "no-moves", "500"])
def test_rename_answers(scripted, tmp_path, error):
    """What the catalog's rename answers means; a rename is never sent twice by the driver."""
    driver, _ = scripted_driver(scripted, tmp_path)
    with pytest.raises(error) as raised:
        driver.rename_table(RenameTableRequest(id=[WAREHOUSE, "ns", "t"], new_table_name="t2",
                                               new_namespace_id=[WAREHOUSE, "other"]))
    assert type(raised.value) is error
    assert scripted.seen == ["GET /v1/config", "GET /v1/p/namespaces/ns/tables/t", "GET /v1/p/namespaces/other",
                             "POST /v1/p/tables/rename"]


def test_connection_refused_is_unavailable_after_retries(tmp_path):
    driver = make_driver(f"http://127.0.0.1:{free_port()}", tmp_path, max_retries=2,
                         auth_token="never-shown-5e")
    driver.client.http.sleep = lambda seconds: None

    with pytest.raises(ServiceUnavailableError, match="cannot reach") as error:
        driver.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE]))
    assert driver.api_calls == 3
    assert "never-shown-5e" not in str(error.value)


# --- the JDBC catalog (metadata files written into the Lance table's directory) ---------------


@pytest.mark.skipif(not iceberg_rest.sqlite_jdbc_available(), reason="needs libxerial-sqlite-jdbc-java")
def test_jdbc_catalog(tmp_path):
    server = iceberg_rest.start(tmp_path / "server", catalog="jdbc")
    try:
        driver = make_driver(server, tmp_path)
        driver.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, "sales"]))
        lance.write_dataset(pa.table({"x": [1]}), namespace_client=driver, table_id=[WAREHOUSE, "sales", "t"])
        infos = list(driver.list_table_infos((WAREHOUSE, "sales")))
        count = lance.dataset(namespace_client=driver, table_id=[WAREHOUSE, "sales", "t"]).count_rows()
    finally:
        server.stop()

    location = tmp_path / WAREHOUSE / "sales" / "t"
    assert [(info.id, info.location, info.is_lance) for info in infos] == \
        [((WAREHOUSE, "sales", "t"), str(location), True)]
    assert count == 1
    assert list((location / "metadata").glob("*.metadata.json"))


@pytest.mark.skipif(not iceberg_rest.sqlite_jdbc_available(), reason="needs libxerial-sqlite-jdbc-java")
def test_a_listed_table_whose_metadata_file_is_gone_is_an_error_not_an_absent_table(tmp_path):
    """A catalog keeps each table's metadata.json in the table's location; when it is gone (the
    folder deleted behind the catalog's back), upstream answers the load with 404
    NotFoundException while the table is still listed. That is not TableNotFound: a plan would
    declare it again (409) and a deregistration would count as done and leave it listed."""
    server = iceberg_rest.start(tmp_path / "server", catalog="jdbc")
    try:
        driver = make_driver(server, tmp_path)
        driver.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, "sales"]))
        location = tmp_path / "lake" / "t.lance"
        driver.declare_table(DeclareTableRequest(id=[WAREHOUSE, "sales", "t"], location=str(location)))
        for metadata_file in (location / "metadata").glob("*.metadata.json"):
            metadata_file.unlink()
        message = "the catalog lists the table but cannot load it: GET .* -> 404 NotFoundException"
        with pytest.raises(InternalError, match=message):
            driver.get_table_info((WAREHOUSE, "sales", "t"))
        with pytest.raises(InternalError, match=message):
            list(driver.list_table_infos((WAREHOUSE, "sales")))
        with pytest.raises(InternalError, match=message):
            driver.deregister_table(DeregisterTableRequest(id=[WAREHOUSE, "sales", "t"]))
        assert driver.get_table_info((WAREHOUSE, "sales", "missing")) is None  # NoSuchTableException
    finally:
        server.stop()
