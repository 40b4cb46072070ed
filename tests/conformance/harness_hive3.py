"""The Hive driver against the project's Hive 3.x server, inside a catalog; pymetastore looks through.

Test namespaces are databases of the catalog `lance_cat`, created once per server (never
dropped: HMS deletes a dropped catalog's directory), so every call the suite makes carries
a catalog: `@lance_cat#db` names and catName/catalogName fields.
"""

from __future__ import annotations

import contextlib

from pymetastore.hive_metastore.ttypes import AlreadyExistsException, Catalog, CreateCatalogRequest

from lance_sync.drivers.base import Identifier
from tests.conformance.harness_hms import HmsHarness
from tests.servers.hive_support import hive_client

CONFORMANCE_CATALOG = "lance_cat"


class Hive3Harness(HmsHarness):
    server_fixture = "hive3_server"
    #: endpoints whose conformance catalog exists
    _catalogs_made: set[str] = set()

    def parent_namespace(self) -> Identifier:
        endpoint = self.server.endpoint
        if endpoint not in self._catalogs_made:
            location = (self.data_root / CONFORMANCE_CATALOG).as_uri()
            with hive_client(endpoint) as client, contextlib.suppress(AlreadyExistsException):
                client.create_catalog(CreateCatalogRequest(Catalog(
                    name=CONFORMANCE_CATALOG, description="lance-sync conformance", locationUri=location)))
            self._catalogs_made.add(endpoint)
        return (CONFORMANCE_CATALOG,)
