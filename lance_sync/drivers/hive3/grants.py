"""Grants on databases and tables: the metastore's privilege rows (DB_PRIVS, TBL_PRIVS),
listed for every principal and changed one principal at a time (`Hive3Grants`, which
`Hive3Namespace.list_grants` and `Hive3Namespace.change_grants` call), through the driver's
client (`client.Hive3Client`).

What the metastore does, on HMS 2.3 and the suite's Hive 3 server alike
(tests/servers/hive_checks.py, PRIVILEGE_CHECKS), and how the driver copes:

- It stores any string as a privilege, case kept: the driver lists privileges canonically
  (upper case) and revokes a row with the spelling it was stored with.
- A grant of a privilege the principal holds already, or a revoke of one it does not hold,
  fails the whole request: the driver reads the principal's rows first and sends only the
  difference.
- A grant on a missing table succeeds and stores nothing: the driver reads the object first
  (NamespaceNotFound, TableNotFound).
- A revoke removes one row per privilege named, the first it finds (a table's privileges
  compared ignoring case, a database's exactly), so a privilege held twice (two grantors, or
  two spellings of a table privilege) takes more than one request: the driver revokes and
  reads again until none is left.

`list_privileges` with no principal answers every principal's rows on one object, on both.
Objects of the default catalog are named without a catalog (as HMS 2.x expects); others
carry `catName`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lance_namespace.errors import InternalError, InvalidInputError
from pymetastore.hive_metastore.ttypes import (
    GrantRevokePrivilegeRequest,
    GrantRevokePrivilegeResponse,
    GrantRevokeType,
    HiveObjectPrivilege,
    HiveObjectRef,
    HiveObjectType,
    PrincipalType,
    PrivilegeBag,
    PrivilegeGrantInfo,
)

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.hive3.config import Hive3Config, Hive3Rules, split_principal
from lance_sync.drivers.hive3.errors import METASTORE_ERRORS
from lance_sync.drivers.hive3.objects import display, id_parts, is_default_catalog
from lance_sync.drivers.support.retry import BadAnswerError
from lance_sync.model.grants import GrantMap, Securable, format_privileges

if TYPE_CHECKING:
    from lance_sync.drivers.hive3.client import Hive3Client

#: the grantor recorded on the rows the driver grants
GRANTOR = "lance-sync"
PRINCIPAL_TYPES = {"user": PrincipalType.USER, "group": PrincipalType.GROUP, "role": PrincipalType.ROLE}
PRINCIPAL_KINDS = {value: kind for kind, value in PRINCIPAL_TYPES.items()}


class Hive3Grants:
    """Reads and changes the privilege rows of databases and tables through the driver's client;
    `rules` (the driver's class) spells privileges and says which each object takes."""

    def __init__(self, client: Hive3Client, rules: type[Hive3Rules], config: Hive3Config) -> None:
        self.client = client
        self.rules = rules
        self.config = config

    def list_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        """Every principal's privileges on the database or table: one list_privileges after the
        object's own read."""
        ref = self._object_ref(kind, id)
        grants: dict[str, set[str]] = {}
        for row in self.client.send("list_privileges", None, None, ref):
            privilege = self.rules.canonical_privilege(row.grantInfo.privilege)
            if privilege:  # a blank row can be neither granted nor revoked (HMS skips it)
                grants.setdefault(f"{PRINCIPAL_KINDS[row.principalType]}:{row.principalName}",
                                  set()).add(privilege)
        return {principal: frozenset(privileges) for principal, privileges in grants.items()}

    def change_grants(self, kind: Securable, id: Identifier, principal: str,
               grant: frozenset[str], revoke: frozenset[str]) -> None:
        """Grant and revoke one principal's privileges: the object is read, then the principal's
        rows on it, then what differs is sent (a revoke, then a grant)."""
        name, principal_type = self._principal(principal)
        canonical = self.rules.canonical_privilege
        grant = frozenset(canonical(p) for p in grant)
        revoke = frozenset(canonical(p) for p in revoke)
        self._check_change(kind, id, grant, revoke)
        ref = self._object_ref(kind, id)
        rows = self._rows(name, principal_type, ref)
        held = {canonical(row.grantInfo.privilege) for row in rows}
        for _ in range(len(rows)):  # each round removes at least one row
            doomed = [row for row in rows if canonical(row.grantInfo.privilege) in revoke]
            if not doomed:
                break
            sent = self._revoke(kind, id, ref, name, principal_type, doomed)
            if sent == len(doomed):
                break
            rows = self._rows(name, principal_type, ref)  # a privilege held more than once
        if missing := grant - held:
            self._send_change(kind, id, ref, name, principal_type, GrantRevokeType.GRANT, [
                _privilege(ref, name, principal_type, privilege) for privilege in sorted(missing)])

    def _check_change(self, kind: Securable, id: Identifier, grant: frozenset[str],
                      revoke: frozenset[str]) -> None:
        """InvalidInput for a change that cannot be made (before anything is read or sent)."""
        allowed = self.rules.grant_privileges(kind, id, self.config)
        if not allowed:
            raise InvalidInputError(f"hive3: {kind} {display(id)} has no grants (databases and tables have)")
        if unknown := grant - allowed:
            raise InvalidInputError(f"hive3: {format_privileges(unknown)} cannot be granted on {kind} "
                                    f"{display(id)} (allowed: {format_privileges(allowed)})")
        if both := grant & revoke:
            raise InvalidInputError(f"hive3: {format_privileges(both)} both granted and revoked")
        if "" in revoke:
            raise InvalidInputError("hive3: a privilege cannot be blank")

    def _principal(self, principal: str) -> tuple[str, int]:
        """(name, PrincipalType) of a principal a manifest wrote (InvalidInput for another form)."""
        parts = split_principal(principal)
        if parts is None:
            raise InvalidInputError(f"hive3: {self.rules.check_principal(principal, self.config)}")
        kind, name = parts
        return name, PRINCIPAL_TYPES[kind]

    def _object_ref(self, kind: Securable, id: Identifier) -> HiveObjectRef:
        """The object as list_privileges and grants name it, after reading it (NamespaceNotFound,
        TableNotFound; InvalidInput for a table that is not a Lance table)."""
        if kind == "namespace":
            parts = id_parts(list(id), "namespace", 1, 2)
            if len(parts) == 1:
                raise InvalidInputError(f"hive3: catalog {display(parts)} has no grants (databases and "
                                        "tables have)")
            catalog, database = parts
            self.client.get_database(catalog, database)
            return HiveObjectRef(objectType=HiveObjectType.DATABASE, dbName=database,
                                 catName=None if is_default_catalog(catalog) else catalog)
        catalog, database, name = id_parts(list(id), "table", 3, 3)
        self.client.lance_table(catalog, database, name)
        return HiveObjectRef(objectType=HiveObjectType.TABLE, dbName=database, objectName=name,
                             catName=None if is_default_catalog(catalog) else catalog)

    def _rows(self, name: str, principal_type: int, ref: HiveObjectRef) -> list[HiveObjectPrivilege]:
        """The principal's live rows on the object (blank ones left out: HMS skips them)."""
        return [row for row in self.client.send("list_privileges", name, principal_type, ref)
                if row.grantInfo.privilege.strip()]

    def _revoke(self, kind: Securable, id: Identifier, ref: HiveObjectRef, name: str,
                principal_type: int, rows: list[HiveObjectPrivilege]) -> int:
        """One revoke naming each row's privilege as stored, each spelling once (two entries that
        find the same row would remove it once); returns how many entries were sent."""
        spellings: dict[str, str] = {}
        for row in rows:
            stored = row.grantInfo.privilege
            # a table's revoke matches any case, a database's the exact spelling
            spellings.setdefault(stored.lower() if ref.objectType == HiveObjectType.TABLE else stored, stored)
        self._send_change(kind, id, ref, name, principal_type, GrantRevokeType.REVOKE, [
            _privilege(ref, name, principal_type, stored) for stored in sorted(spellings.values())])
        return len(spellings)

    def _send_change(self, kind: Securable, id: Identifier, ref: HiveObjectRef, name: str,
                     principal_type: int, request_type: int, privileges: list[HiveObjectPrivilege]) -> None:
        """One grant_revoke_privileges. A refusal (HMS 2.3 answers an internal error for any) is
        explained by reading again: the object gone (NamespaceNotFound, TableNotFound), a role
        that does not exist (InvalidInput); otherwise it stands."""
        call = "grant_revoke_privileges"
        request = GrantRevokePrivilegeRequest(requestType=request_type, privileges=PrivilegeBag(privileges),
                                              revokeGrantOption=False)
        try:
            answer = self.client.send(call, request)
        except METASTORE_ERRORS:
            self._explain(kind, id, name, principal_type)
            raise
        except InternalError:  # the transport's TApplicationException INTERNAL_ERROR (HMS 2.3's refusal)
            self._explain(kind, id, name, principal_type)
            raise
        if not isinstance(answer, GrantRevokePrivilegeResponse) or not isinstance(answer.success, bool):
            raise BadAnswerError(f"hive3: {call} answered an unexpected shape: {answer!r:.200}")
        if not answer.success:
            raise InternalError(f"hive3: the metastore did not carry out the change of {display(id)}'s "
                                f"grants ({call} answered success=false)")

    def _explain(self, kind: Securable, id: Identifier, name: str, principal_type: int) -> None:
        self._object_ref(kind, id)
        if principal_type == PrincipalType.ROLE and name not in self.client.send("get_role_names"):
            raise InvalidInputError(f"hive3: role {name!r} does not exist in the metastore (create it "
                                    "with CREATE ROLE first)")


def _privilege(ref: HiveObjectRef, name: str, principal_type: int, privilege: str) -> HiveObjectPrivilege:
    return HiveObjectPrivilege(
        hiveObject=ref, principalName=name, principalType=principal_type,
        grantInfo=PrivilegeGrantInfo(privilege=privilege, createTime=0, grantor=GRANTOR,
                                     grantorType=PrincipalType.USER, grantOption=False))
