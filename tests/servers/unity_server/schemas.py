"""Schemas: create, get, list, update (PATCH) and delete, as UC OSS's SchemaRepository."""

from __future__ import annotations

import sqlite3
import uuid

from tests.servers.unity_server import store
from tests.servers.unity_server.errors import UcError
from tests.servers.unity_server.locations import managed_storage
from tests.servers.unity_server.validation import (
    check_width,
    page_size,
    split_schema_full_name,
    validate_name,
)

#: Hibernate's default width for catalog and schema String columns.
COLUMN_WIDTH = 255


def schema_info(row: sqlite3.Row, catalog_name: str, properties: dict | None) -> dict:
    return {
        "name": row["name"], "catalog_name": catalog_name, "comment": row["comment"],
        "properties": properties, "full_name": f"{catalog_name}.{row['name']}",
        **store.audit_fields(row), "schema_id": row["id"],
        "storage_root": row["storage_root"], "storage_location": row["storage_location"],
    }


def create_schema(db_store: store.Store, caller: str | None, request: dict) -> dict:
    name, catalog_name = request["name"], request["catalog_name"]
    validate_name(name)
    with db_store.transaction("Failed to create schema") as db:
        catalog = store.find_catalog(db, catalog_name)
        _refuse_existing(db, catalog["id"], name)
        schema_id = str(uuid.uuid4())
        storage_root, storage_location = managed_storage(request["storage_root"], "schemas", schema_id)
        for column, value in (("comment", request["comment"]), ("storage_root", storage_root),
                              ("storage_location", storage_location)):
            check_width(value, column, COLUMN_WIDTH)
        store.replace_properties(db, schema_id, request["properties"])
        created_at = store.now_millis()
        db.execute(
            "INSERT INTO schemas (id, catalog_id, name, comment, storage_root, storage_location,"
            " owner, created_at, created_by, updated_at, updated_by)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (schema_id, catalog["id"], name, request["comment"], storage_root, storage_location,
             caller, created_at, caller, created_at, caller),
        )
        row = store.find_schema(db, catalog_name, name)
    return schema_info(row, catalog_name, request["properties"])


def get_schema(db_store: store.Store, full_name: str) -> dict:
    catalog_name, name = split_schema_full_name(full_name)
    with db_store.transaction("Failed to get schema") as db:
        return _load(db, catalog_name, store.find_schema(db, catalog_name, name))


def list_schemas(db_store: store.Store, catalog_name: str, max_results: int | None,
                 page_token: str | None) -> dict:
    size = page_size(max_results, "schemas")
    with db_store.transaction("Failed to list schemas") as db:
        catalog = store.find_catalog(db, catalog_name)
        rows = store.page(db, "schemas", ("catalog_id", catalog["id"]), page_token, size)
        properties = store.properties_of(db, (row["id"] for row in rows))
    return {
        "schemas": [schema_info(row, catalog_name, properties[row["id"]]) for row in rows],
        "next_page_token": store.next_page_token(rows, size),
    }


def update_schema(db_store: store.Store, caller: str | None, full_name: str, request: dict) -> dict:
    """UC's PATCH: a non-empty `properties` replaces the whole map; an empty one changes nothing.

    A `new_name` equal to the current name is refused as already existing, as UC does.
    """
    new_name, comment, properties = request["new_name"], request["comment"], request["properties"]
    if new_name is not None:
        validate_name(new_name)
    with db_store.transaction("Failed to update schema") as db:
        catalog_name, name = split_schema_full_name(full_name)
        row = store.find_schema(db, catalog_name, name)
        if new_name is not None:
            _refuse_existing(db, store.find_catalog(db, catalog_name)["id"], new_name)
        if new_name is None and comment is None and not properties:
            return _load(db, catalog_name, row)
        check_width(comment, "comment", COLUMN_WIDTH)
        if properties:
            store.replace_properties(db, row["id"], properties)
        db.execute(
            "UPDATE schemas SET name = coalesce(?, name), comment = coalesce(?, comment),"
            " updated_at = ?, updated_by = ? WHERE id = ?",
            (new_name, comment, store.now_millis(), caller, row["id"]),
        )
        return _load(db, catalog_name, store.find_schema(db, catalog_name, new_name or name))


def delete_schema(db_store: store.Store, full_name: str, force: bool) -> None:
    catalog_name, name = split_schema_full_name(full_name)
    with db_store.transaction("Failed to delete schema") as db:
        delete_schema_rows(db, store.find_schema(db, catalog_name, name), force)


def delete_schema_rows(db: sqlite3.Connection, schema: sqlite3.Row, force: bool) -> None:
    """Delete a schema; its tables too when `force`, else refuse a schema that has tables."""
    table_ids = [row["id"] for row in db.execute("SELECT id FROM tables WHERE schema_id = ?", (schema["id"],))]
    if table_ids and not force:
        raise UcError("FAILED_PRECONDITION", "Cannot delete schema with tables")
    store.forget_deleted(db, [*table_ids, schema["id"]])
    db.execute("DELETE FROM tables WHERE schema_id = ?", (schema["id"],))
    db.execute("DELETE FROM schemas WHERE id = ?", (schema["id"],))


def _refuse_existing(db: sqlite3.Connection, catalog_id: str, name: str) -> None:
    if db.execute("SELECT 1 FROM schemas WHERE catalog_id = ? AND name = ?", (catalog_id, name)).fetchone():
        raise UcError("SCHEMA_ALREADY_EXISTS", f"Schema already exists: {name}")


def _load(db: sqlite3.Connection, catalog_name: str, row: sqlite3.Row) -> dict:
    return schema_info(row, catalog_name, store.properties_of(db, [row["id"]])[row["id"]])
