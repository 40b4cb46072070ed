"""Checks of Hive Metastore behaviour, driven by pymetastore's generated client.

SHARED_CHECKS run against both the real HMS 2.3 (`hms`) and the project's Hive 3
server (`hive3`), so the two cannot drift apart on the calls they share.
CATALOG_CHECKS are Hive 3 only. Every check works in databases and catalogs of its
own, named uniquely, and removes them, so it can run against a long-lived external
server too. File-system assertions run only when the server shares this machine's
file system (not for external servers).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from pymetastore.hive_metastore import ThriftHiveMetastore
from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    AlterCatalogRequest,
    Catalog,
    CheckLockRequest,
    CreateCatalogRequest,
    Database,
    DataOperationType,
    DropCatalogRequest,
    FieldSchema,
    GetCatalogRequest,
    GetTableRequest,
    GetTablesRequest,
    GrantRevokePrivilegeRequest,
    GrantRevokeType,
    HeartbeatRequest,
    HiveObjectPrivilege,
    HiveObjectRef,
    HiveObjectType,
    InvalidObjectException,
    InvalidOperationException,
    LockComponent,
    LockLevel,
    LockRequest,
    LockResponse,
    LockState,
    LockType,
    MetaException,
    NoSuchLockException,
    NoSuchObjectException,
    PrincipalType,
    PrivilegeBag,
    PrivilegeGrantInfo,
    Role,
    SerDeInfo,
    ShowLocksRequest,
    StorageDescriptor,
    Table,
    UnknownDBException,
    UnlockRequest,
)
from thrift.Thrift import TApplicationException

from tests.servers.base import RunningServer
from tests.servers.hive_support import hive_client

Client = ThriftHiveMetastore.Client


@dataclass
class Scratch:
    """Where a check works: a server, and a local directory for its `file:` locations."""

    endpoint: str
    directory: Path
    local_files: bool

    @classmethod
    def for_server(cls, server: RunningServer, directory: Path) -> Scratch:
        return cls(server.endpoint, directory, local_files=not server.external)

    def client(self) -> AbstractContextManager[Client]:
        return hive_client(self.endpoint)

    def uri(self, name: str) -> str:
        """A `file:///...` location the way a client writes it."""
        return (self.directory / name).as_uri()

    def stored(self, name: str) -> str:
        """The same location the way HMS stores it (Hadoop's Path: `file:/...`)."""
        return "file:" + str(self.directory / name)

    def assert_directory(self, name: str, exists: bool) -> None:
        if self.local_files:
            assert (self.directory / name).is_dir() is exists, name


def unique_name(prefix: str = "lsync_check") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def external_table(database: str, name: str, location: str | None, catalog: str | None = None,
                   **parameters: str) -> Table:
    """An EXTERNAL_TABLE as lance-sync declares one (EXTERNAL=TRUE makes HMS keep the type)."""
    return Table(
        tableName=name, dbName=database, catName=catalog, owner="lance-sync",
        tableType="EXTERNAL_TABLE", partitionKeys=[],
        parameters={"EXTERNAL": "TRUE", "table_type": "lance", **parameters},
        sd=StorageDescriptor(cols=[FieldSchema("id", "bigint", None)], location=location,
                             serdeInfo=SerDeInfo(parameters={}), parameters={}))


@contextmanager
def scratch_database(client: Client, scratch: Scratch, catalog: str | None = None
                     ) -> Iterator[str]:
    """A new, uniquely named database; dropped with its tables afterwards (data kept)."""
    name = unique_name()
    client.create_database(Database(name=name, locationUri=scratch.uri(name), parameters={},
                                    catalogName=catalog))
    qualified = f"@{catalog}#{name}" if catalog else name
    try:
        yield name
    finally:
        if client.get_databases(qualified):  # the name is also a pattern matching itself
            client.drop_database(qualified, False, True)


# ---- shared checks: both servers -------------------------------------------------------

def check_database_lifecycle(scratch: Scratch) -> None:
    name = unique_name()
    with scratch.client() as client:
        client.create_database(Database(
            name=name.upper(), description="sales team", locationUri=scratch.uri(name) + "/",
            parameters={"team": "sales"}, ownerName="analytics"))
        scratch.assert_directory(name, exists=True)
        for spelling in (name, name.upper()):
            database = client.get_database(spelling)
            assert database.name == name
            assert database.locationUri == scratch.stored(name)
            assert database.parameters == {"team": "sales"}
            assert database.description == "sales team"
            assert database.ownerName == "analytics"
        assert name in client.get_all_databases()
        assert client.get_databases(name[:-3] + "*|no_such_db") == [name]
        assert client.get_databases(name[:-3]) == []  # patterns match whole names

        altered = client.get_database(name)
        altered.parameters = {"team": "finance"}
        client.alter_database(name, altered)
        assert client.get_database(name).parameters == {"team": "finance"}

        client.drop_database(name, False, False)
        with pytest.raises(NoSuchObjectException):
            client.get_database(name)
        scratch.assert_directory(name, exists=True)  # deleteData=false keeps it


def check_database_errors(scratch: Scratch) -> None:
    with scratch.client() as client, scratch_database(client, scratch) as name:
        with pytest.raises(AlreadyExistsException):
            client.create_database(Database(name=name.upper()))
        for invalid in ("bad-name", "", "a.b"):
            with pytest.raises(InvalidObjectException):
                client.create_database(Database(name=invalid))
        with pytest.raises(NoSuchObjectException):
            client.get_database(unique_name())
        client.create_table(external_table(name, "t", scratch.uri(f"{name}_t")))
        with pytest.raises(InvalidOperationException):
            client.drop_database(name, False, False)
        with pytest.raises(MetaException):
            client.drop_database("default", False, False)


def check_external_table_lifecycle(scratch: Scratch) -> None:
    with scratch.client() as client, scratch_database(client, scratch) as database:
        location = f"{database}_orders.lance"
        client.create_table(external_table(database.upper(), "Orders", scratch.uri(location),
                                           tier="gold"))
        scratch.assert_directory(location, exists=True)  # HMS creates the location

        table = client.get_table(database, "ORDERS")
        assert (table.dbName, table.tableName) == (database, "orders")
        assert table.tableType == "EXTERNAL_TABLE"
        assert table.sd.location == scratch.stored(location)  # file:/// comes back file:/
        assert table.owner == "lance-sync"
        assert {"EXTERNAL": "TRUE", "table_type": "lance", "tier": "gold"}.items() \
            <= table.parameters.items()
        assert "transient_lastDdlTime" in table.parameters  # added by the server
        assert client.get_table_req(GetTableRequest(dbName=database, tblName="orders")) \
            .table.sd.location == table.sd.location

        client.create_table(external_table(database, "customers", scratch.uri(f"{database}_c")))
        assert client.get_tables(database, "*") == ["customers", "orders"]
        assert client.get_tables(database.upper(), "ORD*|nothing") == ["orders"]
        assert client.get_all_tables(database) == ["customers", "orders"]
        found = client.get_table_objects_by_name_req(
            GetTablesRequest(dbName=database, tblNames=["ORDERS", "customers", "missing"]))
        # Missing names are skipped; the order of the answer is not specified.
        assert sorted(table.tableName for table in found.tables) == ["customers", "orders"]

        moved = f"{database}_orders_v2.lance"
        table.parameters = {"EXTERNAL": "TRUE", "table_type": "lance", "tier": "silver"}
        table.sd.location = scratch.uri(moved)
        client.alter_table(database, "orders", table)
        altered = client.get_table(database, "orders")
        assert altered.sd.location == scratch.stored(moved)
        assert altered.parameters["tier"] == "silver"
        assert {"numFiles", "totalSize", "transient_lastDdlTime"} <= altered.parameters.keys()
        scratch.assert_directory(moved, exists=False)  # alter does not create directories

        client.drop_table(database, "orders", False)
        with pytest.raises(NoSuchObjectException):
            client.get_table(database, "orders")
        scratch.assert_directory(location, exists=True)
        client.drop_table(database, "customers", True)  # external: data stays anyway
        scratch.assert_directory(f"{database}_c", exists=True)


def check_table_type_follows_external_parameter(scratch: Scratch) -> None:
    """HMS stores EXTERNAL_TABLE without EXTERNAL=TRUE as MANAGED_TABLE, and then
    drop_table(deleteData=true) deletes its data: a driver must set the parameter."""
    with scratch.client() as client, scratch_database(client, scratch) as database:
        location = f"{database}_managed"
        table = external_table(database, "t", scratch.uri(location))
        del table.parameters["EXTERNAL"]
        client.create_table(table)
        assert client.get_table(database, "t").tableType == "MANAGED_TABLE"
        client.drop_table(database, "t", True)
        scratch.assert_directory(location, exists=False)


def check_quick_stats_of_existing_directory(scratch: Scratch) -> None:
    """On an existing location HMS adds numFiles/totalSize, skipping '_' and '.' names."""
    if not scratch.local_files:
        pytest.skip("needs the server's file system")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        dataset = scratch.directory / f"{database}_existing.lance"
        for relative, size in (("data/a.lance", 100), ("_versions/1.manifest", 10), (".tmp", 5)):
            (dataset / relative).parent.mkdir(parents=True, exist_ok=True)
            (dataset / relative).write_bytes(b"x" * size)
        client.create_table(external_table(database, "t", dataset.as_uri()))
        parameters = client.get_table(database, "t").parameters
        assert (parameters["numFiles"], parameters["totalSize"]) == ("1", "100")


def check_table_errors(scratch: Scratch) -> None:
    with scratch.client() as client, scratch_database(client, scratch) as database:
        missing_database = unique_name()
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        with pytest.raises(AlreadyExistsException):
            client.create_table(external_table(database, "T", scratch.uri(f"{database}_t")))
        with pytest.raises(InvalidObjectException):
            client.create_table(external_table(missing_database, "t", scratch.uri("nowhere")))
        with pytest.raises(InvalidObjectException):
            client.create_table(external_table(database, "bad-name", scratch.uri("nowhere")))
        with pytest.raises(NoSuchObjectException):
            client.get_table(database, "missing")
        with pytest.raises(NoSuchObjectException):
            client.get_table(missing_database, "t")
        with pytest.raises(NoSuchObjectException):
            client.get_table_req(GetTableRequest(dbName=database, tblName="missing"))
        assert client.get_tables(missing_database, "*") == []
        assert client.get_all_tables(missing_database) == []
        with pytest.raises(UnknownDBException):
            client.get_table_objects_by_name_req(
                GetTablesRequest(dbName=missing_database, tblNames=["t"]))
        with pytest.raises(InvalidOperationException):
            client.alter_table(database, "missing", client.get_table(database, "t"))
        with pytest.raises(NoSuchObjectException):
            client.drop_table(database, "missing", False)


def check_missing_required_field(scratch: Scratch) -> None:
    """A request without a required field fails with PROTOCOL_ERROR. A Java HMS leaves that
    connection one byte out of step (its next call hangs), so a client must drop it."""
    with scratch.client() as client, pytest.raises(TApplicationException) as raised:
        client.get_table_req(GetTableRequest(tblName="t"))
    assert raised.value.type == TApplicationException.PROTOCOL_ERROR


def check_concurrent_clients(scratch: Scratch) -> None:
    """8 threads, each with its own connection, create and read tables at once."""
    with scratch.client() as client, scratch_database(client, scratch) as database:
        names = [f"t{i:03d}" for i in range(64)]
        create_tables_concurrently(scratch, database, names, threads=8)
        assert client.get_all_tables(database) == names
        tables = client.get_table_objects_by_name_req(
            GetTablesRequest(dbName=database, tblNames=names)).tables
        assert {table.tableName: table.sd.location for table in tables} \
            == {name: scratch.stored(f"{database}_{name}") for name in names}


def create_tables_concurrently(scratch: Scratch, database: str, names: list[str],
                               threads: int) -> float:
    """Create (and read back) one external table per name from `threads` clients at
    once; the seconds it took. Raises the first error any thread met."""
    errors: list[BaseException] = []
    shares = [names[i::threads] for i in range(threads)]

    def work(share: list[str]) -> None:
        try:
            with scratch.client() as client:
                for name in share:
                    client.create_table(external_table(
                        database, name, scratch.uri(f"{database}_{name}")))
                    assert client.get_table(database, name).tableName == name
        except BaseException as error:  # noqa: BLE001 - reported below, in the test thread
            errors.append(error)

    started = time.monotonic()
    workers = [threading.Thread(target=work, args=(share,)) for share in shares]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return time.monotonic() - started


# ---- the lock API (locks outside transactions), as lance-sync's leases use it -----------------

def lock(client: Client, name: str, type: int = LockType.EXCLUSIVE, agent: str | None = None,
         table: str | None = None, user: str = "lsync") -> LockResponse:
    component = LockComponent(type=type, level=LockLevel.TABLE if table else LockLevel.DB, dbname=name,
                              tablename=table, operationType=DataOperationType.NO_TXN, isTransactional=False)
    return client.lock(LockRequest(component=[component], user=user, hostname="checks", agentInfo=agent))


@contextmanager
def unlocked_at_the_end(client: Client, name: str) -> Iterator[None]:
    """Every lock of `name` is gone after the block, and no lock was left to the check after it."""
    try:
        yield
    finally:
        for held in client.show_locks(ShowLocksRequest(dbname=name)).locks:
            client.unlock(UnlockRequest(lockid=held.lockid))
    assert client.show_locks(ShowLocksRequest(dbname=name)).locks == []


def check_exclusive_locks_queue(scratch: Scratch) -> None:
    """One EXCLUSIVE lock of a name is granted; the others wait behind the nearest lock ahead,
    and one is granted only when its owner asks again after the locks ahead are gone."""
    name = unique_name("lsync_lock")
    with scratch.client() as client, unlocked_at_the_end(client, name):
        first, second, third = (lock(client, name, agent=f"agent {i}") for i in range(3))
        assert (first.state, second.state, third.state) == (LockState.ACQUIRED, LockState.WAITING, LockState.WAITING)
        shown = {held.lockid: held for held in client.show_locks(ShowLocksRequest(dbname=name)).locks}
        assert sorted(shown) == [first.lockid, second.lockid, third.lockid]
        assert {held.dbname for held in shown.values()} == {name}
        assert [shown[i].agentInfo for i in sorted(shown)] == ["agent 0", "agent 1", "agent 2"]
        assert {(held.user, held.hostname, held.type, held.txnid) for held in shown.values()} \
            == {("lsync", "checks", LockType.EXCLUSIVE, 0)}
        assert shown[first.lockid].acquiredat and shown[first.lockid].blockedByExtId is None
        assert shown[second.lockid].acquiredat is None and shown[second.lockid].blockedByExtId == first.lockid
        assert shown[third.lockid].blockedByExtId == second.lockid
        client.heartbeat(HeartbeatRequest(lockid=first.lockid))
        assert client.check_lock(CheckLockRequest(lockid=second.lockid)).state == LockState.WAITING
        client.unlock(UnlockRequest(lockid=first.lockid))
        assert client.check_lock(CheckLockRequest(lockid=third.lockid)).state == LockState.WAITING
        assert client.check_lock(CheckLockRequest(lockid=second.lockid)).state == LockState.ACQUIRED
        assert lock(client, name).state == LockState.WAITING
        with pytest.raises(NoSuchLockException) as gone:
            client.heartbeat(HeartbeatRequest(lockid=first.lockid))
        assert gone.value.message == f"No such lock: lockid:{first.lockid}"
        with pytest.raises(NoSuchLockException) as gone:
            client.check_lock(CheckLockRequest(lockid=first.lockid))
        assert gone.value.message == f"No such lock lockid:{first.lockid}"
        client.unlock(UnlockRequest(lockid=first.lockid))  # a lock that is gone: unlocking succeeds


def check_shared_and_table_locks(scratch: Scratch) -> None:
    """Shared reads share, and one jumps over an EXCLUSIVE lock that waits; a table lock waits
    behind an EXCLUSIVE lock of its database; other names are not in the way."""
    name = unique_name("lsync_lock")
    with scratch.client() as client, unlocked_at_the_end(client, name):
        states = [lock(client, name, type).state for type in
                  (LockType.SHARED_READ, LockType.SHARED_READ, LockType.EXCLUSIVE, LockType.SHARED_READ)]
        assert states == [LockState.ACQUIRED, LockState.ACQUIRED, LockState.WAITING, LockState.ACQUIRED]
        other = unique_name("lsync_lock")
        with unlocked_at_the_end(client, other):
            assert lock(client, other).state == LockState.ACQUIRED
            assert lock(client, other, LockType.SHARED_READ, table="t").state == LockState.WAITING
            assert client.show_locks(ShowLocksRequest(dbname=other, tablename="t")).locks[0].tablename == "t"


def check_lock_text_limit(scratch: Scratch) -> None:
    """HIVE_LOCKS keeps 128 characters of agentInfo (and user, host): more fails inside HMS."""
    name = unique_name("lsync_lock")
    with scratch.client() as client, unlocked_at_the_end(client, name):
        assert lock(client, name, agent="a" * 128).state == LockState.ACQUIRED
        for too_long in ({"agent": "a" * 129}, {"user": "u" * 129}):
            with pytest.raises(TApplicationException) as raised:
                lock(client, name, **too_long)
            assert raised.value.type == TApplicationException.INTERNAL_ERROR


def check_concurrent_exclusive_locks(scratch: Scratch) -> None:
    """50 clients ask for one EXCLUSIVE lock at the same moment: exactly one is granted."""
    name = unique_name("lsync_lock")
    barrier = threading.Barrier(50)
    states: list[int] = []

    def ask() -> None:
        with scratch.client() as client:
            barrier.wait()
            states.append(lock(client, name).state)

    workers = [threading.Thread(target=ask) for _ in range(50)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    with scratch.client() as client, unlocked_at_the_end(client, name):
        assert sorted(states) == [LockState.ACQUIRED] + [LockState.WAITING] * 49
        assert [held.state for held in client.show_locks(ShowLocksRequest(dbname=name)).locks].count(
            LockState.ACQUIRED) == 1


LOCK_CHECKS: list[Callable[[Scratch], None]] = [
    check_exclusive_locks_queue,
    check_shared_and_table_locks,
    check_lock_text_limit,
    check_concurrent_exclusive_locks,
]

# ---- privileges and roles (no authorization manager: HMS stores what it is sent) ----------

GRANTOR = "lance-sync"


def privilege(database: str, table: str | None, principal: str, name: str,
              principal_type: int = PrincipalType.USER, grantor: str | None = GRANTOR,
              grant_option: bool = False) -> HiveObjectPrivilege:
    """One privilege on a database (table None) or a table, as a grant or revoke sends it."""
    ref = HiveObjectRef(objectType=HiveObjectType.TABLE if table else HiveObjectType.DATABASE,
                        dbName=database, objectName=table)
    return HiveObjectPrivilege(
        hiveObject=ref, principalName=principal, principalType=principal_type,
        grantInfo=PrivilegeGrantInfo(privilege=name, createTime=0, grantor=grantor,
                                     grantorType=PrincipalType.USER, grantOption=grant_option))


def grant(client: Client, *privileges: HiveObjectPrivilege) -> bool:
    return client.grant_revoke_privileges(GrantRevokePrivilegeRequest(
        requestType=GrantRevokeType.GRANT, privileges=PrivilegeBag(list(privileges)))).success


def revoke(client: Client, *privileges: HiveObjectPrivilege, grant_option: bool = False) -> bool:
    return client.grant_revoke_privileges(GrantRevokePrivilegeRequest(
        requestType=GrantRevokeType.REVOKE, privileges=PrivilegeBag(list(privileges)),
        revokeGrantOption=grant_option)).success


def held(client: Client, database: str, table: str | None = None,
         principal: tuple[str, int] | None = None) -> set[tuple[str, int, str, str | None, bool]]:
    """(principal, principal type, privilege, grantor, grant option) of every grant on the
    object, or of one principal's: one list_privileges call."""
    ref = HiveObjectRef(objectType=HiveObjectType.TABLE if table else HiveObjectType.DATABASE,
                        dbName=database, objectName=table)
    name, kind = principal or (None, None)
    return {(found.principalName, found.principalType, found.grantInfo.privilege,
             found.grantInfo.grantor, found.grantInfo.grantOption)
            for found in client.list_privileges(name, kind, ref)}


@contextmanager
def refused(cause: str) -> Iterator[None]:
    """A grant or revoke that ObjectStore refuses. HMS 2.3 wraps the cause in a
    RuntimeException (TApplicationException INTERNAL_ERROR, the cause only in its log);
    HMS 3.1 answers MetaException("Got exception: <class> <cause>")."""
    with pytest.raises((TApplicationException, MetaException)) as raised:
        yield
    if isinstance(raised.value, TApplicationException):
        assert raised.value.type == TApplicationException.INTERNAL_ERROR
        assert str(raised.value.message).startswith("Internal error processing ")
    else:
        assert raised.value.message.startswith("Got exception: "), raised.value.message
        assert cause in raised.value.message, raised.value.message


def principal_name(prefix: str) -> str:
    return unique_name(f"lsync_{prefix}")


def check_table_grants_round_trip(scratch: Scratch) -> None:
    """Grants to users and groups, listed per principal and for everyone, and revoked; the
    server sets createTime, keeps grantor and grant option, and lower-cases the names."""
    alice, analysts = principal_name("alice"), principal_name("analysts")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database.upper(), "T", alice, "SELECT"))
        assert grant(client, privilege(database, "t", analysts, "SELECT", PrincipalType.GROUP),
                     privilege(database, "t", analysts, "INSERT", PrincipalType.GROUP,
                               grant_option=True))
        assert held(client, database, "t") == {
            (alice, PrincipalType.USER, "SELECT", GRANTOR, False),
            (analysts, PrincipalType.GROUP, "SELECT", GRANTOR, False),
            (analysts, PrincipalType.GROUP, "INSERT", GRANTOR, True)}
        assert held(client, database, "t", (alice, PrincipalType.USER)) \
            == {(alice, PrincipalType.USER, "SELECT", GRANTOR, False)}
        assert held(client, database, "t", (alice, PrincipalType.GROUP)) == set()
        assert held(client, database, "t", (alice.upper(), PrincipalType.USER)) == set()
        [listed] = client.list_privileges(alice, PrincipalType.USER, HiveObjectRef(
            objectType=HiveObjectType.TABLE, dbName=database, objectName="t"))
        assert (listed.hiveObject.objectType, listed.hiveObject.dbName, listed.hiveObject.objectName) \
            == (HiveObjectType.TABLE, database, "t")
        assert listed.grantInfo.createTime > 0  # the server's clock, not the 0 sent
        assert listed.grantInfo.grantorType == PrincipalType.USER
        assert held(client, database) == set()  # a table grant is not a database grant

        assert revoke(client, privilege(database, "T", alice, "SELECT"))
        assert held(client, database, "t", (alice, PrincipalType.USER)) == set()
        assert client.grant_privileges(PrivilegeBag([privilege(database, "t", alice, "UPDATE")]))
        assert client.revoke_privileges(PrivilegeBag([privilege(database, "t", alice, "UPDATE")]))
        assert {entry[0] for entry in held(client, database, "t")} == {analysts}
        with pytest.raises(TApplicationException) as raised:  # principalType.toString() on null
            client.list_privileges(alice, None, HiveObjectRef(
                objectType=HiveObjectType.TABLE, dbName=database, objectName="t"))
        assert raised.value.type == TApplicationException.INTERNAL_ERROR


def check_database_grants(scratch: Scratch) -> None:
    alice = principal_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        assert grant(client, privilege(database, None, alice, "SELECT"))
        assert held(client, database) == {(alice, PrincipalType.USER, "SELECT", GRANTOR, False)}
        [listed] = client.list_privileges(None, None, HiveObjectRef(
            objectType=HiveObjectType.DATABASE, dbName=database.upper()))
        assert (listed.hiveObject.objectType, listed.hiveObject.dbName) \
            == (HiveObjectType.DATABASE, database)
        assert revoke(client, privilege(database, None, alice, "SELECT"))
        assert held(client, database) == set()
        missing = unique_name()
        with refused("There is no database"):
            grant(client, privilege(missing, None, alice, "SELECT"))
        assert held(client, missing) == set()


def check_double_grant_is_refused_whole(scratch: Scratch) -> None:
    """A privilege the principal already holds from the same grantor (any case of the
    grantor's name) fails the whole request: nothing in it is stored. From another grantor
    it is a second grant."""
    alice = principal_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "SELECT"))
        with refused("SELECT is already granted on table"):
            grant(client, privilege(database, "t", alice, "UPDATE"),
                  privilege(database, "t", alice, "SELECT", grantor=GRANTOR.upper()))
        assert held(client, database, "t") == {(alice, PrincipalType.USER, "SELECT", GRANTOR, False)}
        # Each entry is checked against the grants stored before the request. Naming one
        # privilege twice stores a table's twice; a database's breaks DB_PRIVS' unique index
        # (an internal error in 2.3 and 3.1 alike), and nothing is stored.
        assert grant(client, privilege(database, "t", alice, "INSERT"),
                     privilege(database, "t", alice, "INSERT"))
        assert len(client.list_privileges(alice, PrincipalType.USER, HiveObjectRef(
            objectType=HiveObjectType.TABLE, dbName=database, objectName="t"))) == 3
        assert revoke(client, privilege(database, "t", alice, "INSERT,INSERT"))  # the first, twice
        assert len(client.list_privileges(alice, PrincipalType.USER, HiveObjectRef(
            objectType=HiveObjectType.TABLE, dbName=database, objectName="t"))) == 2
        assert revoke(client, privilege(database, "t", alice, "INSERT"))
        with pytest.raises(TApplicationException) as raised:
            grant(client, privilege(database, None, alice, "ALL"),
                  privilege(database, None, alice, "ALL"))
        assert raised.value.type == TApplicationException.INTERNAL_ERROR
        assert held(client, database) == set()
        assert grant(client, privilege(database, None, alice, "ALL"))
        with refused("ALL is already granted on database"):
            grant(client, privilege(database, None, alice, "ALL"))

        assert grant(client, privilege(database, "t", alice, "SELECT", grantor="someone-else"))
        assert held(client, database, "t") == {
            (alice, PrincipalType.USER, "SELECT", GRANTOR, False),
            (alice, PrincipalType.USER, "SELECT", "someone-else", False)}
        assert revoke(client, privilege(database, "t", alice, "SELECT"))  # one grant per revoke
        assert len(held(client, database, "t")) == 1
        assert revoke(client, privilege(database, "t", alice, "SELECT", grantor=None))
        assert held(client, database, "t") == set()


def check_revoking_what_is_not_held_is_refused(scratch: Scratch) -> None:
    alice, bob = principal_name("alice"), principal_name("bob")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "SELECT"))
        with refused("No grant (SELECT) found"):
            revoke(client, privilege(database, "t", alice, "SELECT"),
                   privilege(database, "t", bob, "SELECT"))
        assert held(client, database, "t") == {(alice, PrincipalType.USER, "SELECT", GRANTOR, False)}
        with refused("No database grant found for privileges SELECT"):
            revoke(client, privilege(database, None, alice, "SELECT"))
        with refused("No grant (SELECT) found"):
            revoke(client, privilege(database, "missing", alice, "SELECT"))
        assert revoke(client, privilege(database, "t", alice, " "))  # a blank privilege is skipped
        assert len(held(client, database, "t")) == 1


def check_grant_on_missing_table_is_silent(scratch: Scratch) -> None:
    """Success, and nothing stored: a table created later under that name has no grants."""
    alice = principal_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        assert grant(client, privilege(database, "later", alice, "SELECT"))
        assert held(client, database, "later") == set()
        client.create_table(external_table(database, "later", scratch.uri(f"{database}_later")))
        assert held(client, database, "later") == set()


def check_privileges_are_stored_as_sent(scratch: Scratch) -> None:
    """Any string is a privilege, compared case-sensitively when granting; a comma splits one
    into several. Revoking matches a table's privileges ignoring case, a database's exactly."""
    alice = principal_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "FROBNICATE"),
                     privilege(database, "t", alice, "select"),
                     privilege(database, "t", alice, "SELECT"),
                     privilege(database, "t", alice, "INSERT,DELETE"))
        assert {entry[2] for entry in held(client, database, "t")} \
            == {"FROBNICATE", "select", "SELECT", "INSERT", "DELETE"}
        assert revoke(client, privilege(database, "t", alice, "frobnicate"))
        assert revoke(client, privilege(database, "t", alice, "DELETE,INSERT"))
        assert {entry[2] for entry in held(client, database, "t")} == {"select", "SELECT"}

        assert grant(client, privilege(database, None, alice, "select"))
        with refused("No database grant found for privileges SELECT"):
            revoke(client, privilege(database, None, alice, "SELECT"))
        assert revoke(client, privilege(database, None, alice, "select"))


def check_revoking_only_the_grant_option(scratch: Scratch) -> None:
    alice = principal_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "SELECT", grant_option=True))
        assert revoke(client, privilege(database, "t", alice, "SELECT"), grant_option=True)
        assert held(client, database, "t") == {(alice, PrincipalType.USER, "SELECT", GRANTOR, False)}
        with pytest.raises(MetaException) as raised:
            revoke(client, privilege(database, "t", alice, "SELECT"), grant_option=True)
        assert raised.value.message == f"User {alice} does not have grant option with privilege SELECT"
        assert len(held(client, database, "t")) == 1


def check_role_principals(scratch: Scratch) -> None:
    """A ROLE principal must exist (create_role); dropping the role drops its grants."""
    role = principal_name("role")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        with refused(f"Role {role} does not exist"):
            grant(client, privilege(database, None, role, "ALL", PrincipalType.ROLE))
        assert {"admin", "public"} <= set(client.get_role_names())
        assert client.create_role(Role(roleName=role, ownerName="admin"))
        try:
            assert role in client.get_role_names()
            with pytest.raises((TApplicationException, MetaException)):
                client.create_role(Role(roleName=role, ownerName="admin"))
            assert grant(client, privilege(database, None, role, "ALL", PrincipalType.ROLE))
            assert held(client, database) == {(role, PrincipalType.ROLE, "ALL", GRANTOR, False)}
        finally:
            assert client.drop_role(role)
        assert role not in client.get_role_names()
        assert held(client, database) == set()
        with pytest.raises(MetaException):
            client.drop_role("public")


def check_grants_go_with_their_table(scratch: Scratch) -> None:
    """Dropping a table drops its grants (a replaced table starts with none); a rename keeps
    them; a dropped database's grants are gone when one of that name is created again."""
    alice = principal_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "SELECT"),
                     privilege(database, None, alice, "SELECT"))
        client.drop_table(database, "t", False)
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert held(client, database, "t") == set()
        assert len(held(client, database)) == 1

        assert grant(client, privilege(database, "t", alice, "SELECT"))
        table = client.get_table(database, "t")
        table.tableName = "t2"
        client.alter_table(database, "t", table)
        assert held(client, database, "t2") == {(alice, PrincipalType.USER, "SELECT", GRANTOR, False)}
        assert held(client, database, "t") == set()

        client.drop_database(database, False, True)
        client.create_database(Database(name=database, locationUri=scratch.uri(database),
                                        parameters={}))
        assert held(client, database) == set()
        client.create_table(external_table(database, "t2", scratch.uri(f"{database}_t")))
        assert held(client, database, "t2") == set()


def check_malformed_privilege_requests(scratch: Scratch) -> None:
    """No request type or no bag is a NullPointerException inside HMS (INTERNAL_ERROR); an
    empty bag succeeds and changes nothing."""
    with scratch.client() as client:
        for request in (GrantRevokePrivilegeRequest(privileges=PrivilegeBag([])),
                        GrantRevokePrivilegeRequest(requestType=GrantRevokeType.GRANT),
                        GrantRevokePrivilegeRequest(requestType=GrantRevokeType.REVOKE)):
            with pytest.raises(TApplicationException) as raised:
                client.grant_revoke_privileges(request)
            assert raised.value.type == TApplicationException.INTERNAL_ERROR
        assert grant(client) and revoke(client)


PRIVILEGE_CHECKS: list[Callable[[Scratch], None]] = [
    check_table_grants_round_trip,
    check_database_grants,
    check_double_grant_is_refused_whole,
    check_revoking_what_is_not_held_is_refused,
    check_grant_on_missing_table_is_silent,
    check_privileges_are_stored_as_sent,
    check_revoking_only_the_grant_option,
    check_role_principals,
    check_grants_go_with_their_table,
    check_malformed_privilege_requests,
]


SHARED_CHECKS: list[Callable[[Scratch], None]] = [
    check_database_lifecycle,
    check_database_errors,
    check_external_table_lifecycle,
    check_table_type_follows_external_parameter,
    check_quick_stats_of_existing_directory,
    check_table_errors,
    check_missing_required_field,
    check_concurrent_clients,
    *LOCK_CHECKS,
    *PRIVILEGE_CHECKS,
]


def check_request_count(server: RunningServer, scratch: Scratch) -> None:
    """The server counts every Thrift call it answers, errors included, and nothing else."""
    if server.external:
        pytest.skip("an external server's calls are not counted")
    with scratch.client() as client:
        server.reset_request_count()
        client.get_all_databases()
        with pytest.raises(NoSuchObjectException):
            client.get_database(unique_name())
        client.get_databases("*")
    assert server.requests_served() == 3  # the connection's close is not a call
    server.reset_request_count()
    assert server.requests_served() == 0


# ---- Hive 3 only: catalogs ---------------------------------------------------------------

def check_default_catalog(scratch: Scratch) -> None:
    with scratch.client() as client:
        assert "hive" in client.get_catalogs().names
        hive = client.get_catalog(GetCatalogRequest(name="hive")).catalog
        assert hive.name == "hive" and hive.locationUri
        with scratch_database(client, scratch) as database:  # unprefixed: catalog "hive"
            assert client.get_database(f"@hive#{database}").catalogName == "hive"
            assert database in client.get_databases("@hive#")
            assert database in client.get_all_databases()


@contextmanager
def scratch_catalog(client: Client, scratch: Scratch) -> Iterator[str]:
    name = unique_name("lsync_cat")
    client.create_catalog(CreateCatalogRequest(Catalog(
        name=name.upper(), description="test catalog", locationUri=scratch.uri(name))))
    try:
        yield name
    finally:
        _drop_catalog_with_contents(client, name)


def _drop_catalog_with_contents(client: Client, catalog: str) -> None:
    if catalog not in client.get_catalogs().names:
        return
    for database in client.get_databases(f"@{catalog}#"):
        client.drop_database(f"@{catalog}#{database}", False, True)
    client.drop_catalog(DropCatalogRequest(name=catalog))


def check_catalog_lifecycle(scratch: Scratch) -> None:
    with scratch.client() as client, scratch_catalog(client, scratch) as catalog:
        scratch.assert_directory(catalog, exists=True)
        stored = client.get_catalog(GetCatalogRequest(name=catalog.upper())).catalog
        assert (stored.name, stored.description) == (catalog, "test catalog")
        assert catalog in client.get_catalogs().names
        assert client.get_databases(f"@{catalog}#") == ["default"]  # made with the catalog

        client.alter_catalog(AlterCatalogRequest(name=catalog, newCat=Catalog(
            name=catalog, description="renamed team", locationUri=stored.locationUri)))
        assert client.get_catalog(GetCatalogRequest(name=catalog)).catalog.description \
            == "renamed team"

        with scratch_database(client, scratch, catalog=catalog) as database:
            qualified = f"@{catalog}#{database}"
            assert client.get_database(qualified).catalogName == catalog
            with pytest.raises(NoSuchObjectException):
                client.get_database(database)  # unprefixed means catalog "hive"
            _check_tables_in_catalog(client, scratch, catalog, database)
            with pytest.raises(InvalidOperationException):
                client.drop_catalog(DropCatalogRequest(name=catalog))  # not empty

        client.drop_catalog(DropCatalogRequest(name=catalog))
        with pytest.raises(NoSuchObjectException):
            client.get_catalog(GetCatalogRequest(name=catalog))


def _check_tables_in_catalog(client: Client, scratch: Scratch, catalog: str,
                             database: str) -> None:
    qualified = f"@{catalog}#{database}"
    location = f"{catalog}_{database}_t"
    client.create_table(external_table(database, "T", scratch.uri(location), catalog=catalog))
    table = client.get_table(qualified, "t")
    assert (table.catName, table.dbName, table.tableName) == (catalog, database, "t")
    assert table.sd.location == scratch.stored(location)
    assert client.get_table_req(
        GetTableRequest(dbName=database, tblName="t", catName=catalog)).table.catName == catalog
    assert client.get_tables(qualified, "*") == ["t"]
    assert client.get_all_tables(qualified) == ["t"]
    assert [found.tableName for found in client.get_table_objects_by_name_req(
        GetTablesRequest(dbName=database, tblNames=["t"], catName=catalog)).tables] == ["t"]
    with pytest.raises(NoSuchObjectException):
        client.get_table(database, "t")  # same names in catalog "hive": nothing there

    table.parameters["tier"] = "gold"
    client.alter_table(qualified, "t", table)
    assert client.get_table(qualified, "t").parameters["tier"] == "gold"
    client.drop_table(qualified, "t", False)
    assert client.get_tables(qualified, "*") == []


def check_catalog_errors(scratch: Scratch) -> None:
    with scratch.client() as client, scratch_catalog(client, scratch) as catalog:
        with pytest.raises(AlreadyExistsException):
            client.create_catalog(CreateCatalogRequest(Catalog(
                name=catalog, locationUri=scratch.uri(catalog))))
        with pytest.raises(InvalidObjectException):
            client.create_catalog(CreateCatalogRequest(Catalog(name=unique_name("c"))))
        with pytest.raises(InvalidObjectException):
            client.create_catalog(CreateCatalogRequest(Catalog(
                name="bad-name", locationUri=scratch.uri("bad"))))
        with pytest.raises(InvalidObjectException):
            client.create_database(Database(name="db", catalogName=unique_name("no_cat")))
        with pytest.raises(InvalidOperationException):
            client.alter_catalog(AlterCatalogRequest(name=catalog, newCat=Catalog(
                name=unique_name("c"), locationUri=scratch.uri(catalog))))
        with pytest.raises(NoSuchObjectException):
            client.get_catalog(GetCatalogRequest(name=unique_name("no_cat")))
        with pytest.raises(NoSuchObjectException):
            client.drop_catalog(DropCatalogRequest(name=unique_name("no_cat")))
        with pytest.raises(MetaException):
            client.drop_catalog(DropCatalogRequest(name="hive"))

        client.create_table(external_table("default", "t", scratch.uri(f"{catalog}_t"),
                                           catalog=catalog))
        with pytest.raises(InvalidOperationException):
            client.drop_catalog(DropCatalogRequest(name=catalog))  # its default db has a table


def check_databases_are_per_catalog(scratch: Scratch) -> None:
    with scratch.client() as client, scratch_catalog(client, scratch) as catalog, \
            scratch_database(client, scratch) as name:
        client.create_database(Database(name=name, catalogName=catalog, parameters={"in": catalog}))
        in_catalog = client.get_database(f"@{catalog}#{name}")
        assert in_catalog.parameters == {"in": catalog}
        assert in_catalog.locationUri == f"{scratch.stored(catalog)}/{name}.db"  # the default
        assert client.get_database(name).parameters == {}  # catalog "hive" has its own
        assert client.get_databases(f"@{catalog}#{name[:-3]}*") == [name]
        client.drop_database(f"@{catalog}#{name}", False, False)
        assert client.get_database(name).catalogName == "hive"


CATALOG_CHECKS: list[Callable[[Scratch], None]] = [
    check_default_catalog,
    check_catalog_lifecycle,
    check_catalog_errors,
    check_databases_are_per_catalog,
]

