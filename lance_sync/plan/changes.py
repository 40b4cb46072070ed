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
  and of every backend when the owner, the default storage options or the policy changed.

Everything is read by id (one point read per object) except those listings, so the catalog
calls follow the change, not the estate. Any other object that a read turns up and the
manifest declares is planned too (never taken for one that left the manifest); an owned
object that left the manifest before REF is not this change's: its removal is left out and
listed, as a full plan would remove it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lance_sync.drivers.base import Identifier
from lance_sync.manifest.history import Baseline
from lance_sync.model.desired import DesiredNamespace, DesiredState, DesiredTable

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


def changed_scope(baseline: Baseline, now: DesiredState) -> ChangeScope:
    """What changed in the manifest since the baseline, and what that change touches: the
    entries as written at the revision and in the working tree are compared (the working
    tree's state, validated, is what gets planned)."""
    then, written = baseline.then, baseline.now
    if then is None:
        return ChangeScope(baseline, now, now, whole=True, widened=[f"{baseline.problem}: everything is planned"])
    whole_reasons = [reason for differs, reason in [
        (then.owner != written.owner, "the owner changed"),
        (then.storage != written.storage, "the default storage options changed"),
        (then.policy != written.policy, "the policy changed"),
    ] if differs]
    if whole_reasons:
        return ChangeScope(baseline, now, now, whole=True,
                           widened=[f"{r}: everything is planned" for r in whole_reasons])
    scope = ChangeScope(baseline, now, now)
    for name in now.backends:
        if then.backends.get(name) != written.backends.get(name):
            scope.whole_backends.add(name)
            scope.widened.append(f"backend '{name}' is new or its configuration changed: all of it is planned")
    spark_changed = then.spark != written.spark
    if spark_changed:
        scope.widened.append("the spark settings changed: every table written from a source is planned")

    whole = scope.whole_backends
    namespaces = [ns for ns in now.namespaces if ns.backend in whole
                  or then.namespaces.get((ns.backend, ns.id)) != written.namespaces.get((ns.backend, ns.id))]
    tables_then, tables_now = then.tables, written.tables
    tables = [t for t in now.tables
              if tables_then.get(t.name) != tables_now.get(t.name) or (spark_changed and t.source is not None)
              or (whole and any(r.backend in whole for r in t.registrations))]
    scope.removed_namespaces = set(then.namespaces) - {(ns.backend, ns.id) for ns in now.namespaces}
    scope.removed_tables = then.registrations - {(r.backend, r.id) for t in now.tables for r in t.registrations}
    scope.state = _cut(now, namespaces, tables)
    return scope


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
    picked = [t for t in full.tables if t.name in names]
    return replace(full, namespaces=chosen, tables=picked)


def _ancestors(key: ObjectKey) -> set[ObjectKey]:
    backend, id = key
    return {(backend, id[:n]) for n in range(1, len(id))}


def _backend_differs(before: Any, now: Any) -> bool:
    return (before.type, before.config, before.scope, before.grants_mode) != \
        (now.type, now.config, now.scope, now.grants_mode)

