"""Unity grants beyond the shared suite (tests/conformance/test_grants.py): the catalog level,
refused principals and privileges, what is sent, retries, error codes, bad answers, and a
server with authorization off. Against the project's UC OSS test server, read back with
unitycatalog-client; bad answers from a scripted server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lance_namespace import CreateNamespaceRequest
from lance_namespace.errors import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    TableNotFoundError,
)
from unitycatalog.client import GrantsApi, SchemasApi, SecurableType, TablesApi

from lance_sync.drivers.support.http import HttpFailure
from lance_sync.drivers.support.retry import BadAnswerError, is_transient
from lance_sync.drivers.unity.driver import UnityNamespace
from tests.conformance.harness_unity import ensure_catalog, run_sdk
from tests.servers import unity
from tests.servers.base import RunningServer
from tests.support.scripted_http import API, HTML, UNITY_ROUTES, ScriptedServer, cut, js
from tests.support.unity_driver import declare, make_driver, unique

NOBODY = "nobody-at-all@example.com"


def new_user(server: RunningServer) -> str:
    email = f"{unique('grantee')}@example.com"
    unity.create_user(server, email)
    return email


def sdk_grants(server: RunningServer, kind: SecurableType, name: str) -> dict[str, set[str]]:
    listed = run_sdk(server, lambda client: GrantsApi(client).get(kind, name))
    return {item.principal: {p.value for p in item.privileges} for item in listed.privilege_assignments}


pytestmark = pytest.mark.servers


@pytest.fixture
def local(unity_server: RunningServer) -> RunningServer:
    """The session's server; users are made without an external server's admin token here."""
    if unity_server.external:
        pytest.skip("makes users on the project's server")
    return unity_server


@pytest.fixture
def own_server(local: RunningServer) -> Iterator[RunningServer]:
    """For tests that count requests or inject faults; faults cleared after."""
    local.reset_request_count()
    yield local
    unity.clear_faults(local)


@pytest.fixture(scope="module")
def catalog(unity_server: RunningServer) -> str:
    name = unique("grants")
    ensure_catalog(unity_server, name)
    return name


@pytest.fixture
def driver(unity_server: RunningServer, catalog: str, tmp_path: Path) -> UnityNamespace:
    return make_driver(unity_server, catalog, tmp_path)


@pytest.fixture
def schema(driver: UnityNamespace, catalog: str) -> tuple[str, str]:
    namespace = (catalog, unique("s"))
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    return namespace


@pytest.fixture
def scripted() -> Iterator[Callable[[dict], ScriptedServer]]:
    started: list[ScriptedServer] = []

    def start(routes: dict) -> ScriptedServer:
        started.append(ScriptedServer(routes))
        return started[-1]

    yield start
    for server in started:
        server.close()


def test_catalog_grants(driver: UnityNamespace, catalog: str, local: RunningServer):
    """The planner reads a catalog's grants to check USE CATALOG: (catalog,) is UC's catalog."""
    alice = new_user(local)
    driver.change_grants("namespace", (catalog,), alice, frozenset({"use_catalog", "CREATE SCHEMA"}), frozenset())
    assert driver.list_grants("namespace", (catalog,))[alice] == {"USE CATALOG", "CREATE SCHEMA"}
    assert sdk_grants(local, SecurableType.CATALOG, catalog)[alice] == {"USE CATALOG", "CREATE SCHEMA"}
    driver.change_grants("namespace", (catalog,), alice, frozenset(), frozenset({"CREATE SCHEMA"}))
    assert sdk_grants(local, SecurableType.CATALOG, catalog)[alice] == {"USE CATALOG"}


def test_an_unknown_principal_is_invalid_input(driver: UnityNamespace, schema: tuple[str, str],
                                               local: RunningServer):
    with pytest.raises(InvalidInputError, match=NOBODY):
        driver.change_grants("namespace", schema, NOBODY, frozenset({"USE SCHEMA"}), frozenset())
    assert NOBODY not in driver.list_grants("namespace", schema)


@pytest.mark.parametrize("kind, level, privilege", [
    ("namespace", 2, "OWNER"), ("namespace", 2, "USE CATALOG"), ("table", 3, "USE SCHEMA"),
    ("table", 3, "FROBNICATE"), ("namespace", 1, "CREATE CATALOG"),
])
def test_a_privilege_the_securable_cannot_take_is_refused_before_sending(
        driver: UnityNamespace, schema: tuple[str, str], own_server: RunningServer, tmp_path: Path,
        kind, level, privilege):
    ids = {1: schema[:1], 2: schema, 3: (*schema, "t")}
    if level == 3:
        declare(driver, ids[3], tmp_path / "t")
    alice = new_user(own_server)
    own_server.reset_request_count()
    with pytest.raises(InvalidInputError, match=privilege):
        driver.change_grants(kind, ids[level], alice, frozenset({privilege}), frozenset())
    assert own_server.requests_served() == 0


def test_only_what_differs_is_sent(driver: UnityNamespace, schema: tuple[str, str], own_server: RunningServer):
    alice = new_user(own_server)
    driver.change_grants("namespace", schema, alice, frozenset({"USE SCHEMA"}), frozenset())
    own_server.reset_request_count()
    driver.change_grants("namespace", schema, alice, frozenset({"USE SCHEMA"}), frozenset({"CREATE TABLE"}))
    assert own_server.requests_served() == 1  # the re-read: nothing to change
    driver.change_grants("namespace", schema, alice, frozenset({"USE SCHEMA", "CREATE TABLE"}), frozenset())
    assert own_server.requests_served() == 3
    assert driver.list_grants("namespace", schema)[alice] == {"USE SCHEMA", "CREATE TABLE"}


def test_a_patch_is_sent_again_after_a_503(driver: UnityNamespace, schema: tuple[str, str],
                                           own_server: RunningServer):
    alice = new_user(own_server)
    sleeps: list[float] = []
    driver.client.http.sleep = sleeps.append
    unity.inject_faults(own_server, 503, method="PATCH")
    driver.change_grants("namespace", schema, alice, frozenset({"USE SCHEMA"}), frozenset())
    assert len(sleeps) == 1
    assert sdk_grants(own_server, SecurableType.SCHEMA, ".".join(schema)) == {alice: {"USE SCHEMA"}}


def test_missing_securables(driver: UnityNamespace, catalog: str, schema: tuple[str, str], local: RunningServer):
    alice = new_user(local)
    with pytest.raises(TableNotFoundError):  # UC answers SCHEMA_NOT_FOUND
        driver.list_grants("table", (catalog, unique("missing"), "t"))
    with pytest.raises(TableNotFoundError):
        driver.change_grants("table", (catalog, unique("missing"), "t"), alice, frozenset({"SELECT"}), frozenset())
    with pytest.raises(TableNotFoundError):
        driver.list_grants("table", ("other_catalog", *schema[1:], "t"))
    with pytest.raises(NamespaceNotFoundError):
        driver.list_grants("namespace", ("other_catalog", schema[1]))
    with pytest.raises(NamespaceNotFoundError):
        driver.change_grants("namespace", (catalog, unique("missing")), alice, frozenset({"USE SCHEMA"}),
                             frozenset())
    with pytest.raises(InvalidInputError):
        driver.list_grants("namespace", ())


@pytest.mark.parametrize("path, message, error", [
    ("/permissions/schema/c.s", "User not found: x@example.com", InvalidInputError),
    ("/permissions/table/c.s.t", "User not found: x@example.com", InvalidInputError),
    ("/permissions/table/c.s.t", "Table not found: c.s.t", TableNotFoundError),
    ("/permissions/schema/c.s", "Schema not found: c.s", NamespaceNotFoundError),
    ("/permissions/catalog/c", "Catalog not found: c", NamespaceNotFoundError),
])
def test_a_bare_not_found_of_the_permissions_api(path: str, message: str, error):
    """UC before 0.5 answers NOT_FOUND for every missing thing: the message or path tells which."""
    driver = UnityNamespace(endpoint="http://uc:8080", catalog="c")
    failure = HttpFailure("PATCH", driver.client.http.base_url + path, 404, {"error_code": "NOT_FOUND", "message": message})
    assert type(driver.client.translate(failure)) is error


def test_with_authorization_off_nothing_is_kept(tmp_path: Path, unity_server: RunningServer):
    """A stock UC accepts grants and keeps none: the driver reports what it reads (nothing)."""
    if unity_server.external:
        pytest.skip("starts a server of its own")
    server = unity.start(tmp_path / "server", authorization=False)
    try:
        ensure_catalog(server, "open")
        alice = new_user(server)
        driver = make_driver(server, "open", tmp_path)
        driver.change_grants("namespace", ("open",), alice, frozenset({"USE CATALOG"}), frozenset())
        assert driver.list_grants("namespace", ("open",)) == {}
    finally:
        server.stop()


# --- bad answers: an error naming the call, after the retries; never "no grants" -------------------

GRANTS_ROUTE = f"GET {API}/permissions/schema/main.s"
GOOD = {"privilege_assignments": [{"principal": "a@example.com", "privileges": ["USE SCHEMA"]}]}
BAD = {
    "hello world": js({"hello": "world"}),
    "a list": js([GOOD]),
    "privileges as text": js({"privilege_assignments": [{"principal": "a@example.com", "privileges": "SELECT"}]}),
    "no principal": js({"privilege_assignments": [{"privileges": ["SELECT"]}]}),
    "an HTML page": HTML,
    "a body cut short": cut(GOOD),
}


@pytest.mark.parametrize("bad", list(BAD), ids=lambda bad: bad.replace(" ", "_"))
def test_a_bad_grants_answer_is_an_error(scripted, tmp_path: Path, bad: str):
    server = scripted({**UNITY_ROUTES, GRANTS_ROUTE: js(GOOD)})
    driver = UnityNamespace(endpoint=server.endpoint, catalog="main", root=str(tmp_path), max_retries=2)
    driver.client.http.sleep = lambda seconds: None
    assert driver.list_grants("namespace", ("main", "s")) == {"a@example.com": {"USE SCHEMA"}}
    server.script(GRANTS_ROUTE, BAD[bad])
    with pytest.raises(LanceNamespaceError) as raised:
        driver.list_grants("namespace", ("main", "s"))
    assert isinstance(raised.value, BadAnswerError) and is_transient(raised.value)
    assert str(raised.value).startswith(f"unity: {GRANTS_ROUTE} answered ")
    assert server.seen[GRANTS_ROUTE] == 1 + 3


def test_grants_answer_checked_on_a_patch_too(scripted, tmp_path: Path):
    patch = f"PATCH {API}/permissions/schema/main.s"
    server = scripted({**UNITY_ROUTES, GRANTS_ROUTE: js({"privilege_assignments": []}), patch: js({"oops": 1})})
    driver = UnityNamespace(endpoint=server.endpoint, catalog="main", root=str(tmp_path), max_retries=0)
    with pytest.raises(BadAnswerError, match="PATCH"):
        driver.change_grants("namespace", ("main", "s"), "a@example.com", frozenset({"SELECT"}), frozenset())
    assert json.loads(server.bodies[-1]) == {
        "changes": [{"principal": "a@example.com", "add": ["SELECT"], "remove": []}]}


def test_a_tables_record_of_managed_principals_is_a_property_of_its_schema(
        driver: UnityNamespace, schema: tuple[str, str], local: RunningServer, tmp_path: Path):
    """UC tables cannot change in place: the record of the principals lance-sync manages on a
    table is its schema's property `lance_sync.grants.<table>`, beside the schema's own record;
    read back with the official client, the table itself untouched. Fails on the code before
    records (602d6a3)."""
    alice = new_user(local)
    table = (*schema, unique("t"))
    declare(driver, table, tmp_path / "t.lance")
    before = run_sdk(local, lambda client: TablesApi(client).get_table(".".join(table)))
    driver.write_grants_record("table", table, frozenset({alice}))
    driver.write_grants_record("namespace", schema, frozenset())
    properties = run_sdk(local, lambda client: SchemasApi(client).get_schema(".".join(schema))).properties
    assert properties == {"lance_sync.grants": "[]", f"lance_sync.grants.{table[-1]}": json.dumps([alice])}
    after = run_sdk(local, lambda client: TablesApi(client).get_table(".".join(table)))
    assert after.properties == before.properties and after.table_id == before.table_id
    assert driver.grants_record("table", table) == {alice}
    assert driver.grants_record("namespace", schema) == frozenset()
