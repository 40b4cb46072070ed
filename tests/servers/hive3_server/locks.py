"""The metastore's lock API for locks outside transactions: `lock`, `check_lock`, `unlock`,
`heartbeat`, `show_locks`, as HMS's TxnHandler keeps them in its HIVE_LOCKS table.

Read from Hive's TxnHandler (lock, checkLock, unlock, heartbeatLock, showLocks, timeOutLocks,
the jump table) and checked call by call against the real HMS 2.3 of the suite
(`hive_checks.LOCK_CHECKS` run against both):

- A lock request gets the next lock id (from 1) and one row per component, all WAITING; then
  each component looks at the locks ahead of it (lower ids, nearest first) on an overlapping
  resource: by the jump table (its type, theirs, their state) it is granted at once, waits
  (`blockedByExtId` names that lock), or keeps looking; a component that runs out of locks
  to look at is granted. The lock is ACQUIRED when every component is, else WAITING; a WAITING
  lock is looked at again only when its owner calls `check_lock`.
- Resources overlap unless their databases differ, or both name tables and they differ, or
  both name partitions and they differ. Names are stored lower-case (HMS 3's normalizeCase;
  2.3 keeps them as given); `show_locks` filters by the names as given, unchanged.
- `lock`, `check_lock` and `heartbeat` set the lock's last heartbeat (server time, ms); a lock
  whose last heartbeat is older than `timeout_seconds` (hive.txn.timeout, 300 s by default) is
  removed before any lock call, as HMS's housekeeping does.
- `unlock` of a lock that is gone succeeds (TxnHandler keeps it idempotent); `check_lock` and
  `heartbeat` of one answer NoSuchLockException ("No such lock lockid:N", "No such lock:
  lockid:N", the two wordings of HMS).
- A request without components, or a user, host or agentInfo longer than the 128 characters
  of the HIVE_LOCKS columns, fails inside HMS: TApplicationException INTERNAL_ERROR.

Transactions are not kept: a request with a transaction id is refused with MetaException.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from pymetastore.hive_metastore.ttypes import (
    CheckLockRequest,
    HeartbeatRequest,
    LockComponent,
    LockLevel,
    LockRequest,
    LockResponse,
    LockState,
    LockType,
    MetaException,
    NoSuchLockException,
    ShowLocksRequest,
    ShowLocksResponse,
    ShowLocksResponseElement,
    UnlockRequest,
)
from thrift.Thrift import TApplicationException

from tests.servers.hive3_server.names import normalize

#: HIVE_LOCKS keeps HL_USER, HL_HOST and HL_AGENT_INFO in varchar(128)
TEXT_LIMIT = 128
DEFAULT_TIMEOUT_SECONDS = 300.0
#: what a lock without agentInfo shows (HMS fills it in)
UNKNOWN_AGENT = "Unknown"

ACQUIRE, WAIT, KEEP_LOOKING = "acquire", "wait", "keep looking"
#: TxnHandler's jump table: (wanted type, type ahead, state ahead) -> what the wanted lock does
JUMP_TABLE = {
    (LockType.SHARED_READ, LockType.SHARED_READ, LockState.ACQUIRED): ACQUIRE,
    (LockType.SHARED_READ, LockType.SHARED_READ, LockState.WAITING): KEEP_LOOKING,
    (LockType.SHARED_READ, LockType.SHARED_WRITE, LockState.ACQUIRED): ACQUIRE,
    (LockType.SHARED_READ, LockType.SHARED_WRITE, LockState.WAITING): KEEP_LOOKING,
    (LockType.SHARED_READ, LockType.EXCLUSIVE, LockState.ACQUIRED): WAIT,
    (LockType.SHARED_READ, LockType.EXCLUSIVE, LockState.WAITING): KEEP_LOOKING,
    (LockType.SHARED_WRITE, LockType.SHARED_READ, LockState.ACQUIRED): KEEP_LOOKING,
    (LockType.SHARED_WRITE, LockType.SHARED_READ, LockState.WAITING): KEEP_LOOKING,
}


@dataclass
class _Component:
    """One row of HIVE_LOCKS: a component of a lock."""

    internal_id: int
    type: int
    database: str
    table: str | None
    partition: str | None
    state: int = LockState.WAITING
    blocked_by: tuple[int, int] | None = None

    def overlaps(self, other: _Component) -> bool:
        return (self.database == other.database
                and not (self.table and other.table and self.table != other.table)
                and not (self.partition and other.partition and self.partition != other.partition))


@dataclass
class _Lock:
    id: int
    user: str
    host: str
    agent: str
    components: list[_Component]
    last_heartbeat: int
    acquired_at: int | None = None
    heartbeats: int = field(default=0)

    @property
    def state(self) -> int:
        return (LockState.ACQUIRED if all(c.state == LockState.ACQUIRED for c in self.components)
                else LockState.WAITING)


class LockTable:
    """Every lock of the metastore. Not thread-safe: the handler calls it under its lock."""

    def __init__(self, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.timeout_ms = int(timeout_seconds * 1000)
        self._locks: dict[int, _Lock] = {}
        self._ids = itertools.count(1)

    def lock(self, request: LockRequest) -> LockResponse:
        self._time_out()
        if request.txnid:
            raise MetaException("This test metastore keeps no transactions: lock outside one (txnid 0)")
        texts = (request.user or "", request.hostname or "", request.agentInfo or "")
        if not request.component or any(len(text) > TEXT_LIMIT for text in texts):
            raise TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error processing lock")
        now = _now_ms()
        lock = _Lock(id=next(self._ids), user=request.user or "", host=request.hostname or "",
                     agent=request.agentInfo or UNKNOWN_AGENT, last_heartbeat=now,
                     components=[_component(index, c) for index, c in enumerate(request.component, 1)])
        self._locks[lock.id] = lock
        self._check(lock, now)
        return LockResponse(lockid=lock.id, state=lock.state)

    def check_lock(self, request: CheckLockRequest) -> LockResponse:
        self._time_out()
        lock = self._locks.get(request.lockid)
        if lock is None:
            raise NoSuchLockException(f"No such lock lockid:{request.lockid}")
        now = _now_ms()
        lock.last_heartbeat = now
        if lock.state == LockState.WAITING:
            self._check(lock, now)
        return LockResponse(lockid=lock.id, state=lock.state)

    def unlock(self, request: UnlockRequest) -> None:
        self._time_out()
        self._locks.pop(request.lockid, None)

    def heartbeat(self, request: HeartbeatRequest) -> None:
        self._time_out()
        if request.txnid:
            raise MetaException("This test metastore keeps no transactions: heartbeat a lock id")
        lock = self._locks.get(request.lockid)
        if lock is None:
            raise NoSuchLockException(f"No such lock: lockid:{request.lockid}")
        lock.last_heartbeat = _now_ms()

    def show_locks(self, request: ShowLocksRequest) -> ShowLocksResponse:
        # HMS 3 stores names lower-case but filters by the names as given
        wanted = {"database": request.dbname or None, "table": request.tablename or None,
                  "partition": request.partname or None}
        elements = []
        for lock in sorted(self._locks.values(), key=lambda lock: lock.id):
            for component in lock.components:
                if any(value is not None and getattr(component, key) != value for key, value in wanted.items()):
                    continue
                blocked = component.blocked_by or (None, None)
                elements.append(ShowLocksResponseElement(
                    lockid=lock.id, dbname=component.database, tablename=component.table,
                    partname=component.partition, state=component.state, type=component.type, txnid=0,
                    lastheartbeat=lock.last_heartbeat,
                    acquiredat=lock.acquired_at if component.state == LockState.ACQUIRED else None,
                    user=lock.user, hostname=lock.host, heartbeatCount=lock.heartbeats, agentInfo=lock.agent,
                    blockedByExtId=blocked[0], blockedByIntId=blocked[1], lockIdInternal=component.internal_id))
        return ShowLocksResponse(locks=elements)

    def _check(self, lock: _Lock, now: int) -> None:
        """TxnHandler.checkLock: each component against the locks ahead of it, nearest first."""
        ahead = sorted((other for other in self._locks.values() if other.id < lock.id),
                       key=lambda other: other.id, reverse=True)
        for component in lock.components:
            component.state, component.blocked_by = LockState.ACQUIRED, None
            for other, theirs in ((o, c) for o in ahead for c in o.components):
                if not component.overlaps(theirs):
                    continue
                action = JUMP_TABLE.get((component.type, theirs.type, theirs.state), WAIT)
                if action == ACQUIRE:
                    break
                if action == WAIT:
                    component.state, component.blocked_by = LockState.WAITING, (other.id, theirs.internal_id)
                    break
        if lock.state == LockState.ACQUIRED:
            lock.acquired_at = lock.last_heartbeat = now
        else:  # a lock is granted whole or not at all
            for component in lock.components:
                if component.state == LockState.ACQUIRED:
                    component.state = LockState.WAITING

    def _time_out(self) -> None:
        """Locks nobody heartbeat within the timeout are gone (TxnHandler.timeOutLocks)."""
        oldest = _now_ms() - self.timeout_ms
        for id in [id for id, lock in self._locks.items() if lock.last_heartbeat < oldest]:
            del self._locks[id]


def _component(index: int, requested: LockComponent) -> _Component:
    if requested.dbname is None or requested.type not in (LockType.SHARED_READ, LockType.SHARED_WRITE,
                                                         LockType.EXCLUSIVE):
        raise TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error processing lock")
    table = _normalized(requested.tablename) if requested.level != LockLevel.DB else None
    partition = requested.partitionname if requested.level == LockLevel.PARTITION else None
    return _Component(internal_id=index, type=requested.type, database=normalize(requested.dbname),
                      table=table, partition=partition)


def _normalized(name: str | None) -> str | None:
    return normalize(name) if name is not None else None


def _now_ms() -> int:
    return int(time.time() * 1000)

