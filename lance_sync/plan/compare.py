"""Compare the desired state with the live state and produce the plan's actions.

Like alembic's autogenerate: this module only decides *what* should change and emits
operation objects; rendering and execution live elsewhere. Rules, in short:

- only the manifest's properties and lance-sync's own marks are compared;
- an object is removed only when it carries this owner's mark, and never when protected;
- an existing object without a mark is adopted: stamped in place, or, where the backend
  cannot stamp a table in place, taken over without touching it (never replaced);
- a table whose backend cannot change it in place is replaced: a new table, shown as such;
- a table registered under a former id its `renamed_from` names (this owner's, at its location:
  see lance_sync.plan.renames) is renamed in place, or replaced where the backend cannot rename;
  a create beside a forget of the same location only gets a note that it looks like a rename;
- a dataset with columns beyond the declared ones is fine (a writer evolved it); the declared
  ones are changed in place (lance_sync.plan.table_state.columns) or, where Lance cannot, are
  an error, or a rewrite with on_mismatch;
- one asset per path: a create, adopt or move of a table whose location equals, lies inside or
  contains the location of any registration that is not this table's (another owner's, an
  unmarked one, one outside the plan's scope) is blocked, naming that registration;
- a table is never registered on a location that holds something other than a Lance dataset
  (or another owner's unfinished write); this owner's unfinished write is written again;
- data is deleted only when it carries this owner's record (lance-sync created it), no table of
  the manifest uses the location, nothing else registered points at or into it, and always
  before its registrations are forgotten, so a failure in between is planned again.
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lance_sync.drivers.base import Capabilities, Identifier, NamespaceInfo, TableInfo
from lance_sync.model.action_rows import ABSENT_DETAIL, Actions
from lance_sync.model.actions import (
    Action,
    Address,
    DatasetStatus,
    Kind,
    LeftAlone,
    ObjectState,
    Reason,
    Verb,
    action_key,
    dataset_key,
    fingerprint,
    project,
)
from lance_sync.model.arrow_types import describe_columns
from lance_sync.model.desired import DesiredState, DesiredTable, Registration
from lance_sync.model.errors import PlanConflicts
from lance_sync.model.locations import (
    LocationIndex,
    LocationResolver,
    link_target,
    overlap_relation,
    resolution_note,
)
from lance_sync.model.marks import (
    MANAGED_KEYS,
    OWNER_KEY,
    drops_data,
    is_protected,
    marks,
    owner_of,
)
from lance_sync.model.table_state import LiveTableState
from lance_sync.plan.conflicts import Conflict
from lance_sync.plan.creates import CreateRows
from lance_sync.plan.dataset_notes import (
    NOT_A_DATASET,
    dataset_warnings,
    declared_columns,
    not_created_here,
    source_origin,
)
from lance_sync.plan.differences import change_detail, same_but_marks, stays_protected
from lance_sync.plan.in_sync import PropertiesInSync, unchanged_tables, unmatched
from lance_sync.plan.moves import left_behind, moved_in_place_note
from lance_sync.plan.observe import LiveState, ObjectKey
from lance_sync.plan.order import sort_actions
from lance_sync.plan.renames import Pairing, pair_renames, rename_hints
from lance_sync.plan.table_state import plan_table_state
from lance_sync.plan.table_state.columns import plan_columns, schema_hint

PROTECTED = "protected (lance_sync.protect=true): apply `protect: false` first"


@dataclass
class Comparison:
    actions: Actions = field(default_factory=Actions)
    left_alone: list[LeftAlone] = field(default_factory=list)
    grants_left_alone: list[LeftAlone] = field(default_factory=list)
    adopted_unmarked: list[LeftAlone] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


class Comparer:
    #: creates of tables kept as rows (`_create`); False: Actions, a test's reference
    creates_as_rows = True

    def __init__(self, desired: DesiredState, live: LiveState, capabilities: dict[str, Capabilities],
                 datasets: dict[str, DatasetStatus], table_states: dict[str, LiveTableState] | None = None):
        self.desired = desired
        self.live = live
        self.capabilities = capabilities
        self.datasets = datasets
        #: the own state (indexes, tags, versions) of the datasets whose tables declare some
        self.table_states = table_states or {}
        self.result = Comparison()
        self.renames = pair_renames(desired, live)
        self.created_namespaces: set[ObjectKey] = set()
        #: the properties a table should have, and whether a live table has them (tables with
        #: equal properties share one dict: lance_sync.manifest, and the bulk reads)
        self.properties = PropertiesInSync(desired.owner)
        #: compared keys -> the one sorted list of them the actions share (`_sorted`)
        self._keys: dict[tuple[str, ...], list[str]] = {}
        #: the creates of tables kept as rows (`_create`), joined to the actions once they are in order
        self.creates = CreateRows()
        #: the live registrations the manifest does not declare, in order (few, in a large plan)
        self.undeclared = sorted(key for key, declared_at in unmatched(desired, live) if declared_at is None)
        #: locations are compared as the filesystem resolves them (a symbolic link is no second place)
        self.resolve = LocationResolver()
        #: registrations that stay after this plan and are not the manifest's, by resolved
        #: location: a manifest table's location may not overlap theirs (usually there are none)
        self.foreign = LocationIndex(itertools.chain(
            ((self.resolve(info.location), key) for key in self.undeclared
             if (info := live.tables[key]).location and owner_of(info.properties) != desired.owner),
            ((self.resolve(info.location), key) for key, info in live.beyond_scope.items()
             if info.location and key[1] not in self.wanted.get(key[0], ()))))

    def compare(self, strict: bool = True) -> Comparison:
        """The actions; with `strict`, a PlanError when anything conflicts (drift reads them)."""
        self._namespaces()
        self._tables()
        self._table_states()
        self._table_removals()
        self._namespace_removals()
        self._link_dependencies()
        sort_actions(self.result.actions)
        self.creates.join(self.result.actions)
        self.result.notes += self.renames.notes + rename_hints(self.result.actions, self._display)
        self.result.warnings += self.renames.warnings
        if strict and self.result.conflicts:
            raise PlanConflicts(self.result.conflicts)
        return self.result

    # --- helpers ---------------------------------------------------------------------------------

    def _display(self, backend: str, id: Identifier) -> str:
        return self.desired.backends[backend].format_id(id)

    def _action(self, verb: Verb, kind: Kind, reason: Reason, backend: str, id: Identifier, *,
                before: ObjectState | None, after: ObjectState | None, detail: str,
                keys: Sequence[str] = (), **extra: Any) -> Action:
        display = _dataset_location(after, before) if kind == Kind.DATASET else self._display(backend, id)
        action = Action(verb=verb, kind=kind, reason=reason, backend=backend, id=list(id),
                        display_id=display, detail=detail, before=before, after=after,
                        compared_keys=self._sorted(keys), fingerprint=fingerprint(before, list(keys)), **extra)
        self.result.actions.append(action)
        return action

    def _sorted(self, keys: Sequence[str]) -> list[str]:
        """`keys` sorted, one list for all the actions that compare the same keys (read only)."""
        known = tuple(keys)
        found = self._keys.get(known)
        if found is None:
            found = self._keys[known] = sorted(known)
        return found

    def _left_alone(self, kind: Kind, backend: str, id: Identifier, reason: str) -> None:
        self.result.left_alone.append(LeftAlone(kind=kind, backend=backend, id=list(id),
                                                display_id=self._display(backend, id), reason=reason))

    def _overlapping(self, location: str, keys: list[ObjectKey]) -> str:
        """'is the location of ops$mine in backend 'lake' (owner 'team-a'); ...' for up to three."""
        texts = []
        resolved = self.resolve(location)
        for key in keys[:3]:
            backend, id = key
            info = self.live.tables.get(key) or self.live.beyond_scope[key]
            owner = owner_of(info.properties)
            other = info.location or ""
            texts.append(f"{overlap_relation(resolved, self.resolve(other))} the location of "
                         f"{self._display(backend, id)} in backend '{backend}' "
                         f"({f'owner {owner!r}' if owner else 'no lance-sync owner mark'})"
                         + resolution_note((location, resolved), (other, self.resolve(other))))
        return "; ".join(texts) + (f"; and {len(keys) - 3} more" if len(keys) > 3 else "")

    @functools.cached_property
    def wanted(self) -> dict[str, set[Identifier]]:
        """Per backend, the ids the manifest registers (the tuples its tables hold), made once asked."""
        wanted: dict[str, set[Identifier]] = defaultdict(set)
        for registration in (r for t in self.desired.tables for r in t.registrations):
            wanted[registration.backend].add(registration.id)
        return wanted

    @functools.cached_property
    def registrations(self) -> LocationIndex[ObjectKey]:
        """Every registration the plan saw, by resolved location (for data deletions only)."""
        seen = {**self.live.beyond_scope, **self.live.tables}
        return LocationIndex((self.resolve(info.location), key) for key, info in seen.items() if info.location)

    @functools.cached_property
    def manifest_locations(self) -> LocationIndex[DesiredTable]:
        return LocationIndex((self.resolve(t.location), t) for t in self.desired.tables)

    def _location_conflict(self, table: DesiredTable) -> str | None:
        """Why a create, adopt or move of `table` is refused: another registration at, inside or
        around its location that stays after this plan (one asset per path)."""
        others = sorted(self.foreign.overlapping(self.resolve(table.location))) if self.foreign else []
        if not others:
            return None
        return f"one asset per path: {table.location} {self._overlapping(table.location, others)}"

    def _owner_conflict(self, kind: Kind, backend: str, id: Identifier, owner: str) -> None:
        self.result.conflicts.append(Conflict(
            f"{kind.value} '{self._display(backend, id)}' in backend '{backend}' is owned by '{owner}', not "
            f"'{self.desired.owner}'; remove it from this manifest or change its {OWNER_KEY} property",
            "owner", backend=backend, id=id))

    # --- namespaces ------------------------------------------------------------------------------

    def _namespaces(self) -> None:
        for ns in self.desired.namespaces:
            key = (ns.backend, ns.id)
            keys = sorted(set(ns.properties) | set(MANAGED_KEYS))
            want = ObjectState(properties={**ns.properties, **marks(self.desired.owner, ns.protect)})
            live = self.live.namespaces.get(key)
            if live is None:
                self._create_namespace(ns.backend, ns.id, want, keys)
                continue
            have = project(live.properties, None, keys)
            owner = owner_of(live.properties)
            if owner is not None and owner != self.desired.owner:
                self._owner_conflict(Kind.NAMESPACE, ns.backend, ns.id, owner)
            elif have != want:
                adopting = owner is None
                can_update = self.capabilities[ns.backend].update_namespace_properties
                self._action(
                    Verb.UPDATE, Kind.NAMESPACE, Reason.ADOPT if adopting else Reason.CHANGED, ns.backend,
                    ns.id, before=have, after=want, keys=keys,
                    detail="exists without an owner mark: adopt it (stamp the mark in place)" if adopting
                    else change_detail(have, want),
                    blocked=None if can_update else "the backend cannot update namespace properties")

    def _create_namespace(self, backend: str, id: Identifier, want: ObjectState, keys: list[str]) -> None:
        low, high = self.capabilities[backend].creatable_namespace_levels
        blocked = None
        if len(id) < low or (high is not None and len(id) > high):
            blocked = f"the backend cannot create namespaces of {len(id)} level(s) (server capability)"
        self._action(Verb.CREATE, Kind.NAMESPACE, Reason.ABSENT, backend, id, before=None, after=want,
                     keys=keys, detail="declared in the manifest, absent", blocked=blocked)
        self.created_namespaces.add((backend, id))

    # --- tables ----------------------------------------------------------------------------------

    def _tables(self) -> None:
        # the fast path (lance_sync.plan.in_sync): an unchanged table plans nothing; with foreign
        # registrations every table is compared in full, for the overlaps it may warn of
        unchanged = [False] * len(self.desired.tables) if self.foreign else unchanged_tables(self.desired, self.live)
        for table, same in zip(self.desired.tables, unchanged, strict=True):
            if same:
                continue
            status = self.datasets.get(table.location)
            overlap = self._location_conflict(table)
            made_before = len(self.result.actions) + len(self.creates)
            writes = self._dataset(table, status, overlap) is not None
            for registration in table.registrations:
                namespace = (registration.backend, registration.id[:-1])
                if namespace not in self.live.namespaces and namespace not in self.created_namespaces:
                    self.result.conflicts.append(Conflict(
                        f"table '{table.name}': namespace '{self._display(*namespace)}' does not exist in "
                        f"backend '{registration.backend}' and is not declared under namespaces:",
                        "namespace", table.name, registration.backend, registration.id))
                    continue
                self._table(table, registration, status, writes, overlap)
            if overlap and len(self.result.actions) + len(self.creates) == made_before:
                self.result.warnings.append(f"table '{table.name}': {overlap}")

    def _table_states(self) -> None:
        """The datasets' own state (lance_sync.plan.table_state), after their data is planned."""
        parts = plan_table_state(self.desired, self.datasets, self.table_states, self.result.actions)
        self.result.actions += parts.actions
        self.result.left_alone += parts.left_alone
        self.result.notes += parts.notes
        self.result.warnings += parts.warnings
        self.result.conflicts += [Conflict(message, "table_state", table) for message, table in parts.conflicts]

    def _dataset(self, table: DesiredTable, status: DatasetStatus | None, overlap: str | None) -> Action | None:
        """Write the table's data when it is missing (or this owner's write of it was cut off),
        or rewrite it when on_mismatch says so."""
        writer = table.registrations[0].backend if table.registrations else None
        if writer is None or not (table.columns or table.source):
            return None  # declared without data: nothing to write (most tables of a large plan)
        missing = status is None or status.status == "missing"
        declared = declared_columns(table)
        registrations = [Address(backend=r.backend, id=list(r.id), display_id=self._display(r.backend, r.id))
                         for r in table.registrations]
        after = ObjectState(location=table.location, columns=declared, source=table.source)
        common: dict[str, Any] = {"table": table.name, "dataset": status, "registrations": registrations,
                                  "blocked": overlap}
        if missing:
            return self._action(Verb.CREATE, Kind.DATASET, Reason.ABSENT, writer, (), before=None,
                                after=after, detail=f"no dataset at the location: write it {source_origin(table)}",
                                **common)
        assert status is not None
        unfinished = self._unfinished_write(table, status)
        if unfinished is not None:
            before = ObjectState(location=table.location, version=status.version) if status.version else None
            return self._action(Verb.CREATE, Kind.DATASET, Reason.ABSENT, writer, (), before=before, after=after,
                                detail=unfinished, **common)
        if status.status == "unreachable":
            self.result.conflicts.append(Conflict(
                f"table '{table.name}': cannot tell whether {table.location} holds data: {status.error}",
                "storage", table.name))
        if status.status in NOT_A_DATASET:
            self.result.conflicts.append(self._not_a_dataset(table, status))
        if status.status != "valid" or declared is None:
            return None
        evolution = plan_columns(table, status, self.desired.owner, writer, registrations)
        self.result.notes += evolution.notes
        if not evolution.problems:
            self.result.actions += evolution.actions
            return None
        if table.source and table.source.get("on_mismatch") == "overwrite":
            before = ObjectState(location=table.location, version=status.version)
            protected = table.protect or any(
                is_protected(self.live.tables[(r.backend, r.id)].properties)
                for r in table.registrations if (r.backend, r.id) in self.live.tables)
            if protected:
                common["blocked"] = PROTECTED
            elif status.owner != self.desired.owner:
                common["blocked"] = not_created_here(table.location, status, self.desired.owner)
            return self._action(Verb.REPLACE, Kind.DATASET, Reason.SCHEMA_MISMATCH, writer, (), before=before,
                                after=after, detail=f"{'; '.join(evolution.problems)}: rewrite it {source_origin(table)} "
                                "(on_mismatch: overwrite; the current data is lost)", **common)
        self.result.conflicts.extend(
            Conflict(f"table '{table.name}' at {table.location}: {problem}", "schema", table.name, detail=problem)
            for problem in evolution.problems)
        self.result.conflicts.append(Conflict(
            f"table '{table.name}': the dataset has {describe_columns(status.columns)}; {schema_hint(table)}",
            "schema", table.name, detail=f"apply refuses: {schema_hint(table)}"))
        return None

    def _unfinished_write(self, table: DesiredTable, status: DatasetStatus) -> str | None:
        """What finishing this owner's cut-off write of the dataset means, when the location holds
        one: its intent record, without a committed version or (the record not cleared yet) with
        one that carries this owner's record. None otherwise."""
        intent = status.intent
        if intent is None or not intent.is_for(self.desired.owner, table.location) \
                or not (table.columns or table.source):
            return None
        if status.status == "interrupted":
            return (f"apply {intent.apply} of this owner did not finish writing the dataset: remove what it "
                    f"left and write it {source_origin(table)}")
        if status.status == "valid" and status.owner == self.desired.owner:
            return (f"apply {intent.apply} of this owner committed the dataset but did not finish: check it "
                    "and clear its intent record")
        return None

    def _not_a_dataset(self, table: DesiredTable, status: DatasetStatus) -> Conflict:
        what = {"not_lance": "holds data that is not a Lance dataset",
                "corrupt": f"holds a Lance dataset that cannot be read ({status.error or 'corrupt'})",
                "interrupted": f"holds an unfinished lance-sync write of "
                               f"{status.intent.describe() if status.intent else 'another owner'}"}[status.status]
        return Conflict(f"table '{table.name}': {table.location} {what}; lance-sync registers a table only on a "
                        "Lance dataset and never deletes what it did not write: move that data away or point "
                        "the table at another location", "storage", table.name)

    def _table(self, table: DesiredTable, registration: Registration, status: DatasetStatus | None, writes: bool,
               overlap: str | None) -> None:
        key = backend, id = registration.backend, registration.id
        want_properties = self.properties.wanted(table)
        live = self.live.tables.get(key)
        if live is not None and live.is_lance and live.location == table.location and \
                self.properties.holds(want_properties, live.properties):
            return  # in sync, as most tables of a large plan are
        keys = sorted(set(table.properties) | set(MANAGED_KEYS))
        want = ObjectState(location=table.location, properties=want_properties)
        common: dict[str, Any] = {"keys": keys, "table": table.name, "dataset": status,
                  "warnings": [] if writes else dataset_warnings(table, status)}
        moves = live is None or live.location != table.location
        if moves and not writes and status is not None and status.status in NOT_A_DATASET:
            conflict = self._not_a_dataset(table, status)
            if conflict.message not in {c.message for c in self.result.conflicts}:
                self.result.conflicts.append(conflict)
            return
        if live is None and key in self.renames.pairs:
            self._rename(key, self.renames.pairs[key], want, common)
            return
        if live is None and (writes or registration.grants is not None or not self.creates_as_rows):
            self._action(Verb.CREATE, Kind.TABLE, Reason.ABSENT, backend, id, before=None, after=want,
                         detail=ABSENT_DETAIL, blocked=overlap, **common)
            return
        if live is None:
            return self._create(table, registration, want_properties, common, overlap)
        if not live.is_lance:
            self.result.conflicts.append(Conflict(
                f"table '{self._display(backend, id)}' in backend '{backend}' exists and is not a Lance table; "
                "lance-sync will not replace it", "not_lance", table.name, backend, id))
            return
        self._change_table(key, live, want, common, overlap)

    def _create(self, table: DesiredTable, registration: Registration, properties: dict[str, str],
                common: dict[str, Any], overlap: str | None) -> None:
        """A create that writes no data and has no grants to plan, as a row (`CreateRows`)."""
        namespace = (registration.backend, registration.id[:-1])
        depends_on = (action_key(Kind.NAMESPACE, *namespace),) if namespace in self.created_namespaces else ()
        self.creates.add(self.desired.backends[registration.backend], table, registration.id, properties,
                         self._sorted(common["keys"]), common["dataset"], overlap, tuple(common["warnings"]), depends_on)

    def _change_table(self, key: ObjectKey, live: TableInfo, want: ObjectState, common: dict[str, Any],
                      overlap: str | None) -> None:
        """Bring a registered Lance table to `want`: adopt or update it in place where the backend
        can, take it over unmarked when only the marks differ, replace it otherwise."""
        backend, id = key
        have = project(live.properties, live.location, common["keys"])
        owner = owner_of(live.properties)
        if owner is not None and owner != self.desired.owner:
            self._owner_conflict(Kind.TABLE, backend, id, owner)
            return
        if have == want:
            return
        capabilities = self.capabilities[backend]
        in_place = capabilities.update_table_properties and (
            have.location == want.location or capabilities.update_table_location)
        if owner is None and not in_place and same_but_marks(have, want):
            # adopting never replaces: take the table over as it is
            self.result.adopted_unmarked.append(LeftAlone(
                kind=Kind.TABLE, backend=backend, id=list(id), display_id=self._display(backend, id),
                reason="declared and in sync; the backend cannot stamp an owner mark in place, so removing "
                       "it from the manifest will leave it registered"))
            return
        common = {**common, "warnings": common["warnings"] + left_behind(have, want, self.datasets)}
        if in_place:
            adopting = owner is None
            self._action(Verb.UPDATE, Kind.TABLE, Reason.ADOPT if adopting else Reason.CHANGED, backend, id,
                         before=have, after=want,
                         detail=("exists without an owner mark: adopt it (stamp the mark in place); "
                                 if adopting else "") + change_detail(have, want) + moved_in_place_note(have, want),
                         blocked=overlap if adopting or have.location != want.location else None, **common)
            return
        why = ("its location differs and the backend cannot move a table in place"
               if have.location != want.location else "the backend cannot update table properties in place")
        blocked = PROTECTED if stays_protected(live.properties, want) else None
        if have.location != want.location:
            blocked = blocked or overlap
        grants = self._keeps_grants(backend, id)
        self._action(Verb.REPLACE, Kind.TABLE, Reason.CHANGED, backend, id, before=have, after=want,
                     detail=f"{change_detail(have, want)}; {why}: deregister and declare again (data untouched; "
                     f"the table gets a new id{' and loses its grants' if grants else ''})",
                     blocked=blocked, drops_grants=grants, **common)

    def _keeps_grants(self, backend: str, id: Identifier) -> bool:
        """The backend keeps grants on this table (a replace loses them)."""
        return bool((spec := self.desired.backends[backend]).rules.grant_privileges("table", id, spec.config))

    def _rename(self, key: ObjectKey, pairing: Pairing, want: ObjectState, common: dict[str, Any]) -> None:
        """Rename the registration found under a former id in place; where the backend cannot
        (or cannot make the property changes that come with it), replace it under the new id."""
        backend, id = key
        have = project(pairing.info.properties, pairing.info.location, common["keys"])
        old = Address(backend=backend, id=list(pairing.former), display_id=self._display(backend, pairing.former))
        capabilities = self.capabilities[backend]
        moves = pairing.former[:-1] != id[:-1]
        changes = [] if have == want else [change_detail(have, want)]
        cannot = None
        fixed = capabilities.move_fixed_levels
        if not (capabilities.move_table if moves else capabilities.rename_table):
            cannot = "cannot move a table to another namespace" if moves and capabilities.rename_table \
                else "has no table rename"
        elif moves and pairing.former[:fixed] != id[:fixed]:
            cannot = f"cannot move a table out of the first {fixed} level(s) of its id (its catalog)"
        elif changes and not capabilities.update_table_properties:
            cannot = "cannot update table properties in place"
        if cannot is None:
            self._action(Verb.RENAME, Kind.TABLE, Reason.RENAMED, backend, id, before=have, after=want,
                         detail="; ".join([f"renamed_from: registered as {old.display_id}; renamed in place (same "
                                           "table id, data and grants)", *changes]), renamed_from=old, **common)
            return
        spec = self.desired.backends[backend]
        grants = self._keeps_grants(backend, id)
        self._action(Verb.REPLACE, Kind.TABLE, Reason.RENAMED, backend, id, before=have, after=want,
                     detail="; ".join([f"renamed_from: registered as {old.display_id}", *changes,
                                       f"{spec.name} ({spec.type}) {cannot}: the table is declared again under "
                                       f"the new name (new table id{', grants are lost' if grants else ''}; "
                                       "data untouched)"]),
                     blocked=PROTECTED if stays_protected(pairing.info.properties, want) else None,
                     renamed_from=old, drops_grants=grants, **common)

    # --- removals --------------------------------------------------------------------------------

    def _table_removals(self) -> None:
        leaving: dict[str | None, list[tuple[ObjectKey, TableInfo]]] = defaultdict(list)
        vacated = self.renames.vacated
        for key in self.undeclared:
            info = self.live.tables[key]
            if key in vacated or not info.is_lance:
                continue
            owner = owner_of(info.properties)
            if owner != self.desired.owner:
                self._left_alone(Kind.TABLE, key[0], key[1],
                                 f"owned by '{owner}'" if owner else "no lance-sync owner mark")
                continue
            leaving[info.location].append((key, info))
        for location, tables in leaving.items():
            self._remove_location(location, tables)

    def _remove_location(self, location: str | None, tables: list[tuple[ObjectKey, TableInfo]]) -> None:
        """Forget every leaving registration of a location; delete its data first when asked to
        and when it is this owner's to delete (see `_kept_data`)."""
        status = self.datasets.get(location) if location else None
        version = status.version if status is not None else None
        delete = None
        kept = None
        if any(drops_data(info.properties) for _, info in tables) and location and status is not None \
                and status.status == "valid":
            kept = self._kept_data(location, status)
            delete = None if kept else self._action(
                Verb.DELETE, Kind.DATASET, Reason.LEFT_MANIFEST, tables[0][0][0], (),
                before=ObjectState(location=location, version=version), after=None,
                detail="left the manifest; on_remove: drop deletes its data",
                registrations=[Address(backend=key[0], id=list(key[1]), display_id=self._display(*key))
                               for key, _ in tables],
                dataset=status, blocked=self._deletion_blocked(location, tables))
        for (backend, id), info in tables:
            keys = sorted(info.properties)
            before = project(info.properties, info.location, keys)
            before.version = version
            detail = "left the manifest; deregistered, data kept"
            if kept:
                detail += f" ({kept})"
            elif delete is not None:
                detail = "left the manifest; deregistered after its data is deleted"
            self._action(Verb.FORGET, Kind.TABLE, Reason.LEFT_MANIFEST, backend, id, before=before, after=None,
                         keys=keys, detail=detail, dataset=status,
                         depends_on=[delete.key] if delete is not None else [],
                         blocked=PROTECTED if is_protected(info.properties) else None)

    def _kept_data(self, location: str, status: DatasetStatus) -> str | None:
        """Why on_remove: drop keeps the data at `location`; None when it is deleted."""
        resolved = self.resolve(location)
        users = self.manifest_locations.overlapping(resolved)
        if users:
            note = resolution_note((location, resolved), (users[0].location, self.resolve(users[0].location)))
            return f"table '{users[0].name}' of the manifest uses this location{note}"
        if status.owner != self.desired.owner:
            self.result.warnings.append(f"{location}: data kept although on_remove is drop: lance-sync did not "
                                        f"create it for '{self.desired.owner}'")
            return not_created_here(location, status, self.desired.owner)
        return None

    def _deletion_blocked(self, location: str, tables: list[tuple[ObjectKey, TableInfo]]) -> str | None:
        """Why deleting the data at `location` is refused: a protected registration leaving with
        it, a location that is itself a symbolic link, or another registration the plan saw at,
        inside or around it (apply checks every registration of every backend again)."""
        protected = [self._display(*key) for key, info in tables if is_protected(info.properties)]
        if protected:
            return f"registered as {', '.join(protected)}, which is {PROTECTED}"
        target = link_target(location)
        if target is not None:  # apply would refuse the delete: the plan says so first
            return f"{location} is a symbolic link (to {target}); lance-sync never deletes what a link points at"
        leaving = {key for key, _ in tables}
        others = sorted(key for key in self.registrations.overlapping(self.resolve(location)) if key not in leaving)
        if not others:
            return None
        return f"one asset per path: {location} {self._overlapping(location, others)}; its data is not deleted"

    def _namespace_removals(self) -> None:
        wanted = {(ns.backend, ns.id) for ns in self.desired.namespaces}
        removed_tables = {a.key for a in self.result.actions if a.kind == Kind.TABLE and a.after is None}
        removed_tables |= {action_key(Kind.TABLE, backend, id) for backend, id in self.renames.vacated}
        for key in sorted(self.live.namespaces, key=lambda k: (k[0], -len(k[1]), k[1])):
            backend, id = key
            info = self.live.namespaces[key]
            owner = owner_of(info.properties)
            if key in wanted or owner != self.desired.owner:
                if key not in wanted and key in self.live.scanned:
                    self._left_alone(Kind.NAMESPACE, backend, id,
                                     f"owned by '{owner}'" if owner else "no lance-sync owner mark")
                continue
            if key in self._holding_tables:
                self.result.warnings.append(
                    f"namespace '{self._display(backend, id)}' in backend '{backend}' left the manifest but "
                    "tables of the manifest are registered in it; kept")
                continue
            blockers = self._staying_contents(key, removed_tables, wanted)
            if blockers:
                self.result.warnings.append(
                    f"namespace '{self._display(backend, id)}' in backend '{backend}' left the manifest but "
                    f"holds objects that stay ({blockers}); kept")
                continue
            keys = sorted(info.properties)
            self._action(Verb.DELETE, Kind.NAMESPACE, Reason.LEFT_MANIFEST, backend, id,
                         before=project(info.properties, None, keys), after=None, keys=keys,
                         detail="left the manifest",
                         blocked=PROTECTED if is_protected(info.properties) else None)

    @functools.cached_property
    def _holding_tables(self) -> set[ObjectKey]:
        """The namespaces the manifest's tables are registered in (asked of namespaces that leave)."""
        return {(r.backend, r.id[:-1]) for t in self.desired.tables for r in t.registrations}

    def _staying_contents(self, key: ObjectKey, removed_tables: set[str], wanted: set[ObjectKey]) -> str:
        """What keeps a namespace from being deleted, in words: the tables and namespaces in it
        that are not removed, declared, another owner's, or kept; '' when there are none."""
        backend, id = key
        deleting = {(a.backend, tuple(a.id)) for a in self.result.actions
                    if a.kind == Kind.NAMESPACE and a.verb == Verb.DELETE}
        staying: list[tuple[Identifier, TableInfo | NamespaceInfo]] = [
            (t_id, info) for (b, t_id), info in self.live.tables.items()
            if b == backend and t_id[:-1] == id and action_key(Kind.TABLE, b, t_id) not in removed_tables]
        staying += [(n_id, info) for (b, n_id), info in self.live.namespaces.items()
                    if b == backend and n_id[:-1] == id and (b, n_id) not in deleting]
        groups: dict[str, list[str]] = defaultdict(list)
        for child, info in staying:
            if (backend, child) in wanted or child in self.wanted.get(backend, ()):
                why = "declared in the manifest"
            elif owner_of(info.properties) != self.desired.owner:
                why = f"not owned by '{self.desired.owner}'"
            else:
                why = "left the manifest, kept"
            groups[why].append(self._display(backend, child))
        return "; ".join(f"{why}: {', '.join(names[:3])}" + (f" and {len(names) - 3} more" if len(names) > 3 else "")
                         for why, names in groups.items())

    # --- ordering --------------------------------------------------------------------------------

    def _link_dependencies(self) -> None:
        """Which action must finish before which: parents first on create, children first on delete,
        data before the registrations that point at it (a create kept as a row has its own: `_create`)."""
        #: what an action can wait for here: a namespace created, data written (not the tables,
        #: most of a large plan's actions)
        by_key = {a.key: a for a in self.result.actions if a.kind != Kind.TABLE}
        for action in self.result.actions:
            needs: set[str] = set(action.depends_on)
            parent = by_key.get(action_key(Kind.NAMESPACE, action.backend, action.id[:-1]))
            if action.id and parent is not None and parent.verb == Verb.CREATE and action.after is not None:
                needs.add(parent.key)
            if action.kind == Kind.TABLE and action.verb == Verb.CREATE and action.location and \
                    dataset_key(action.location) in by_key:
                needs.add(dataset_key(action.location))
            if action.kind == Kind.NAMESPACE and action.verb == Verb.DELETE:
                needs |= {a.key for a in self.result.actions if (a.after is None or a.renamed_from is not None)
                          and a.key != action.key and a.backend == action.backend
                          and a.current_id and a.current_id[:-1] == action.id}
            action.depends_on = sorted(needs - {action.key})


def compare(desired: DesiredState, live: LiveState, capabilities: dict[str, Capabilities],
            datasets: dict[str, DatasetStatus], strict: bool = True,
            table_states: dict[str, LiveTableState] | None = None) -> Comparison:
    return Comparer(desired, live, capabilities, datasets, table_states).compare(strict)


def _dataset_location(*states: ObjectState | None) -> str:
    """A dataset action's address: the location of the first state that has one."""
    for state in states:
        if state is not None and state.location is not None:
            return state.location
    raise ValueError("a dataset action needs a location")
