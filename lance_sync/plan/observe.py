"""Read the live state of every backend a manifest names, in parallel and scoped.

Scope, per backend: the declared namespaces and their parents (listed, which finds owned
siblings that left the manifest), the namespaces tables are registered in (and, for a table
moved with `renamed_from`, the namespace it is moved from), the backend's
`scope` list (the root when the backend declares nothing), and recursively the children
of every namespace that carries this owner's mark or sits above the levels a manifest
can declare (a Unity catalog, an Iceberg warehouse). With `scan_all`, every namespace of
every backend is listed, to find owned objects that left the manifest anywhere. Tables are
listed in every existing namespace of that scope; where a driver loads tables one by one,
the loads run as parts on this observer's pool (`SyncNamespace.table_info_parts`), which is
the only one: `parallelism` is the number of catalog calls in flight. A backend that keeps
every namespace and table in one place (`SyncNamespace.snapshot_reads`: a `dir` root's
manifest table) is read once, and every listing of it comes from that snapshot. Lists are
followed to their last page by the drivers; any failure stops the plan: a backend that
could not be read is never taken for an empty one. Apply leases (lance_sync.apply.lease) are
lance-sync's bookkeeping and are never part of the live state.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING, TypeVar

from lance_namespace.errors import (
    LanceNamespaceError,
    NamespaceNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.base import (
    CatalogSnapshot,
    Drivers,
    Identifier,
    NamespaceInfo,
    TableInfo,
)
from lance_sync.drivers.support.retry import with_retries
from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import LanceSyncError
from lance_sync.model.locations import normalize_location
from lance_sync.model.marks import is_lease_namespace, owner_of
from lance_sync.model.shared import DEFAULT_PARALLELISM, Progress

if TYPE_CHECKING:
    from lance_sync.plan.in_sync import InSync

ObjectKey = tuple[str, Identifier]
#: times a failed read (a listing, a describe) is sent again beyond the driver's own retries
READ_RETRIES = 2
#: catalog calls in flight at once: reads wait on the network, not on the CPU, so more than
#: the cores (16, as the native clients' baselines in bench/ use)
R = TypeVar("R")
T = TypeVar("T")


logger = logging.getLogger(__name__)


class ObserveError(LanceSyncError):
    """A backend could not be read."""


@dataclass
class LiveState:
    namespaces: dict[ObjectKey, NamespaceInfo] = field(default_factory=dict)
    tables: dict[ObjectKey, TableInfo] = field(default_factory=dict)
    #: namespaces whose tables were listed (objects outside them are out of scope)
    scanned: set[ObjectKey] = field(default_factory=set)
    #: every namespace was listed (scan_all)
    complete: bool = False
    warnings: list[str] = field(default_factory=list)
    #: tables seen outside the scanned namespaces (a backend read in one snapshot shows all of
    #: them): never planned, only checked against the manifest's locations (one asset per path)
    beyond_scope: dict[ObjectKey, TableInfo] = field(default_factory=dict)
    #: which tables of a desired state this read shows in sync, once worked out: that desired
    #: state and lance_sync.plan.in_sync.InSync
    in_sync: tuple[DesiredState, InSync] | None = field(default=None, repr=False, compare=False)


class Observer:
    def __init__(self, state: DesiredState, drivers: Drivers,
                 parallelism: int = DEFAULT_PARALLELISM, on_progress: Progress | None = None,
                 scan_all: bool = False):
        self.state = state
        self.scan_all = scan_all
        self.drivers = drivers
        self.parallelism = max(1, parallelism)
        self.on_progress = on_progress or (lambda _message: None)
        self.live = LiveState()
        #: namespaces whose children were listed: a child not found there does not exist
        self._listed: set[ObjectKey] = set()
        #: the snapshot of each backend read in one call (`_read_snapshots`)
        self.snapshots: dict[str, CatalogSnapshot] = {}
        #: one dict for all tables with equal properties (`_normal`)
        self.shared_properties: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        #: id of a table's properties' dict -> that dict (kept, so that its id stays its own)
        #: and the shared one equal to it
        self._shared_by_identity: dict[int, tuple[dict[str, str], dict[str, str]]] = {}

    def observe(self) -> LiveState:
        with ThreadPoolExecutor(self.parallelism, thread_name_prefix="observe") as pool:
            self.pool = pool
            self._read_snapshots()
            self._list_namespaces()
            self._describe_unlisted_namespaces()
            self._list_tables()
        self.live.complete = self.scan_all
        self._tables_beyond_scope()
        if logger.isEnabledFor(logging.DEBUG):
            namespaces, tables = Counter(b for b, _ in self.live.namespaces), Counter(b for b, _ in self.live.tables)
            for backend in sorted(self.drivers.keys() & self.state.backends.keys()):
                logger.debug("%s: found %d namespaces and %d tables", backend, namespaces[backend], tables[backend])
        return self.live

    # --- the passes --------------------------------------------------------------------------

    def _read_snapshots(self) -> None:
        """One read of each backend that keeps everything in one place (`snapshot_reads`); the
        passes below take such a backend's listings from its snapshot."""
        reads = [((backend, ()), driver.snapshot) for backend, driver in self.drivers.items()
                 if driver.snapshot_reads and backend in self.state.backends]
        self.snapshots = {backend: snapshot for (backend, _), snapshot in self._run(reads)
                          if snapshot is not None}

    def _list_namespaces(self) -> None:
        """List children of each scope parent; descend into owned namespaces."""
        pending = {(b, p) for b, ids in self._scope_parents().items() for p in ids}
        while pending:
            self._listed |= pending
            results = self._in_parts(self._children, sorted(pending))
            pending = set()
            for (backend, _parent), children in results:
                for info in children:
                    if is_lease_namespace(info.id):
                        continue
                    key = (backend, info.id)
                    self.live.namespaces[key] = info
                    if key not in self._listed and self._descend(backend, info):
                        pending.add(key)

    def _describe_unlisted_namespaces(self) -> None:
        wanted = {(b, ns) for b, ids in self._table_namespaces.items() for ns in ids}
        wanted |= {(ns.backend, ns.id) for ns in self.state.namespaces}
        wanted |= {(b, ns) for b, spec in self.state.backends.items() for ns in spec.scope}
        unknown = sorted(k for k in wanted if k not in self.live.namespaces and not self._parent_listed(k))
        for (backend, _first), infos in self._run(self._namespace_reads(unknown)):
            for info in infos:
                if info is not None:
                    self.live.namespaces[(backend, info.id)] = info

    def _namespace_reads(self, keys: list[ObjectKey]
                         ) -> list[tuple[ObjectKey, Callable[[], list[NamespaceInfo | None]]]]:
        """One read per namespace, or one per backend whose driver reads many at once (keyed by
        the first namespace it reads)."""
        reads: list[tuple[ObjectKey, Callable[[], list[NamespaceInfo | None]]]] = []
        for backend, ids in _by_backend(keys).items():
            snapshot = self.snapshots.get(backend)
            if snapshot is not None:
                reads.append(((backend, ids[0]), partial(_from_snapshot, snapshot, ids)))
                continue
            driver = self.drivers[backend]
            groups = [ids] if driver.bulk_namespace_reads else [[id] for id in ids]
            reads += [((backend, group[0]), partial(driver.get_namespace_infos, group)) for group in groups]
        return reads

    def _list_tables(self) -> None:
        owned = {k for k, info in self.live.namespaces.items()
                 if self.scan_all or owner_of(info.properties) == self.state.owner}
        wanted = {(b, ns) for b, ids in self._table_namespaces.items() for ns in ids}
        wanted |= {(ns.backend, ns.id) for ns in self.state.namespaces}
        wanted |= {(b, ns) for b, spec in self.state.backends.items() for ns in spec.scope}
        existing = sorted(k for k in wanted | owned if k in self.live.namespaces)
        listed = self._in_parts(self._table_parts, existing)
        live, normal = self.live.tables, self._normal
        for key, tables in listed:
            self.live.scanned.add(key)
            backend = key[0]
            snapshot = self.snapshots.get(backend)
            if snapshot is not None and snapshot.normalized:
                live.update([((backend, info.id), info) for info in tables])
                continue
            for info in tables:
                live[(backend, info.id)] = normal(info)

    def _tables_beyond_scope(self) -> None:
        """The tables of the namespaces a snapshot holds beyond those scanned (a scanned one's
        are all live tables already)."""
        for backend, snapshot in self.snapshots.items():
            for namespace, tables in snapshot.tables.items():
                if (backend, namespace) in self.live.scanned:
                    continue
                for info in tables:
                    key = (backend, info.id)
                    if key not in self.live.tables:  # read by id (PointObserver)
                        self.live.beyond_scope[key] = self._normal(info)

    def _normal(self, info: TableInfo) -> TableInfo:
        """`_normalized(info)`, its properties' dict looked up by identity first: the tables of
        a bulk read share a few dicts."""
        properties = info.properties
        shared = self._shared_by_identity.get(id(properties))
        if shared is None:
            shared = self._shared_by_identity[id(properties)] = (
                properties, self.shared_properties.setdefault(tuple(properties.items()), properties))
        location = info.location
        if shared[1] is properties and (location is None or normalize_location(location) == location):
            return info
        return _normalized(info, self.shared_properties)

    # --- scope ---------------------------------------------------------------------------------

    def _scope_parents(self) -> dict[str, set[Identifier]]:
        """Namespaces whose children are listed; the root of a backend that declares nothing."""
        parents: dict[str, set[Identifier]] = {b: set(spec.scope) for b, spec in self.state.backends.items()}
        for ns in self.state.namespaces:
            parents[ns.backend].add(ns.id[:-1])
        for backend, namespaces in self._table_namespaces.items():
            if self.scan_all:
                parents[backend] |= {()} | {ns[:1] for ns in namespaces | parents[backend] if ns}
            elif not parents[backend] and not namespaces:
                parents[backend].add(())
        return parents

    def _descend(self, backend: str, info: NamespaceInfo) -> bool:
        """List a child's children too: it is owned, or a container above the declarable levels."""
        if self.scan_all or owner_of(info.properties) == self.state.owner:
            return True
        return len(info.id) < self.state.backends[backend].rules.namespace_levels[0]

    def _parent_listed(self, key: ObjectKey) -> bool:
        backend, id = key
        return (backend, id[:-1]) in self._listed

    @cached_property
    def _table_namespaces(self) -> dict[str, set[Identifier]]:
        """Per backend, the namespaces the manifest's tables are registered in or renamed from."""
        namespaces: dict[str, set[Identifier]] = {b: set() for b in self.state.backends}
        tables = self.state.tables
        # sets of (backend, namespace) first: a comprehension, over every table of the manifest
        for backend, namespace in {(r.backend, r.id[:-1]) for t in tables for r in t.registrations} | {
                (r.backend, former[:-1]) for t in tables for r in t.registrations for former in r.renamed_from}:
            namespaces[backend].add(namespace)
        return namespaces

    # --- calls ---------------------------------------------------------------------------------

    def _children(self, key: ObjectKey) -> list[Callable[[], list[NamespaceInfo]]]:
        backend, parent = key
        snapshot = self.snapshots.get(backend)
        if snapshot is not None:
            return [partial(snapshot.children, parent)]
        self.on_progress(f"listing namespaces in {backend}:{self._format(backend, parent)}")
        try:
            return self.drivers[backend].namespace_info_parts(parent)
        except NamespaceNotFoundError:
            return []
        except UnsupportedOperationError:
            if parent:
                raise
            # the root is listed for a backend that declares nothing, or with scan_all; some cannot
            if not self.scan_all:
                self.live.warnings.append(
                    f"backend '{backend}' declares nothing and its root cannot be listed, so objects it "
                    "owns there are not found; name the namespaces to scan under the backend's `scope:`")
            return []

    def _table_parts(self, key: ObjectKey) -> list[Callable[[], list[TableInfo]]]:
        backend, namespace = key
        snapshot = self.snapshots.get(backend)
        if snapshot is not None:
            return [partial(snapshot.tables_in, namespace)]
        self.on_progress(f"listing tables in {backend}:{self._format(backend, namespace)}")
        try:
            return self.drivers[backend].table_info_parts(namespace)
        except NamespaceNotFoundError:
            return []

    def _format(self, backend: str, id: Identifier) -> str:
        return self.state.backends[backend].format_id(id) or "(root)"

    def _in_parts(self, parts_of: Callable[[ObjectKey], list[Callable[[], list[T]]]],
                  keys: list[ObjectKey]) -> list[tuple[ObjectKey, list[T]]]:
        """`parts_of(key)` for every key in parallel (a listing, which hands back the loads as
        parts), then every part in parallel; per key, its parts' results joined in order."""
        listed = self._run([(key, partial(parts_of, key)) for key in keys])
        joined: dict[ObjectKey, list[T]] = {key: [] for key, _ in listed}
        loads = [(key, partial(_unless_gone, part)) for key, parts in listed for part in parts]
        for key, items in self._run(loads):
            joined[key].extend(items)
        return list(joined.items())

    def _run(self, calls: Sequence[tuple[ObjectKey, Callable[[], R]]]) -> list[tuple[ObjectKey, R]]:
        """Every call in parallel, each with the key it reads; a read that still fails
        transiently after the driver's own retries is read again (the whole call) before the
        plan gives up."""
        if logger.isEnabledFor(logging.DEBUG):
            for backend, count in sorted(Counter(backend for (backend, _), _ in calls).items()):
                logger.debug("%s: %d reads in parallel", backend, count)
        futures = [(key, self.pool.submit(with_retries, call, READ_RETRIES, backend=key[0])) for key, call in calls]
        results = []
        for key, future in futures:
            try:
                results.append((key, future.result()))
            except LanceNamespaceError as error:
                backend, id = key
                raise ObserveError(f"backend '{backend}': reading {self._format(backend, id)} failed: "
                                   f"{type(error).__name__}: {error}") from error
        return results


def _by_backend(keys: list[ObjectKey]) -> dict[str, list[Identifier]]:
    by_backend: dict[str, list[Identifier]] = {}
    for backend, id in keys:
        by_backend.setdefault(backend, []).append(id)
    return by_backend


def _from_snapshot(snapshot: CatalogSnapshot, ids: list[Identifier]) -> list[NamespaceInfo | None]:
    return [snapshot.namespaces.get(id) for id in ids]


def _normalized(info: TableInfo, shared: dict[tuple[tuple[str, str], ...], dict[str, str]]) -> TableInfo:
    """The table with its location in the one spelling every comparison uses, and its
    properties one dict (`shared`) for every table with equal ones: a large estate's tables
    mostly carry a few sets, and a TableInfo is read, never changed in place."""
    location = normalize_location(info.location) if info.location else None
    properties = shared.setdefault(tuple(info.properties.items()), info.properties)
    if location == info.location and properties is info.properties:
        return info
    # built directly: dataclasses.replace takes twice as long, for every table of a plan
    return TableInfo(info.id, location, properties, info.is_lance, info.columns)


def _unless_gone(part: Callable[[], list[T]]) -> list[T]:
    """A part of a namespace's children or tables; none when it was dropped meanwhile."""
    try:
        return part()
    except NamespaceNotFoundError:
        return []


def observe(state: DesiredState, drivers: Drivers,
            parallelism: int = DEFAULT_PARALLELISM, on_progress: Progress | None = None,
            scan_all: bool = False) -> LiveState:
    return Observer(state, drivers, parallelism, on_progress, scan_all).observe()


@dataclass
class Registrations:
    """Every table registered in some backends (`read_every_registration`)."""

    tables: dict[ObjectKey, TableInfo]
    #: backends whose root cannot be listed (Iceberg REST has no warehouse listing): read from
    #: the containers named instead, and what those were
    from_containers: dict[str, list[Identifier]] = field(default_factory=dict)


def read_every_registration(drivers: Drivers, containers: dict[str, set[Identifier]],
                            parallelism: int = DEFAULT_PARALLELISM) -> Registrations:
    """Every table of every namespace of each backend, read now: what apply checks before it
    deletes data, so that nothing else points at the location (one asset per path). A backend
    whose root cannot be listed is read from `containers` (its first-level namespaces a plan
    names). Any failure is an ObserveError: an incomplete read never lets data be deleted."""
    return _RegistrationWalk(drivers, parallelism).run(containers)


class _RegistrationWalk:
    def __init__(self, drivers: Drivers, parallelism: int):
        self.drivers = drivers
        self.parallelism = max(1, parallelism)
        self.found = Registrations({})
        self.shared_properties: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}

    def run(self, containers: dict[str, set[Identifier]]) -> Registrations:
        with ThreadPoolExecutor(self.parallelism, thread_name_prefix="registrations") as pool:
            self.pool = pool
            walked = []
            for backend, driver in self.drivers.items():
                snapshot = self._call(backend, (), driver.snapshot) if driver.snapshot_reads else None
                if snapshot is None:
                    walked.append(backend)
                    continue
                for tables in snapshot.tables.values():
                    self._add(backend, tables)
            root_calls: list[tuple[ObjectKey, Callable[[], list[NamespaceInfo] | None]]] = [
                ((b, ()), partial(self._children, b, ())) for b in walked]
            roots = self._in_parallel(root_calls)
            pending: list[ObjectKey] = []
            for (backend, _root), children in roots:
                if children is None:  # the root cannot be listed: start from the containers named
                    starts = sorted(c for c in containers.get(backend, set()) if c)
                    self.found.from_containers[backend] = starts
                    pending += [(backend, c) for c in starts]
                else:
                    pending += [(backend, info.id) for info in children if not is_lease_namespace(info.id)]
            self._walk(pending)
        return self.found

    def _walk(self, pending: list[ObjectKey]) -> None:
        seen: set[ObjectKey] = set()
        while pending:
            wave = sorted(set(pending) - seen)
            seen |= set(wave)
            pending = []
            table_calls: list[tuple[ObjectKey, Callable[[], list[TableInfo]]]] = [
                (key, partial(self._tables, *key)) for key in wave if self._holds_tables(*key)]
            child_calls: list[tuple[ObjectKey, Callable[[], list[NamespaceInfo] | None]]] = [
                (key, partial(self._children, *key)) for key in wave if self._holds_namespaces(*key)]
            for (backend, _id), tables in self._in_parallel(table_calls):
                self._add(backend, tables)
            for (backend, _id), children in self._in_parallel(child_calls):
                pending += [(backend, info.id) for info in children or [] if not is_lease_namespace(info.id)]

    def _holds_tables(self, backend: str, id: Identifier) -> bool:
        low, high = self.drivers[backend].table_namespace_levels
        return low <= len(id) and (high is None or len(id) <= high)

    def _holds_namespaces(self, backend: str, id: Identifier) -> bool:
        high = self.drivers[backend].namespace_levels[1]
        return high is None or len(id) < high

    def _children(self, backend: str, parent: Identifier) -> list[NamespaceInfo] | None:
        try:
            return list(self.drivers[backend].list_namespace_infos(parent))
        except NamespaceNotFoundError:
            return []
        except UnsupportedOperationError:
            if parent:
                raise
            return None

    def _tables(self, backend: str, namespace: Identifier) -> list[TableInfo]:
        try:
            return list(self.drivers[backend].list_table_infos(namespace))
        except NamespaceNotFoundError:
            return []

    def _add(self, backend: str, tables: list[TableInfo]) -> None:
        for info in tables:
            self.found.tables[(backend, info.id)] = _normalized(info, self.shared_properties)

    def _in_parallel(self, calls: Sequence[tuple[ObjectKey, Callable[[], R]]]) -> list[tuple[ObjectKey, R]]:
        futures = [(key, self.pool.submit(self._call, key[0], key[1], call)) for key, call in calls]
        return [(key, future.result()) for key, future in futures]

    def _call(self, backend: str, id: Identifier, call: Callable[[], R]) -> R:
        try:
            return with_retries(call, READ_RETRIES, backend=backend)
        except LanceNamespaceError as error:
            where = self.drivers[backend].format_identifier(id) or "(root)"
            raise ObserveError(f"backend '{backend}': reading {where} to find every registration failed: "
                               f"{type(error).__name__}: {error}") from error


class PointObserver(Observer):
    """Reads given namespaces and tables one by one (by id), and lists only the namespaces in
    `listed`: the live state a plan limited to some objects needs (lance_sync.plan.changes).
    A backend that keeps everything in one place is still read in its one call."""

    def __init__(self, state: DesiredState, drivers: Drivers, namespaces: set[ObjectKey], tables: set[ObjectKey],
                 listed: set[ObjectKey], parallelism: int = DEFAULT_PARALLELISM,
                 on_progress: Progress | None = None):
        super().__init__(state, drivers, parallelism, on_progress)
        self.namespace_ids, self.table_ids, self.listed_ids = namespaces, tables, listed

    def observe(self) -> LiveState:
        with ThreadPoolExecutor(self.parallelism, thread_name_prefix="observe") as pool:
            self.pool = pool
            self._read_snapshots()
            for (backend, _first), infos in self._run(self._namespace_reads(sorted(self.namespace_ids))):
                for namespace in infos:
                    if namespace is not None:
                        self.live.namespaces[(backend, namespace.id)] = namespace
            reads = [(key, partial(self._table_info, key)) for key in sorted(self.table_ids)]
            for key, table in self._run(reads):
                if table is not None:
                    self.live.tables[key] = self._normal(table)
            existing = sorted(k for k in self.listed_ids if k in self.live.namespaces)
            for (backend, _parent), children in self._in_parts(self._children, existing):
                for child in children:
                    if not is_lease_namespace(child.id):
                        self.live.namespaces[(backend, child.id)] = child
            for key, found in self._in_parts(self._table_parts, existing):
                self.live.scanned.add(key)
                for info in found:
                    self.live.tables[(key[0], info.id)] = self._normal(info)
        self._tables_beyond_scope()
        return self.live

    def _table_info(self, key: ObjectKey) -> TableInfo | None:
        backend, id = key
        snapshot = self.snapshots.get(backend)
        if snapshot is not None:
            return next((t for t in snapshot.tables.get(id[:-1], []) if t.id == id), None)
        return self.drivers[backend].get_table_info(id)


def merge_live(first: LiveState, second: LiveState) -> LiveState:
    """Two reads of different backends (or objects) as one live state."""
    return LiveState(namespaces={**first.namespaces, **second.namespaces}, tables={**first.tables, **second.tables},
                     scanned=first.scanned | second.scanned, complete=False,
                     warnings=first.warnings + second.warnings,
                     beyond_scope={**first.beyond_scope, **second.beyond_scope})
