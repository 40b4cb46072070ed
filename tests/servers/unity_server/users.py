"""Users through UC OSS's SCIM2 control API (`/api/1.0/unity-control/scim2/Users`), as Scim2UserService.

Principals of grants are users' e-mails, and UC refuses a grant to an unknown
one, so tests create users here as they would on a real UC. Implemented:
`POST` (201, the user as a SCIM UserResource), `GET` (a ListResponse; the only
filter understood is `userName eq "<e-mail>"`), `GET /{id}` and `DELETE /{id}`
(the user is disabled, not removed, and loses its grants, as in UC).

SCIM failures are answered as UC answers them: HTTP 500 with a SCIM error
body whose `status` carries the SCIM status ("409" for a duplicate e-mail,
"412" without a primary e-mail).
"""

from __future__ import annotations

import datetime
import re
import sqlite3
import uuid
from typing import Any

from tests.servers.unity_server import store
from tests.servers.unity_server.errors import UcError

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
_USER_NAME_FILTER = re.compile(r'\s*userName\s+eq\s+"((?:[^"\\]|\\.)*)"\s*', re.IGNORECASE)


class ScimError(Exception):
    """A failure UC reports in SCIM's error format (always with HTTP 500)."""

    def __init__(self, scim_status: int, detail: str) -> None:
        super().__init__(detail)
        self.body = {"schemas": [ERROR_SCHEMA], "status": str(scim_status), "detail": detail}


def create_user(db_store: store.Store, resource: Any) -> dict:
    if not isinstance(resource, dict) or not isinstance(resource.get("emails"), list):
        raise UcError("INTERNAL", 'Cannot invoke "java.util.List.stream()" because the return value of '
                                  '"com.unboundid.scim2.common.types.UserResource.getEmails()" is null')
    primary = next((email for email in resource["emails"]
                    if isinstance(email, dict) and email.get("primary") is True), None)
    if primary is None:
        raise ScimError(412, "User does not have a primary email.")
    email = primary.get("value")
    user_id = str(uuid.uuid4())
    external_id = resource.get("externalId")
    with db_store.transaction("Failed to create user") as db:  # it turns other exceptions into 500 INTERNAL
        exists = db.execute("SELECT 1 FROM users WHERE email = ?", (email,)).fetchone() or (
            external_id is not None
            and db.execute("SELECT 1 FROM users WHERE external_id = ?", (external_id,)).fetchone())
        if not exists:
            insert_user(db, user_id, resource.get("displayName"), email, external_id)
            return user_resource(find_user(db, user_id))
    raise ScimError(409, f"User already exists: {email}")


def insert_user(db: sqlite3.Connection, user_id: str, name: str | None, email: str | None,
                external_id: str | None) -> None:
    db.execute("INSERT INTO users (id, name, email, external_id, state, created_at) VALUES (?, ?, ?, ?, ?, ?)",
               (user_id, name, email, external_id, "ENABLED", store.now_millis()))


def list_users(db_store: store.Store, user_filter: str | None, start_index: int | None,
               count: int | None) -> dict:
    wanted = None
    if user_filter:
        match = _USER_NAME_FILTER.fullmatch(user_filter)
        if match is None:
            raise ScimError(400, f"The test server understands only userName eq \"...\" filters: {user_filter}")
        wanted = match.group(1).replace('\\"', '"').replace("\\\\", "\\")
    start = start_index or 1
    with db_store.transaction("Failed to list users") as db:
        rows = db.execute("SELECT * FROM users ORDER BY name").fetchall()
    resources = [user_resource(row) for row in rows if wanted is None or row["email"] == wanted]
    resources = resources[start - 1:][:50 if count is None else count]
    return {"schemas": [LIST_SCHEMA], "totalResults": len(resources), "Resources": resources,
            "startIndex": start, "itemsPerPage": len(resources),
            "meta": {"resourceType": "User", "created": _iso(store.now_millis()),
                     "lastModified": _iso(store.now_millis())}}


def get_user(db_store: store.Store, user_id: str) -> dict:
    with db_store.transaction("Failed to get user") as db:
        return user_resource(find_user(db, user_id))


def delete_user(db_store: store.Store, user_id: str) -> None:
    with db_store.transaction("Failed to delete user") as db:
        find_user(db, user_id)
        db.execute("DELETE FROM grants WHERE principal_id = ?", (user_id,))
        db.execute("UPDATE users SET state = 'DISABLED' WHERE id = ?", (user_id,))


def find_user(db: sqlite3.Connection, user_id: str) -> sqlite3.Row:
    try:
        canonical = str(uuid.UUID(user_id))
    except ValueError as error:
        raise UcError("INVALID_ARGUMENT", f"Invalid UUID string: {user_id}") from error
    row = db.execute("SELECT * FROM users WHERE id = ?", (canonical,)).fetchone()
    if row is None:
        raise UcError("NOT_FOUND", f"User not found: {user_id}")
    return row


def user_resource(row: sqlite3.Row) -> dict:
    """UC's Scim2Utils.asUserResource, serialized without nulls and with ISO dates."""
    resource = {
        "schemas": [USER_SCHEMA], "id": row["id"], "externalId": row["external_id"],
        "meta": {"resourceType": "User", "created": _iso(row["created_at"]),
                 "lastModified": _iso(row["created_at"])},
        "userName": row["email"], "displayName": row["name"],
        "emails": [{"value": row["email"], "primary": True}], "photos": [{"value": ""}],
        "active": row["state"] == "ENABLED",
    }
    return {key: value for key, value in resource.items() if value is not None}


def _iso(millis: int) -> str:
    moment = datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
