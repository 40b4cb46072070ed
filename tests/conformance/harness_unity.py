"""Unity Catalog: the project's UC OSS test server (or LANCE_SYNC_TEST_UNITY_ENDPOINT).

The independent client is the official SDK, unitycatalog-client (asyncio + aiohttp); `run_sdk`
runs one SDK scenario on a fresh client. UC names must match [a-zA-Z0-9_@-]+: a space, '%',
'.', '$' or a non-ASCII letter is refused with 400 INVALID_ARGUMENT, so no name-character
round-trip applies.
"""

from __future__ import annotations

import asyncio
import os
import urllib.error
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import lance
from unitycatalog.client import (
    ApiClient,
    CatalogsApi,
    ColumnInfo,
    ColumnTypeName,
    Configuration,
    CreateCatalog,
    CreateTable,
    DataSourceFormat,
    GrantsApi,
    PermissionsChange,
    Privilege,
    SecurableType,
    TablesApi,
    TableType,
    UpdatePermissions,
)
from unitycatalog.client.exceptions import ApiException

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.unity.config import DEFAULT_API_PATH
from lance_sync.model.grants import GrantMap, Securable
from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness, SpecBehaviour
from tests.servers.base import RunningServer
from tests.servers.unity import create_user

T = TypeVar("T")
CATALOG = "lance_sync_conformance"
#: the bearer token of an external server (LANCE_SYNC_TEST_UNITY_ENDPOINT)
EXTERNAL_TOKEN = os.environ.get("LANCE_SYNC_TEST_UNITY_TOKEN") or None

_catalogs_created: set[tuple[str, str]] = set()
#: grant principals: users, named by e-mail, created once per server
PRINCIPALS = ["lance-sync-reader@example.com", "lance-sync-writer@example.com", "lance-sync-admin@example.com"]
_principals_created: set[str] = set()
#: UC's securable type by the length of a lance-sync id
_SECURABLE_TYPES = {1: SecurableType.CATALOG, 2: SecurableType.SCHEMA, 3: SecurableType.TABLE}


def run_sdk(server: RunningServer, scenario: Callable[[ApiClient], Awaitable[T]], token: str | None = None) -> T:
    """Run `scenario(client)` with a new SDK client for `server` (the external token by default)."""
    if token is None and server.external:
        token = EXTERNAL_TOKEN

    async def run() -> T:
        headers = {} if token is None else {"header_name": "Authorization", "header_value": f"Bearer {token}"}
        async with ApiClient(Configuration(host=server.endpoint + DEFAULT_API_PATH), **headers) as client:
            return await scenario(client)

    return asyncio.run(run())


def ensure_catalog(server: RunningServer, name: str, token: str | None = None) -> None:
    """Create the catalog once per server; one that already exists is fine."""
    if (server.endpoint, name) in _catalogs_created:
        return

    async def create(client: ApiClient) -> None:
        try:
            await CatalogsApi(client).create_catalog(CreateCatalog(name=name, comment="lance-sync tests"))
        except ApiException as error:
            if "ALREADY_EXISTS" not in (error.body or ""):
                raise

    run_sdk(server, create, token)
    _catalogs_created.add((server.endpoint, name))


class UnityHarness(Harness):
    backend_type = "unity"
    server_fixture = "unity_server"
    behaviour = SpecBehaviour(drop_cascade=True, name_characters=(), extra={"name_pattern": "[a-zA-Z0-9_@-]+"})

    def config(self) -> dict[str, Any]:
        config = {"endpoint": self.server.endpoint, "catalog": CATALOG, "root": str(self.data_root)}
        if self.server.external and EXTERNAL_TOKEN:
            config["auth_token"] = EXTERNAL_TOKEN
        return config

    def parent_namespace(self) -> Identifier:
        ensure_catalog(self.server, CATALOG)
        return (CATALOG,)

    def create_foreign_table(self, namespace: Identifier, name: str) -> None:
        """An EXTERNAL DELTA table without the Lance marker."""
        catalog, schema = namespace
        column = ColumnInfo(name="id", type_name=ColumnTypeName.LONG, type_text="bigint", position=0,
                            nullable=True, type_json='{"name":"id","type":"long","nullable":true,"metadata":{}}')
        table = CreateTable(name=name, catalog_name=catalog, schema_name=schema, table_type=TableType.EXTERNAL,
                            data_source_format=DataSourceFormat.DELTA, columns=[column],
                            storage_location=f"file://{self.data_root}/{name}", properties={"origin": "sdk"})
        run_sdk(self.server, lambda client: TablesApi(client).create_table(table))

    def check_lance_table(self, table_id: Identifier, location: str, properties: dict[str, str]) -> None:
        """EXTERNAL, TEXT, table_type=lance plus `properties`, the location, and the dataset's columns."""
        table = run_sdk(self.server, lambda client: TablesApi(client).get_table(".".join(table_id)))
        assert (table.table_type, table.data_source_format) == (TableType.EXTERNAL, DataSourceFormat.TEXT)
        assert table.properties.get("table_type", "").lower() == "lance"
        assert {k: table.properties.get(k) for k in properties} == properties
        assert normalize_location(table.storage_location) == normalize_location(location)
        try:
            expected = lance.dataset(location).schema.names
        except ValueError:
            expected = []
        assert [column.name for column in table.columns or []] == expected
        assert [column.position for column in table.columns or []] == list(range(len(expected)))

    # --- grants, through the SDK's GrantsApi ------------------------------------------------------

    def grant_principals(self) -> list[str]:
        if self.server.endpoint not in _principals_created:
            for email in PRINCIPALS:
                try:
                    create_user(self.server, email, token=EXTERNAL_TOKEN if self.server.external else None)
                except urllib.error.HTTPError as error:  # SCIM answers a duplicate as 500, status "409"
                    if '"409"' not in error.read().decode(errors="replace"):
                        raise
            _principals_created.add(self.server.endpoint)
        return list(PRINCIPALS)

    def grant_examples(self, kind: Securable) -> list[str]:
        # UC OSS has two table privileges; the third example repeats the second, which keeps
        # the suite's "grant and revoke in one change" meaningful (revoke SELECT, keep MODIFY).
        return ["USE SCHEMA", "CREATE TABLE", "SELECT"] if kind == "namespace" else ["SELECT", "MODIFY", "MODIFY"]

    def read_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        listed = run_sdk(self.server, lambda client: GrantsApi(client).get(_SECURABLE_TYPES[len(id)], ".".join(id)))
        return {item.principal: frozenset(privilege.value for privilege in item.privileges or [])
                for item in listed.privilege_assignments or []}

    def grant_out_of_band(self, kind: Securable, id: Identifier, principal: str, privileges: list[str]) -> None:
        change = PermissionsChange(principal=principal, add=[Privilege(p) for p in privileges], remove=[])
        run_sdk(self.server, lambda client: GrantsApi(client).update(
            _SECURABLE_TYPES[len(id)], ".".join(id), UpdatePermissions(changes=[change])))
