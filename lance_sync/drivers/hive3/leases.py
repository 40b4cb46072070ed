"""Apply leases on a Hive Metastore: locks of the metastore's own lock API.

An EXCLUSIVE lock is granted by the metastore to one requester at a time, so a lease is one
(`HiveLockLeaseRegister`); the calls go out through the driver's client (`client.Hive3Client`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import re
from typing import TYPE_CHECKING

from lance_namespace.errors import InvalidInputError, NamespaceNotFoundError
from pymetastore.hive_metastore.ttypes import (
    CheckLockRequest,
    DataOperationType,
    HeartbeatRequest,
    LockComponent,
    LockLevel,
    LockRequest,
    LockResponse,
    LockState,
    LockType,
    NoSuchLockException,
    ShowLocksRequest,
    ShowLocksResponseElement,
    UnlockRequest,
)

from lance_sync.drivers.hive3.answers import same_name, shown
from lance_sync.drivers.hive3.errors import translated
from lance_sync.drivers.hive3.objects import database_properties, is_default_catalog
from lance_sync.drivers.leases import LeaseRecord, LeaseRegister, StoredLease, iso_time
from lance_sync.drivers.support.retry import BadAnswerError

if TYPE_CHECKING:
    from lance_sync.drivers.hive3.client import Hive3Client

#: how a lease lock names its holder in `agentInfo` (the metastore keeps 128 characters)
LEASE_AGENT = re.compile(r"lance-sync lease (?P<id>\w+) pid (?P<pid>\d+) since (?P<started>\S+) "
                         r"for (?P<term>\d+)s")
#: the metastore keeps 128 characters of a lock's user, host and agentInfo
LOCK_TEXT_LIMIT = 128
#: how often a queued lease lock looks whether the lock ahead of it has settled, and how many
#: times before it gives up its place (see HiveLockLeaseRegister._settled)
LOCK_POLL_SECONDS = 0.05
LOCK_POLLS = 200


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
        answer = self.client.send("lock", LockRequest(
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
                self.client.send("heartbeat", HeartbeatRequest(lockid=lockid))
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
                    state = self.client.send("check_lock", CheckLockRequest(lockid=lockid)).state
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
        answer = self.client.send("show_locks", ShowLocksRequest(dbname=self.lock_name))
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
            self.client.send("unlock", UnlockRequest(lockid=lockid))


#: the version of a lease of the format before lease locks (a record in database parameters)
PREVIOUS_FORMAT = "database-parameters"


def _lease_agent(record: LeaseRecord) -> str:
    started = datetime.datetime.fromisoformat(record.started)
    term = round((datetime.datetime.fromisoformat(record.expires) - started).total_seconds())
    return f"lance-sync lease {record.id} pid {record.pid} since {record.started} for {term}s"
