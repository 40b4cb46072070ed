"""Tables: create, get, list and delete, as UC OSS's TableRepository (UC has no table PATCH).

EXTERNAL tables are the ones this server really keeps. MANAGED creation is
refused as a UC server without staging tables refuses it, and views are kept
with their definition and dependencies.
"""

from __future__ import annotations

import json
import sqlite3
import uuid

from tests.servers.unity_server import store
from tests.servers.unity_server.errors import JavaRuntimeFailure, UcError
from tests.servers.unity_server.locations import (
    is_cloud_storage_root,
    normalize_location,
    refuse_managed_storage_prefix,
)
from tests.servers.unity_server.type_json import validate_column
from tests.servers.unity_server.validation import (
    check_width,
    java_split_on_dots,
    page_size,
    split_table_full_name,
    validate_name,
)

VIEW_LIKE = ("VIEW", "METRIC_VIEW")
#: (field, width) of uc_columns columns that a request can overflow.
COLUMN_WIDTHS = (("name", 255), ("comment", 65535), ("type_interval_type", 255))
#: The NullPointerException UC's JVM throws when it stores a column without these fields.
COLUMN_NULL_POINTERS = {
    "type_name": 'Cannot invoke "io.unitycatalog.server.model.ColumnTypeName.toString()" because '
                 'the return value of "io.unitycatalog.server.model.ColumnInfo.getTypeName()" is null',
    "position": 'Cannot invoke "java.lang.Integer.shortValue()" because the return value of '
                '"io.unitycatalog.server.model.ColumnInfo.getPosition()" is null',
}


def table_info(row: sqlite3.Row, catalog_name: str, schema_name: str,
               columns: list[dict], properties: dict | None) -> dict:
    dependencies = row["view_dependencies"]
    return {
        "name": row["name"], "catalog_name": catalog_name, "schema_name": schema_name,
        "table_type": row["table_type"], "data_source_format": row["data_source_format"],
        "columns": columns, "storage_location": row["storage_location"],
        "comment": row["comment"], "properties": properties, **store.audit_fields(row),
        "table_id": row["id"], "view_definition": row["view_definition"],
        "view_dependencies": json.loads(dependencies) if dependencies else None,
    }


def create_table(db_store: store.Store, caller: str | None, request: dict) -> dict:
    validate_name(request["name"])
    columns = _validated_columns(request)
    full_name = f"{request['catalog_name']}.{request['schema_name']}.{request['name']}"
    with db_store.transaction(f"Error creating table: {full_name}") as db:
        schema = store.find_schema(db, request["catalog_name"], request["schema_name"])
        if store.find_table(db, schema["id"], request["name"]) is not None:
            raise UcError("TABLE_ALREADY_EXISTS", f"Table already exists: {full_name}")
        location, dependencies = _location_and_dependencies(db, request)
        _check_widths(request, columns, location)
        table_id = str(uuid.uuid4())
        store.replace_properties(db, table_id, request["properties"])
        created_at = store.now_millis()
        db.execute(
            "INSERT INTO tables (id, schema_id, name, table_type, data_source_format, columns,"
            " storage_location, comment, view_definition, view_dependencies, owner, created_at,"
            " created_by, updated_at, updated_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (table_id, schema["id"], request["name"], request["table_type"],
             request["data_source_format"], json.dumps([_as_stored(column) for column in columns]),
             location, request["comment"], request["view_definition"],
             json.dumps(dependencies) if dependencies is not None else None,
             caller, created_at, caller, created_at, caller),
        )
        row = store.find_table(db, schema["id"], request["name"])
    return table_info(row, request["catalog_name"], request["schema_name"], columns, request["properties"])


def get_table(db_store: store.Store, full_name: str) -> dict:
    catalog_name, schema_name, name = split_table_full_name(full_name)
    with db_store.transaction("Failed to get table") as db:
        schema = store.find_schema(db, catalog_name, schema_name)
        row = store.find_table(db, schema["id"], name)
        if row is None:
            raise UcError("TABLE_NOT_FOUND", f"Table not found: {full_name}")
        properties = store.properties_of(db, [row["id"]])[row["id"]]
    return table_info(row, catalog_name, schema_name, json.loads(row["columns"]), properties)


def list_tables(db_store: store.Store, catalog_name: str, schema_name: str, max_results: int | None,
                page_token: str | None, omit_properties: bool, omit_columns: bool) -> dict:
    size = page_size(max_results, "tables")
    with db_store.transaction("Failed to list tables") as db:
        schema = store.find_schema(db, catalog_name, schema_name)
        rows = store.page(db, "tables", ("schema_id", schema["id"]), page_token, size)
        properties = store.properties_of(db, [] if omit_properties else (row["id"] for row in rows))
    return {
        "tables": [
            table_info(row, catalog_name, schema_name,
                       [] if omit_columns else json.loads(row["columns"]),
                       properties.get(row["id"], {}))
            for row in rows
        ],
        "next_page_token": store.next_page_token(rows, size),
    }


def delete_table(db_store: store.Store, full_name: str) -> None:
    catalog_name, schema_name, name = split_table_full_name(full_name)
    with db_store.transaction("Failed to delete table") as db:
        schema = store.find_schema(db, catalog_name, schema_name)
        row = store.find_table(db, schema["id"], name)
        if row is None:
            raise UcError("TABLE_NOT_FOUND", f"Table not found: {name}")
        store.forget_deleted(db, [row["id"]])
        db.execute("DELETE FROM tables WHERE id = ?", (row["id"],))


def _validated_columns(request: dict) -> list[dict]:
    """Columns as UC echoes them: type_json checked, type_text lower-cased."""
    if request["columns"] is None:
        raise UcError("INTERNAL", 'Cannot invoke "java.util.List.stream()" because the return value of '
                                  '"io.unitycatalog.server.model.CreateTable.getColumns()" is null')
    columns = []
    for column in request["columns"]:
        if column is None:
            raise UcError("INVALID_ARGUMENT", "Invalid type_json for column <unknown>: column cannot be null")
        validate_column(column, request["data_source_format"])
        if column["type_text"] is None:
            raise UcError("INTERNAL", 'Cannot invoke "String.toLowerCase(java.util.Locale)" because the '
                                      'return value of "io.unitycatalog.server.model.ColumnInfo'
                                      '.getTypeText()" is null')
        columns.append({**column, "type_text": column["type_text"].lower()})
    return columns


def _location_and_dependencies(db: sqlite3.Connection, request: dict) -> tuple[str | None, dict | None]:
    """The stored storage location and view dependencies, by table type."""
    table_type = request["table_type"]
    if table_type is None:
        raise JavaRuntimeFailure("null")
    if table_type == "EXTERNAL":
        return _external_location(db, request["storage_location"]), None
    if table_type == "MANAGED":
        location = _normalized_or_none(request["storage_location"])
        if request["data_source_format"] != "DELTA":
            raise UcError("INVALID_ARGUMENT", "Managed table creation is only supported for Delta format.")
        raise UcError("TABLE_NOT_FOUND", f"Staging table not found: {location}")
    if table_type in VIEW_LIKE:
        return None, _view_dependencies(db, request)
    kind = "STREAMING TABLE" if table_type == "STREAMING_TABLE" else "MATERIALIZED VIEW"
    raise UcError("INVALID_ARGUMENT", f"{kind} creation is not supported yet.")


def _external_location(db: sqlite3.Connection, storage_location: str | None) -> str:
    if storage_location is None:
        raise JavaRuntimeFailure(
            'Cannot invoke "io.unitycatalog.server.utils.NormalizedURL.isCloudStorageRoot()" '
            'because "storageLocation" is null'
        )
    location = normalize_location(storage_location)
    if is_cloud_storage_root(location):
        raise UcError(
            "INVALID_ARGUMENT",
            f"External table storage location must include a non-empty path prefix: {storage_location}",
        )
    refuse_managed_storage_prefix(location)
    if _managed_storage_below(db, location):
        raise UcError("INVALID_ARGUMENT", f"Input path '{location}' overlaps with managed storage.")
    return location


def _managed_storage_below(db: sqlite3.Connection, location: str) -> bool:
    prefix = location.rstrip("/") + "/"
    return any(
        db.execute(f"SELECT 1 FROM {kind} WHERE substr(storage_location, 1, ?) = ?",
                   (len(prefix), prefix)).fetchone()
        for kind in ("catalogs", "schemas")
    )


def _normalized_or_none(location: str | None) -> str | None:
    return None if location is None else normalize_location(location)


def _view_dependencies(db: sqlite3.Connection, request: dict) -> dict:
    """UC's validateViewLike: a definition is required; every dependency must exist."""
    label = "metric view" if request["table_type"] == "METRIC_VIEW" else "view"
    if not request["view_definition"]:
        raise UcError("INVALID_ARGUMENT", f"view_definition is required for {label}")
    listed = (request["view_dependencies"] or {}).get("dependencies") or []
    dependencies = [_dependency(entry) for entry in listed]
    for kind, full_name in dependencies:
        _check_dependency_exists(db, kind, full_name)
    if label == "metric view" and not dependencies:
        raise UcError("INVALID_ARGUMENT", "view_dependencies must contain at least one entry for metric view")
    return {"dependencies": [
        {"table": {"table_full_name": name} if kind == "table" else None,
         "function": {"function_full_name": name} if kind == "function" else None}
        for kind, name in dependencies
    ]}


def _dependency(entry: dict | None) -> tuple[str, str]:
    """(kind, full name) of one dependency, refused as UC's DependencyDAO.from refuses it."""
    table, function = (entry or {}).get("table"), (entry or {}).get("function")
    if table is not None and function is not None:
        raise UcError("INVALID_ARGUMENT", "Dependency must have exactly one of table or function set, not both")
    if table is None and function is None:
        raise UcError("INVALID_ARGUMENT", "Unsupported dependency type")
    kind = "table" if table is not None else "function"
    full_name = table["table_full_name"] if table is not None else function["function_full_name"]
    if not full_name:
        raise UcError("INVALID_ARGUMENT", f"Dependency {kind} full name must not be null or empty")
    if len(java_split_on_dots(full_name)) != 3:
        raise UcError(
            "INVALID_ARGUMENT",
            f"Dependency {kind} full name must be a three-part name (catalog.schema.{kind}); got: {full_name}",
        )
    return kind, full_name


def _check_dependency_exists(db: sqlite3.Connection, kind: str, full_name: str) -> None:
    catalog_name, schema_name, name = java_split_on_dots(full_name)
    schema = store.find_schema(db, catalog_name, schema_name)
    # This server has no functions API, so a function dependency never exists.
    if kind == "function" or store.find_table(db, schema["id"], name) is None:
        raise UcError("NOT_FOUND", f"View dependency {kind} does not exist: {full_name}")


def _check_widths(request: dict, columns: list[dict], location: str | None) -> None:
    """What UC's database refuses when the table is persisted (500 INTERNAL)."""
    check_width(request["comment"], "comment", 65535)
    check_width(location, "url", 2048)
    seen: set[tuple[int, str | None]] = set()
    for column in columns:
        for field, null_pointer in COLUMN_NULL_POINTERS.items():
            if column[field] is None:
                raise JavaRuntimeFailure(null_pointer)
        for field, width in COLUMN_WIDTHS:
            check_width(column[field], field, width)
        key = (column["position"], column["name"])
        if key in seen:
            raise JavaRuntimeFailure(
                "could not execute statement [Unique index or primary key violation on "
                "uc_columns(table_id, ordinal_position, name)]"
            )
        seen.add(key)


def _as_stored(column: dict) -> dict:
    """A column as UC reads it back: `nullable` is a primitive boolean in its database."""
    return {**column, "nullable": bool(column["nullable"])}
