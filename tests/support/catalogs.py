"""The catalogs as the e2e tests set them up and read them back: manifest entries for each
backend, and each catalog's state read with its own client (pyiceberg, boto3,
unitycatalog-client), never through lance-sync."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from botocore.exceptions import ClientError
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from unitycatalog.client import SchemasApi, TablesApi

from tests.conformance.harness_unity import run_sdk
from tests.servers.base import RunningServer
from tests.servers.glue import glue_client

OWNER_KEY = "lance_sync.owner"
LEASE_PREFIX = "lance_sync_lease_"
#: the Glue child catalog and the Unity catalog the e2e tests put their namespaces in
GLUE_CATALOG = "ls_e2e"
UNITY_CATALOG = "lance_sync_e2e"
#: environment variables that carry the Glue test server's (fake) credentials
GLUE_KEY_VARIABLE = "LS_E2E_GLUE_ACCESS_KEY_ID"
GLUE_SECRET_VARIABLE = "LS_E2E_GLUE_SECRET_ACCESS_KEY"


def glue_env(server: RunningServer) -> dict[str, str]:
    return {GLUE_KEY_VARIABLE: server.extra["access_key_id"],
            GLUE_SECRET_VARIABLE: server.extra["secret_access_key"]}


def plain_path(location: str) -> str:
    """A local location without `file:` and with a normalized path, for comparisons."""
    if location.startswith("file://"):
        location = location[len("file://"):]
    elif location.startswith("file:"):
        location = location[len("file:"):]
    return os.path.normpath(unquote(location))


def iceberg_backend(server: RunningServer, root: Path) -> dict[str, Any]:
    return {"type": "iceberg", "endpoint": server.endpoint, "root": str(root)}


def glue_backend(server: RunningServer) -> dict[str, Any]:
    return {"type": "glue", "endpoint": server.endpoint, "catalog_id": server.extra["account_id"],
            "region": server.extra["region"], "access_key_id": "${" + GLUE_KEY_VARIABLE + "}",
            "secret_access_key": "${" + GLUE_SECRET_VARIABLE + "}"}


def unity_backend(server: RunningServer, root: Path) -> dict[str, Any]:
    return {"type": "unity", "endpoint": server.endpoint, "catalog": UNITY_CATALOG, "root": str(root)}


def pyiceberg(server: RunningServer) -> RestCatalog:
    """pyiceberg straight to the server (never through a proxy)."""
    return RestCatalog("e2e", uri=server.endpoint, warehouse=server.extra["warehouse"])


def glue_catalog_id(server: RunningServer) -> str:
    return f"{server.extra['account_id']}:{GLUE_CATALOG}"


def ensure_glue_catalog(server: RunningServer) -> None:
    try:
        glue_client(server).create_catalog(Name=GLUE_CATALOG, CatalogInput={})
    except ClientError as error:
        if error.response["Error"]["Code"] != "AlreadyExistsException":
            raise


def iceberg_lance_tables(server: RunningServer, namespace: str) -> tuple[list[str], dict[str, Any]]:
    """(every table name, in listing order; {name: (location, properties)} of each)."""
    catalog = pyiceberg(server)
    names = [identifier[-1] for identifier in catalog.list_tables(namespace)]
    found = {}
    for name in names:
        table = catalog.load_table((namespace, name))
        found[name] = (table.location(), dict(table.properties))
    return names, found


def glue_tables(server: RunningServer, catalog_id: str, database: str) -> tuple[list[str], dict[str, Any]]:
    """(every table name, in listing order; {name: the Glue Table}), every page followed."""
    glue = glue_client(server)
    names, found = [], {}
    for page in glue.get_paginator("get_tables").paginate(CatalogId=catalog_id, DatabaseName=database):
        for table in page["TableList"]:
            names.append(table["Name"])
            found[table["Name"]] = table
    return names, found


def unity_tables(server: RunningServer, catalog: str, schema: str) -> tuple[list[str], dict[str, Any]]:
    """(every table name, in listing order; {name: TableInfo}), every page followed."""

    async def listing(client: Any) -> list[Any]:
        tables, token = [], None
        while True:
            page = await TablesApi(client).list_tables(catalog, schema, max_results=50, page_token=token)
            tables += page.tables or []
            token = page.next_page_token
            if not token:
                return tables

    tables = run_sdk(server, listing)
    return [t.name for t in tables], {t.name: t for t in tables}


def iceberg_namespaces(server: RunningServer) -> list[str]:
    return [levels[-1] for levels in pyiceberg(server).list_namespaces()]


def glue_databases(server: RunningServer, catalog_id: str) -> list[str]:
    glue = glue_client(server)
    return [database["Name"] for page in glue.get_paginator("get_databases").paginate(CatalogId=catalog_id)
            for database in page["DatabaseList"]]


def unity_schemas(server: RunningServer, catalog: str) -> list[str]:
    async def listing(client: Any) -> list[str]:
        names, token = [], None
        while True:
            page = await SchemasApi(client).list_schemas(catalog, max_results=50, page_token=token)
            names += [schema.name for schema in page.schemas or []]
            token = page.next_page_token
            if not token:
                return names

    return run_sdk(server, listing)


def own_lease_prefix(owner: str) -> str:
    return f"{LEASE_PREFIX}{owner.replace('-', '_')}_"


def iceberg_leases_held(server: RunningServer, owner: str) -> list[str]:
    """The owner's leases that are held, read with pyiceberg: a lease is the table `lease` of a
    lease namespace, which stays after release with `lance_sync.lease.released` set (a lease
    namespace without that table is a lease of the older format: held)."""
    catalog = pyiceberg(server)
    held = []
    for name in iceberg_namespaces(server):
        if name.startswith(own_lease_prefix(owner)):
            try:
                properties = catalog.load_table((name, "lease")).properties
            except NoSuchTableError:
                properties = catalog.load_namespace_properties(name)
            if not properties.get("lance_sync.lease.released"):
                held.append(name)
    return held


def glue_leases_held(server: RunningServer, catalog_id: str, owner: str) -> list[str]:
    """The same for Glue, read with boto3: the table `lease` of a lease database."""
    glue = glue_client(server)
    held = []
    for name in glue_databases(server, catalog_id):
        if name.startswith(own_lease_prefix(owner)):
            try:
                parameters = glue.get_table(CatalogId=catalog_id, DatabaseName=name, Name="lease")["Table"]["Parameters"]
            except ClientError:
                parameters = glue.get_database(CatalogId=catalog_id, Name=name)["Database"].get("Parameters", {})
            if not parameters.get("lance_sync.lease.released"):
                held.append(name)
    return held
