"""Iceberg REST: upstream Iceberg's CatalogHandlers behind the test server; pyiceberg looks through."""

from __future__ import annotations

import functools
from typing import Any

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lance_sync.drivers.base import Identifier
from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness, SpecBehaviour
from tests.servers import iceberg_rest

#: what a plain (non-Lance) Iceberg table looks like to the suite
FOREIGN_SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


class IcebergHarness(Harness):
    backend_type = "iceberg"
    server_fixture = "iceberg_server"
    behaviour = SpecBehaviour(
        drop_missing_namespace_succeeds=True,  # the spec: DropNamespace of a missing namespace succeeds
        foreign_table_is_invalid_input=True,
        lower_case_names=False,
        name_characters=(" ", "%", ".", "$", "é"),
    )

    @property
    def warehouse(self) -> str:
        return self.server.extra.get("warehouse", iceberg_rest.WAREHOUSE)

    def config(self) -> dict[str, Any]:
        return {"endpoint": self.server.endpoint, "root": str(self.data_root)}

    def parent_namespace(self) -> Identifier:
        return (self.warehouse,)

    @functools.cached_property
    def catalog(self) -> RestCatalog:
        """pyiceberg's REST client: an implementation independent of the driver."""
        return RestCatalog("conformance", uri=self.server.endpoint, warehouse=self.warehouse)

    def create_foreign_table(self, namespace: Identifier, name: str) -> None:
        self.catalog.create_table((*namespace[1:], name), FOREIGN_SCHEMA)

    def table_identity(self, table_id: Identifier) -> Any:
        return self.catalog.load_table(table_id[1:]).metadata.table_uuid

    def check_lance_table(self, table_id: Identifier, location: str, properties: dict[str, str]) -> None:
        table = self.catalog.load_table(table_id[1:])
        assert table.properties.get("table_type", "").lower() == "lance"
        assert {k: table.properties.get(k) for k in properties} == properties
        assert normalize_location(table.location()) == normalize_location(location)
        assert [(f.name, str(f.field_type), f.required) for f in table.schema().fields] == \
            [("dummy", "string", False)]
