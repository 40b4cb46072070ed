"""One apply at a time per owner and backend: a lease held in the backend itself.

Like Terraform's state lock, but without a state file: the lease is a record in the catalog
(or a file of a local `dir` root) that changes only by compare-and-swap. Each backend keeps it
with the best primitive it has (`SyncNamespace.lease_register`, lance_sync.drivers.leases): a
file swapped under an exclusive file lock, a conditional row update of the `dir` manifest, an
Iceberg table commit with requirements, a Glue UpdateTable with VersionId, a Hive Metastore
lock, or, where the backend has no conditional write (Unity), a namespace whose takeovers are
made exclusive by claim namespaces.

The protocol, the same for every backend:

- acquire: create the lease (exclusive), or take over a dead one (expired, released, or held
  by a process of this host that no longer runs) with one swap from the record that was read.
  Of any number of applies taking over one dead lease, exactly one swap succeeds; the others
  read the lease again, find the winner alive, and wait for it or refuse naming it.
- renew (every quarter of the term, in the background): a swap from the record held; a
  renewal that finds another record means the lease was lost (`Leases.lost`), and the apply
  starts no further action.
- release: a conditional removal (or, where the backend keeps the record, a swap to a record
  marked released).

Leases are acquired in one canonical order (server, then container), so two applies that need
the same leases never hold one each. `lance-sync unlock LEASE_ID` removes a lease by hand.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from lance_namespace.errors import LanceNamespaceError

from lance_sync.drivers.base import Drivers, Identifier
from lance_sync.drivers.leases import LeaseRecord, LeaseRegister, StoredLease
from lance_sync.drivers.support.retry import backoff_seconds, is_transient, with_retries
from lance_sync.model.errors import GuardRefusal, LanceSyncError
from lance_sync.model.marks import LEASE_PREFIX

if TYPE_CHECKING:
    from lance_sync.model.actions import Plan

__all__ = ["LeaseHeld", "LeaseRecord", "LeaseStore", "Leases", "current_leases",
           "lease_name", "lease_stores", "touched_ids", "unlock"]

logger = logging.getLogger(__name__)

DEFAULT_DURATION_SECONDS = 120.0
#: how often a waiting apply looks at the lease again
POLL_SECONDS = 2.0
#: times a lease call is sent again after a transient failure (beyond the driver's own retries)
LEASE_RETRIES = 3

T = TypeVar("T")


def lease_name(owner: str) -> str:
    """A name every backend accepts (lower-case letters, digits, '_'), unique per owner."""
    slug = re.sub(r"[^a-z0-9]+", "_", owner.lower()).strip("_")[:40]
    digest = hashlib.sha256(owner.encode()).hexdigest()[:8]
    return f"{LEASE_PREFIX}{slug}_{digest}"


class LeaseStore:
    """One lease an apply needs: a backend's register, named for messages."""

    def __init__(self, register: LeaseRegister, backend: str):
        self.register = register
        self.where = register.where
        self.label = f"backend '{backend}': {register.label}"


def lease_stores(drivers: Drivers, touched: Mapping[str, Iterable[Identifier]],
                 owner: str) -> list[LeaseStore]:
    """The leases an apply touching these ids needs, in canonical acquisition order."""
    name = lease_name(owner)
    stores: dict[str, LeaseStore] = {}
    for backend, ids in touched.items():
        driver = drivers[backend]
        for parent in driver.lease_parents(list(ids)):
            store = LeaseStore(driver.lease_register(parent, name, owner), backend)
            stores.setdefault(store.where, store)
    return [stores[where] for where in sorted(stores)]


def touched_ids(plan: Plan) -> dict[str, set[Identifier]]:
    """Per backend, the ids a plan's actions touch: where its leases must be held."""
    touched: dict[str, set[Identifier]] = defaultdict(set)
    for action in plan.actions:
        if action.id:
            touched[action.backend].add(tuple(action.id))
        if action.renamed_from is not None:
            touched[action.backend].add(tuple(action.renamed_from.id))
        for address in action.registrations:
            touched[address.backend].add(tuple(address.id))
    return touched


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
        #: set when a renewal found another record: the apply must start no further action
        self.lost = threading.Event()
        #: each lease held, as last written (renewals replace it)
        self._held: dict[LeaseStore, StoredLease] = {}
        self._held_lock = threading.Lock()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    @property
    def held(self) -> list[LeaseStore]:
        return list(self._held)

    def acquire(self, timeout: float = 0.0, on_wait: Callable[[str], None] | None = None) -> None:
        """Every lease, in order; waits up to `timeout` seconds for a live holder, then refuses."""
        deadline = time.monotonic() + timeout
        try:
            for store in self.stores:
                self._held[store] = self._acquire_one(store, deadline, on_wait)
                logger.debug("acquired lease %s on %s", self.record.id, store.label)
        except BaseException:
            self.release()
            raise
        self._renewer = threading.Thread(target=self._renew_loop, name="lease-renewer", daemon=True)
        self._renewer.start()

    def _acquire_one(self, store: LeaseStore, deadline: float,
                     on_wait: Callable[[str], None] | None) -> StoredLease:
        register = store.register
        # a register that keeps released records has one already, most of the time
        current = _call(store, "read", register.read) if register.keeps_released else None
        while True:
            if current is None:
                created = self._create(store)
                if created is not None:
                    return created
                current = _call(store, "read", register.read)
                continue
            if current.record.id == self.record.id:  # our own write, resent by a client, met itself
                return current
            holder, taking_over = current.record, False
            if holder.is_dead():
                taken = self._swap(store, current, self._fresh())
                if taken is not None:
                    return taken
                # who is replacing it, if it is still the lease after that was read (a claimant
                # seen after the lease changed may be one that lost, not the one that won)
                claimant = _call(store, "read", functools.partial(register.claimant, current))
                latest = _call(store, "read", register.read)
                if claimant is None or claimant.is_dead() or latest is None or latest.version != current.version:
                    current = latest  # look again (a dead claimant's claim is superseded by the next swap)
                    continue
                holder, taking_over = claimant, True
            self._wait_for(store, holder, taking_over, deadline, on_wait)
            current = _call(store, "read", register.read)

    def _wait_for(self, store: LeaseStore, holder: LeaseRecord, taking_over: bool, deadline: float,
                  on_wait: Callable[[str], None] | None) -> None:
        """Wait one poll for a live holder, or refuse once the deadline has passed."""
        doing = "is taking over" if taking_over else "holds"
        if time.monotonic() >= deadline:
            raise LeaseHeld(f"another apply {doing} {store.label}: {holder.describe()}; wait for it "
                            f"(--lock-timeout), or if it is gone: lance-sync unlock {holder.id}")
        if on_wait:
            on_wait(f"waiting for {store.label}: another apply {doing} it: {holder.describe()}")
        self.sleep(POLL_SECONDS)

    def _fresh(self) -> LeaseRecord:
        """This apply's record with a full term from now (an acquire may have waited)."""
        self.record = self.record.renewed(self.duration)
        return self.record

    def _create(self, store: LeaseStore) -> StoredLease | None:
        """Create the lease; after a transient failure, read back whether that create landed."""
        record = self._fresh()
        attempt = 0
        while True:
            try:
                return store.register.create(record)
            except LanceNamespaceError as error:
                if not is_transient(error) or attempt >= LEASE_RETRIES:
                    raise _failed(store, "take", error) from error
                current = _call(store, "read", store.register.read)
                if current is not None:
                    return current if current.record.id == record.id else None
                self.sleep(backoff_seconds(attempt))
                attempt += 1

    @staticmethod
    def _swap(store: LeaseStore, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        """Replace `expected` by `record`; None when another write came first. A swap whose
        answer was lost (so that its resend found the lease changed) is read back."""
        swapped = _call(store, "take", functools.partial(store.register.swap, expected, record))
        if swapped is None:
            current = _call(store, "read", store.register.read)
            if current is not None and current.record.id == record.id:
                return current
        return swapped

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.duration / 4):
            with self._held_lock:
                if not self._renew_all():
                    self.lost.set()
                    return

    def _renew_all(self) -> bool:
        """Renew every lease held; False when one of them was taken over, or could not be
        renewed and expires before the next try (then another apply may take it over)."""
        record = self.record.renewed(self.duration)
        for store, held in list(self._held.items()):
            try:
                renewed = self._swap(store, held, record)
                if renewed is None:
                    current = store.register.read()
                    if current is None or current.record.id != record.id:
                        return False
                    renewed = current  # still ours: an earlier renewal landed unseen, or none did
            except (LanceSyncError, LanceNamespaceError) as error:
                logger.debug("renewing lease %s on %s failed: %s", record.id, store.label, error)
                renewed = held  # a flaky renewal: tried again next time, if there is time left
            if renewed.record.expires_within(self.duration / 4):
                return False
            self._held[store] = renewed
            logger.debug("renewed lease %s on %s", record.id, store.label)
        self.record = record
        return True

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        with self._held_lock:
            for store, held in reversed(list(self._held.items())):
                with contextlib.suppress(LanceSyncError, LanceNamespaceError, OSError):
                    _call(store, "release", functools.partial(store.register.remove, held))
                    logger.debug("released lease %s on %s", held.record.id, store.label)
            self._held.clear()

    @contextlib.contextmanager
    def holding(self, timeout: float = 0.0, on_wait: Callable[[str], None] | None = None) -> Iterator[Leases]:
        self.acquire(timeout, on_wait)
        try:
            yield self
        finally:
            self.release()


def unlock(stores: list[LeaseStore], lease_id: str) -> list[str]:
    """Remove the lease with this id (or a stuck takeover by it) wherever it is held; the places
    it was removed from."""
    removed = []
    for store in stores:
        current = _call(store, "read", store.register.read)
        if current is None:
            continue
        claimant = _call(store, "read", functools.partial(store.register.claimant, current))
        if claimant is not None and lease_id in (claimant.id, current.record.id):
            _call(store, "remove", functools.partial(store.register.clear_claim, current))
            removed.append(f"{store.label}: the takeover by {claimant.describe()}")
        held = current.record.id == lease_id and not current.record.released
        if held and _call(store, "remove", functools.partial(store.register.remove, current)):
            removed.append(f"{store.label}: {current.record.describe()}")
    return removed


def current_leases(stores: list[LeaseStore]) -> list[tuple[str, LeaseRecord]]:
    """Each lease held, and each takeover in progress, with where it is."""
    found = []
    for store in stores:
        current = _call(store, "read", store.register.read)
        if current is None:
            continue
        if not current.record.released:
            found.append((store.label, current.record))
        claimant = _call(store, "read", functools.partial(store.register.claimant, current))
        if claimant is not None:
            found.append((f"{store.label} (taking over lease {current.record.id})", claimant))
    return found


def _call(store: LeaseStore, what: str, call: Callable[[], T]) -> T:
    """A lease call, retried while it fails transiently."""
    try:
        return with_retries(call, LEASE_RETRIES, backend=store.label, label=what)
    except LanceNamespaceError as error:
        raise _failed(store, what, error) from error


def _failed(store: LeaseStore, what: str, error: LanceNamespaceError) -> LanceSyncError:
    return LanceSyncError(f"cannot {what} the apply lease {store.label}: {type(error).__name__}: {error}")
