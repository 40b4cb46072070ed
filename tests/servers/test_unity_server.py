"""Smoke tests of the Unity Catalog test server, driven by the official SDK (unitycatalog-client).

Every SDK call goes through `checked`, which fails when the raw response does
not round-trip through the SDK's pydantic models (an unknown field, a wrong
type, an enum value the SDK lacks). They also pass against a real UC OSS
server (0.6 or later): set LANCE_SYNC_TEST_UNITY_ENDPOINT, and
LANCE_SYNC_TEST_UNITY_TOKEN if it wants a bearer token; checks of test-only
features (request counting, fault injection) are then skipped.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import requests
from pydantic import BaseModel
from unitycatalog.client import (
    ApiClient,
    CatalogsApi,
    ColumnInfo,
    ColumnTypeName,
    Configuration,
    CreateCatalog,
    CreateSchema,
    CreateTable,
    DataSourceFormat,
    Dependency,
    DependencyList,
    GrantsApi,
    PermissionsChange,
    Privilege,
    SchemasApi,
    SecurableType,
    TableDependency,
    TablesApi,
    TableType,
    UpdateCatalog,
    UpdatePermissions,
    UpdateSchema,
)
from unitycatalog.client.exceptions import ApiException

from tests.servers import unity
from tests.servers.base import RunningServer
from tests.servers.unity import EXTERNAL_TOKEN, raw
from tests.servers.unity_server.app import API_ROOT

pytestmark = pytest.mark.servers

T = TypeVar("T")


@dataclass
class Uc:
    """The SDK APIs the tests use, sharing one client."""

    catalogs: CatalogsApi
    schemas: SchemasApi
    tables: TablesApi
    grants: GrantsApi


class Sdk:
    """Runs SDK scenarios on one event loop, with one client per (server, token).

    A new SDK client costs about 60 ms (it loads the system CA store), so the
    module shares them.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._clients: dict[tuple[str, str | None], ApiClient] = {}

    def run(self, server: RunningServer, scenario: Callable[[Uc], Awaitable[T]], token: str | None = None) -> T:
        if token is None and server.external:
            token = EXTERNAL_TOKEN
        return self._loop.run_until_complete(scenario(self._apis(server, token)))

    def close(self) -> None:
        for client in self._clients.values():
            self._loop.run_until_complete(client.close())
        self._loop.close()

    def _apis(self, server: RunningServer, token: str | None) -> Uc:
        key = (server.endpoint, token)
        if key not in self._clients:
            configuration = Configuration(host=server.endpoint + API_ROOT)
            configuration.connection_pool_maxsize = 8
            headers = {} if token is None else {"header_name": "Authorization",
                                                "header_value": f"Bearer {token}"}
            self._clients[key] = self._loop.run_until_complete(_new_client(configuration, headers))
        client = self._clients[key]
        return Uc(CatalogsApi(client), SchemasApi(client), TablesApi(client), GrantsApi(client))


async def _new_client(configuration: Configuration, headers: dict[str, str]) -> ApiClient:
    """Built inside the loop, where its aiohttp session must live."""
    return ApiClient(configuration, **headers)


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


async def checked(call: Awaitable[Any]) -> Any:
    """The data of a `*_with_http_info` call, after checking that its raw JSON equals the model."""
    response = await call
    assert response.status_code == 200
    if isinstance(response.data, BaseModel):
        assert without_nulls(json.loads(response.raw_data)) == response.data.to_dict()
    return response.data


def assert_error(status: int, body: str, expected_status: int, error_code: str) -> str:
    """Check a UC error answer and return its message."""
    payload = json.loads(body)
    assert (status, payload["error_code"]) == (expected_status, error_code), payload
    assert payload["details"][0]["reason"] == error_code
    assert isinstance(payload["message"], str)
    return payload["message"]


async def expect_error(call: Awaitable[Any], status: int, error_code: str) -> str:
    with pytest.raises(ApiException) as raised:
        await call
    return assert_error(raised.value.status, raised.value.body, status, error_code)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def column(name: str, type_name: ColumnTypeName, type_text: str, spark_type: str, position: int,
           nullable: bool = True) -> ColumnInfo:
    type_json = json.dumps({"name": name, "type": spark_type, "nullable": nullable, "metadata": {}})
    return ColumnInfo(name=name, type_name=type_name, type_text=type_text, type_json=type_json,
                      position=position, nullable=nullable)


COLUMNS = [
    column("id", ColumnTypeName.LONG, "BIGINT", "long", 0, nullable=False),
    column("amount", ColumnTypeName.DECIMAL, "decimal(10,2)", "decimal(10,2)", 1),
    column("note", ColumnTypeName.STRING, "string", "string", 2),
]


def lance_table(catalog: str, schema: str, table: str, **overrides: Any) -> CreateTable:
    """An EXTERNAL TEXT table declared as Lance, as lance-sync declares it."""
    fields: dict[str, Any] = {
        "name": table, "catalog_name": catalog, "schema_name": schema,
        "table_type": TableType.EXTERNAL, "data_source_format": DataSourceFormat.TEXT,
        "columns": COLUMNS, "storage_location": f"file:///tmp/lance-sync-smoke/{table}.lance",
        "properties": {"table_type": "lance"},
    }
    fields.update(overrides)
    return CreateTable(**fields)


async def all_pages(list_call: Callable[..., Awaitable[Any]], items: str, **kwargs: Any) -> list[list[str]]:
    """Names on each page, following next_page_token to the end."""
    pages, token = [], None
    while True:
        page = await checked(list_call(page_token=token, **kwargs))
        pages.append([item.name for item in getattr(page, items) or []])
        token = page.next_page_token
        if not token:
            return pages


def skip_if_external(server: RunningServer) -> None:
    if server.external:
        pytest.skip("test-only feature of the project's server")


@pytest.fixture(scope="module")
def sdk() -> Iterator[Sdk]:
    runner = Sdk()
    yield runner
    runner.close()


@pytest.fixture
def catalog(sdk: Sdk, unity_server: RunningServer) -> Iterator[str]:
    name = unique("lance_sync_smoke")
    sdk.run(unity_server, lambda uc: checked(uc.catalogs.create_catalog_with_http_info(CreateCatalog(name=name))))
    yield name
    sdk.run(unity_server, lambda uc: uc.catalogs.delete_catalog(name, force=True))


@pytest.fixture
def schema(sdk: Sdk, unity_server: RunningServer, catalog: str) -> str:
    sdk.run(unity_server, lambda uc: checked(
        uc.schemas.create_schema_with_http_info(CreateSchema(name="sales", catalog_name=catalog))))
    return "sales"


def test_catalog_lifecycle(sdk: Sdk, unity_server: RunningServer) -> None:
    prefix = unique("lance_sync_cat")

    async def scenario(uc: Uc) -> None:
        names = [f"{prefix}_{index}" for index in range(3)]
        for name in names:
            await checked(uc.catalogs.create_catalog_with_http_info(
                CreateCatalog(name=name, comment="smoke", properties={"team": "a", "tier": "1"})))
        await expect_error(uc.catalogs.create_catalog(CreateCatalog(name=names[0])),
                           400, "CATALOG_ALREADY_EXISTS")
        listed = [name for page in await all_pages(uc.catalogs.list_catalogs_with_http_info, "catalogs",
                                                   max_results=1) for name in page]
        assert [name for name in listed if name.startswith(prefix)] == names
        assert listed == sorted(listed)

        got = await checked(uc.catalogs.get_catalog_with_http_info(names[0]))
        assert (got.comment, got.properties) == ("smoke", {"team": "a", "tier": "1"})
        uuid.UUID(got.id)
        updated = await checked(uc.catalogs.update_catalog_with_http_info(
            names[0], UpdateCatalog(new_name=names[0] + "_x", properties={"team": "b"})))
        assert (updated.name, updated.properties, updated.comment) == (names[0] + "_x", {"team": "b"}, "smoke")
        await expect_error(uc.catalogs.get_catalog(names[0]), 404, "CATALOG_NOT_FOUND")

        await checked(uc.schemas.create_schema_with_http_info(CreateSchema(name="s", catalog_name=names[1])))
        message = await expect_error(uc.catalogs.delete_catalog(names[1]), 400, "FAILED_PRECONDITION")
        assert "force" in message
        for name in (names[0] + "_x", *names[1:]):
            await checked(uc.catalogs.delete_catalog_with_http_info(name, force=True))
        await expect_error(uc.schemas.get_schema(f"{names[1]}.s"), 404, "CATALOG_NOT_FOUND")

    sdk.run(unity_server, scenario)


def test_schema_create_and_get(sdk: Sdk, unity_server: RunningServer, catalog: str) -> None:
    async def scenario(uc: Uc) -> None:
        created = await checked(uc.schemas.create_schema_with_http_info(CreateSchema(
            name="orders", catalog_name=catalog, comment="order data", properties={"team": "sales"})))
        assert (created.full_name, created.catalog_name, created.properties) == (
            f"{catalog}.orders", catalog, {"team": "sales"})
        uuid.UUID(created.schema_id)
        assert isinstance(created.created_at, int) and created.created_at == created.updated_at
        if not unity_server.external:
            assert (created.owner, created.created_by) == (None, None)  # UC without auth
        got = await checked(uc.schemas.get_schema_with_http_info(f"{catalog}.orders"))
        assert got == created

        await expect_error(uc.schemas.create_schema(CreateSchema(name="orders", catalog_name=catalog)),
                           400, "SCHEMA_ALREADY_EXISTS")
        await expect_error(uc.schemas.create_schema(CreateSchema(name="x", catalog_name=catalog + "_no")),
                           404, "CATALOG_NOT_FOUND")
        await expect_error(uc.schemas.get_schema(f"{catalog}.missing"), 404, "SCHEMA_NOT_FOUND")

    sdk.run(unity_server, scenario)


def test_schema_listing_pages(sdk: Sdk, unity_server: RunningServer, catalog: str) -> None:
    names = [f"s{index}" for index in range(7)]

    async def scenario(uc: Uc) -> None:
        for name in reversed(names):
            await checked(uc.schemas.create_schema_with_http_info(CreateSchema(name=name, catalog_name=catalog)))
        list_schemas = uc.schemas.list_schemas_with_http_info
        assert await all_pages(list_schemas, "schemas", catalog_name=catalog, max_results=3) == [
            names[0:3], names[3:6], names[6:]]
        # A full page always hands out a token, even when nothing follows it.
        assert await all_pages(list_schemas, "schemas", catalog_name=catalog, max_results=7) == [names, []]
        assert await all_pages(list_schemas, "schemas", catalog_name=catalog, max_results=0) == [names]
        await expect_error(uc.schemas.list_schemas(catalog_name=catalog, max_results=-1),
                           400, "INVALID_ARGUMENT")
        await expect_error(uc.schemas.list_schemas(catalog_name=catalog + "_no"), 404, "CATALOG_NOT_FOUND")

    sdk.run(unity_server, scenario)


def test_schema_patch_replaces_properties(sdk: Sdk, unity_server: RunningServer, catalog: str) -> None:
    full_name = f"{catalog}.orders"

    async def scenario(uc: Uc) -> None:
        created = await checked(uc.schemas.create_schema_with_http_info(CreateSchema(
            name="orders", catalog_name=catalog, comment="v1", properties={"a": "1", "b": "2"})))
        patch = uc.schemas.update_schema_with_http_info
        replaced = await checked(patch(full_name, UpdateSchema(properties={"b": "3", "c": "4"})))
        assert (replaced.properties, replaced.comment) == ({"b": "3", "c": "4"}, "v1")
        assert replaced.updated_at >= created.created_at
        # An empty map is ignored: PATCH cannot remove the last property.
        assert (await checked(patch(full_name, UpdateSchema(properties={})))).properties == {"b": "3", "c": "4"}
        commented = await checked(patch(full_name, UpdateSchema(comment="v2")))
        assert (commented.properties, commented.comment) == ({"b": "3", "c": "4"}, "v2")

        renamed = await checked(patch(full_name, UpdateSchema(new_name="orders_v2")))
        assert (renamed.name, renamed.full_name, renamed.schema_id) == (
            "orders_v2", f"{catalog}.orders_v2", created.schema_id)
        await expect_error(uc.schemas.get_schema(full_name), 404, "SCHEMA_NOT_FOUND")
        await expect_error(uc.schemas.update_schema(f"{catalog}.orders_v2", UpdateSchema(new_name="orders_v2")),
                           400, "SCHEMA_ALREADY_EXISTS")
        await expect_error(uc.schemas.update_schema(full_name, UpdateSchema(comment="x")),
                           404, "SCHEMA_NOT_FOUND")

    sdk.run(unity_server, scenario)


def test_schema_delete_needs_force_when_not_empty(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    async def scenario(uc: Uc) -> None:
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, "orders")))
        message = await expect_error(uc.schemas.delete_schema(f"{catalog}.{schema}"), 400, "FAILED_PRECONDITION")
        assert message == "Cannot delete schema with tables"
        await checked(uc.tables.get_table_with_http_info(f"{catalog}.{schema}.orders"))
        await checked(uc.schemas.delete_schema_with_http_info(f"{catalog}.{schema}", force=True))
        await expect_error(uc.schemas.get_schema(f"{catalog}.{schema}"), 404, "SCHEMA_NOT_FOUND")
        await expect_error(uc.tables.get_table(f"{catalog}.{schema}.orders"), 404, "SCHEMA_NOT_FOUND")
        await checked(uc.schemas.create_schema_with_http_info(CreateSchema(name="empty", catalog_name=catalog)))
        await checked(uc.schemas.delete_schema_with_http_info(f"{catalog}.empty"))

    sdk.run(unity_server, scenario)


def test_external_table_round_trip(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    full_name = f"{catalog}.{schema}.orders"

    async def scenario(uc: Uc) -> None:
        request = lance_table(catalog, schema, "orders", comment="orders as Lance",
                              storage_location="file:/tmp/lance-sync-smoke//orders.lance/")
        created = await checked(uc.tables.create_table_with_http_info(request))
        assert created.storage_location == "file:///tmp/lance-sync-smoke/orders.lance"
        assert [c.type_text for c in created.columns] == ["bigint", "decimal(10,2)", "string"]
        assert [(c.name, c.type_name, c.type_json, c.position, c.nullable) for c in created.columns] == [
            (c.name, c.type_name, c.type_json, c.position, c.nullable) for c in COLUMNS]
        assert (created.table_type, created.data_source_format) == (TableType.EXTERNAL, DataSourceFormat.TEXT)
        assert (created.properties, created.comment) == ({"table_type": "lance"}, "orders as Lance")
        uuid.UUID(created.table_id)

        assert await checked(uc.tables.get_table_with_http_info(full_name)) == created
        listed = await checked(uc.tables.list_tables_with_http_info(catalog_name=catalog, schema_name=schema))
        assert listed.tables == [created] and listed.next_page_token is None

        await checked(uc.tables.delete_table_with_http_info(full_name))
        await expect_error(uc.tables.get_table(full_name), 404, "TABLE_NOT_FOUND")
        await expect_error(uc.tables.delete_table(full_name), 404, "TABLE_NOT_FOUND")

    sdk.run(unity_server, scenario)


def test_table_listing_pages(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    names = [f"t{index}" for index in range(7)]

    async def scenario(uc: Uc) -> None:
        for name in reversed(names):
            await checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, name)))
        assert await all_pages(uc.tables.list_tables_with_http_info, "tables", catalog_name=catalog,
                               schema_name=schema, max_results=3) == [names[0:3], names[3:6], names[6:]]
        await expect_error(uc.tables.list_tables(catalog_name=catalog, schema_name="missing"),
                           404, "SCHEMA_NOT_FOUND")

    sdk.run(unity_server, scenario)


@pytest.mark.parametrize(("overrides", "status", "error_code", "in_message"), [
    ({"name": "has.dot"}, 400, "INVALID_ARGUMENT", "Name cannot contain a period"),
    ({"name": "has space"}, 400, "INVALID_ARGUMENT", "Name cannot contain a period"),
    ({"schema_name": "missing"}, 404, "SCHEMA_NOT_FOUND", "missing"),
    ({"storage_location": "s3://bucket"}, 400, "INVALID_ARGUMENT", "non-empty path prefix"),
    ({"storage_location": "http://host/x"}, 400, "INVALID_ARGUMENT", "Unsupported URI scheme: http"),
    ({"storage_location": "/tmp/has space"}, 400, "INVALID_ARGUMENT", "Unsupported path"),
    ({"columns": [ColumnInfo(name="id", type_name=ColumnTypeName.INT, type_text="int", position=0)]},
     400, "INVALID_ARGUMENT", "Invalid type_json for column id"),
    ({"columns": [column("id", ColumnTypeName.INT, "int", "integer", 0).model_copy(update={"name": "other"})]},
     400, "INVALID_ARGUMENT", "does not match column name other"),
    ({"table_type": TableType.MANAGED}, 400, "INVALID_ARGUMENT", "only supported for Delta"),
    # UC OSS never checks that an EXTERNAL table has a location: its JVM fails on null.
    ({"storage_location": None}, 500, "INTERNAL", "storageLocation"),
])
def test_table_create_is_validated(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str,
                                   overrides: dict, status: int, error_code: str, in_message: str) -> None:
    async def scenario(uc: Uc) -> str:
        return await expect_error(uc.tables.create_table(lance_table(catalog, schema, "t", **overrides)),
                                  status, error_code)

    assert in_message in sdk.run(unity_server, scenario)


def test_table_create_refuses_duplicates_and_unknown_enums(sdk: Sdk, unity_server: RunningServer, catalog: str,
                                                          schema: str) -> None:
    async def scenario(uc: Uc) -> None:
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, "orders")))
        message = await expect_error(uc.tables.create_table(lance_table(catalog, schema, "orders")),
                                     400, "TABLE_ALREADY_EXISTS")
        assert message == f"Table already exists: {catalog}.{schema}.orders"

    sdk.run(unity_server, scenario)
    body = lance_table(catalog, schema, "lance_format").to_dict()
    for field in ("table_type", "data_source_format"):
        answer = raw(unity_server, "POST", "/tables", json={**body, field: "LANCE"})
        assert_error(answer.status_code, answer.text, 400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(("location", "stored"), [
    ("s3://bucket/lake//orders.lance/", "s3://bucket/lake/orders.lance"),
    ("file:/tmp/lake/./orders.lance", "file:///tmp/lake/orders.lance"),
    ("/tmp/lake/old/../orders.lance", "file:///tmp/lake/orders.lance"),
    ("s3://bucket/lake/with%20space", "s3://bucket/lake/with%20space"),
])
def test_storage_locations_are_normalized(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str,
                                          location: str, stored: str) -> None:
    async def scenario(uc: Uc) -> tuple[str, str]:
        created = await checked(uc.tables.create_table_with_http_info(
            lance_table(catalog, schema, "t", storage_location=location)))
        got = await checked(uc.tables.get_table_with_http_info(f"{catalog}.{schema}.t"))
        return created.storage_location, got.storage_location

    assert sdk.run(unity_server, scenario) == (stored, stored)


def test_view_keeps_definition_and_dependencies(sdk: Sdk, unity_server: RunningServer, catalog: str,
                                                schema: str) -> None:
    def view(name: str, depends_on: str) -> CreateTable:
        dependency = Dependency(table=TableDependency(table_full_name=f"{catalog}.{schema}.{depends_on}"))
        return CreateTable(name=name, catalog_name=catalog, schema_name=schema, table_type=TableType.VIEW,
                           columns=[], view_definition=f"SELECT * FROM {depends_on}",
                           view_dependencies=DependencyList(dependencies=[dependency]))

    async def scenario(uc: Uc) -> None:
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, "orders")))
        created = await checked(uc.tables.create_table_with_http_info(view("recent", "orders")))
        assert (created.storage_location, created.view_definition) == (None, "SELECT * FROM orders")
        assert created.view_dependencies.dependencies[0].table.table_full_name == f"{catalog}.{schema}.orders"
        assert await checked(uc.tables.get_table_with_http_info(f"{catalog}.{schema}.recent")) == created
        await expect_error(uc.tables.create_table(view("broken", "missing")), 404, "NOT_FOUND")

    sdk.run(unity_server, scenario)


def test_values_wider_than_uc_database_columns_fail(sdk: Sdk, unity_server: RunningServer, catalog: str,
                                                    schema: str) -> None:
    """UC's database keeps property keys and values, and schema comments, in 255 characters."""
    async def scenario(uc: Uc) -> None:
        await checked(uc.tables.create_table_with_http_info(
            lance_table(catalog, schema, "fits", properties={"k" * 255: "v" * 255})))
        await expect_error(uc.tables.create_table(lance_table(catalog, schema, "wide", properties={"k": "v" * 256})),
                           500, "INTERNAL")
        await expect_error(uc.schemas.create_schema(CreateSchema(name="wide", catalog_name=catalog, comment="c" * 256)),
                           500, "INTERNAL")
        await expect_error(uc.tables.get_table(f"{catalog}.{schema}.wide"), 404, "TABLE_NOT_FOUND")

    sdk.run(unity_server, scenario)


@pytest.mark.parametrize(("full_name", "status", "error_code"), [
    ("{catalog}.has space", 404, "SCHEMA_NOT_FOUND"),
    ("{catalog}.schéma", 404, "SCHEMA_NOT_FOUND"),
    ("{catalog}.100%", 404, "SCHEMA_NOT_FOUND"),
    ("{catalog}.a.b", 400, "INVALID_ARGUMENT"),
    ("{catalog}", 400, "INVALID_ARGUMENT"),
])
def test_schema_full_names_are_decoded_then_split_on_dots(sdk: Sdk, unity_server: RunningServer, catalog: str,
                                                         full_name: str, status: int, error_code: str) -> None:
    name = full_name.format(catalog=catalog)

    async def scenario(uc: Uc) -> str:
        return await expect_error(uc.schemas.get_schema(name), status, error_code)

    message = sdk.run(unity_server, scenario)
    assert name in message


def test_names_outside_uc_rules_are_refused(sdk: Sdk, unity_server: RunningServer, catalog: str) -> None:
    async def scenario(uc: Uc) -> None:
        for name in ("has space", "dot.ted", "ünï", "per%cent", "slash/ed", "x" * 256):
            await expect_error(uc.schemas.create_schema(CreateSchema(name=name, catalog_name=catalog)),
                               400, "INVALID_ARGUMENT")
        accepted = await checked(uc.schemas.create_schema_with_http_info(
            CreateSchema(name="Mixed-Case_@1", catalog_name=catalog)))
        assert accepted.full_name == f"{catalog}.Mixed-Case_@1"
        await expect_error(uc.tables.get_table(f"{catalog}.Mixed-Case_@1"), 400, "INVALID_ARGUMENT")

    sdk.run(unity_server, scenario)


def test_tables_have_no_patch(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    sdk.run(unity_server, lambda uc: checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, "t"))))
    answer = raw(unity_server, "PATCH", f"/tables/{catalog}.{schema}.t", json={"comment": "x"})
    assert answer.status_code == 405
    assert raw(unity_server, "GET", "/no-such-resource").status_code == 404


def test_concurrent_table_creation(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    names = sorted(f"t{index:02d}" for index in range(40))

    async def scenario(uc: Uc) -> list[str]:
        await asyncio.gather(*(checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, name)))
                               for name in names))
        return [name for page in await all_pages(uc.tables.list_tables_with_http_info, "tables",
                                                 catalog_name=catalog, schema_name=schema) for name in page]

    assert sdk.run(unity_server, scenario) == names


def test_bearer_token_is_required_when_configured(sdk: Sdk, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    server = unity.start(tmp_path, token=token)
    try:
        for headers, message in (({}, "No authorization found."),
                                 ({"Authorization": "Bearer wrong"}, "Invalid access token."),
                                 ({"Authorization": token}, "No authorization found.")):
            answer = raw(server, "GET", "/catalogs", headers=headers)
            assert assert_error(answer.status_code, answer.text, 401, "UNAUTHENTICATED") == message

        async def scenario(uc: Uc) -> Any:
            return await checked(uc.catalogs.create_catalog_with_http_info(CreateCatalog(name="secured")))

        created = sdk.run(server, scenario, token=token)
        assert (created.owner, created.created_by) == ("admin", "admin")
        # UC's control API (SCIM users) wants the token too.
        with pytest.raises(urllib.error.HTTPError) as refused:
            unity.create_user(server, "someone@example.com")
        assert refused.value.code == 401
        assert unity.create_user(server, "someone@example.com", token=token)["userName"] == "someone@example.com"
    finally:
        server.stop()


def test_injected_faults(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    skip_if_external(unity_server)
    unity.inject_faults(unity_server, 503, count=2, retry_after=1)
    for _ in range(2):
        answer = raw(unity_server, "GET", f"/catalogs/{catalog}")
        assert_error(answer.status_code, answer.text, 503, "UNAVAILABLE")
        assert answer.headers["Retry-After"] == "1"
    assert raw(unity_server, "GET", f"/catalogs/{catalog}").status_code == 200

    unity.inject_faults(unity_server, 429, method="GET", path_prefix="/tables")
    assert raw(unity_server, "GET", f"/schemas/{catalog}.{schema}").status_code == 200

    async def scenario(uc: Uc) -> None:
        await expect_error(uc.tables.list_tables(catalog_name=catalog, schema_name=schema),
                           429, "RESOURCE_EXHAUSTED")
        await checked(uc.tables.list_tables_with_http_info(catalog_name=catalog, schema_name=schema))

    sdk.run(unity_server, scenario)
    unity.inject_faults(unity_server, 500, count=5)
    unity.clear_faults(unity_server)
    assert raw(unity_server, "GET", f"/catalogs/{catalog}").status_code == 200


def test_request_counting(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    skip_if_external(unity_server)
    unity_server.reset_request_count()

    async def scenario(uc: Uc) -> None:
        await checked(uc.schemas.get_schema_with_http_info(f"{catalog}.{schema}"))
        await checked(uc.tables.list_tables_with_http_info(catalog_name=catalog, schema_name=schema))
        await expect_error(uc.tables.get_table(f"{catalog}.{schema}.missing"), 404, "TABLE_NOT_FOUND")

    sdk.run(unity_server, scenario)
    assert unity_server.requests_served() == 3
    assert unity_server.requests_served() == 3  # reading the count is not counted


# Grants: UC's permissions API, with principals made as users through UC's SCIM API.

def new_user(server: RunningServer) -> str:
    email = f"{unique('user')}@example.com"
    unity.create_user(server, email, token=EXTERNAL_TOKEN if server.external else None)
    return email


def change(principal: str, add: tuple[Privilege, ...] = (), remove: tuple[Privilege, ...] = ()) -> PermissionsChange:
    return PermissionsChange(principal=principal, add=list(add), remove=list(remove))


async def grants_of(uc: Uc, kind: SecurableType, name: str, principal: str | None = None) -> dict[str, list[str]]:
    listed = await checked(uc.grants.get_with_http_info(kind, name, principal=principal))
    return {item.principal: [privilege.value for privilege in item.privileges]
            for item in listed.privilege_assignments}


async def patch_grants(uc: Uc, kind: SecurableType, name: str, *changes: PermissionsChange) -> dict[str, list[str]]:
    answer = await checked(uc.grants.update_with_http_info(kind, name, UpdatePermissions(changes=list(changes))))
    return {item.principal: [privilege.value for privilege in item.privileges]
            for item in answer.privilege_assignments}


def test_grants_on_catalog_schema_and_table(sdk: Sdk, unity_server: RunningServer, catalog: str,
                                            schema: str) -> None:
    alice, bob = new_user(unity_server), new_user(unity_server)
    table = f"{catalog}.{schema}.orders"

    async def scenario(uc: Uc) -> None:
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, "orders")))
        for kind, name in ((SecurableType.CATALOG, catalog), (SecurableType.SCHEMA, f"{catalog}.{schema}"),
                           (SecurableType.TABLE, table)):
            assert await grants_of(uc, kind, name) == {}
        answer = await patch_grants(uc, SecurableType.CATALOG, catalog,
                                    change(alice, (Privilege.USE_CATALOG, Privilege.CREATE_SCHEMA)))
        assert answer == {alice: ["USE CATALOG", "CREATE SCHEMA"]}
        # The answer lists the request's principals only; GET lists everyone.
        assert await patch_grants(uc, SecurableType.CATALOG, catalog, change(bob, (Privilege.USE_CATALOG,))) == {
            bob: ["USE CATALOG"]}
        assert await grants_of(uc, SecurableType.CATALOG, catalog) == {
            alice: ["USE CATALOG", "CREATE SCHEMA"], bob: ["USE CATALOG"]}
        await patch_grants(uc, SecurableType.SCHEMA, f"{catalog}.{schema}", change(alice, (Privilege.USE_SCHEMA,)))
        await patch_grants(uc, SecurableType.TABLE, table, change(alice, (Privilege.SELECT, Privilege.MODIFY)))
        # A GET lists what was granted on that securable only, nothing inherited.
        assert await grants_of(uc, SecurableType.SCHEMA, f"{catalog}.{schema}") == {alice: ["USE SCHEMA"]}
        assert await grants_of(uc, SecurableType.TABLE, table) == {alice: ["SELECT", "MODIFY"]}
        # UC declares ?principal= but ignores it.
        assert set(await grants_of(uc, SecurableType.CATALOG, catalog, principal=bob)) == {alice, bob}

        # Revoking the last privilege drops the assignment.
        answer = await patch_grants(uc, SecurableType.TABLE, table,
                                    change(alice, remove=(Privilege.SELECT, Privilege.MODIFY)))
        assert answer == {}
        assert await grants_of(uc, SecurableType.TABLE, table) == {}

    sdk.run(unity_server, scenario)


def test_grant_and_revoke_are_idempotent(sdk: Sdk, unity_server: RunningServer, catalog: str) -> None:
    alice = new_user(unity_server)

    async def scenario(uc: Uc) -> None:
        grant = change(alice, (Privilege.USE_CATALOG,))
        for _ in range(2):
            assert await patch_grants(uc, SecurableType.CATALOG, catalog, grant) == {alice: ["USE CATALOG"]}
        assert await patch_grants(uc, SecurableType.CATALOG, catalog,
                                  change(alice, (Privilege.USE_CATALOG, Privilege.USE_CATALOG))) == {
            alice: ["USE CATALOG"]}
        revoke = change(alice, remove=(Privilege.USE_CATALOG, Privilege.CREATE_SCHEMA))  # one never granted
        for _ in range(2):
            assert await patch_grants(uc, SecurableType.CATALOG, catalog, revoke) == {}
        # In one change, `add` is applied before `remove`.
        assert await patch_grants(uc, SecurableType.CATALOG, catalog,
                                  change(alice, (Privilege.USE_CATALOG,), (Privilege.USE_CATALOG,))) == {}
        assert await patch_grants(uc, SecurableType.CATALOG, catalog) == {}
        # UC does not check that a privilege suits the securable.
        assert await patch_grants(uc, SecurableType.CATALOG, catalog, change(alice, (Privilege.SELECT,))) == {
            alice: ["SELECT"]}

    sdk.run(unity_server, scenario)


def test_grant_errors(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    alice = new_user(unity_server)

    async def scenario(uc: Uc) -> None:
        message = await expect_error(uc.grants.update(SecurableType.CATALOG, catalog, UpdatePermissions(
            changes=[change("nobody@example.com", (Privilege.USE_CATALOG,))])), 404, "NOT_FOUND")
        assert message == "User not found: nobody@example.com"
        # UC applies changes one by one: those before the unknown user stay applied.
        await expect_error(uc.grants.update(SecurableType.CATALOG, catalog, UpdatePermissions(changes=[
            change(alice, (Privilege.USE_CATALOG,)), change("nobody@example.com", (Privilege.USE_CATALOG,))])),
            404, "NOT_FOUND")
        assert await grants_of(uc, SecurableType.CATALOG, catalog) == {alice: ["USE CATALOG"]}

        for kind, name, code in ((SecurableType.CATALOG, catalog + "_no", "CATALOG_NOT_FOUND"),
                                 (SecurableType.SCHEMA, f"{catalog}.missing", "SCHEMA_NOT_FOUND"),
                                 (SecurableType.TABLE, f"{catalog}.{schema}.missing", "TABLE_NOT_FOUND"),
                                 (SecurableType.TABLE, f"{catalog}.missing.t", "SCHEMA_NOT_FOUND")):
            await expect_error(uc.grants.get(kind, name), 404, code)
            await expect_error(uc.grants.update(kind, name, UpdatePermissions(
                changes=[change(alice, (Privilege.SELECT,))])), 404, code)
        await expect_error(uc.grants.get(SecurableType.TABLE, f"{catalog}.{schema}"), 400, "INVALID_ARGUMENT")
        if not unity_server.external:  # this server keeps no functions or volumes
            for kind in (SecurableType.FUNCTION, SecurableType.VOLUME):
                await expect_error(uc.grants.get(kind, f"{catalog}.{schema}.x"), 404, "NOT_FOUND")

    sdk.run(unity_server, scenario)
    # What the SDK cannot send: a privilege outside UC's enum (OWNER included), a type UC has no route for.
    for privilege in ("OWNER", "USE_CATALOG", "FROBNICATE"):
        answer = raw(unity_server, "PATCH", f"/permissions/catalog/{catalog}",
                     json={"changes": [{"principal": alice, "add": [privilege], "remove": []}]})
        assert_error(answer.status_code, answer.text, 400, "INVALID_ARGUMENT")
    answer = raw(unity_server, "PATCH", f"/permissions/catalog/{catalog}",
                 json={"changes": [{"add": ["SELECT"], "remove": []}]})
    assert assert_error(answer.status_code, answer.text, 404, "NOT_FOUND") == "User not found: null"
    if not unity_server.external:  # UC's JVM fails on these; the messages are inferred
        for body in ({"changes": None}, {"changes": [{"principal": alice, "add": None, "remove": []}]}):
            answer = raw(unity_server, "PATCH", f"/permissions/catalog/{catalog}", json=body)
            assert_error(answer.status_code, answer.text, 500, "INTERNAL")
    answer = raw(unity_server, "GET", f"/permissions/database/{catalog}")
    assert answer.status_code == 404 and "error_code" not in answer.text
    answer = raw(unity_server, "DELETE", f"/permissions/catalog/{catalog}")
    assert answer.status_code == 405


def test_grants_go_with_their_securable(sdk: Sdk, unity_server: RunningServer, catalog: str, schema: str) -> None:
    alice = new_user(unity_server)
    table = f"{catalog}.{schema}.orders"

    async def scenario(uc: Uc) -> None:
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, schema, "orders")))
        await patch_grants(uc, SecurableType.TABLE, table, change(alice, (Privilege.SELECT,)))
        await patch_grants(uc, SecurableType.SCHEMA, f"{catalog}.{schema}", change(alice, (Privilege.USE_SCHEMA,)))
        # A renamed schema keeps its id, so its grants follow it.
        await checked(uc.schemas.update_schema_with_http_info(f"{catalog}.{schema}", UpdateSchema(new_name="renamed")))
        assert await grants_of(uc, SecurableType.SCHEMA, f"{catalog}.renamed") == {alice: ["USE SCHEMA"]}
        assert await grants_of(uc, SecurableType.TABLE, f"{catalog}.renamed.orders") == {alice: ["SELECT"]}

        # A table dropped and created again under its name has no grants.
        await checked(uc.tables.delete_table_with_http_info(f"{catalog}.renamed.orders"))
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, "renamed", "orders")))
        assert await grants_of(uc, SecurableType.TABLE, f"{catalog}.renamed.orders") == {}

        # A schema deleted with force takes its grants and its tables' grants along.
        await patch_grants(uc, SecurableType.TABLE, f"{catalog}.renamed.orders", change(alice, (Privilege.SELECT,)))
        await checked(uc.schemas.delete_schema_with_http_info(f"{catalog}.renamed", force=True))
        await checked(uc.schemas.create_schema_with_http_info(CreateSchema(name="renamed", catalog_name=catalog)))
        await checked(uc.tables.create_table_with_http_info(lance_table(catalog, "renamed", "orders")))
        assert await grants_of(uc, SecurableType.SCHEMA, f"{catalog}.renamed") == {}
        assert await grants_of(uc, SecurableType.TABLE, f"{catalog}.renamed.orders") == {}

    sdk.run(unity_server, scenario)


def test_scim_users(sdk: Sdk, unity_server: RunningServer, catalog: str) -> None:
    skip_if_external(unity_server)  # exact SCIM bodies are inferred, see docs/unity.md
    email = new_user(unity_server)
    session = requests.Session()
    session.trust_env = False
    users_url = unity_server.endpoint + "/api/1.0/unity-control/scim2/Users"
    with session:
        listed = session.get(users_url, params={"filter": f'userName eq "{email}"'}, timeout=10).json()
        assert [user["userName"] for user in listed["Resources"]] == [email]
        user = listed["Resources"][0]
        assert session.get(f"{users_url}/{user['id']}", timeout=10).json() == user
        assert user["active"] is True and user["emails"] == [{"value": email, "primary": True}]

        duplicate = session.post(users_url, json={"emails": [{"value": email, "primary": True}]}, timeout=10)
        assert duplicate.status_code == 500  # UC answers SCIM failures with 500 and the SCIM status inside
        assert duplicate.json()["status"] == "409" and "already exists" in duplicate.json()["detail"]
        no_primary = session.post(users_url, json={"emails": [{"value": "x@example.com"}]}, timeout=10)
        assert (no_primary.status_code, no_primary.json()["status"]) == (500, "412")
        missing = session.get(f"{users_url}/{uuid.uuid4()}", timeout=10)
        assert_error(missing.status_code, missing.text, 404, "NOT_FOUND")

        async def grant(uc: Uc) -> dict[str, list[str]]:
            return await patch_grants(uc, SecurableType.CATALOG, catalog, change(email, (Privilege.USE_CATALOG,)))

        assert sdk.run(unity_server, grant) == {email: ["USE CATALOG"]}
        # Deleting a user disables it and clears its grants; it can still be granted to.
        assert session.delete(f"{users_url}/{user['id']}", timeout=10).status_code == 200
        assert session.get(f"{users_url}/{user['id']}", timeout=10).json()["active"] is False
        assert sdk.run(unity_server, lambda uc: grants_of(uc, SecurableType.CATALOG, catalog)) == {}
        assert sdk.run(unity_server, grant) == {email: ["USE CATALOG"]}


def test_metastore_grants(sdk: Sdk, unity_server: RunningServer) -> None:
    alice = new_user(unity_server)

    async def scenario(uc: Uc) -> None:
        await patch_grants(uc, SecurableType.METASTORE, "any-name", change(alice, (Privilege.CREATE_CATALOG,)))
        # The metastore's name is ignored: there is one.
        assert (await grants_of(uc, SecurableType.METASTORE, "other"))[alice] == ["CREATE CATALOG"]
        await patch_grants(uc, SecurableType.METASTORE, "x", change(alice, remove=(Privilege.CREATE_CATALOG,)))
        assert alice not in await grants_of(uc, SecurableType.METASTORE, "x")

    sdk.run(unity_server, scenario)


def test_authorization_off_drops_every_grant(sdk: Sdk, tmp_path: Path) -> None:
    """UC's default (server.authorization off): grants are accepted, stored nowhere, listed as []."""
    server = unity.start(tmp_path, authorization=False)
    try:
        alice = new_user(server)

        async def scenario(uc: Uc) -> None:
            await checked(uc.catalogs.create_catalog_with_http_info(CreateCatalog(name="c")))
            assert await patch_grants(uc, SecurableType.CATALOG, "c", change(alice, (Privilege.USE_CATALOG,))) == {}
            assert await grants_of(uc, SecurableType.CATALOG, "c") == {}
            # Users and securables are still looked up.
            await expect_error(uc.grants.update(SecurableType.CATALOG, "c", UpdatePermissions(
                changes=[change("nobody@example.com", (Privilege.USE_CATALOG,))])), 404, "NOT_FOUND")
            await expect_error(uc.grants.get(SecurableType.CATALOG, "missing"), 404, "CATALOG_NOT_FOUND")
            # No admin user is made without authorization.
            await expect_error(uc.grants.update(SecurableType.CATALOG, "c", UpdatePermissions(
                changes=[change("admin", (Privilege.USE_CATALOG,))])), 404, "NOT_FOUND")

        sdk.run(server, scenario)
    finally:
        server.stop()
