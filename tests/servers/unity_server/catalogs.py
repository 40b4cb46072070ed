"""Catalogs: create, get, list, update (PATCH) and delete, as UC OSS's CatalogRepository."""

from __future__ import annotations

import sqlite3
import uuid

from tests.servers.unity_server import store
from tests.servers.unity_server.errors import UcError
from tests.servers.unity_server.locations import managed_storage
from tests.servers.unity_server.schemas import delete_schema_rows
from tests.servers.unity_server.validation import check_width, page_size, validate_name

#: Hibernate's default width for catalog and schema String columns.
COLUMN_WIDTH = 255


def catalog_info(row: sqlite3.Row, properties: dict | None) -> dict:
    return {
        "name": row["name"], "comment": row["comment"], "properties": properties,
        **store.audit_fields(row), "id": row["id"],
        "storage_root": row["storage_root"], "storage_location": row["storage_location"],
    }


def create_catalog(db_store: store.Store, caller: str | None, request: dict) -> dict:
    name = request["name"]
    validate_name(name)
    catalog_id = str(uuid.uuid4())
    storage_root, storage_location = managed_storage(request["storage_root"], "catalogs", catalog_id)
    created_at = store.now_millis()
    with db_store.transaction("Failed to add catalog") as db:
        if db.execute("SELECT 1 FROM catalogs WHERE name = ?", (name,)).fetchone():
            raise UcError("CATALOG_ALREADY_EXISTS", f"Catalog already exists: {name}")
        for column, value in (("comment", request["comment"]), ("storage_root", storage_root),
                              ("storage_location", storage_location)):
            check_width(value, column, COLUMN_WIDTH)
        store.replace_properties(db, catalog_id, request["properties"])
        db.execute(
            "INSERT INTO catalogs (id, name, comment, storage_root, storage_location, owner,"
            " created_at, created_by, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (catalog_id, name, request["comment"], storage_root, storage_location,
             caller, created_at, caller, created_at, caller),
        )
        row = store.find_catalog(db, name)
    return catalog_info(row, request["properties"])


def get_catalog(db_store: store.Store, name: str) -> dict:
    with db_store.transaction("Failed to get catalog") as db:
        return _load(db, store.find_catalog(db, name))


def list_catalogs(db_store: store.Store, max_results: int | None, page_token: str | None) -> dict:
    size = page_size(max_results)
    with db_store.transaction("Failed to list catalogs") as db:
        rows = store.page(db, "catalogs", None, page_token, size)
        properties = store.properties_of(db, (row["id"] for row in rows))
    return {
        "catalogs": [catalog_info(row, properties[row["id"]]) for row in rows],
        "next_page_token": store.next_page_token(rows, size),
    }


def update_catalog(db_store: store.Store, caller: str | None, name: str, request: dict) -> dict:
    """UC's PATCH: a non-empty `properties` replaces the whole map; an empty one changes nothing."""
    new_name, comment, properties = request["new_name"], request["comment"], request["properties"]
    if new_name is not None:
        validate_name(new_name)
    with db_store.transaction("Failed to update catalog") as db:
        row = store.find_catalog(db, name)
        if new_name is None and comment is None and not properties:
            return _load(db, row)
        if new_name is not None and db.execute(
                "SELECT 1 FROM catalogs WHERE name = ?", (new_name,)).fetchone():
            raise UcError("CATALOG_ALREADY_EXISTS", f"Catalog already exists: {new_name}")
        check_width(comment, "comment", COLUMN_WIDTH)
        if properties:
            store.replace_properties(db, row["id"], properties)
        db.execute(
            "UPDATE catalogs SET name = coalesce(?, name), comment = coalesce(?, comment),"
            " updated_at = ?, updated_by = ? WHERE id = ?",
            (new_name, comment, store.now_millis(), caller, row["id"]),
        )
        return _load(db, store.find_catalog(db, new_name or name))


def delete_catalog(db_store: store.Store, name: str, force: bool) -> None:
    with db_store.transaction("Failed to delete catalog") as db:
        catalog = store.find_catalog(db, name)
        schemas = db.execute("SELECT * FROM schemas WHERE catalog_id = ?", (catalog["id"],)).fetchall()
        if schemas and not force:
            raise UcError(
                "FAILED_PRECONDITION",
                "Cannot delete catalog with schemas. Use force=true to force deletion.",
            )
        for schema in schemas:
            delete_schema_rows(db, schema, force=True)
        store.forget_deleted(db, [catalog["id"]])
        db.execute("DELETE FROM catalogs WHERE id = ?", (catalog["id"],))


def _load(db: sqlite3.Connection, row: sqlite3.Row) -> dict:
    return catalog_info(row, store.properties_of(db, [row["id"]])[row["id"]])
