"""Unity Catalog grants: `GET` and `PATCH /permissions/{securable_type}/{full_name}`.

lance-sync's ids map onto UC securables as (catalog,) -> `catalog`, (catalog, schema) ->
`schema` and (catalog, schema, table) -> `table`. A GET answers
`{"privilege_assignments": [{"principal": <user e-mail>, "privileges": [...]}]}` for every
principal (no paging: UC lists them all at once); a PATCH takes
`{"changes": [{"principal": P, "add": [...], "remove": [...]}]}`, grant and revoke being
idempotent on the server. Privileges travel in UC's spelling, with spaces ("USE SCHEMA").

A principal UC does not know answers 404 NOT_FOUND "User not found: P": InvalidInput here. A
missing securable answers its usual 404 (CATALOG_NOT_FOUND, SCHEMA_NOT_FOUND,
TABLE_NOT_FOUND); for a table any of them is TableNotFound.

The record of the principals lance-sync manages (`record_place`) is a schema's own property;
a table's properties cannot change in place (UC has no table PATCH), so a table's record is a
property of its schema named after the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from lance_namespace.errors import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    TableNotFoundError,
)
from pydantic import StrictStr

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.support.answers import Answer
from lance_sync.drivers.support.http import HttpFailure
from lance_sync.drivers.unity.config import UnityRules
from lance_sync.model.grants import GrantMap, RecordPlace, Securable, format_privileges
from lance_sync.model.marks import GRANTS_KEY

if TYPE_CHECKING:
    from lance_sync.drivers.unity.client import UnityClient

#: UC's securable types, by the length of a lance-sync id
SecurableType = Literal["catalog", "schema", "table"]
SECURABLE_TYPES: dict[int, SecurableType] = {1: "catalog", 2: "schema", 3: "table"}
_USER_NOT_FOUND = "User not found"


class PrivilegeAssignmentAnswer(Answer):
    """PrivilegeAssignment."""

    principal: StrictStr
    privileges: list[StrictStr]


class PermissionsAnswer(Answer):
    """PermissionsList: UC always sends the list (an empty one where nobody holds anything)."""

    privilege_assignments: list[PrivilegeAssignmentAnswer]


class UnityGrants:
    """Reads and changes the grants of one securable through the driver's client."""

    def __init__(self, client: UnityClient, rules: type[UnityRules]) -> None:
        self.client = client
        self.rules = rules

    def list(self, securable_type: SecurableType, full_name: str) -> GrantMap:
        """Every principal's privileges; principals without any are left out."""
        answer = self._call(securable_type, full_name, "GET")
        grants: dict[str, set[str]] = {}
        for assignment in answer.privilege_assignments:
            privileges = {self.rules.canonical_privilege(p) for p in assignment.privileges}
            grants.setdefault(assignment.principal, set()).update(privileges)
        return {principal: frozenset(held) for principal, held in grants.items() if held}

    def change(self, securable_type: SecurableType, full_name: str, principal: str,
               grant: frozenset[str], revoke: frozenset[str]) -> None:
        """Re-read, then send one change with only what differs; nothing when nothing does."""
        held = self.list(securable_type, full_name).get(principal, frozenset())
        add, remove = sorted(grant - held), sorted((revoke - grant) & held)
        if not add and not remove:
            return
        body = {"changes": [{"principal": principal, "add": add, "remove": remove}]}
        try:
            self._call(securable_type, full_name, "PATCH", body)
        except InvalidInputError as error:
            if _USER_NOT_FOUND not in str(error):
                raise
            raise InvalidInputError(f"unity: principal {principal!r} is not a user of this Unity Catalog "
                                    f"(grants go to users, named by e-mail): {error}") from error

    def _call(self, securable_type: SecurableType, full_name: str, method: str,
              body: dict | None = None) -> PermissionsAnswer:
        # a PATCH adds and removes set members: sent twice, it leaves what it left once
        try:
            answer: PermissionsAnswer = self.client.request(
                method, f"/permissions/{securable_type}/{full_name}", json=body,
                expect=PermissionsAnswer, retry_safe=True)
        except NamespaceNotFoundError as error:
            if securable_type != "table":
                raise
            raise TableNotFoundError(f"unity: table {full_name} not found: {error}") from error
        return answer


def record_place(kind: Securable, id: Identifier) -> RecordPlace:
    """A schema's record on itself; a table's on its schema, as `lance_sync.grants.<table>`."""
    if kind == "table":
        return RecordPlace("namespace", tuple(id[:-1]), f"{GRANTS_KEY}.{id[-1]}")
    return RecordPlace(kind, tuple(id), GRANTS_KEY)


def check_grantable(kind_shown: str, wanted: frozenset[str], allowed: frozenset[str]) -> None:
    """InvalidInput for privileges a grant on this securable cannot name (before anything is sent)."""
    refused = wanted - allowed
    if refused:
        raise InvalidInputError(f"unity: {format_privileges(refused)} cannot be granted on a {kind_shown} "
                                f"(grantable: {format_privileges(allowed)})")


def permissions_error_class(path: str, failure: HttpFailure) -> type[LanceNamespaceError] | None:
    """What a generic NOT_FOUND of the permissions API means: an unknown principal, or a missing
    table or namespace by the path's securable type; None for other paths."""
    if not path.startswith("/permissions/"):
        return None
    body = failure.body if isinstance(failure.body, dict) else {}
    if str(body.get("message") or "").startswith(_USER_NOT_FOUND):
        return InvalidInputError
    return TableNotFoundError if path.startswith("/permissions/table/") else NamespaceNotFoundError
