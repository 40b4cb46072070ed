"""SQLite storage for catalogs, schemas, tables, their properties, users and grants.

One connection, one lock: every API call runs as one serialized transaction,
as UC runs each call in one Hibernate transaction. A failure that is not a
UcError rolls back and becomes 500 INTERNAL prefixed with the operation's
failure message, like UC's TransactionManager.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers.unity_server.errors import UcError
from tests.servers.unity_server.validation import check_width

_AUDIT_COLUMNS = """
    owner TEXT, created_at INTEGER NOT NULL, created_by TEXT,
    updated_at INTEGER, updated_by TEXT"""

_DDL = f"""
CREATE TABLE IF NOT EXISTS catalogs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, comment TEXT,
    storage_root TEXT, storage_location TEXT, {_AUDIT_COLUMNS});
CREATE TABLE IF NOT EXISTS schemas (
    id TEXT PRIMARY KEY, catalog_id TEXT NOT NULL REFERENCES catalogs(id), name TEXT NOT NULL,
    comment TEXT, storage_root TEXT, storage_location TEXT, {_AUDIT_COLUMNS},
    UNIQUE (catalog_id, name));
CREATE TABLE IF NOT EXISTS tables (
    id TEXT PRIMARY KEY, schema_id TEXT NOT NULL REFERENCES schemas(id), name TEXT NOT NULL,
    table_type TEXT NOT NULL, data_source_format TEXT, columns TEXT NOT NULL,
    storage_location TEXT, comment TEXT, view_definition TEXT, view_dependencies TEXT,
    {_AUDIT_COLUMNS}, UNIQUE (schema_id, name));
CREATE TABLE IF NOT EXISTS properties (
    entity_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (entity_id, key));
CREATE TABLE IF NOT EXISTS metastore (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY, name TEXT, email TEXT UNIQUE, external_id TEXT,
    state TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS grants (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, principal_id TEXT NOT NULL,
    resource_id TEXT NOT NULL, privilege TEXT NOT NULL,
    UNIQUE (principal_id, resource_id, privilege));
"""

#: Width of UC's uc_properties key and value columns (Hibernate's default for String).
PROPERTY_WIDTH = 255


def now_millis() -> int:
    return int(time.time() * 1000)


class Store:
    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.executescript(_DDL)
        if self._db.execute("SELECT 1 FROM metastore").fetchone() is None:
            self._db.execute("INSERT INTO metastore VALUES (?)", (str(uuid.uuid4()),))
        self._lock = threading.Lock()

    @contextmanager
    def transaction(self, failure: str) -> Iterator[sqlite3.Connection]:
        """Run a block atomically; `failure` prefixes the message of an unexpected error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except UcError:
                self._db.execute("ROLLBACK")
                raise
            except Exception as error:
                self._db.execute("ROLLBACK")
                raise UcError("INTERNAL", f"{failure}: {error}") from error
            self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()


def find_catalog(db: sqlite3.Connection, name: str | None) -> sqlite3.Row:
    row = db.execute("SELECT * FROM catalogs WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise UcError("CATALOG_NOT_FOUND", f"Catalog not found: {name}")
    return row


def find_schema(db: sqlite3.Connection, catalog_name: str | None, schema_name: str | None) -> sqlite3.Row:
    catalog = find_catalog(db, catalog_name)
    row = db.execute(
        "SELECT * FROM schemas WHERE catalog_id = ? AND name = ?", (catalog["id"], schema_name)
    ).fetchone()
    if row is None:
        raise UcError("SCHEMA_NOT_FOUND", f"Schema not found: {catalog_name}.{schema_name}")
    return row


def find_table(db: sqlite3.Connection, schema_id: str, name: str | None) -> sqlite3.Row | None:
    return db.execute(
        "SELECT * FROM tables WHERE schema_id = ? AND name = ?", (schema_id, name)
    ).fetchone()


def page(db: sqlite3.Connection, kind: str, parent: tuple[str, str] | None,
         page_token: str | None, size: int) -> list[sqlite3.Row]:
    """Rows of `kind` named after `page_token`, in ascending (binary) name order."""
    where, arguments = "name > ?", [page_token or ""]
    if parent is not None:
        where += f" AND {parent[0]} = ?"
        arguments.append(parent[1])
    return db.execute(
        f"SELECT * FROM {kind} WHERE {where} ORDER BY name LIMIT ?", (*arguments, size)
    ).fetchall()


def next_page_token(rows: list[sqlite3.Row], size: int) -> str | None:
    """UC hands out the last name whenever a page is full, even when nothing follows."""
    return rows[-1]["name"] if rows and len(rows) >= size else None


def properties_of(db: sqlite3.Connection, entity_ids: Iterable[str]) -> dict[str, dict[str, str]]:
    ids = list(entity_ids)
    found: dict[str, dict[str, str]] = {entity_id: {} for entity_id in ids}
    marks = ",".join("?" * len(ids))
    for row in db.execute(f"SELECT * FROM properties WHERE entity_id IN ({marks})", ids):
        found[row["entity_id"]][row["key"]] = row["value"]
    return found


def replace_properties(db: sqlite3.Connection, entity_id: str, properties: dict | None) -> None:
    db.execute("DELETE FROM properties WHERE entity_id = ?", (entity_id,))
    for key, value in (properties or {}).items():
        if value is None:
            raise ValueError(f"not-null property references a null value: property_value of {key}")
        check_width(key, "property_key", PROPERTY_WIDTH)
        check_width(value, "property_value", PROPERTY_WIDTH)
        db.execute("INSERT INTO properties VALUES (?, ?, ?)", (entity_id, key, value))


def forget_deleted(db: sqlite3.Connection, entity_ids: Iterable[str]) -> None:
    """Forget what belongs to deleted securables: their properties and the grants on them
    (UC's services clear a deleted resource's authorizations, cascades included)."""
    ids = list(entity_ids)
    db.executemany("DELETE FROM properties WHERE entity_id = ?", ((entity_id,) for entity_id in ids))
    db.executemany("DELETE FROM grants WHERE resource_id = ?", ((entity_id,) for entity_id in ids))


def audit_fields(row: sqlite3.Row) -> dict:
    return {key: row[key] for key in ("owner", "created_at", "created_by", "updated_at", "updated_by")}


def metastore_id(db: sqlite3.Connection) -> str:
    return db.execute("SELECT id FROM metastore").fetchone()["id"]
