"""AWS Lake Formation permissions over the Glue catalogs this server holds.

The grant store is ours, not moto's: moto 5.2.5's `PermissionCatalog` answers
500 to a revoke after two grants to one principal and resource, keys grants on
the request's exact Resource dict (so a resource with and without CatalogId are
two entries), validates nothing and does not page. Here:

- a grant is keyed on (principal, resource), the resource normalised: CatalogId
  absent means the request's CatalogId, else the account's default catalog, and
  is stored as the full catalog id; database and table names are folded to
  lower case as Glue stores them;
- the principal, the permissions allowed for the resource kind and the
  existence of the resource in the Glue catalog are checked;
- a duplicate grant succeeds and changes nothing; revoking a permission the
  principal does not hold is an InvalidInputException and changes nothing;
- ListPermissions filters by Resource, Principal (with a Resource) and
  ResourceType, and pages with MaxResults/NextToken;
- grants go with their resource: `prune()` runs after every Glue delete.

Supported resource kinds: Catalog, Database, Table (by Name or TableWildcard).
See tests/servers/docs/glue.md for the basis of each behaviour.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from moto.glue.exceptions import EntityNotFoundException as MotoEntityNotFound

from tests.servers.glue_server.catalogs import CatalogTree
from tests.servers.glue_server.errors import GlueError, entity_not_found, invalid_input
from tests.servers.glue_server.paging import page

#: The operations routed here; every other Lake Formation operation is refused.
OPERATIONS = frozenset(
    {
        "GrantPermissions",
        "RevokePermissions",
        "ListPermissions",
        "BatchGrantPermissions",
        "BatchRevokePermissions",
    }
)

#: Glue operations after which grants on vanished resources are dropped.
DELETING_GLUE_OPERATIONS = frozenset(
    {"DeleteTable", "BatchDeleteTable", "DeleteDatabase", "DeleteCatalog"}
)

#: Valid permissions per resource kind (AWS "Lake Formation permissions reference").
PERMISSIONS = {
    "CATALOG": frozenset(
        {"ALL", "SUPER_USER", "ALTER", "CREATE_DATABASE", "CREATE_CATALOG", "DESCRIBE", "DROP"}
    ),
    "DATABASE": frozenset({"ALL", "ALTER", "CREATE_TABLE", "DESCRIBE", "DROP"}),
    "TABLE": frozenset({"ALL", "ALTER", "DELETE", "DESCRIBE", "DROP", "INSERT", "SELECT"}),
}

_ACCOUNT = r"\d{12}"
_IAM_NAME = r"[\w+=,.@-]+"
#: DataLakePrincipalIdentifier forms the AWS permissions reference documents.
PRINCIPAL_FORMS = {
    "IAM user or role": re.compile(rf"arn:aws:iam::{_ACCOUNT}:(user|role)/({_IAM_NAME}/)*{_IAM_NAME}"),
    "SAML user or group": re.compile(
        rf"arn:aws:iam::{_ACCOUNT}:saml-provider/[\w.-]+:(user|group)/[^\s]+"
    ),
    "QuickSight user or group": re.compile(
        rf"arn:aws:quicksight:[a-z0-9-]+:{_ACCOUNT}:(user|group)/[\w-]+/[^\s]+"
    ),
    "IAM Identity Center user or group": re.compile(
        r"arn:aws:identitystore:::(user|group)/[\w-]+"
    ),
    "organization": re.compile(rf"arn:aws:organizations::{_ACCOUNT}:organization/o-[a-z0-9]{{10,32}}"),
    "organizational unit": re.compile(
        rf"arn:aws:organizations::{_ACCOUNT}:ou/o-[a-z0-9]{{10,32}}/ou-[a-z0-9]{{4,32}}-[a-z0-9]{{8,32}}"
    ),
    "AWS account": re.compile(_ACCOUNT),
    "all IAM principals of an account": re.compile(rf"{_ACCOUNT}:IAMPrincipals"),
    "IAM_ALLOWED_PRINCIPALS": re.compile("IAM_ALLOWED_PRINCIPALS"),
}

#: (kind, catalog id, database name or "", table name or "" for a TableWildcard / database / catalog)
ResourceKey = tuple[str, str, str, str]
WILDCARD = "*"


@dataclass
class Entry:
    permissions: set[str] = field(default_factory=set)
    grantable: set[str] = field(default_factory=set)
    updated: datetime = field(default_factory=lambda: datetime.now(timezone.utc))


class LakeFormation:
    def __init__(self, catalogs: CatalogTree):
        self.catalogs = catalogs
        self._grants: dict[tuple[str, ResourceKey], Entry] = {}

    def reset(self) -> None:
        self._grants.clear()

    def handle(self, operation: str, params: dict) -> dict:
        """The answer to one Lake Formation call (params already checked against the model)."""
        if operation not in OPERATIONS:
            raise GlueError(
                "UnknownOperationException",
                f"{operation} is not implemented by this test server's Lake Formation.",
            )
        request_catalog = params.get("CatalogId")
        if operation == "ListPermissions":
            return self._list(params)
        if operation in ("GrantPermissions", "RevokePermissions"):
            self._change(operation == "GrantPermissions", params, request_catalog)
            return {}
        failures = []
        for entry in params["Entries"]:
            try:
                self._change(operation == "BatchGrantPermissions", entry, request_catalog)
            except GlueError as error:
                failures.append(
                    {
                        "RequestEntry": entry,
                        "Error": {"ErrorCode": error.error_type, "ErrorMessage": error.message},
                    }
                )
        return {"Failures": failures}

    def prune(self) -> None:
        """Forget the grants whose database, table or catalog no longer exists."""
        for key in [key for key in self._grants if not self._exists(key[1])]:
            del self._grants[key]

    # Grant and revoke

    def _change(self, grant: bool, request: dict, request_catalog: str | None) -> None:
        principal = _principal(request.get("Principal"))
        resource = self._resource(request.get("Resource"), request_catalog, must_exist=True)
        permissions = set(request.get("Permissions") or [])
        grantable = set(request.get("PermissionsWithGrantOption") or [])
        allowed = PERMISSIONS[resource[0]]
        invalid = sorted((permissions | grantable) - allowed)
        if invalid:
            raise invalid_input(
                f"Permissions {invalid} are not valid for a {resource[0].lower()} resource;"
                f" valid: {sorted(allowed)}."
            )
        if not permissions and not grantable:
            raise invalid_input("Permissions must not be empty.")
        key = (principal, resource)
        if grant:
            if not grantable <= permissions:
                raise invalid_input(
                    "PermissionsWithGrantOption must be a subset of Permissions; not in"
                    f" Permissions: {sorted(grantable - permissions)}."
                )
            entry = self._grants.setdefault(key, Entry())
            entry.permissions |= permissions
            entry.grantable |= grantable
            entry.updated = datetime.now(timezone.utc)
            return
        entry = self._grants.get(key, Entry())
        missing = sorted((permissions - entry.permissions) | (grantable - entry.grantable))
        if missing:
            raise invalid_input(f"No permissions revoked. Grantee does not have:[{', '.join(missing)}]")
        entry.permissions -= permissions
        entry.grantable -= permissions | grantable
        entry.updated = datetime.now(timezone.utc)
        if not entry.permissions:
            del self._grants[key]

    # ListPermissions

    def _list(self, params: dict) -> dict:
        principal_filter = params.get("Principal")
        resource_filter = params.get("Resource")
        if principal_filter is not None and resource_filter is None:
            raise invalid_input("Resource is mandatory if Principal is set in the input.")
        principal = _principal(principal_filter) if principal_filter is not None else None
        resource = (
            self._resource(resource_filter, params.get("CatalogId"), must_exist=False)
            if resource_filter is not None
            else None
        )
        kind = params.get("ResourceType")
        if kind in (None, "ANY_RESOURCE"):
            kind = None
        elif kind not in PERMISSIONS:
            raise invalid_input(f"ResourceType {kind} is not supported by this test server.")
        catalog = (
            self.catalogs.catalog_id(self.catalogs.get(params["CatalogId"]))
            if params.get("CatalogId") and resource is None
            else None
        )
        selected = [
            (key, entry)
            for key, entry in self._grants.items()
            if (principal is None or key[0] == principal)
            and (resource is None or key[1] == resource)
            and (kind is None or key[1][0] == kind)
            and (catalog is None or key[1][1] == catalog)
        ]
        listing = "ListPermissions " + json.dumps([principal, resource, kind, catalog])
        entries, token = page(
            selected,
            lambda item: json.dumps([item[0][1], item[0][0]]),
            listing,
            params.get("MaxResults"),
            params.get("NextToken"),
        )
        answer: dict[str, Any] = {
            "PrincipalResourcePermissions": [_describe(key, entry) for key, entry in entries]
        }
        if token:
            answer["NextToken"] = token
        return answer

    # Resources

    def _resource(self, resource: Any, request_catalog: str | None, must_exist: bool) -> ResourceKey:
        if not isinstance(resource, dict):
            raise invalid_input("Resource is required.")
        given = [name for name, value in resource.items() if value is not None]
        if len(given) != 1:
            raise invalid_input(
                "Resource must have exactly one of the catalog, table or database fields populated."
            )
        (name,) = given
        spec = resource[name]
        if name == "Catalog":
            key = ("CATALOG", self._catalog_id(spec.get("Id") or request_catalog), "", "")
        elif name == "Database":
            catalog = self._catalog_id(spec.get("CatalogId") or request_catalog)
            key = ("DATABASE", catalog, spec["Name"].lower(), "")
        elif name == "Table":
            catalog = self._catalog_id(spec.get("CatalogId") or request_catalog)
            has_name, wildcard = spec.get("Name") is not None, spec.get("TableWildcard") is not None
            if has_name == wildcard:
                raise invalid_input("A table resource needs exactly one of Name and TableWildcard.")
            table = spec["Name"].lower() if has_name else WILDCARD
            key = ("TABLE", catalog, spec["DatabaseName"].lower(), table)
        else:
            raise invalid_input(f"Resource type {name} is not supported by this test server.")
        if must_exist and not self._exists(key):
            raise entity_not_found(_missing_message(key))
        return key

    def _catalog_id(self, catalog_id: str | None) -> str:
        """The full id of an existing catalog (EntityNotFound or AccessDenied otherwise)."""
        return self.catalogs.catalog_id(self.catalogs.get(catalog_id))

    def _exists(self, key: ResourceKey) -> bool:
        kind, catalog_id, database, table = key
        try:
            backend = self.catalogs.get(catalog_id).backend
            if kind == "CATALOG":
                return True
            backend.get_database(database)
            if kind == "TABLE" and table != WILDCARD:
                backend.get_table(database, table)
        except (MotoEntityNotFound, GlueError):
            return False
        return True


def _principal(principal: Any) -> str:
    identifier = (principal or {}).get("DataLakePrincipalIdentifier") if isinstance(principal, dict) else None
    if not identifier:
        raise invalid_input("Principal.DataLakePrincipalIdentifier is required.")
    if not any(form.fullmatch(identifier) for form in PRINCIPAL_FORMS.values()):
        raise invalid_input(
            f"Invalid principal {identifier!r}: expected an IAM user or role ARN, a SAML,"
            " QuickSight or IAM Identity Center user or group ARN, an organization or"
            " organizational unit ARN, an account id, <account>:IAMPrincipals or"
            " IAM_ALLOWED_PRINCIPALS."
        )
    return identifier


def _describe(key: tuple[str, ResourceKey], entry: Entry) -> dict:
    principal, (kind, catalog_id, database, table) = key
    if kind == "CATALOG":
        resource: dict[str, Any] = {"Catalog": {"Id": catalog_id}}
    elif kind == "DATABASE":
        resource = {"Database": {"CatalogId": catalog_id, "Name": database}}
    elif table == WILDCARD:
        resource = {"Table": {"CatalogId": catalog_id, "DatabaseName": database, "TableWildcard": {}}}
    else:
        resource = {"Table": {"CatalogId": catalog_id, "DatabaseName": database, "Name": table}}
    return {
        "Principal": {"DataLakePrincipalIdentifier": principal},
        "Resource": resource,
        "Permissions": sorted(entry.permissions),
        "PermissionsWithGrantOption": sorted(entry.grantable),
        "LastUpdated": entry.updated.timestamp(),
    }


def _missing_message(key: ResourceKey) -> str:
    kind, catalog_id, database, table = key
    if kind == "DATABASE" or (kind == "TABLE" and table == WILDCARD):
        return f"Database {database} not found in catalog {catalog_id}."
    return f"Table {database}.{table} not found in catalog {catalog_id}."
