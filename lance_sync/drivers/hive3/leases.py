"""Apply leases on a Hive Metastore: locks of the metastore's own lock API, or views.

An EXCLUSIVE lock is granted by the metastore to one requester at a time, so a lease is one
(`HiveLockLeaseRegister`, the default). The lock API needs the metastore's transaction tables;
a metastore without them (a schema DataNucleus' autoCreateAll made) fails every lock call, and
the register says so (`NoTransactionTables`). There the backend's `lease: table` keeps the
lease as a view instead (`HiveViewLeaseRegister`: only its create is exclusive, so its swaps
take claims). The calls go out through the driver's client (`client.Hive3Client`).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import re
from typing import TYPE_CHECKING, Any

from lance_namespace import CreateNamespaceRequest
from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    NamespaceNotFoundError,
    TableNotFoundError,
)
from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    CheckLockRequest,
    DataOperationType,
    HeartbeatRequest,
    InvalidObjectException,
    LockComponent,
    LockLevel,
    LockRequest,
    LockResponse,
    LockState,
    LockType,
    MetaException,
    NoSuchLockException,
    NoSuchObjectException,
    SerDeInfo,
    ShowLocksRequest,
    ShowLocksResponseElement,
    StorageDescriptor,
    Table,
    UnlockRequest,
)

from lance_sync.drivers.hive3.answers import same_name, shown
from lance_sync.drivers.hive3.errors import message, translated
from lance_sync.drivers.hive3.objects import (
    database_properties,
    database_ref,
    display,
    is_default_catalog,
)
from lance_sync.drivers.hive3.transport import MetastoreInternalError
from lance_sync.drivers.leases import (
    ClaimLeaseRegister,
    LeaseRecord,
    LeaseRegister,
    StoredLease,
    iso_time,
)
from lance_sync.drivers.support.retry import BadAnswerError, with_retries

if TYPE_CHECKING:
    from lance_sync.drivers.base import Identifier
    from lance_sync.drivers.hive3.client import Hive3Client
    from lance_sync.drivers.hive3.driver import Hive3Namespace

#: how a lease lock names its holder in `agentInfo` (the metastore keeps 128 characters)
LEASE_AGENT = re.compile(r"lance-sync lease (?P<id>\w+) pid (?P<pid>\d+) since (?P<started>\S+) "
                         r"for (?P<term>\d+)s")
#: the metastore keeps 128 characters of a lock's user, host and agentInfo
LOCK_TEXT_LIMIT = 128
#: how often a queued lease lock looks whether the lock ahead of it has settled, and how many
#: times before it gives up its place (see HiveLockLeaseRegister._settled)
LOCK_POLL_SECONDS = 0.05
LOCK_POLLS = 200
#: the backend key that chooses the lease, and its value for a view (lance_sync.drivers.hive3.config)
LEASE_KEY, VIEW_LEASE = "lease", "table"
#: the view that holds a `lease: table` lease, in the lease database
LEASE_VIEW = "lease"
#: what a lease view would show if someone queried it
LEASE_VIEW_TEXT = "SELECT 'lance-sync apply lease: bookkeeping, not data' AS lease"


class NoTransactionTables(InternalError):
    """The metastore's lock API fails for want of its transaction tables (see `_lock_call`)."""


class HiveLockLeaseRegister(LeaseRegister):
    """An apply lease as an EXCLUSIVE lock of the metastore's lock API on the lease's name
    (`lock`, `check_lock`, `heartbeat`, `unlock`, `show_locks`; no database of that name
    needs to exist). The metastore grants a lock to one requester at a time, so creating and
    taking over are atomic: a new lock is ACQUIRED, or WAITING behind the holder and then
    given up. The version is the lock id.

    The record is the lock's own fields: user (the holder), hostname, and `agentInfo` with the
    lease id, pid, start and term. A lock cannot change them, so a renewal is a heartbeat and
    the lease runs until the last heartbeat plus its term; a swap to another apply's record
    unlocks the dead holder's lock (by its id: a lock that is gone already stays gone) and
    locks again. Locks carry no catalog, so a catalog other than `hive` has its own lock name.

    A database of the lease's name whose parameters hold a record is a lease of lance-sync
    before this register: it is read as the lease when no lock is held, and taken over by
    dropping it.
    """

    def __init__(self, client: Hive3Client, namespace_id: str, catalog: str, name: str, owner: str):
        self.client = client
        self.owner = owner
        self.database = (catalog, name)
        suffix = "" if is_default_catalog(catalog) else f"_{hashlib.sha256(catalog.lower().encode()).hexdigest()[:8]}"
        self.lock_name = f"{name}{suffix}"
        super().__init__(f"{namespace_id} lock {self.lock_name}",
                         f"the lock {self.lock_name} of thrift://{client.address}")

    @translated
    def create(self, record: LeaseRecord) -> StoredLease | None:
        answer = self._lock_call("lock", LockRequest(
            component=[LockComponent(type=LockType.EXCLUSIVE, level=LockLevel.DB, dbname=self.lock_name,
                                     operationType=DataOperationType.NO_TXN, isTransactional=False)],
            user=record.holder[:LOCK_TEXT_LIMIT], hostname=record.host[:LOCK_TEXT_LIMIT],
            agentInfo=_lease_agent(record)))
        if not isinstance(answer, LockResponse) or not isinstance(answer.lockid, int):
            raise BadAnswerError(f"hive3: lock to the metastore at {self.client.address} answered "
                                 f"{shown(answer)}, not a LockResponse with a lockid")
        acquired = answer.state == LockState.ACQUIRED or (
            answer.state == LockState.WAITING and self._settled(answer.lockid))
        if acquired and self._previous_format() is not None:  # a live lease of the older format?
            self._unlock(answer.lockid)  # let the protocol judge it (read() answers it)
            return None
        return StoredLease(record, str(answer.lockid)) if acquired else None

    @translated
    def read(self) -> StoredLease | None:
        locks = self._locks()
        holding = [lock for lock in locks if lock.state == LockState.ACQUIRED] or locks
        if holding:
            return StoredLease(self._record(holding[0]), str(holding[0].lockid))
        return self._previous_format()

    @translated
    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if expected.version == PREVIOUS_FORMAT:
            with contextlib.suppress(NamespaceNotFoundError):
                self.client.drop_database(*self.database, cascade=False)
            return self.create(record)
        lockid = int(expected.version)
        if record.id == expected.record.id:  # a renewal: the holder keeps its lock alive
            try:
                self._lock_call("heartbeat", HeartbeatRequest(lockid=lockid))
            except NoSuchLockException:
                return None
            return StoredLease(record, expected.version)
        self._unlock(lockid)
        return self.create(record)

    @translated
    def remove(self, expected: StoredLease) -> bool:
        """Unlocking by lock id is conditional by nature: a lock another apply took over is gone."""
        if expected.version == PREVIOUS_FORMAT:
            self.client.drop_database(*self.database, cascade=False)
        else:
            self._unlock(int(expected.version))
        return True

    def _settled(self, lockid: int) -> bool:
        """A WAITING lock of ours until it is ACQUIRED (True), or given up (False) once another
        lock holds the name. Locks ahead of it are other applies taking the lease at the same
        moment: the first of them is granted the lock when it asks again, which its owner does
        at once (this loop); one whose owner is dead is unlocked. After LOCK_POLLS looks without
        progress, ours is given up too (the caller then names the lock ahead)."""
        for _ in range(LOCK_POLLS):
            locks = self._locks()
            if not any(lock.lockid == lockid for lock in locks):
                return False  # unlocked by another apply that took ours for dead
            if any(lock.state == LockState.ACQUIRED and lock.lockid != lockid for lock in locks):
                break
            ahead = [lock for lock in locks if lock.lockid < lockid]
            dead = [lock for lock in ahead if self._record(lock).is_dead()]
            for lock in dead:
                self._unlock(lock.lockid)
            if len(dead) == len(ahead):
                try:
                    state = self._lock_call("check_lock", CheckLockRequest(lockid=lockid)).state
                except NoSuchLockException:
                    return False  # unlocked meanwhile by another apply that took ours for dead
                if state == LockState.ACQUIRED:
                    return True
                if state != LockState.WAITING:
                    return False
            else:
                self.client.sleep(LOCK_POLL_SECONDS)
        self._unlock(lockid)
        return False

    def _locks(self) -> list[ShowLocksResponseElement]:
        """The locks of the lease's name, oldest first."""
        answer = self._lock_call("show_locks", ShowLocksRequest(dbname=self.lock_name))
        return sorted((lock for lock in answer.locks if same_name(lock.dbname, self.lock_name)),
                      key=lambda lock: lock.lockid)

    def _record(self, lock: ShowLocksResponseElement) -> LeaseRecord:
        agent = LEASE_AGENT.fullmatch(lock.agentInfo or "")
        if agent is None:
            raise InvalidInputError(f"hive3: {self.label} is held by {lock.user}@{lock.hostname} "
                                    f"({lock.agentInfo!r}), not by lance-sync; unlock it by hand")
        heartbeat = datetime.datetime.fromtimestamp(lock.lastheartbeat / 1000, datetime.timezone.utc)
        expires = heartbeat + datetime.timedelta(seconds=int(agent["term"]))
        return LeaseRecord(id=agent["id"], owner=self.owner, holder=lock.user, host=lock.hostname,
                           pid=int(agent["pid"]), started=agent["started"], expires=iso_time(expires))

    def _previous_format(self) -> StoredLease | None:
        try:
            database = self.client.get_database(*self.database)
        except NamespaceNotFoundError:
            return None
        record = LeaseRecord.from_properties(database_properties(database))
        return StoredLease(record, PREVIOUS_FORMAT) if record is not None else None

    def _unlock(self, lockid: int) -> None:
        with contextlib.suppress(NoSuchLockException):  # gone already
            self._lock_call("unlock", UnlockRequest(lockid=lockid))

    def _lock_call(self, call: str, request: object) -> Any:
        """A call of the lock API. Every one fails with "Internal error processing <call>" on a
        metastore without its transaction tables; the answer of the transaction API's simplest
        read (get_open_txns, which needs TXNS and NEXT_TXN_ID) tells that apart from another
        internal error, and the failure then says what is missing and what to do."""
        try:
            return self.client.send(call, request)
        except MetastoreInternalError as error:
            try:
                self.client.send("get_open_txns")
            except MetastoreInternalError:
                raise NoTransactionTables(_no_transaction_tables(self.client.address, call, error)) from error
            raise


#: the version of a lease of the format before lease locks (a record in database parameters)
PREVIOUS_FORMAT = "database-parameters"


def _lease_agent(record: LeaseRecord) -> str:
    started = datetime.datetime.fromisoformat(record.started)
    term = round((datetime.datetime.fromisoformat(record.expires) - started).total_seconds())
    return f"lance-sync lease {record.id} pid {record.pid} since {record.started} for {term}s"


def _no_transaction_tables(address: str, call: str, error: MetastoreInternalError) -> str:
    return (f"hive3: the metastore at {address} has no transaction tables (TXNS, NEXT_TXN_ID, "
            f"HIVE_LOCKS, NEXT_LOCK_ID, ...), which its lock API needs for the apply lease: {call} "
            f"and get_open_txns both failed with an internal error ({message(error.__cause__ or error)}). "
            "A metastore whose schema DataNucleus made (datanucleus.schema.autoCreateAll=true) "
            "lacks them. Create them: for a new metastore database, `schematool -dbType "
            "<derby|mysql|postgres|oracle|mssql> -initSchema`; for an existing one, Hive's "
            "hive-txn-schema-<version>.<db>.sql script (scripts/metastore/upgrade/<db>/ of the Hive "
            "release; TxnDbUtil.prepDb does the same in Hive's tests). Or keep the lease as a "
            f"view of the metastore instead: set `{LEASE_KEY}: {VIEW_LEASE}` in this backend's "
            "entry, for every runner of this owner (docs/backends/hive3.md, \"Apply leases\"); "
            "nothing was changed")


class HiveViewLeaseRegister(ClaimLeaseRegister):
    """An apply lease as the view `lease` of the lease database (`<catalog>$<lease name>`), its
    parameters the record; claims on it are views beside it (`ClaimLeaseRegister`). For a
    metastore without transaction tables (`lease: table`): create_table is the only exclusive
    write HMS has besides the lock API (AlreadyExistsException; on a database that lets two
    creates race past HMS's own check, the unique index of TBLS fails the second, read back
    here). A view, because HMS makes no directory for one: a lease's creates and drops touch
    no storage. The lease database is created once per owner and catalog, and kept.
    """

    def __init__(self, driver: Hive3Namespace, catalog: str, name: str):
        self.driver = driver
        self.client = driver.client.for_leases()
        self.database: Identifier = (catalog, name)
        id = (*self.database, LEASE_VIEW)
        super().__init__(id, f"{driver.namespace_id()} view {list(id)}",
                         f"the view {display(id)} of thrift://{self.client.address}")

    @translated
    def _create_at(self, id: Identifier, record: LeaseRecord) -> bool:
        try:
            return self._create_view(id, record)
        except (InvalidObjectException, NoSuchObjectException):  # no lease database (HMS 2, HMS 3)
            # the first lease of this owner here: create it, then the view once more
            request = CreateNamespaceRequest(id=list(self.database), mode="ExistOk")
            with_retries(functools.partial(self.driver.create_namespace, request),
                         self.driver.config.client_max_retries)
            return self._create_view(id, record)

    def _create_view(self, id: Identifier, record: LeaseRecord) -> bool:
        """create_table of the view holding `record`; False when it exists."""
        try:
            self.client.send("create_table", _lease_view(id, record))
        except AlreadyExistsException:
            return False
        except MetaException:  # two creates raced past HMS's check, and TBLS' unique index failed one
            holder = self._claim_of(id)
            if holder is None:
                raise
            return holder.id == record.id
        return True

    @translated
    def _properties_at(self, id: Identifier) -> dict[str, str] | None:
        try:
            return self.client.get_table(*id).parameters or {}
        except TableNotFoundError:
            return None

    @translated
    def _write_at(self, id: Identifier, record: LeaseRecord) -> None:
        catalog, database, name = id
        self.client.send("alter_table", database_ref(catalog, database), name, _lease_view(id, record))

    @translated
    def _drop_at(self, id: Identifier) -> None:
        catalog, database, name = id
        with contextlib.suppress(NoSuchObjectException):  # gone already
            self.client.send("drop_table", database_ref(catalog, database), name, False)


def _lease_view(id: Identifier, record: LeaseRecord) -> Table:
    catalog, database, name = id
    return Table(tableName=name, dbName=database, catName=catalog, tableType="VIRTUAL_VIEW",
                 owner=record.holder, parameters=record.to_properties(), partitionKeys=[],
                 viewOriginalText=LEASE_VIEW_TEXT, viewExpandedText=LEASE_VIEW_TEXT,
                 sd=StorageDescriptor(cols=[], compressed=False, numBuckets=-1,
                                      serdeInfo=SerDeInfo(name=name, parameters={}),
                                      bucketCols=[], sortCols=[], parameters={}))
