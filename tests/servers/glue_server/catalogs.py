"""The catalog hierarchy of one account and region, each catalog with its own databases.

Real Glue names the account's default catalog by the account id, a catalog below
it `<account>:<name>` and a nested one `<account>:<parent>/<child>` (for example
`123456789012:s3tablescatalog/my-bucket`); calls also accept an id without the
`<account>:` prefix. Names are folded to lower case, like database and table names.

Each catalog keeps its databases and tables in its own moto `GlueBackend`, created
with the catalog's id where moto expects an account id, so the `CatalogId` that moto
puts on databases and tables is the catalog's own id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from moto.glue.models import GlueBackend

from tests.servers.glue_server.errors import (
    access_denied,
    already_exists,
    entity_not_found,
    invalid_input,
)

CatalogPath = tuple[str, ...]
ACCOUNT_ID = re.compile(r"\d{12}")


@dataclass
class Catalog:
    path: CatalogPath  # () is the account's default catalog
    catalog_input: dict
    backend: GlueBackend
    create_time: datetime
    update_time: datetime | None = None

    @property
    def is_default(self) -> bool:
        return not self.path


class CatalogTree:
    def __init__(self, account_id: str, region: str):
        self.account_id = account_id
        self.region = region
        self._catalogs: dict[CatalogPath, Catalog] = {}
        self.reset()

    def reset(self) -> None:
        """Forget every catalog, database and table; keep an empty default catalog."""
        self._catalogs = {(): self._new_catalog((), {})}

    def catalog_id(self, catalog: Catalog) -> str:
        return self._id_for(catalog.path)

    def arn(self, catalog: Catalog) -> str:
        suffix = "".join(f"/{name}" for name in catalog.path)
        return f"arn:aws:glue:{self.region}:{self.account_id}:catalog{suffix}"

    def get(self, catalog_id: str | None) -> Catalog:
        """The catalog a request's CatalogId names; no id means the default catalog."""
        path = self._path(catalog_id)
        if path not in self._catalogs:
            raise entity_not_found(f"Catalog {catalog_id} not found.")
        return self._catalogs[path]

    def create(self, parent: Catalog, name: str, catalog_input: dict) -> Catalog:
        name = name.lower()
        if name == self.account_id:
            raise invalid_input("The catalog name cannot be the same as the account ID.")
        path = (*parent.path, name)
        if path in self._catalogs:
            raise already_exists("Catalog already exists.")
        catalog = self._new_catalog(path, catalog_input)
        self._catalogs[path] = catalog
        return catalog

    def update(self, catalog: Catalog, catalog_input: dict) -> None:
        if catalog.is_default:
            raise invalid_input("The default catalog cannot be updated.")
        catalog.catalog_input = catalog_input
        catalog.update_time = _now()

    def delete(self, catalog: Catalog) -> None:
        """Delete a catalog with everything below it, as Glue documents for DeleteCatalog."""
        if catalog.is_default:
            raise invalid_input("The default catalog cannot be deleted.")
        for path in [path for path in self._catalogs if path[: len(catalog.path)] == catalog.path]:
            del self._catalogs[path]

    def children(self, parent: Catalog, recursive: bool) -> list[Catalog]:
        """Catalogs below `parent`: its direct children, or all descendants."""
        depth = len(parent.path)
        return [
            catalog
            for path, catalog in self._catalogs.items()
            if len(path) > depth
            and path[:depth] == parent.path
            and (recursive or len(path) == depth + 1)
        ]

    def _path(self, catalog_id: str | None) -> CatalogPath:
        """The path of `<account>`, `<account>:<a>/<b>` or `<a>/<b>` (in this account)."""
        if ":" in (catalog_id or ""):
            account, rest = catalog_id.split(":", 1)
        elif ACCOUNT_ID.fullmatch(catalog_id or ""):
            account, rest = catalog_id, ""
        else:
            account, rest = self.account_id, catalog_id or ""
        if account != self.account_id:
            raise access_denied(
                f"Account {self.account_id} is not authorized to access catalog {catalog_id}:"
                " no resource-based policy grants it."
            )
        return tuple(name.lower() for name in rest.split("/")) if rest else ()

    def _id_for(self, path: CatalogPath) -> str:
        return f"{self.account_id}:{'/'.join(path)}" if path else self.account_id

    def _new_catalog(self, path: CatalogPath, catalog_input: dict) -> Catalog:
        backend = GlueBackend(self.region, self._id_for(path))
        return Catalog(path, catalog_input, backend, _now())


def _now() -> datetime:
    return datetime.now(timezone.utc)
