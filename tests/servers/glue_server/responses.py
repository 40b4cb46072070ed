"""moto's Glue request handler, extended with catalogs, CatalogId scoping, paging and name folding.

Every request is scoped to the catalog its CatalogId names (the account's
default catalog without one). moto's own handlers for databases, tables and
everything else run unchanged against that catalog's backend; they never see
CatalogId, which this layer consumes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.glue.models import GlueBackend
from moto.glue.responses import GlueResponse

from tests.servers.glue_server.catalogs import Catalog, CatalogTree
from tests.servers.glue_server.errors import GlueError, invalid_input
from tests.servers.glue_server.paging import Item, page
from tests.servers.glue_server.validation import glue_model

#: Operations whose top-level "Name" names a catalog, database or table, not a job or crawler.
_NAME_IS_CATALOG_OBJECT = frozenset(
    {
        "CreateCatalog",
        "GetDatabase",
        "UpdateDatabase",
        "DeleteDatabase",
        "CreateTable",
        "GetTable",
        "UpdateTable",
        "DeleteTable",
    }
)

#: CatalogInput fields that a Catalog answer repeats as given.
_ECHOED_CATALOG_FIELDS = frozenset(glue_model().shape_for("Catalog").members) & frozenset(
    glue_model().shape_for("CatalogInput").members
)


def fold_names(operation: str, params: dict) -> dict:
    """Database, table and catalog names folded to lower case, as Glue stores and finds them."""
    folded = dict(params)
    keys = ["DatabaseName", "TableName"]
    if operation in _NAME_IS_CATALOG_OBJECT:
        keys.append("Name")
    for key in keys:
        if isinstance(folded.get(key), str):
            folded[key] = folded[key].lower()
    for key in ("DatabaseInput", "TableInput"):
        if isinstance(folded.get(key), dict) and isinstance(folded[key].get("Name"), str):
            folded[key] = {**folded[key], "Name": folded[key]["Name"].lower()}
    if isinstance(folded.get("TablesToDelete"), list):
        folded["TablesToDelete"] = [str(name).lower() for name in folded["TablesToDelete"]]
    return folded


def _scoped(operation: str, params: dict) -> tuple[str | None, dict]:
    """The request's CatalogId, and its other parameters with names folded."""
    folded = fold_names(operation, params)
    return folded.pop("CatalogId", None), folded


class CatalogScopedGlueResponse(GlueResponse):
    def __init__(self, catalogs: CatalogTree):
        super().__init__()
        self.catalogs = catalogs
        self.catalog_id: str | None = None
        self._params: dict = {}

    def setup_class(self, *args: Any, **kwargs: Any) -> None:
        super().setup_class(*args, **kwargs)
        action = self._get_action()
        self.catalog_id, self._params = _scoped(action, json.loads(self.body or "{}"))
        if self.automated_parameter_parsing:
            # moto 5.2.6's handlers read the body as botocore parsed it (self.params), not
            # `parameters`: they must see the same folded names and no CatalogId
            _, self.params = _scoped(action, self.params)

    @property
    def parameters(self) -> dict:
        return self._params

    @property
    def catalog(self) -> Catalog:
        return self.catalogs.get(self.catalog_id)

    @property
    def glue_backend(self) -> GlueBackend:
        return self.catalog.backend

    # Catalogs

    def create_catalog(self) -> ActionResult:
        default_catalog = self.catalogs.get(None)
        self.catalogs.create(
            default_catalog, self.parameters["Name"], self.parameters["CatalogInput"]
        )
        return EmptyResult()

    def get_catalog(self) -> ActionResult:
        return ActionResult({"Catalog": self._describe(self.catalog)})

    def update_catalog(self) -> ActionResult:
        self.catalogs.update(self.catalog, self.parameters["CatalogInput"])
        return EmptyResult()

    def delete_catalog(self) -> ActionResult:
        self.catalogs.delete(self.catalog)
        return EmptyResult()

    def get_catalogs(self) -> ActionResult:
        parent = self.catalogs.get(self.parameters.get("ParentCatalogId"))
        include_root = self.parameters.get("IncludeRoot")
        if include_root is not None and not parent.is_default:
            raise invalid_input(
                "IncludeRoot can only be given when ParentCatalogId is the account ID."
            )
        recursive = bool(self.parameters.get("Recursive"))
        catalogs = self.catalogs.children(parent, recursive)
        if include_root:
            catalogs.append(parent)
        listing = f"GetCatalogs {self.catalogs.catalog_id(parent)} {recursive} {include_root}"
        selected, token = self._page(catalogs, self.catalogs.catalog_id, listing)
        return self._listing(
            "CatalogList", [self._describe(catalog) for catalog in selected], token
        )

    # Tables: what moto's UpdateTable ignores

    def update_table(self) -> ActionResult:
        """moto's UpdateTable, made conditional and archive-aware as AWS documents it.

        `VersionId` is "the version ID at which to update the table contents": when the table's
        current version is another one, the update is refused with
        ConcurrentModificationException (optimistic locking, on which Iceberg's GlueCatalog
        relies). `SkipArchive` keeps the version being replaced from the archive (GetTableVersions);
        the new version gets the next id either way. Checked and applied under the frontend's
        lock, so two updates at the same VersionId cannot both pass.
        """
        database_name = self.parameters["DatabaseName"]
        table = self.glue_backend.get_table(database_name, self.parameters["TableInput"]["Name"])
        replaced = str(table._current_version)
        expected = self.parameters.get("VersionId")
        if expected is not None and expected != replaced:
            raise GlueError("ConcurrentModificationException",
                            f"Version {expected} of table {database_name}.{table.name} is not its current "
                            f"version ({replaced}): the table was updated since it was read.")
        result = super().update_table()
        if self.parameters.get("SkipArchive"):
            table.delete_version(replaced)
        return result

    # Paged listings of moto's databases and tables

    def get_databases(self) -> ActionResult:
        listing = f"GetDatabases {self.catalogs.catalog_id(self.catalog)}"
        databases, token = self._page(self.glue_backend.get_databases(), _name, listing)
        return self._listing("DatabaseList", [database.as_dict() for database in databases], token)

    def get_tables(self) -> ActionResult:
        database_name = self.parameters["DatabaseName"]
        expression = self.parameters.get("Expression")
        tables = self.glue_backend.get_tables(database_name, expression)
        listing = f"GetTables {self.catalogs.catalog_id(self.catalog)} {database_name} {expression}"
        selected, token = self._page(tables, _name, listing)
        return self._listing("TableList", [table.as_dict() for table in selected], token)

    def _page(
        self, items: Sequence[Item], key: Callable[[Item], str], listing: str
    ) -> tuple[list[Item], str | None]:
        return page(
            items, key, listing, self.parameters.get("MaxResults"), self.parameters.get("NextToken")
        )

    @staticmethod
    def _listing(list_key: str, entries: list[dict], next_token: str | None) -> ActionResult:
        result: dict[str, Any] = {list_key: entries}
        if next_token:
            result["NextToken"] = next_token
        return ActionResult(result)

    def _describe(self, catalog: Catalog) -> dict:
        echoed = {
            key: value
            for key, value in catalog.catalog_input.items()
            if key in _ECHOED_CATALOG_FIELDS
        }
        return {
            **echoed,
            "CatalogId": self.catalogs.catalog_id(catalog),
            "Name": catalog.path[-1] if catalog.path else self.catalogs.account_id,
            "ResourceArn": self.catalogs.arn(catalog),
            "CreateTime": catalog.create_time,
            "UpdateTime": catalog.update_time,
        }


def _name(database_or_table: Any) -> str:
    return database_or_table.name
