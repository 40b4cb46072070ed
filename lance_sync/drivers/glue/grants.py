"""Grants on Glue databases and tables: AWS Lake Formation permissions.

Lake Formation keeps its permissions apart from the Glue objects they are on: a grant names a
principal (`DataLakePrincipalIdentifier`) and a resource, `{"Database": {CatalogId, Name}}` or
`{"Table": {CatalogId, DatabaseName, Name}}`, always with the object's CatalogId. The driver
sends these calls to Lake Formation with the credentials and region of its Glue calls, through
the same client (`GlueClient.call`: answers checked against botocore's model, errors
translated, garbled reads sent again).

- `list_grants` reads `ListPermissions` filtered by the resource, every page; a privilege held
  with the grant option (`PermissionsWithGrantOption`) counts as held. Lake Formation answers
  an empty list for an object that does not exist, so the object is read from Glue first.
  Entries of other resource forms the filter may bring along (a column subset, a data
  filter) are not grants on the whole object and are left out; a column grant with
  `ColumnWildcard` and no excluded column is one on the whole table.
- `change_grants` re-reads the principal's permissions and sends only the difference:
  `RevokePermissions` (of what is held) first, then `GrantPermissions` (of what is not). Lake
  Formation refuses a whole revoke that names a permission not held, so a revoke that fails
  (a retry of one that landed, another writer) is followed by one more read: where the
  permissions are gone already, the change is done.
- A level-1 namespace is a catalog: it has no grants here (`grant_privileges` is empty, its
  listing is empty, a change is InvalidInput).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lance_namespace.errors import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableNotFoundError,
)

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.glue.config import GlueRules
from lance_sync.drivers.support.paging import follow_pages
from lance_sync.drivers.support.retry import BadAnswerError
from lance_sync.model.grants import GrantMap, Securable, format_privileges

if TYPE_CHECKING:
    from lance_sync.drivers.glue.client import GlueClient

#: ListPermissions' MaxResults cap (botocore model)
PERMISSIONS_PAGE_SIZE = 1000
#: errors after which a grant or revoke may have landed, or met one that did: read again
_UNSURE = (InvalidInputError, BadAnswerError, ServiceUnavailableError)


@dataclass(frozen=True)
class _Target:
    """The Lake Formation resource of an object (None: a catalog, which has no grants here)."""

    kind: Securable
    subject: str
    resource: dict[str, Any] | None
    missing: type[LanceNamespaceError]


@dataclass
class _Held:
    """One principal's permissions on the object, and those it holds with the grant option."""

    permissions: set[str] = field(default_factory=set)
    grantable: set[str] = field(default_factory=set)

    @property
    def all(self) -> frozenset[str]:
        return frozenset(self.permissions | self.grantable)


class LakeFormationGrants:
    """`list_grants` and `change_grants` of a GlueNamespace (see the module docstring), sent
    through its client; the rules on principals and privileges are `GlueRules`'."""

    def __init__(self, client: GlueClient):
        self.client = client

    def list(self, kind: Securable, id: Identifier) -> GrantMap:
        target = self._target(kind, id)
        if target.resource is None:
            return {}
        return {principal: held.all for principal, held in self._read(target).items() if held.all}

    def change(self, kind: Securable, id: Identifier, principal: str,
               grant: frozenset[str], revoke: frozenset[str]) -> None:
        config = self.client.config
        problem = GlueRules.check_principal(principal, config)
        if problem is not None:
            raise InvalidInputError(f"glue: {problem}")
        grant = frozenset(map(GlueRules.canonical_privilege, grant))
        revoke = frozenset(map(GlueRules.canonical_privilege, revoke))
        if grant & revoke:
            raise InvalidInputError(f"glue: cannot grant and revoke {format_privileges(grant & revoke)} "
                                    "in one change")
        allowed = GlueRules.grant_privileges(kind, id, config)
        unknown = (grant | revoke) - allowed
        if allowed and unknown:
            raise InvalidInputError(f"glue: {format_privileges(unknown)} cannot be granted on a "
                                    f"{_resource_kind(kind)}; Lake Formation has {format_privileges(allowed)}")
        target = self._target(kind, id)
        if not allowed or target.resource is None:
            raise InvalidInputError(f"glue: {target.subject} is a catalog: lance-sync manages grants "
                                    "on databases and tables only")
        if not grant and not revoke:
            return
        held = self._read(target, principal).get(principal, _Held())
        to_revoke = revoke & held.all
        if to_revoke:
            request = {"Permissions": sorted(to_revoke & held.permissions)}
            if to_revoke & held.grantable:
                request["PermissionsWithGrantOption"] = sorted(to_revoke & held.grantable)
            self._write("RevokePermissions", target, principal, request,
                        done=lambda now: not (to_revoke & now.all))
        to_grant = grant - held.all
        if to_grant:
            self._write("GrantPermissions", target, principal, {"Permissions": sorted(to_grant)},
                        done=lambda now: to_grant <= now.all)

    # --- Lake Formation calls --------------------------------------------------------------

    def _target(self, kind: Securable, id: Identifier) -> _Target:
        """The object's resource, read from Glue first (NamespaceNotFound / TableNotFound)."""
        client = self.client
        subject = client.subject(id)
        if kind == "table":
            client.lance_table(id)
            database, name = client.table_ref(id)
            return _Target(kind, subject, {"Table": {"CatalogId": database.catalog_id,
                                                     "DatabaseName": database.name, "Name": name}},
                           TableNotFoundError)
        found = client.resolve_namespace(id)
        if found.database is None:
            return _Target(kind, subject, None, NamespaceNotFoundError)
        return _Target(kind, subject, {"Database": {"CatalogId": found.catalog_id, "Name": found.database}},
                       NamespaceNotFoundError)

    def _read(self, target: _Target, principal: str | None = None) -> dict[str, _Held]:
        """Every principal's (or one principal's) permissions on the object, every page."""
        held: dict[str, _Held] = {}
        for entry in self._entries(target, principal):
            if not self._is_whole_object(target, entry):
                continue
            name = entry["Principal"]["DataLakePrincipalIdentifier"]
            into = held.setdefault(name, _Held())
            into.permissions.update(map(GlueRules.canonical_privilege, entry["Permissions"]))
            into.grantable.update(map(GlueRules.canonical_privilege,
                                      entry.get("PermissionsWithGrantOption") or []))
        return held

    def _entries(self, target: _Target, principal: str | None) -> Iterator[dict[str, Any]]:
        params: dict[str, Any] = {"Resource": target.resource, "MaxResults": PERMISSIONS_PAGE_SIZE}
        if principal is not None:
            params["Principal"] = {"DataLakePrincipalIdentifier": principal}

        def fetch(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
            paging: dict[str, Any] = {"NextToken": token} if token else {}
            answer = self.client.call("ListPermissions", target.subject, missing=target.missing,
                                      **params, **paging)
            return answer["PrincipalResourcePermissions"], answer.get("NextToken")

        return follow_pages(fetch)

    def _is_whole_object(self, target: _Target, entry: dict[str, Any]) -> bool:
        """Whether an answered entry is a grant on the whole object; a grant on another object
        of the same kind is a BadAnswerError (the server ignored the filter)."""
        assert target.resource is not None
        resource = entry["Resource"]
        if target.kind == "namespace":
            found = resource.get("Database")
            wanted = target.resource["Database"]
            same = found is not None and _same_name(found.get("Name"), wanted["Name"])
        else:
            wanted = target.resource["Table"]
            columns = resource.get("TableWithColumns")
            if columns is not None and not ("ColumnWildcard" in columns
                                            and not (columns["ColumnWildcard"] or {}).get("ExcludedColumnNames")):
                return False  # a column subset: not a grant on the whole table
            found = resource.get("Table") if columns is None else columns
            if found is None or found.get("Name") is None:
                return False  # a TableWildcard: a grant on every table of the database
            same = (_same_name(found.get("Name"), wanted["Name"])
                    and _same_name(found.get("DatabaseName"), wanted["DatabaseName"]))
        if found is None:
            return False
        if not same:
            raise BadAnswerError(f"glue: ListPermissions on {target.subject} answered a grant on "
                                 f"another {_resource_kind(target.kind)}: {resource}")
        return True

    def _write(self, operation: str, target: _Target, principal: str, request: dict[str, Any],
               done: Callable[[_Held], bool]) -> None:
        """One GrantPermissions or RevokePermissions; where it fails in a way that may mean it
        (or another writer) made the change already, `done(held now)` decides."""
        try:
            self.client.call(operation, target.subject, missing=target.missing, Resource=target.resource,
                             Principal={"DataLakePrincipalIdentifier": principal}, **request)
        except _UNSURE:
            if not done(self._read(target, principal).get(principal, _Held())):
                raise


def _same_name(answered: Any, wanted: str) -> bool:
    """Glue folds names to lower case; an answer may carry the folded name."""
    return isinstance(answered, str) and answered.lower() == wanted.lower()


def _resource_kind(kind: Securable) -> str:
    return "table" if kind == "table" else "database"
