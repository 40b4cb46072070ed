"""Privileges and roles, as HMS 3.1 keeps them (no authorization checks: like a metastore
without an authorization manager, it stores what it is sent).

Read from Hive 3.1.2's standalone metastore: ObjectStore.grantPrivileges,
revokePrivileges, listPrincipalMDBGrants, listAllMTableGrants, listDBGrantsAll,
listTableGrantsAll, addRole, removeRole, validateRole; HMSHandler.grant_privileges,
revoke_privileges, grant_revoke_privileges, list_privileges, create_role, drop_role.
Only DATABASE and TABLE objects are kept. Whole requests are atomic: a request that
fails stores nothing.

How errors reach the client: ObjectStore raises InvalidObjectException or
NoSuchObjectException, and HMS 3.1's HMSHandler turns them into
MetaException("Got exception: <Java class> <message>") (MetaStoreUtils.
logAndThrowMetaException). HMS 2.3 wraps them in a RuntimeException instead, which the
client sees as TApplicationException INTERNAL_ERROR: that is the one place where this
server and the real 2.3 differ on purpose.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from pymetastore.hive_metastore.ttypes import (
    GrantRevokePrivilegeRequest,
    GrantRevokePrivilegeResponse,
    GrantRevokeType,
    HiveObjectPrivilege,
    HiveObjectRef,
    HiveObjectType,
    MetaException,
    PrincipalType,
    PrivilegeBag,
    PrivilegeGrantInfo,
    Role,
)
from thrift.Thrift import TApplicationException

from tests.servers.hive3_server.names import DEFAULT_CATALOG, normalize

ADMIN_ROLE = "admin"
PUBLIC_ROLE = "public"
_API = "org.apache.hadoop.hive.metastore.api."

# ("database", catalog, database) or ("table", catalog, database, table), lower-case.
ObjectKey = tuple[str, ...]


class _StoreError(Exception):
    """What ObjectStore throws; HMSHandler reports it as a MetaException naming the class."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message


def _invalid_object(message: str) -> _StoreError:
    return _StoreError("InvalidObjectException", message)


def _no_such_object(message: str) -> _StoreError:
    return _StoreError("NoSuchObjectException", message)


@dataclass(frozen=True)
class Grant:
    """One row of DB_PRIVS / TBL_PRIVS."""

    key: ObjectKey
    principal_name: str
    principal_type: int
    privilege: str
    create_time: int
    grantor: str | None
    grantor_type: int
    grant_option: bool
    authorizer: str | None

    def to_thrift(self) -> HiveObjectPrivilege:
        kind, catalog, database, *table = self.key
        ref = HiveObjectRef(
            objectType=HiveObjectType.DATABASE if kind == "database" else HiveObjectType.TABLE,
            dbName=database, objectName=table[0] if table else None, catName=catalog)
        return HiveObjectPrivilege(
            hiveObject=ref, principalName=self.principal_name, principalType=self.principal_type,
            grantInfo=PrivilegeGrantInfo(
                privilege=self.privilege, createTime=self.create_time, grantor=self.grantor,
                grantorType=self.grantor_type, grantOption=self.grant_option),
            authorizer=self.authorizer)


def _java_split(text: str) -> list[str]:
    """String.split(","): trailing empty strings are dropped, "" stays [""]."""
    if "," not in text:
        return [text]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _internal_error(call: str) -> TApplicationException:
    """What a Java HMS answers when the call fails with an unexpected (runtime) exception."""
    return TApplicationException(TApplicationException.INTERNAL_ERROR,
                                 f"Internal error processing {call}")


class Privileges:
    """Grants and roles of one metastore. The caller holds the metastore's lock and says
    which databases and tables exist (`database_exists`, `table_exists`)."""

    def __init__(self) -> None:
        self._grants: list[Grant] = []
        now = int(time.time())
        self._roles: dict[str, Role] = {
            name: Role(roleName=name, createTime=now, ownerName=name)
            for name in (ADMIN_ROLE, PUBLIC_ROLE)}

    # ---- roles ----------------------------------------------------------------------

    def create_role(self, role: Role) -> bool:
        if role.roleName == PUBLIC_ROLE:
            raise MetaException(f"{PUBLIC_ROLE} role implicitly exists. It can't be created.")
        if role.roleName in self._roles:
            raise _as_meta(_invalid_object(f"Role {role.roleName} already exists."))
        self._roles[role.roleName] = Role(roleName=role.roleName, createTime=int(time.time()),
                                          ownerName=role.ownerName)
        return True

    def drop_role(self, name: str) -> bool:
        """Removes the role and every grant to it; a missing role is no error (3.1)."""
        if name in (ADMIN_ROLE, PUBLIC_ROLE):
            raise MetaException(f"{PUBLIC_ROLE},{ADMIN_ROLE} roles can't be dropped.")
        if self._roles.pop(name, None) is not None:
            self._grants = [grant for grant in self._grants
                            if (grant.principal_name, grant.principal_type) != (name, PrincipalType.ROLE)]
        return True

    def get_role_names(self) -> list[str]:
        return list(self._roles)

    # ---- objects going away or moving -----------------------------------------------

    def forget(self, key: ObjectKey) -> None:
        """Drop the grants on a dropped database or table."""
        self._grants = [grant for grant in self._grants if grant.key != key]

    def move(self, old: ObjectKey, new: ObjectKey) -> None:
        """A renamed table keeps its grants (they point at the table's row)."""
        if old != new:
            self._grants = [replace(grant, key=new) if grant.key == old else grant
                            for grant in self._grants]

    # ---- grant and revoke -----------------------------------------------------------

    def grant_revoke(self, request: GrantRevokePrivilegeRequest, database_exists, table_exists
                     ) -> GrantRevokePrivilegeResponse:
        call = "grant_revoke_privileges"
        if request.requestType == GrantRevokeType.GRANT:
            success = self.grant(request.privileges, database_exists, table_exists, call)
        elif request.requestType == GrantRevokeType.REVOKE:
            success = self.revoke(request.privileges, bool(request.revokeGrantOption),
                                  database_exists, call)
        elif request.requestType is None:
            raise _internal_error(call)  # a switch on null: NullPointerException
        else:
            raise MetaException(f"Unknown request type {request.requestType}")
        return GrantRevokePrivilegeResponse(success=success)

    def grant(self, bag: PrivilegeBag | None, database_exists, table_exists,
              call: str = "grant_privileges") -> bool:
        if bag is None:
            raise _internal_error(call)  # privileges.getPrivileges() on null
        try:
            added = self._granted(bag, database_exists, table_exists)
        except _StoreError as error:
            raise _as_meta(error) from None
        except (AttributeError, TypeError, ValueError):  # a null field: NullPointerException
            raise _internal_error(call) from None
        if _breaks_db_privilege_index(self._grants + added):
            raise _internal_error(call)  # JDODataStoreException at commit: nothing stored
        self._grants.extend(added)
        return True

    def revoke(self, bag: PrivilegeBag | None, grant_option: bool, database_exists,
               call: str = "revoke_privileges") -> bool:
        if bag is None:
            raise _internal_error(call)
        try:
            removed, without_option = self._revoked(bag, grant_option, database_exists)
        except _StoreError as error:
            raise _as_meta(error) from None
        except (AttributeError, TypeError, ValueError):
            raise _internal_error(call) from None
        kept = []
        for grant in self._grants:
            if id(grant) in removed:
                continue
            kept.append(replace(grant, grant_option=False) if id(grant) in without_option else grant)
        self._grants = kept
        return True

    def _granted(self, bag: PrivilegeBag | None, database_exists, table_exists) -> list[Grant]:
        now = int(time.time())
        added: list[Grant] = []
        for definition in (bag.privileges if bag else None) or []:
            ref, info = definition.hiveObject, definition.grantInfo
            privileges = _java_split(info.privilege)
            if info.grantorType is None:
                raise TypeError("grantorType")  # getGrantorType().toString() on null
            if definition.principalType == PrincipalType.ROLE and definition.principalName not in self._roles:
                raise _no_such_object(f"Role {definition.principalName} does not exist")
            key = _key(ref)
            if key[0] == "database" and not database_exists(key[1], key[2]):
                raise _no_such_object(f"There is no database {key[1]}.{key[2]}")
            if key[0] == "table" and not table_exists(*key[1:]):
                continue  # getMTable is null: nothing stored, and no error
            held = {grant.privilege for grant in self._held(key, definition.principalName,
                                                             definition.principalType)
                    if (definition.authorizer is None or grant.authorizer == definition.authorizer)
                    and grant.grantor is not None and info.grantor is not None
                    and grant.grantor.lower() == info.grantor.lower()}
            for privilege in privileges:
                if privilege in held:
                    raise _invalid_object(_already_granted(ref, privilege, info.grantor))
                added.append(Grant(
                    key=key, principal_name=definition.principalName,
                    principal_type=definition.principalType, privilege=privilege, create_time=now,
                    grantor=info.grantor, grantor_type=info.grantorType,
                    grant_option=bool(info.grantOption), authorizer=definition.authorizer))
        return added

    def _revoked(self, bag: PrivilegeBag | None, grant_option: bool, database_exists
                 ) -> tuple[set[int], set[int]]:
        removed: set[int] = set()
        without_option: set[int] = set()
        for definition in (bag.privileges if bag else None) or []:
            ref, text = definition.hiveObject, definition.grantInfo.privilege
            if text is None or text.strip() == "":
                continue
            key = _key(ref)
            if key[0] == "database" and not database_exists(key[1], key[2]):
                raise _no_such_object(f"There is no database {key[1]}.{key[2]}")
            if definition.principalType is None:
                raise TypeError("principalType")
            held = self._held(key, definition.principalName, definition.principalType)
            found = False  # as in HMS: set once, never reset for the next privilege
            for privilege in _java_split(text):
                for grant in held:
                    same = grant.privilege == privilege if key[0] == "database" \
                        else grant.privilege.lower() == privilege.lower()
                    if same:
                        found = True
                        if grant_option:
                            if not grant.grant_option:
                                raise MetaException(
                                    f"User {definition.principalName} does not have grant option "
                                    f"with privilege {privilege}")
                            without_option.add(id(grant))
                        else:
                            removed.add(id(grant))
                        break
                if not found:
                    if key[0] == "database":
                        raise _invalid_object(
                            f"No database grant found for privileges {privilege} on database {ref.dbName}")
                    raise _invalid_object(f"No grant ({privilege}) found  on table {ref.objectName}, "
                                          f"database is {ref.dbName}")
        return removed, without_option

    def _held(self, key: ObjectKey, principal_name: str | None, principal_type: int) -> list[Grant]:
        return [grant for grant in self._grants if grant.key == key
                and grant.principal_name == principal_name and grant.principal_type == principal_type]

    # ---- list -----------------------------------------------------------------------

    def list(self, principal_name: str | None, principal_type: int | None,
             ref: HiveObjectRef) -> list[HiveObjectPrivilege]:
        """HMSHandler.list_privileges for DATABASE, TABLE and no object type (everything
        the principal holds); a missing object has no grants."""
        catalog = normalize(ref.catName or DEFAULT_CATALOG)
        if principal_name is not None and principal_type is None:
            raise _internal_error("list_privileges")  # principalType.toString() on null
        if ref.objectType is None:
            kinds = {"database", "table"}
            found = [grant for grant in self._grants if grant.key[0] in kinds]
        elif ref.objectType in (HiveObjectType.DATABASE, HiveObjectType.TABLE):
            kind = "database" if ref.objectType == HiveObjectType.DATABASE else "table"
            if ref.dbName is None:  # every such grant of the principal, in every catalog
                found = [grant for grant in self._grants if grant.key[0] == kind]
            else:
                if kind == "table" and ref.objectName is None:
                    raise _internal_error("list_privileges")
                key = _key(ref)
                if key[1] != catalog:
                    key = (key[0], catalog, *key[2:])
                found = [grant for grant in self._grants if grant.key == key]
        elif ref.objectType == HiveObjectType.GLOBAL:
            return []  # no global grants are kept
        else:
            raise MetaException(f"Privileges on {HiveObjectType._VALUES_TO_NAMES.get(ref.objectType)} "
                                "objects are not supported by this test server")
        if principal_name is not None:
            found = [grant for grant in found
                     if (grant.principal_name, grant.principal_type) == (principal_name, principal_type)]
        return [grant.to_thrift() for grant in found]


def _breaks_db_privilege_index(grants: list[Grant]) -> bool:
    """DB_PRIVS has a unique index (DBPRIVILEGEINDEX: database, principal, privilege, grantor,
    grantor type, authorizer); TBL_PRIVS' TABLEPRIVILEGEINDEX is not unique. Only a request
    naming one database privilege twice gets past grantPrivileges' own check to it."""
    seen = set()
    for grant in grants:
        if grant.key[0] != "database":
            continue
        row = (grant.key, grant.principal_name, grant.principal_type, grant.privilege,
               grant.grantor, grant.grantor_type, grant.authorizer)
        if row in seen:
            return True
        seen.add(row)
    return False


def _key(ref: HiveObjectRef | None) -> ObjectKey:
    if ref is None:
        raise TypeError("hiveObject")
    catalog = normalize(ref.catName or DEFAULT_CATALOG)
    if ref.objectType == HiveObjectType.DATABASE:
        return ("database", catalog, normalize(ref.dbName))
    if ref.objectType == HiveObjectType.TABLE:
        return ("table", catalog, normalize(ref.dbName), normalize(ref.objectName))
    raise MetaException(f"Privileges on {HiveObjectType._VALUES_TO_NAMES.get(ref.objectType)} "
                        "objects are not supported by this test server")


def _already_granted(ref: HiveObjectRef, privilege: str, grantor: str | None) -> str:
    if ref.objectType == HiveObjectType.DATABASE:
        return f"{privilege} is already granted on database {ref.dbName} by {grantor}"
    return f"{privilege} is already granted on table [{ref.dbName},{ref.objectName}] by {grantor}"


def _as_meta(error: _StoreError) -> MetaException:
    return MetaException(f"Got exception: {_API}{error.java_class} {error.message}")
