"""Grants: `GET`/`PATCH /permissions/{securable_type}/{full_name}`, as UC OSS's PermissionService.

UC keeps grants in Casbin policies (principal id, resource id, privilege) and
never in a transaction with anything else. What this module reproduces:
- The securable is resolved first: a missing one gives its usual 404
  (CATALOG_NOT_FOUND, SCHEMA_NOT_FOUND, TABLE_NOT_FOUND). The metastore's name
  is ignored. This server has no functions, volumes, models, external locations
  or credentials, so those types always answer their "not found".
- PATCH applies the changes in order; each principal must be an existing user,
  found by e-mail, else `404 NOT_FOUND "User not found: <p>"`. Changes applied
  before that point stay (UC applies them one Casbin call at a time). Within one
  change, `add` is applied before `remove`. Grant and revoke are idempotent.
- The answer of PATCH lists the request's principals only; GET lists every
  principal (the caller is always the metastore owner here). Assignments left
  without privileges are dropped. `?principal=` is ignored, as UC ignores it.
- With authorization off (UC's default), nothing is stored and both answer
  `{"privilege_assignments": []}`; user look-ups still apply.
- Principals are listed in the order of their user id (UC groups them in a
  HashMap keyed by UUID, so its order is effectively arbitrary); privileges in
  the order they were granted.
"""

from __future__ import annotations

import sqlite3

from tests.servers.unity_server import store
from tests.servers.unity_server.errors import JavaRuntimeFailure, UcError
from tests.servers.unity_server.validation import split_schema_full_name, split_table_full_name

#: UC's routes: one per securable type; any other type is Armeria's plain 404.
SECURABLE_TYPES = ("metastore", "catalog", "schema", "table", "function", "volume", "registered_model",
                   "external_location", "credential")
#: The "not found" of the types whose resources this server does not keep.
_ABSENT_KINDS = {
    "function": "Function not found: ",
    "volume": "Volume not found: ",
    "registered_model": "Registered model not found: ",
    "external_location": "External location not found: ",
    "credential": "Storage credential not found: ",
}


def get_permissions(db_store: store.Store, authorization: bool, securable_type: str, name: str) -> dict:
    with db_store.transaction("Failed to get permissions") as db:
        resource_id = resource_id_of(db, securable_type, name)
        if not authorization:
            return {"privilege_assignments": []}
        return {"privilege_assignments": _assignments(db, resource_id, None)}


def update_permissions(db_store: store.Store, authorization: bool, securable_type: str, name: str,
                       request: dict) -> dict:
    with db_store.transaction("Failed to update permissions") as db:
        resource_id = resource_id_of(db, securable_type, name)
    if request["changes"] is None:
        raise UcError("INTERNAL", 'Cannot invoke "java.util.List.forEach(java.util.function.Consumer)" because '
                                  '"changes" is null')
    principal_ids: set[str] = set()
    for change in request["changes"]:
        if change is None:
            raise UcError("INTERNAL", 'Cannot invoke "io.unitycatalog.server.model.PermissionsChange'
                                      '.getPrincipal()" because "change" is null')
        # One transaction per change: a later unknown user leaves earlier changes applied, as in UC.
        with db_store.transaction("Failed to update permissions") as db:
            principal_id = user_id_by_email(db, change["principal"])
            principal_ids.add(principal_id)
            for field in ("add", "remove"):
                if change[field] is None:
                    raise UcError("INTERNAL", f'Cannot invoke "java.util.List.forEach(java.util.function.'
                                              f'Consumer)" because the return value of "io.unitycatalog.'
                                              f'server.model.PermissionsChange.get{field.title()}()" is null')
            if not authorization:
                continue
            for privilege in change["add"]:
                if privilege is None:
                    raise JavaRuntimeFailure("null privilege")
                db.execute("INSERT OR IGNORE INTO grants (principal_id, resource_id, privilege) VALUES (?, ?, ?)",
                           (principal_id, resource_id, privilege))
            for privilege in change["remove"]:
                db.execute("DELETE FROM grants WHERE principal_id = ? AND resource_id = ? AND privilege = ?",
                           (principal_id, resource_id, privilege))
    if not authorization:
        return {"privilege_assignments": []}
    with db_store.transaction("Failed to update permissions") as db:
        return {"privilege_assignments": _assignments(db, resource_id, principal_ids)}


def resource_id_of(db: sqlite3.Connection, securable_type: str, name: str) -> str:
    if securable_type == "metastore":
        return store.metastore_id(db)
    if securable_type == "catalog":
        return store.find_catalog(db, name)["id"]
    if securable_type == "schema":
        return store.find_schema(db, *split_schema_full_name(name))["id"]
    if securable_type == "table":
        catalog_name, schema_name, table_name = split_table_full_name(name)
        row = store.find_table(db, store.find_schema(db, catalog_name, schema_name)["id"], table_name)
        if row is None:
            raise UcError("TABLE_NOT_FOUND", f"Table not found: {name}")
        return row["id"]
    raise UcError("NOT_FOUND", _ABSENT_KINDS[securable_type] + name)


def user_id_by_email(db: sqlite3.Connection, email: str | None) -> str:
    row = db.execute("SELECT id FROM users WHERE email = ?", (email,)).fetchone()
    if row is None:
        raise UcError("NOT_FOUND", f"User not found: {'null' if email is None else email}")
    return row["id"]


def _assignments(db: sqlite3.Connection, resource_id: str, principal_ids: set[str] | None) -> list[dict]:
    rows = db.execute(
        "SELECT users.id, users.email, grants.privilege FROM grants JOIN users ON users.id = grants.principal_id"
        " WHERE grants.resource_id = ? ORDER BY users.id, grants.seq", (resource_id,)
    ).fetchall()
    assignments: dict[str, dict] = {}
    for row in rows:
        if principal_ids is not None and row["id"] not in principal_ids:
            continue
        assignment = assignments.setdefault(row["id"], {"principal": row["email"], "privileges": []})
        assignment["privileges"].append(row["privilege"])
    return list(assignments.values())
