"""One apply at a time per owner and backend: a lease held in the backend itself.

Like Terraform's state lock, but without a state file: the lease is an object in the
catalog that only one apply can create.

- In a backend with a catalog, a lease is a namespace named `lance_sync_lease_<owner>`
  under each container the apply touches (a Unity catalog, an Iceberg warehouse, a Glue
  catalog, a Hive catalog); creating a namespace is exclusive in every backend. Its
  properties say who holds it, since when, until when, and the lease id.
- In a local `dir` root, a lease is a file created with O_EXCL.

A holder renews its lease while it works. A lease whose holder is gone (expired, or a
process of this host that no longer runs) is taken over: read, checked to be the same
lease, deleted, created again. `lance-sync unlock LEASE_ID` removes a lease by hand.
Leases are acquired in one canonical order (server, then container), so two applies that
need the same leases never hold one each.
"""

from __future__ import annotations

import contextlib
import datetime
import getpass
import hashlib
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Protocol

from lance_namespace import CreateNamespaceRequest, DropNamespaceRequest
from lance_namespace.errors import (
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
)

from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.drivers.retry import backoff_seconds, is_transient, with_retries
from lance_sync.errors import GuardRefusal, LanceSyncError

LEASE_PREFIX = "lance_sync_lease_"
LEASE_DIRECTORY = "_lance_sync_leases"
PROPERTY_PREFIX = "lance_sync.lease."
DEFAULT_DURATION_SECONDS = 120.0
#: how often a waiting apply looks at the lease again
POLL_SECONDS = 2.0
#: times a lease call is sent again after a transient failure (beyond the driver's own retries)
LEASE_RETRIES = 3


def is_lease_namespace(id: Identifier) -> bool:
    """Leases are lance-sync's bookkeeping: never planned, listed or adopted."""
    return bool(id) and id[-1].startswith(LEASE_PREFIX)


def lease_name(owner: str) -> str:
    """A name every backend accepts (lower-case letters, digits, '_'), unique per owner."""
    slug = re.sub(r"[^a-z0-9]+", "_", owner.lower()).strip("_")[:40]
    digest = hashlib.sha256(owner.encode()).hexdigest()[:8]
    return f"{LEASE_PREFIX}{slug}_{digest}"


@dataclass(frozen=True)
class LeaseRecord:
    id: str
    owner: str
    holder: str
    host: str
    pid: int
    started: str
    expires: str

    @classmethod
    def new(cls, owner: str, duration: float) -> LeaseRecord:
        now = _now()
        return cls(id=uuid.uuid4().hex[:12], owner=owner, holder=f"{_user()}@{socket.gethostname()}",
                   host=socket.gethostname(), pid=os.getpid(), started=_iso(now),
                   expires=_iso(now + datetime.timedelta(seconds=duration)))

    def renewed(self, duration: float) -> LeaseRecord:
        expires = _iso(_now() + datetime.timedelta(seconds=duration))
        return LeaseRecord(**{**asdict(self), "expires": expires})

    def is_dead(self) -> bool:
        """Expired, or held by a process of this host that no longer runs."""
        if datetime.datetime.fromisoformat(self.expires) <= _now():
            return True
        return self.host == socket.gethostname() and not _process_alive(self.pid)

    def describe(self) -> str:
        return (f"lease {self.id} held by {self.holder} (pid {self.pid}) since {self.started}, "
                f"until {self.expires}")

    def to_properties(self) -> dict[str, str]:
        return {f"{PROPERTY_PREFIX}{k}": str(v) for k, v in asdict(self).items()}

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> LeaseRecord | None:
        """The record a lease namespace's properties hold; None unless they hold exactly one."""
        values = {k[len(PROPERTY_PREFIX):]: v for k, v in properties.items() if k.startswith(PROPERTY_PREFIX)}
        if set(values) != {f.name for f in fields(cls)} or not values["pid"].isdigit():
            return None
        return cls(id=values["id"], owner=values["owner"], holder=values["holder"], host=values["host"],
                   pid=int(values["pid"]), started=values["started"], expires=values["expires"])


class LeaseStore(Protocol):
    """Where one lease lives. `create` is exclusive; the rest check the lease id they expect."""

    #: a stable key for the canonical acquisition order
    where: str
    #: how messages name the lease
    label: str

    def create(self, record: LeaseRecord) -> bool: ...
    def read(self) -> LeaseRecord | None: ...
    def write(self, record: LeaseRecord) -> None: ...
    def delete(self) -> None: ...


class NamespaceLeaseStore:
    """A lease as a namespace of its own under `parent`; its properties are the record."""

    def __init__(self, driver: SyncNamespace, backend: str, parent: Identifier, owner: str):
        self.driver = driver
        self.id = (*parent, lease_name(owner))
        self.where = f"{driver.namespace_id()} {list(self.id)}"
        self.label = f"backend '{backend}': {driver.format_identifier(self.id)}"

    def create(self, record: LeaseRecord) -> bool:
        try:
            self.driver.create_namespace(CreateNamespaceRequest(id=list(self.id), mode="Create",
                                                                properties=record.to_properties()))
        except NamespaceAlreadyExistsError:
            return False
        return True

    def read(self) -> LeaseRecord | None:
        info = self.driver.get_namespace_info(self.id)
        if info is None:
            return None
        record = LeaseRecord.from_properties(info.properties)
        if record is None:
            raise LanceSyncError(f"{self.label} exists but is not a lance-sync lease; remove it by hand")
        return record

    def write(self, record: LeaseRecord) -> None:
        self.driver.update_namespace_properties(self.id, record.to_properties(), [])

    def delete(self) -> None:
        with contextlib.suppress(NamespaceNotFoundError):
            self.driver.drop_namespace(DropNamespaceRequest(id=list(self.id), mode="Skip", behavior="Restrict"))


class FileLeaseStore:
    """A lease as a file created with O_EXCL in a local directory root."""

    def __init__(self, root: str, owner: str, backend: str):
        self.path = Path(root) / LEASE_DIRECTORY / f"{lease_name(owner)}.json"
        self.where = f"file {self.path}"
        self.label = f"backend '{backend}': {self.path}"

    def create(self, record: LeaseRecord) -> bool:
        """Written whole beside the lease, then linked to its name: link() fails if the name exists."""
        temporary = self._written(record)
        try:
            os.link(temporary, self.path)
        except FileExistsError:
            return False
        finally:
            temporary.unlink()
        return True

    def read(self) -> LeaseRecord | None:
        try:
            return LeaseRecord(**json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (ValueError, TypeError) as error:
            raise LanceSyncError(f"{self.label} is not a lance-sync lease ({error}); remove it by hand") from None

    def write(self, record: LeaseRecord) -> None:
        os.replace(self._written(record), self.path)

    def _written(self, record: LeaseRecord) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        temporary.write_text(json.dumps(asdict(record)), encoding="utf-8")
        return temporary

    def delete(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def lease_stores(drivers: dict[str, SyncNamespace], touched: Mapping[str, Iterable[Identifier]],
                 owner: str) -> list[LeaseStore]:
    """The leases an apply touching these ids needs, in canonical acquisition order."""
    stores: dict[str, LeaseStore] = {}
    for backend, ids in touched.items():
        driver = drivers[backend]
        directory = driver.lease_directory()
        if directory is not None:
            store: LeaseStore = FileLeaseStore(directory, owner, backend)
            stores.setdefault(store.where, store)
            continue
        for parent in driver.lease_parents(list(ids)):
            store = NamespaceLeaseStore(driver, backend, parent, owner)
            stores.setdefault(store.where, store)
    return [stores[where] for where in sorted(stores)]


class LeaseHeld(GuardRefusal):
    """Another apply holds the lease (exit 4, naming the holder)."""


class Leases:
    """Leases held for the length of an apply, renewed in the background."""

    def __init__(self, stores: list[LeaseStore], owner: str, duration: float = DEFAULT_DURATION_SECONDS,
                 sleep: Callable[[float], None] = time.sleep):
        self.stores = stores
        self.owner = owner
        self.duration = duration
        self.sleep = sleep
        self.record = LeaseRecord.new(owner, duration)
        self.held: list[LeaseStore] = []
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def acquire(self, timeout: float = 0.0, on_wait: Callable[[str], None] | None = None) -> None:
        """Every lease, in order; waits up to `timeout` seconds for a live holder, then refuses."""
        deadline = time.monotonic() + timeout
        try:
            for store in self.stores:
                self._acquire_one(store, deadline, on_wait)
        except BaseException:
            self.release()
            raise
        self._renewer = threading.Thread(target=self._renew_loop, name="lease-renewer", daemon=True)
        self._renewer.start()

    def _acquire_one(self, store: LeaseStore, deadline: float, on_wait: Callable[[str], None] | None) -> None:
        while True:
            if self._create(store):
                self.held.append(store)
                return
            current = _call(store, "read", store.read)
            if current is None:
                continue  # released meanwhile
            if current.id == self.record.id:  # our own create, resent by a client, met itself
                self.held.append(store)
                return
            if current.is_dead():
                self._take_over(store, current)
                continue
            if time.monotonic() >= deadline:
                raise LeaseHeld(f"another apply holds {store.label}: {current.describe()}; wait for it "
                                f"(--lock-timeout), or if it is gone: lance-sync unlock {current.id}")
            if on_wait:
                on_wait(f"waiting for {store.label}: {current.describe()}")
            self.sleep(POLL_SECONDS)

    def _create(self, store: LeaseStore) -> bool:
        """Create the lease; after a transient failure, read back whether that create landed."""
        attempt = 0
        while True:
            try:
                return store.create(self.record)
            except LanceNamespaceError as error:
                if not is_transient(error) or attempt >= LEASE_RETRIES:
                    raise _failed(store, "take", error) from error
                current = _call(store, "read", store.read)
                if current is not None:
                    return current.id == self.record.id
                self.sleep(backoff_seconds(attempt))
                attempt += 1

    @staticmethod
    def _take_over(store: LeaseStore, dead: LeaseRecord) -> None:
        """Delete a dead lease, but only the one that was read."""
        current = _call(store, "read", store.read)
        if current is not None and current.id == dead.id:
            _call(store, "remove", store.delete)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.duration / 4):
            self.record = self.record.renewed(self.duration)
            for store in list(self.held):
                try:
                    current = store.read()
                    if current is None or current.id != self.record.id:
                        self.lost.set()
                        return
                    store.write(self.record)
                except LanceNamespaceError:
                    continue  # a flaky renewal; the lease has time left

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        for store in reversed(self.held):
            with contextlib.suppress(LanceNamespaceError, OSError):
                current = store.read()
                if current is not None and current.id == self.record.id:
                    store.delete()
        self.held = []

    @contextlib.contextmanager
    def holding(self, timeout: float = 0.0, on_wait: Callable[[str], None] | None = None) -> Iterator[Leases]:
        self.acquire(timeout, on_wait)
        try:
            yield self
        finally:
            self.release()


def unlock(stores: list[LeaseStore], lease_id: str) -> list[str]:
    """Remove the lease with this id wherever it is held; the places it was removed from."""
    removed = []
    for store in stores:
        current = _call(store, "read", store.read)
        if current is not None and current.id == lease_id:
            _call(store, "remove", store.delete)
            removed.append(f"{store.label}: {current.describe()}")
    return removed


def current_leases(stores: list[LeaseStore]) -> list[tuple[str, LeaseRecord]]:
    found = []
    for store in stores:
        record = _call(store, "read", store.read)
        if record is not None:
            found.append((store.label, record))
    return found


def _call(store: LeaseStore, what: str, call: Callable):
    """A lease read or removal, retried while it fails transiently."""
    try:
        return with_retries(call, LEASE_RETRIES)
    except LanceNamespaceError as error:
        raise _failed(store, what, error) from error


def _failed(store: LeaseStore, what: str, error: LanceNamespaceError) -> LanceSyncError:
    return LanceSyncError(f"cannot {what} the apply lease {store.label}: {type(error).__name__}: {error}")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _iso(moment: datetime.datetime) -> str:
    return moment.isoformat(timespec="seconds")
