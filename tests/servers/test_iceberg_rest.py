"""Smoke tests of the Iceberg REST test server, driven by pyiceberg's RestCatalog (an independent client).

They also run against an external server (LANCE_SYNC_TEST_ICEBERG_ENDPOINT); what only holds for
ours (request counts, the config prefix, auth, the JDBC catalog, process handling) skips there.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchTableError,
    OAuthError,
    RESTError,
    TableAlreadyExistsError,
    UnauthorizedError,
)
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, StringType

from tests.servers import iceberg_rest
from tests.servers.base import RunningServer, is_running, wait_until

pytestmark = pytest.mark.servers

#: The schema a Lance table's companion Iceberg table carries (see specs/iceberg-rest.md).
DUMMY_SCHEMA = Schema(NestedField(1, "dummy", StringType(), required=False))
SPECIAL_NAMES = ["with space", "ünïcødé ☃", "100%", "dotted.name", "dollar$sign", "plus+slash/"]
TOKEN = "test-static-token"
CREDENTIAL = "lance-sync-client:test-secret"
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Raw HTTP for what pyiceberg does not expose; straight to 127.0.0.1, whatever proxy is set.
HTTP = requests.Session()
HTTP.trust_env = False


def connect(server: RunningServer, **properties: str) -> RestCatalog:
    if warehouse := server.extra.get("warehouse"):
        properties.setdefault("warehouse", warehouse)
    if "credential" in properties:
        properties.setdefault("oauth2-server-uri", f"{server.endpoint}/v1/oauth/tokens")
    return RestCatalog("test", uri=server.endpoint, **properties)


def api_url(server: RunningServer, catalog: RestCatalog, path: str) -> str:
    """A catalog API URL under the prefix the server's /v1/config handed out (if any)."""
    prefix = catalog.properties.get("prefix")
    return f"{server.endpoint}/v1/{prefix}/{path}" if prefix else f"{server.endpoint}/v1/{path}"


def local_only(server: RunningServer) -> None:
    if server.external:
        pytest.skip("checks a property of the project's own test server")


def drop_recursively(catalog: RestCatalog, namespace: tuple[str, ...]) -> None:
    for table in catalog.list_tables(namespace):
        catalog.drop_table(table)
    for child in catalog.list_namespaces(namespace):
        drop_recursively(catalog, child)
    catalog.drop_namespace(namespace)


@pytest.fixture
def catalog(iceberg_server: RunningServer) -> RestCatalog:
    return connect(iceberg_server)


@pytest.fixture
def namespace(catalog: RestCatalog) -> Iterator[tuple[str, ...]]:
    """A fresh top-level namespace per test (the server is shared by the session); dropped after."""
    name = (f"test_{uuid.uuid4().hex[:10]}",)
    catalog.create_namespace(name)
    yield name
    drop_recursively(catalog, name)


# ------------------------------------------------------------------------------------- config


def test_config_hands_out_the_prefix_and_routes_need_it(iceberg_server, catalog):
    local_only(iceberg_server)
    config = HTTP.get(f"{iceberg_server.endpoint}/v1/config",
                          params={"warehouse": iceberg_rest.WAREHOUSE}, timeout=10).json()

    assert config["defaults"]["prefix"] == iceberg_rest.PREFIX
    assert "GET /v1/{prefix}/namespaces" in config["endpoints"]
    assert catalog.properties["prefix"] == iceberg_rest.PREFIX
    without_prefix = HTTP.get(f"{iceberg_server.endpoint}/v1/namespaces", timeout=10)
    assert without_prefix.status_code == 400
    assert without_prefix.json()["error"]["type"] == "BadRequestException"
    unknown = HTTP.get(f"{iceberg_server.endpoint}/v1/config", params={"warehouse": "nope"}, timeout=10)
    assert unknown.status_code == 404


def test_without_an_announced_prefix_clients_must_bring_their_own(iceberg_server, tmp_path):
    """The Lance spec's fallback: no prefix in /v1/config, so the client uses the warehouse name."""
    local_only(iceberg_server)
    server = iceberg_rest.start(tmp_path, prefix=iceberg_rest.WAREHOUSE, announce_prefix=False)
    try:
        config = HTTP.get(f"{server.endpoint}/v1/config", timeout=10).json()
        by_warehouse = HTTP.get(f"{server.endpoint}/v1/{iceberg_rest.WAREHOUSE}/namespaces", timeout=10)
        without_prefix = HTTP.get(f"{server.endpoint}/v1/namespaces", timeout=10)
    finally:
        server.stop()

    assert "prefix" not in config["defaults"]
    assert by_warehouse.status_code == 200
    assert without_prefix.status_code == 400


# ------------------------------------------------------------------------------------- namespaces


def test_nested_namespaces_with_parent_listing_and_duplicates(catalog, namespace):
    child = (*namespace, "child")
    grandchild = (*child, "grandchild")
    catalog.create_namespace(child, {"team": "sales"})
    catalog.create_namespace(grandchild)

    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(child)
    assert namespace in catalog.list_namespaces()
    assert catalog.list_namespaces(namespace) == [child]
    assert catalog.list_namespaces(child) == [grandchild]
    assert catalog.load_namespace_properties(child)["team"] == "sales"


def test_namespace_properties_update(catalog, namespace):
    catalog.update_namespace_properties(namespace, updates={"a": "1", "b": "2"})

    summary = catalog.update_namespace_properties(namespace, removals={"a", "absent"}, updates={"b": "3"})

    assert (summary.removed, summary.updated, summary.missing) == (["a"], ["b"], ["absent"])
    properties = catalog.load_namespace_properties(namespace)
    assert "a" not in properties
    assert properties["b"] == "3"


def test_dropping_a_non_empty_namespace_is_409(iceberg_server, catalog, namespace):
    catalog.create_table((*namespace, "t"), DUMMY_SCHEMA)

    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(namespace)
    response = HTTP.delete(api_url(iceberg_server, catalog, f"namespaces/{namespace[0]}"), timeout=10)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == 409


# ------------------------------------------------------------------------------------- tables


def test_create_and_load_table_with_location_and_properties(catalog, namespace, tmp_path):
    identifier = (*namespace, "orders")
    location = (tmp_path / "orders.lance").as_uri()
    catalog.create_table(identifier, DUMMY_SCHEMA, location=location,
                         properties={"table_type": "lance", "tier": "gold"})

    loaded = catalog.load_table(identifier)

    assert loaded.location() == location
    assert loaded.properties["table_type"] == "lance"
    assert loaded.properties["tier"] == "gold"
    assert [field.name for field in loaded.schema().fields] == ["dummy"]
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(identifier, DUMMY_SCHEMA)


def test_tables_and_namespaces_are_listed_over_several_pages(iceberg_server, catalog, namespace):
    tables = [(*namespace, f"t{i}") for i in range(5)]
    children = [(*namespace, f"ns{i}") for i in range(3)]
    for table in tables:
        catalog.create_table(table, DUMMY_SCHEMA)
    for child in children:
        catalog.create_namespace(child)
    paged = connect(iceberg_server, **{"rest-page-size": "2"})

    iceberg_server.reset_request_count()
    assert sorted(paged.list_tables(namespace)) == tables
    assert sorted(paged.list_namespaces(namespace)) == children

    if not iceberg_server.external:
        by_route = iceberg_server.extra["requests_by_route"]()
        assert by_route == {"GET /v1/{prefix}/namespaces/{namespace}/tables": 3,
                            "GET /v1/{prefix}/namespaces": 2}


def test_commit_property_changes(catalog, namespace):
    identifier = (*namespace, "t")
    table = catalog.create_table(identifier, DUMMY_SCHEMA, properties={"keep": "1"})

    table.transaction().set_properties(owner="analytics", tier="gold").commit_transaction()
    catalog.load_table(identifier).transaction().remove_properties("tier").commit_transaction()

    properties = catalog.load_table(identifier).properties
    assert properties["owner"] == "analytics"
    assert properties["keep"] == "1"
    assert "tier" not in properties


def test_drop_without_purge_keeps_metadata_for_register(catalog, namespace):
    source = catalog.create_table((*namespace, "source"), DUMMY_SCHEMA)

    catalog.drop_table(source.name())  # purgeRequested=false

    with pytest.raises(NoSuchTableError):
        catalog.load_table(source.name())
    registered = catalog.register_table((*namespace, "registered"), source.metadata_location)
    assert registered.location() == source.location()
    assert catalog.load_table((*namespace, "registered")).metadata_location == source.metadata_location


def test_purge_deletes_metadata(iceberg_server, catalog, namespace):
    local_only(iceberg_server)
    source = catalog.create_table((*namespace, "source"), DUMMY_SCHEMA)

    catalog.purge_table(source.name())  # purgeRequested=true

    with pytest.raises(RESTError, match="NotFoundException"):
        catalog.register_table((*namespace, "registered"), source.metadata_location)


@pytest.mark.parametrize("name", SPECIAL_NAMES)
def test_special_names_round_trip(iceberg_server, catalog, namespace, name):
    special = (*namespace, name)
    table = (*special, name)
    catalog.create_namespace(special, {"name": name})
    catalog.create_namespace((*special, "child"))
    catalog.create_table(table, DUMMY_SCHEMA)

    assert special in catalog.list_namespaces(namespace)
    assert catalog.load_namespace_properties(special)["name"] == name
    assert catalog.list_tables(special) == [table]
    assert catalog.load_table(table).name() == table
    # The spec's `parent`: levels joined by 0x1F, query-encoded once. (pyiceberg 0.12 percent-encodes
    # each level a second time, so its list_namespaces(special) finds nothing for most of these names.)
    response = HTTP.get(api_url(iceberg_server, catalog, "namespaces"),
                            params={"parent": "\x1f".join(special)}, timeout=10)
    assert response.json()["namespaces"] == [[*special, "child"]]
    catalog.drop_table(table)
    assert catalog.list_tables(special) == []
    # Dropped here: the namespace fixture's cleanup lists children through pyiceberg (see above).
    catalog.drop_namespace((*special, "child"))
    catalog.drop_namespace(special)


def test_errors_are_iceberg_error_responses(iceberg_server, catalog, namespace):
    missing = HTTP.get(api_url(iceberg_server, catalog, f"namespaces/{namespace[0]}/tables/absent"),
                           timeout=10)
    bad_json = HTTP.post(api_url(iceberg_server, catalog, "namespaces"), data="{not json",
                             headers={"Content-Type": "application/json"}, timeout=10)

    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == 404
    assert bad_json.status_code == 400
    if not iceberg_server.external:
        assert missing.json()["error"]["type"] == "NoSuchTableException"


# ------------------------------------------------------------------------------------- counting


def test_request_counting(iceberg_server, catalog, namespace):
    local_only(iceberg_server)
    iceberg_server.reset_request_count()

    catalog.load_namespace_properties(namespace)
    catalog.list_tables(namespace)

    assert iceberg_server.requests_served() == 2
    assert iceberg_server.requests_served() == 2  # reading the counter is not counted
    assert iceberg_server.extra["requests_by_route"]() == {
        "GET /v1/{prefix}/namespaces/{namespace}": 1,
        "GET /v1/{prefix}/namespaces/{namespace}/tables": 1,
    }
    iceberg_server.reset_request_count()
    assert iceberg_server.requests_served() == 0


# ------------------------------------------------------------------------------------- auth


@pytest.fixture(scope="module")
def secured_server(iceberg_server, tmp_path_factory) -> Iterator[RunningServer]:
    """A second instance that requires a bearer token: TOKEN, or one issued for CREDENTIAL."""
    local_only(iceberg_server)
    server = iceberg_rest.start(tmp_path_factory.mktemp("iceberg_secured"), token=TOKEN,
                                credential=CREDENTIAL)
    yield server
    server.stop()


def test_auth_rejects_requests_without_a_valid_token(secured_server):
    with pytest.raises(UnauthorizedError):
        connect(secured_server)
    with pytest.raises(UnauthorizedError):
        connect(secured_server, token="wrong")
    with pytest.raises(OAuthError, match="invalid_client"):
        connect(secured_server, credential="lance-sync-client:wrong")


def test_auth_accepts_the_static_token_and_client_credentials(secured_server):
    by_token = connect(secured_server, token=TOKEN)
    by_credential = connect(secured_server, credential=CREDENTIAL)

    by_token.create_namespace(("secured",))
    assert by_credential.list_namespaces() == [("secured",)]


def test_default_server_accepts_requests_with_or_without_a_token(iceberg_server, namespace):
    local_only(iceberg_server)
    with_token = connect(iceberg_server, token="any-token")
    with_credential = connect(iceberg_server, credential="any-client:any-secret")

    assert namespace in with_token.list_namespaces()
    assert namespace in with_credential.list_namespaces()


# ------------------------------------------------------------------------------------- JDBC catalog


@pytest.fixture(scope="module")
def jdbc_server(iceberg_server, tmp_path_factory) -> Iterator[RunningServer]:
    local_only(iceberg_server)
    if not iceberg_rest.sqlite_jdbc_available():
        pytest.skip("needs the Debian package libxerial-sqlite-jdbc-java")
    server = iceberg_rest.start(tmp_path_factory.mktemp("iceberg_jdbc"), catalog="jdbc")
    yield server
    server.stop()


def test_jdbc_catalog_writes_metadata_at_the_table_location(jdbc_server, tmp_path):
    catalog = connect(jdbc_server)
    catalog.create_namespace(("files",))
    location = tmp_path / "orders.lance"

    table = catalog.create_table(("files", "orders"), DUMMY_SCHEMA, location=location.as_uri())

    metadata = Path(table.metadata_location.removeprefix("file:"))
    assert metadata.parent == location / "metadata"
    assert metadata.is_file()


def test_jdbc_catalog_splits_namespace_names_at_dots(jdbc_server):
    """Upstream JdbcCatalog stores a namespace as its levels joined by '.': documented, not fixed."""
    catalog = connect(jdbc_server)
    catalog.create_namespace(("dotted.name",))

    assert ("dotted",) in catalog.list_namespaces()
    assert ("dotted.name",) not in catalog.list_namespaces()


# ------------------------------------------------------------------------------------- processes


def test_server_exits_when_the_process_that_started_it_dies(iceberg_server, tmp_path):
    local_only(iceberg_server)
    script = ("import os, sys; from pathlib import Path; from tests.servers import iceberg_rest; "
              "server = iceberg_rest.start(Path(sys.argv[1])); "
              "print(server.extra['pid'], flush=True); os._exit(0)")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120, check=True)
    pid = int(result.stdout.split()[-1])

    wait_until(lambda: not is_running(pid), timeout=30, what=f"exit of orphaned server {pid}")
