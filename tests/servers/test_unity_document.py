"""The suite's Unity Catalog server and the Unity driver, held to the Unity Catalog OpenAPI
document (api/all.yaml of unitycatalog/unitycatalog, v0.6.0) where UC OSS is laxer than it:

- DataSourceFormat has no ICEBERG: the server refuses it with 400 INVALID_ARGUMENT, as UC does;
- listTables' max_results has maximum 50 (listSchemas' and listCatalogs' 1000): the server
  refuses more, and the driver never asks for more, whatever limit it is given.
The official client, generated from the document, agrees on the table listing's maximum.
"""

from __future__ import annotations

import inspect
import re
import uuid

import pytest
from lance_namespace import CreateNamespaceRequest, DeclareTableRequest, ListTablesRequest
from unitycatalog.client import TablesApi

from tests.conformance.harness_unity import CATALOG, ensure_catalog
from tests.servers.base import RunningServer
from tests.servers.unity import raw
from tests.servers.unity_server.validation import DOCUMENT_MAXIMUM

pytestmark = pytest.mark.servers


def test_the_official_client_agrees_on_the_table_listing_maximum():
    source = inspect.getsource(TablesApi.list_tables)
    maximum = re.search(r"max_results: .*?le=(\d+)", source)
    assert maximum is not None and int(maximum.group(1)) == DOCUMENT_MAXIMUM["tables"]


def test_the_server_refuses_what_the_document_does_not_allow(unity_server: RunningServer):
    if unity_server.external:
        pytest.skip("checks the project's server")
    ensure_catalog(unity_server, CATALOG)
    schema = f"doc_{uuid.uuid4().hex[:8]}"
    assert raw(unity_server, "POST", "/schemas", json={"name": schema, "catalog_name": CATALOG}).status_code == 200
    table = {"name": "t", "catalog_name": CATALOG, "schema_name": schema, "table_type": "EXTERNAL",
             "data_source_format": "ICEBERG", "columns": [], "storage_location": "file:///tmp/doc/t"}
    refused = raw(unity_server, "POST", "/tables", json=table)
    assert refused.status_code == 400 and refused.json()["error_code"] == "INVALID_ARGUMENT", refused.text
    for listing, params in (("tables", {"catalog_name": CATALOG, "schema_name": schema}),
                            ("schemas", {"catalog_name": CATALOG}), ("catalogs", {})):
        maximum = DOCUMENT_MAXIMUM[listing]
        assert raw(unity_server, "GET", f"/{listing}", params={**params, "max_results": maximum}).status_code == 200
        over = raw(unity_server, "GET", f"/{listing}", params={**params, "max_results": maximum + 1})
        assert over.status_code == 400 and over.json()["error_code"] == "INVALID_ARGUMENT", (listing, over.text)


@pytest.mark.parametrize("limit", [None, 10, 200])
def test_the_driver_lists_tables_within_the_documents_maximum(unity_server: RunningServer, tmp_path, limit):
    """60 tables: more than one page of 50; any limit the caller gives is kept under it."""
    from lance_sync.drivers import connect

    ensure_catalog(unity_server, CATALOG)
    driver = connect("unity", {"endpoint": unity_server.endpoint, "catalog": CATALOG, "root": str(tmp_path)})
    namespace = [CATALOG, f"doc_{uuid.uuid4().hex[:8]}"]
    driver.create_namespace(CreateNamespaceRequest(id=namespace))
    names = sorted(f"t{i:02d}" for i in range(60))
    for name in names:
        driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=str(tmp_path / f"{name}.lance")))
    listed, token = [], None
    while True:
        page = driver.list_tables(ListTablesRequest(id=namespace, page_token=token, limit=limit))
        assert len(page.tables) <= (limit or DOCUMENT_MAXIMUM["tables"])
        listed += page.tables
        token = page.page_token
        if not token:
            break
    assert sorted(listed) == names
    assert sorted(t.id[-1] for t in driver.list_table_infos(tuple(namespace))) == names
