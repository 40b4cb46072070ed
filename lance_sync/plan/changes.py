"""Plans in proportion to the change: `--changed-since REF`.

The manifest at REF (lance_sync.manifest.history.Baseline) is compared with the working tree's,
entry by entry and as written (the older one is parsed, never validated): namespace entries by
backend and id, tables by name (a table's registrations, location, properties, schema, source,
grants, `renamed_from`...); a change in how an entry is written (a list for an id) counts as a
change, which only widens the plan. What a plan then reads and
compares is only:

- the entries added or changed, and the declared namespaces their objects sit in (what they
  depend on);
- the entries removed (a namespace, a table, one registration of a table): their live
  objects, read by id, and for a removed namespace its listing (what it holds decides whether
  it can go);
- the whole of a backend whose configuration changed (it is observed as a full plan would),
  and of every backend when the owner, the default storage options or the policy changed, or
  a backend was removed or renamed.

Everything is read by id (one point read per object) except those listings, so the catalog
calls follow the change, not the estate. Any other object that a read turns up and the
manifest declares is planned too (never taken for one that left the manifest); an owned
object that left the manifest before REF is not this change's: its removal is left out and
listed, as a full plan would remove it.

The client's work follows the change too: `tables_to_build` names the tables such a plan
compares, and the load builds only those (lance_sync.manifest.strategy: split_tables); an unbuilt table a
read turns up is built then (`with_declared`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lance_sync.manifest.history import Baseline, RawManifest
from lance_sync.model.backend_config import Identifier
from lance_sync.model.desired import DesiredNamespace, DesiredState, DesiredTable
from lance_sync.model.errors import LanceSyncError

ObjectKey = tuple[str, Identifier]


@dataclass
class ChangeScope:
    """What a plan since a revision covers."""

    baseline: Baseline
    #: the whole desired state, as the working tree has it
    full: DesiredState
    #: the desired state cut to what changed and what it depends on
    state: DesiredState
    #: backends observed in full (their configuration changed); everything when `whole`
    whole_backends: set[str] = field(default_factory=set)
    #: the plan covers everything (no usable baseline, owner, storage or policy changed)
    whole: bool = False
    #: namespaces and table registrations the manifest had at the revision and no longer has
    removed_namespaces: set[ObjectKey] = field(default_factory=set)
    removed_tables: set[ObjectKey] = field(default_factory=set)
    #: why the scope is wider than the entries that changed
    widened: list[str] = field(default_factory=list)

    @property
    def removals(self) -> set[ObjectKey]:
        return self.removed_namespaces | self.removed_tables

    def read_by_id(self) -> tuple[set[ObjectKey], set[ObjectKey]]:
        """(namespaces, tables) to read one by one, outside the backends observed in full."""
        namespaces: set[ObjectKey] = {(ns.backend, ns.id) for ns in self.state.namespaces}
        tables: set[ObjectKey] = set(self.removed_tables)
        for table in self.state.tables:
            for registration in table.registrations:
                tables.add((registration.backend, registration.id))
                tables |= {(registration.backend, former) for former in registration.renamed_from}
        namespaces |= {(backend, id[:-1]) for backend, id in tables}
        namespaces |= self.removed_namespaces
        return ({k for k in namespaces if k[0] not in self.whole_backends and k[1]},
                {k for k in tables if k[0] not in self.whole_backends})


def tables_to_build(baseline: Baseline) -> set[str] | None:
    """The names of the tables a plan since the baseline compares, for a load that builds
    only those (lance_sync.manifest.strategy: split_tables); None when it needs every table: it plans
    everything, or a policy checks every declared object."""
    then, written = baseline.then, baseline.now
    if then is None or _whole_reasons(baseline) or written.policy is not None:
        return None
    return _changed_tables(then, written, set(_changed_backends(then, written)), then.spark != written.spark)


def changed_scope(baseline: Baseline, now: DesiredState) -> ChangeScope:
    """What changed in the manifest since the baseline, and what that change touches: the
    entries as written at the revision and in the working tree are compared (the working
    tree's state, validated, is what gets planned: every table, or those `tables_to_build`
    names)."""
    then, written = baseline.then, baseline.now
    whole_reasons = _whole_reasons(baseline)
    if then is None or whole_reasons:
        if now.unbuilt is not None:
            raise LanceSyncError("internal error: a plan of everything needs every table of the manifest built")
        return ChangeScope(baseline, now, now, whole=True, widened=whole_reasons)
    scope = ChangeScope(baseline, now, now)
    for name in _changed_backends(then, written):
        scope.whole_backends.add(name)
        scope.widened.append(f"backend '{name}' is new or its configuration changed: all of it is planned")
    spark_changed = then.spark != written.spark
    if spark_changed:
        scope.widened.append("the spark settings changed: every table written from a source is planned")

    whole = scope.whole_backends
    namespaces = [ns for ns in now.namespaces if ns.backend in whole
                  or then.namespaces.get((ns.backend, ns.id)) != written.namespaces.get((ns.backend, ns.id))]
    # a state loaded in part holds the tables `tables_to_build` named, no more
    changed = {t.name for t in now.tables} if now.unbuilt is not None \
        else _changed_tables(then, written, whole, spark_changed)
    tables = [t for t in now.tables if t.name in changed]
    scope.removed_namespaces = set(then.namespaces) - {(ns.backend, ns.id) for ns in now.namespaces}
    # a registration an unchanged entry makes, it made then too (in a backend whose
    # configuration changed, all of it is planned): only changed and removed entries give one up
    tables_now = written.tables
    given_up = then.registrations(name for name, entry in then.tables.items() if tables_now.get(name) != entry)
    scope.removed_tables = given_up - {(r.backend, r.id) for t in now.tables for r in t.registrations} \
        - (now.unbuilt.registered.keys() if now.unbuilt else set())
    scope.state = _cut(now, namespaces, tables)
    return scope


def _whole_reasons(baseline: Baseline) -> list[str]:
    """Why a plan since the baseline covers everything, if it does."""
    then, written = baseline.then, baseline.now
    if then is None:
        return [f"{baseline.problem}: everything is planned"]
    # a backend the revision has and the working tree does not (removed, or renamed) holds
    # objects no entry of the working tree names: only a full plan says what becomes of them
    gone = sorted(then.backends.keys() - written.backends.keys())
    return [f"{reason}: everything is planned" for differs, reason in [
        (then.owner != written.owner, "the owner changed"),
        (then.storage != written.storage, "the default storage options changed"),
        (then.policy != written.policy, "the policy changed"),
        (bool(gone), f"backend {', '.join(map(repr, gone))} was removed or renamed"),
    ] if differs]


def _changed_backends(then: RawManifest, written: RawManifest) -> list[str]:
    """Backends that are new or whose configuration changed: each is planned in full."""
    return [name for name, entry in written.backends.items() if then.backends.get(name) != entry]


def _changed_tables(then: RawManifest, written: RawManifest, whole_backends: set[str], spark_changed: bool) -> set[str]:
    """The tables whose entries changed, with a registration in a backend planned in full, or
    written from a source when the spark settings changed."""
    tables_then = then.tables
    # an entry both sides share (a file parsed once, an item read from the earlier parse) is
    # the same object: most of a large manifest's entries are told unchanged without comparing
    changed = {name for name, entry in written.tables.items()
               if (earlier := tables_then.get(name)) is not entry and earlier != entry}
    if not spark_changed and not whole_backends:
        return changed
    return changed | {name for name, entry in written.tables.items()
                      if (spark_changed and entry.get("source") is not None)
                      or (whole_backends and any(isinstance(item, dict) and item.get("backend") in whole_backends
                                                 for item in _items(entry.get("register"))))}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def with_declared(scope: ChangeScope, namespaces: set[ObjectKey], tables: set[ObjectKey]) -> None:
    """Add to the scope every entry of the manifest whose live object was read (a namespace a
    changed table sits in, a table a removed namespace holds): read, it is planned, so never
    taken for an object that left the manifest."""
    state, full = scope.state, scope.full
    have_namespaces = {(ns.backend, ns.id) for ns in state.namespaces}
    have_tables = {t.name for t in state.tables}
    extra_namespaces = [ns for ns in full.namespaces
                        if (ns.backend, ns.id) in namespaces and (ns.backend, ns.id) not in have_namespaces]
    extra_tables = [t for t in full.tables if t.name not in have_tables
                    and any((r.backend, r.id) in tables for r in t.registrations)]
    if full.unbuilt is not None:
        unbuilt = {name for key in tables if (name := full.unbuilt.registered.get(key)) is not None}
        extra_tables += full.unbuilt.build(unbuilt) if unbuilt else []
    if extra_namespaces or extra_tables:
        scope.state = _cut(full, [*state.namespaces, *extra_namespaces], [*state.tables, *extra_tables])


def _cut(full: DesiredState, namespaces: list[DesiredNamespace], tables: list[DesiredTable]) -> DesiredState:
    """The desired state with only these entries, and the declared namespaces their objects sit
    in (or under)."""
    keep = {(ns.backend, ns.id) for ns in namespaces}
    needed: set[ObjectKey] = set()
    for key in keep:
        needed |= _ancestors(key)
    for table in tables:
        for registration in table.registrations:
            needed |= _ancestors((registration.backend, registration.id))
    chosen = [ns for ns in full.namespaces if (ns.backend, ns.id) in keep | needed]
    names = {t.name for t in tables}
    picked = [t for t in full.tables if t.name in names]  # in the manifest's order
    built_since = names - {t.name for t in picked}  # from full.unbuilt
    picked += [t for t in tables if t.name in built_since]
    return replace(full, namespaces=chosen, tables=picked, unbuilt=None)


def _ancestors(key: ObjectKey) -> set[ObjectKey]:
    backend, id = key
    return {(backend, id[:n]) for n in range(1, len(id))}

