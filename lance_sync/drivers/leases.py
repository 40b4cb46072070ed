"""Lease registers: where a backend keeps an apply lease, and how it changes it safely.

`lance_sync.apply.lease` holds the protocol (who may take a lease, renewal, waiting, messages); a
register is the backend's primitive beneath it, one record that changes only by
compare-and-swap:

- `create(record)`: exclusive; None when a lease exists already;
- `read()`: the record with a version token that names this exact write;
- `swap(expected, record)`: replace the lease only if it is still `expected` (the same
  version); None when another write came first;
- `remove(expected)`: free the lease on the same condition.

Each driver gives the best its backend has (`SyncNamespace.lease_register`) and says whether
its swap is one atomic operation on the backend (`atomic`). A register holds a `LeaseRecord`,
not free-form properties, because not every backend can hold a property map: a Hive lock
carries only a user, a host and 128 characters of agent info, so its register packs the record
into those itself (catalogs and files hold `to_properties()` / `to_json()`). A register whose backend cannot
delete conditionally keeps the record after release, marked released (`keeps_released`): a
released lease is free and is taken over by a swap like a dead one.

The default, for a backend with no conditional write at all (Unity Catalog OSS), is
`NamespaceLeaseRegister`: the lease is a namespace whose properties are the record, and a
swap or a removal first creates a claim namespace named after the record it replaces.
Creating a namespace is exclusive everywhere, so of any number of applies replacing one
record, exactly one gets the claim; see its docstring for what remains open.
"""

from __future__ import annotations

import datetime
import getpass
import hashlib
import itertools
import json
import os
import socket
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

from lance_namespace import CreateNamespaceRequest, DropNamespaceRequest
from lance_namespace.errors import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
)

from lance_sync.drivers.support.retry import backoff_seconds, is_transient, with_retries

if TYPE_CHECKING:
    from lance_sync.drivers.base import Identifier, SyncNamespace

#: the properties that hold a lease record in a catalog (a namespace's, a table's)
PROPERTY_PREFIX = "lance_sync.lease."
#: a claim on a record: `<lease name>_claim_<version of the record>[_<generation>]`
CLAIM_INFIX = "_claim_"
#: how long a claim lives (NamespaceLeaseRegister): a claim older than this, or whose process is
#: gone from this host, is superseded
CLAIM_SECONDS = 120.0
#: times one write of a swap (a claim's create, the lease's write) is sent again after a
#: transient failure, before the swap itself fails
STEP_RETRIES = 3


@dataclass(frozen=True)
class LeaseRecord:
    """Who holds an apply lease, since when and until when. Times are ISO 8601 in UTC."""

    id: str
    owner: str
    holder: str
    host: str
    pid: int
    started: str
    expires: str
    #: when the holder released it, for a register that keeps released records ("" while held)
    released: str = ""

    @classmethod
    def new(cls, owner: str, duration: float) -> LeaseRecord:
        now = _now()
        host = socket.gethostname()
        return cls(id=uuid.uuid4().hex[:12], owner=owner, holder=f"{_user()}@{host}", host=host,
                   pid=os.getpid(), started=iso_time(now),
                   expires=iso_time(now + datetime.timedelta(seconds=duration)))

    def renewed(self, duration: float) -> LeaseRecord:
        return replace(self, expires=iso_time(_now() + datetime.timedelta(seconds=duration)))

    def released_now(self) -> LeaseRecord:
        return replace(self, released=iso_time(_now()))

    def is_dead(self) -> bool:
        """Released, expired, or held by a process of this host that no longer runs."""
        if self.released or datetime.datetime.fromisoformat(self.expires) <= _now():
            return True
        return self.host == socket.gethostname() and not _process_alive(self.pid)

    def expires_within(self, seconds: float) -> bool:
        return datetime.datetime.fromisoformat(self.expires) <= _now() + datetime.timedelta(seconds=seconds)

    def describe(self) -> str:
        if self.released:
            return f"lease {self.id} released by {self.holder} (pid {self.pid}) at {self.released}"
        return (f"lease {self.id} held by {self.holder} (pid {self.pid}) since {self.started}, "
                f"until {self.expires}")

    def fingerprint(self) -> str:
        """Names this exact record: every field, the expiry included."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]

    # --- encodings -------------------------------------------------------------------------------

    def to_properties(self) -> dict[str, str]:
        """The record as catalog properties. `released` only when set, so that a held lease has the
        seven properties lance-sync has always written."""
        return {f"{PROPERTY_PREFIX}{key}": str(value) for key, value in self._fields().items()}

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LeaseRecord | None:
        """The record among catalog properties (others are ignored); None unless they hold one."""
        return cls._parsed({key[len(PROPERTY_PREFIX):]: value for key, value in properties.items()
                            if key.startswith(PROPERTY_PREFIX)})

    def to_json(self) -> str:
        return json.dumps(self._fields())

    @classmethod
    def from_json(cls, text: str) -> LeaseRecord | None:
        try:
            values = json.loads(text)
        except ValueError:
            return None
        if not isinstance(values, dict):
            return None
        return cls._parsed({str(key): str(value) for key, value in values.items()})

    def _fields(self) -> dict[str, Any]:
        values = asdict(self)
        if not self.released:
            del values["released"]
        return values

    @classmethod
    def _parsed(cls, values: dict[str, str]) -> LeaseRecord | None:
        names = {field.name for field in fields(cls)}
        required = names - {"released"}
        if not required <= set(values) <= names or not values["pid"].isdigit():
            return None
        try:
            for time in (values["started"], values["expires"], values.get("released") or values["expires"]):
                datetime.datetime.fromisoformat(time)
        except ValueError:
            return None
        return cls(id=values["id"], owner=values["owner"], holder=values["holder"], host=values["host"],
                   pid=int(values["pid"]), started=values["started"], expires=values["expires"],
                   released=values.get("released", ""))


@dataclass(frozen=True)
class StoredLease:
    """A lease record as a register holds it, with the register's token of that write."""

    record: LeaseRecord
    #: opaque and backend-specific; "" when the register must read the lease before it can swap it
    version: str


class LeaseRegister(ABC):
    """One apply lease in a backend (see the module docstring)."""

    #: a swap and a removal are each one atomic operation on the backend; otherwise the
    #: backend's page says what remains open
    atomic: ClassVar[bool] = True
    #: the record stays after release, marked released; an acquire reads before it creates
    keeps_released: ClassVar[bool] = False

    def __init__(self, where: str, label: str):
        #: a stable key for the canonical acquisition order
        self.where = where
        #: how messages name the lease (the backend's own syntax)
        self.label = label

    @abstractmethod
    def create(self, record: LeaseRecord) -> StoredLease | None:
        """Make `record` the lease if there is none; None when there is one."""

    @abstractmethod
    def read(self) -> StoredLease | None:
        """The lease, or None when there is none."""

    @abstractmethod
    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        """Make `record` the lease if the lease is still `expected`; None when it is not."""

    def remove(self, expected: StoredLease) -> bool:
        """Free the lease if it is still `expected`; False when it is not. By default (for a
        register that keeps released records) a swap to the record marked released."""
        return self.swap(expected, expected.record.released_now()) is not None

    def version_to_swap(self, expected: StoredLease) -> str | None:
        """The version to swap `expected` from: its own, else (a register that wrote it without
        learning the version) the version read now; None when the lease is no longer its record."""
        if expected.version:
            return expected.version
        current = self.read()
        return current.version if current is not None and current.record == expected.record else None

    def claimant(self, expected: StoredLease) -> LeaseRecord | None:
        """Who is replacing `expected` right now, where a register takes claims (its swap
        failed while `expected` is still the lease); None otherwise."""
        return None

    def clear_claim(self, expected: StoredLease) -> None:
        """Remove a claim on `expected` whose holder is gone (`lance-sync unlock`); nothing to
        do where a register takes no claims."""
        return None


def not_a_lease(label: str) -> InvalidInputError:
    return InvalidInputError(f"{label} exists but is not a lance-sync lease; remove it by hand")


#: the version token of a lease kept the way lance-sync kept leases before lease tables: a
#: record in the properties of the lease namespace itself
PREVIOUS_FORMAT = "namespace-properties"


class TableLeaseRegister(LeaseRegister):
    """A lease kept in a table inside the lease namespace (Iceberg, Glue), where the lease was
    once the namespace itself, its properties the record. A record still there is read as the
    lease (version PREVIOUS_FORMAT) and replaced by creating the table (exclusive among the
    applies replacing it), then removed from the namespace."""

    keeps_released = True

    def __init__(self, driver: SyncNamespace, namespace: Identifier, where: str, label: str):
        super().__init__(where, label)
        self.driver = driver
        #: the lease namespace (an Iceberg namespace, a Glue database) the table lives in
        self.namespace = namespace

    def previous_format(self) -> StoredLease | None:
        """The lease as lance-sync kept it before lease tables, if there is one."""
        info = self.driver.get_namespace_info(self.namespace)
        record = LeaseRecord.from_properties(info.properties) if info is not None else None
        return StoredLease(record, PREVIOUS_FORMAT) if record is not None else None

    def replace_previous_format(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        created = self.create(record)
        if created is not None:
            self.driver.update_namespace_properties(self.namespace, {}, list(expected.record.to_properties()))
        return created


class ClaimLeaseRegister(LeaseRegister):
    """A lease as one object of a backend without any conditional write, its properties the
    record: the object's create is exclusive, but nothing can be replaced or removed on a
    condition. Subclasses give the object's four calls (`_create_at`, `_properties_at`,
    `_write_at`, `_drop_at`) for an object and its claims alike: namespaces
    (`NamespaceLeaseRegister`, the default of every driver), Hive views (lance_sync.drivers.hive3.leases).

    The version of a record is its fingerprint. Creating the lease object is exclusive. A swap
    or removal of record R first takes a claim on R: it creates the claim object
    `<name>_claim_<version of R>` beside the lease (exclusive: of all applies replacing R, one
    gets it; its properties are the claimant's record), reads the lease again, writes only if it
    is still R, and drops the claim. Every write of the lease happens under a claim on the
    record it replaces, so two applies never both pass their check. A write whose outcome is
    unknown (no answer) keeps its claim, since it may still land; its apply tries again under it.

    A claim whose claimant is dead (its process gone on this host, or the claim older than
    CLAIM_SECONDS) is superseded by the next generation, `<name>_claim_<version>_<n>`, created
    exclusively in the same way; the winner drops every generation when it is done. Another
    apply that finds a live claim waits for the claimant or refuses naming it.

    What remains open: a request that the dead claimant sent before it died and that the
    server carries out only after the next claimant's takeover (or a claimant stalled for
    longer than CLAIM_SECONDS between its check and its write: the assumption every lease
    makes) lands on the newer lease.
    """

    atomic = False

    def __init__(self, id: Identifier, where: str, label: str):
        super().__init__(where, label)
        #: the lease object; its claims are its siblings
        self.id = id

    @abstractmethod
    def _create_at(self, id: Identifier, record: LeaseRecord) -> bool:
        """Create the object `id` holding `record`; False when it exists (of any number of
        creates of one id, one returns True)."""

    @abstractmethod
    def _properties_at(self, id: Identifier) -> Mapping[str, str] | None:
        """The properties of the object `id`; None when there is none."""

    @abstractmethod
    def _write_at(self, id: Identifier, record: LeaseRecord) -> None:
        """Replace the properties of the object `id` by `record`'s (sent again, it changes nothing more)."""

    @abstractmethod
    def _drop_at(self, id: Identifier) -> None:
        """Drop the object `id`; nothing when it is gone."""

    def create(self, record: LeaseRecord) -> StoredLease | None:
        return _stored(record) if self._create_exclusive(self.id, record) else None

    def read(self) -> StoredLease | None:
        properties = self._properties_at(self.id)
        if properties is None:
            return None
        record = LeaseRecord.from_properties(properties)
        if record is None:
            raise not_a_lease(self.label)
        return _stored(record)

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        def write() -> None:
            # a whole replacement: sending it again while the claim is held changes nothing more
            with_retries(lambda: self._write_at(self.id, record), STEP_RETRIES)

        return _stored(record) if self._under_claim(expected, record, write) else None

    def remove(self, expected: StoredLease) -> bool:
        return self._under_claim(expected, expected.record.renewed(CLAIM_SECONDS), lambda: self._drop_at(self.id))

    def claimant(self, expected: StoredLease) -> LeaseRecord | None:
        """The claimant of the newest claim on `expected`."""
        claims = self._claims(expected)
        return claims[-1][1] if claims else None

    def clear_claim(self, expected: StoredLease) -> None:
        for claim, _ in self._claims(expected):
            self._drop_at(claim)

    def _under_claim(self, expected: StoredLease, claimant: LeaseRecord, write: Callable[[], None]) -> bool:
        """`write()` while holding a claim on `expected`, if the lease is still `expected`;
        False when another apply holds a live claim or the lease changed."""
        generation = self._claim(expected, claimant)
        if generation is None:
            return False
        try:
            still = self.read()
        except BaseException:
            self._drop_claims(expected, generation)
            raise
        if still is None or still.version != expected.version:
            self._drop_claims(expected, generation)
            return False
        try:
            write()
        except LanceNamespaceError as error:
            if not is_transient(error):  # refused: nothing was written
                self._drop_claims(expected, generation)
            raise  # no answer: the write may still land, so the claim stays
        self._drop_claims(expected, generation)
        return True

    def _claim(self, expected: StoredLease, claimant: LeaseRecord) -> int | None:
        """The generation of the claim on `expected` this apply now holds (one of its own kept
        from an earlier try counts); None while another apply holds a live one."""
        generation = 0
        while True:
            claim = self._claim_id(expected, generation)
            if self._create_exclusive(claim, claimant):
                return generation
            held = self._claim_of(claim)
            if held is None:
                continue  # dropped since: try this generation again
            if held.id == claimant.id:
                return generation
            if not held.is_dead():
                return None
            generation += 1  # its claimant is gone: the next generation supersedes it

    def _claims(self, expected: StoredLease) -> list[tuple[Identifier, LeaseRecord]]:
        """The claims on `expected` there are, generation after generation."""
        claims: list[tuple[Identifier, LeaseRecord]] = []
        for generation in itertools.count():
            claim = self._claim_id(expected, generation)
            held = self._claim_of(claim)
            if held is None:
                break
            claims.append((claim, held))
        return claims

    def _drop_claims(self, expected: StoredLease, generation: int) -> None:
        """Drop this apply's claim, newest first, then the dead ones it superseded."""
        for superseded in range(generation, -1, -1):
            self._drop_at(self._claim_id(expected, superseded))

    def _claim_of(self, claim: Identifier) -> LeaseRecord | None:
        properties = self._properties_at(claim)
        return LeaseRecord.from_properties(properties) if properties is not None else None

    def _create_exclusive(self, id: Identifier, record: LeaseRecord) -> bool:
        """Create the object holding `record`, exclusively: False when it exists. A create that
        got no answer may have landed, so the object is read back (ours: created), and sent
        again while it is absent; each step of a swap gets its retries, as each request does."""
        attempt = 0
        while True:
            try:
                return self._create_at(id, record)
            except LanceNamespaceError as error:
                if not is_transient(error) or attempt >= STEP_RETRIES:
                    raise
            landed = self._claim_of(id)
            if landed is not None:
                return landed.id == record.id
            time.sleep(backoff_seconds(attempt))
            attempt += 1

    def _claim_id(self, expected: StoredLease, generation: int) -> Identifier:
        suffix = f"_{generation}" if generation else ""
        return (*self.id[:-1], f"{self.id[-1]}{CLAIM_INFIX}{expected.version}{suffix}")


class NamespaceLeaseRegister(ClaimLeaseRegister):
    """A lease as a namespace whose properties are the record, its claims namespaces beside it
    (`ClaimLeaseRegister`), for backends without any conditional write (Unity Catalog OSS; the
    default of every driver)."""

    def __init__(self, driver: SyncNamespace, id: Identifier):
        super().__init__(id, f"{driver.namespace_id()} {list(id)}", driver.format_identifier(id))
        self.driver = driver

    def _create_at(self, id: Identifier, record: LeaseRecord) -> bool:
        try:
            self.driver.create_namespace(CreateNamespaceRequest(id=list(id), mode="Create",
                                                                properties=record.to_properties()))
        except NamespaceAlreadyExistsError:
            return False
        return True

    def _properties_at(self, id: Identifier) -> Mapping[str, str] | None:
        info = self.driver.get_namespace_info(id)
        return info.properties if info is not None else None

    def _write_at(self, id: Identifier, record: LeaseRecord) -> None:
        self.driver.replace_namespace_properties(id, record.to_properties())

    def _drop_at(self, id: Identifier) -> None:
        self.driver.drop_namespace(DropNamespaceRequest(id=list(id), mode="Skip", behavior="Restrict"))


def _stored(record: LeaseRecord) -> StoredLease:
    return StoredLease(record, record.fingerprint())


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


def iso_time(moment: datetime.datetime) -> str:
    """A time as lease records write it."""
    return moment.isoformat(timespec="seconds")
