"""Compare the desired state with the live state and produce the plan's actions.

Like alembic's autogenerate: this module only decides *what* should change and emits
operation objects; rendering and execution live elsewhere. Rules, in short:

- only the manifest's properties and lance-sync's own marks are compared;
- an object is removed only when it carries this owner's mark, and never when protected;
- an existing object without a mark is adopted; one with another owner's mark is a conflict;
- a table whose backend cannot update properties in place is replaced (metadata only);
- data is deleted (drop_table) only when no remaining table of the manifest uses it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from lance_sync.arrow_types import columns_from_schema, parse_type, schema_from_columns
from lance_sync.drivers.base import Capabilities, Identifier, TableInfo
from lance_sync.errors import PlanError
from lance_sync.manifest.desired import DesiredState, DesiredTable
from lance_sync.observe import LiveState, ObjectKey
from lance_sync.plan.model import (
    DATA_LOSS,
    MANAGED_KEYS,
    ON_REMOVE_KEY,
    OWNER_KEY,
    PHASES,
    PROTECT_KEY,
    Action,
    ActionType,
    DatasetStatus,
    LeftAlone,
    ObjectState,
    action_key,
    fingerprint,
    project,
)


@dataclass
class Comparison:
    actions: list[Action] = field(default_factory=list)
    left_alone: list[LeftAlone] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


def marks(owner: str, protect: bool, on_remove: str | None = None) -> dict[str, str]:
    """lance-sync's own properties for an object it manages."""
    stamped = {OWNER_KEY: owner}
    if protect:
        stamped[PROTECT_KEY] = "true"
    if on_remove == "drop":
        stamped[ON_REMOVE_KEY] = "drop"
    return stamped


class Comparer:
    def __init__(self, desired: DesiredState, live: LiveState, capabilities: dict[str, Capabilities],
                 datasets: dict[str, DatasetStatus]):
        self.desired = desired
        self.live = live
        self.capabilities = capabilities
        self.datasets = datasets
        self.result = Comparison()
        self.created_namespaces: set[ObjectKey] = set()

    def compare(self) -> Comparison:
        self._namespaces()
        self._tables()
        self._table_removals()
        self._namespace_removals()
        self._link_dependencies()
        self.result.actions.sort(key=_order)
        if self.result.conflicts:
            raise PlanError("the plan cannot be made:\n" + "\n".join(f"  - {c}" for c in self.result.conflicts))
        return self.result

    # --- helpers ---------------------------------------------------------------------------------

    def _display(self, backend: str, id: Identifier) -> str:
        return self.desired.backends[backend].format_id(id)

    def _action(self, kind: ActionType, obj: str, backend: str, id: Identifier, *,
                before: ObjectState | None, after: ObjectState | None, reason: str,
                keys: list[str], **extra) -> Action:
        action = Action(action=kind, object=obj, backend=backend, id=list(id),
                        display_id=self._display(backend, id), before=before, after=after, reason=reason,
                        data_loss=kind in DATA_LOSS, compared_keys=sorted(keys),
                        fingerprint=fingerprint(before, keys), **extra)
        self.result.actions.append(action)
        return action

    def _left_alone(self, obj: str, backend: str, id: Identifier, reason: str) -> None:
        self.result.left_alone.append(LeftAlone(object=obj, backend=backend, id=list(id),
                                                display_id=self._display(backend, id), reason=reason))

    def _owner_conflict(self, obj: str, backend: str, id: Identifier, owner: str) -> None:
        self.result.conflicts.append(
            f"{obj} '{self._display(backend, id)}' in backend '{backend}' is owned by '{owner}', not "
            f"'{self.desired.owner}'; remove it from this manifest or change its {OWNER_KEY} property")

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
            owner = live.properties.get(OWNER_KEY)
            if owner is not None and owner != self.desired.owner:
                self._owner_conflict("namespace", ns.backend, ns.id, owner)
            elif have != want:
                adopting = owner is None
                can_update = self.capabilities[ns.backend].update_namespace_properties
                self._action(
                    ActionType.ADOPT if adopting else ActionType.UPDATE_NAMESPACE, "namespace", ns.backend,
                    ns.id, before=have, after=want, keys=keys,
                    reason="exists without an owner mark: adopt it" if adopting else _diff_reason(have, want),
                    method="in_place" if adopting else None,
                    blocked=None if can_update else "the backend cannot update namespace properties")

    def _create_namespace(self, backend: str, id: Identifier, want: ObjectState, keys: list[str]) -> None:
        creatable = self.capabilities[backend].creatable_namespace_levels
        low, high = creatable
        blocked = None
        if len(id) < low or (high is not None and len(id) > high):
            blocked = f"the backend cannot create namespaces of {len(id)} level(s) (server capability)"
        self._action(ActionType.CREATE_NAMESPACE, "namespace", backend, id, before=None, after=want,
                     keys=keys, reason="declared in the manifest, absent", blocked=blocked)
        self.created_namespaces.add((backend, id))

    # --- tables ----------------------------------------------------------------------------------

    def _tables(self) -> None:
        for table in self.desired.tables:
            status = self.datasets.get(table.location)
            data_action = self._data_action(table, status)
            for index, registration in enumerate(table.registrations):
                key = (registration.backend, registration.id)
                namespace = (registration.backend, registration.id[:-1])
                if namespace not in self.live.namespaces and namespace not in self.created_namespaces:
                    self.result.conflicts.append(
                        f"table '{table.name}': namespace '{self._display(*namespace)}' does not exist in "
                        f"backend '{registration.backend}' and is not declared under namespaces:")
                    continue
                self._table(table, key, status, data_action, writes_data=index == 0)

    def _data_action(self, table: DesiredTable, status: DatasetStatus | None) -> str | None:
        """'create' or 'overwrite' when the table's data must be written, else None."""
        target = _target_columns(table)
        if status is None or status.status == "missing":
            return "create" if (table.columns or table.source) else None
        if status.status == "unreachable" and (table.columns or table.source):
            self.result.conflicts.append(
                f"table '{table.name}': cannot tell whether {table.location} holds data: {status.error}")
        if status.status == "valid" and target is not None and not _same_columns(status.columns, target):
            if table.source and table.source.get("on_mismatch") == "overwrite":
                return "overwrite"
            self.result.conflicts.append(
                f"table '{table.name}': the dataset at {table.location} has columns "
                f"{_describe_columns(status.columns)} but the manifest declares {_describe_columns(target)}; "
                "change the manifest, or set source.on_mismatch: overwrite to rewrite it")
        return None

    def _table(self, table: DesiredTable, key: ObjectKey, status: DatasetStatus | None,
               data_action: str | None, writes_data: bool) -> None:
        backend, id = key
        keys = sorted(set(table.properties) | set(MANAGED_KEYS))
        want = ObjectState(location=table.location,
                           properties={**table.properties,
                                       **marks(self.desired.owner, table.protect, table.on_remove)})
        live = self.live.tables.get(key)
        warnings = _dataset_warnings(table, status, data_action)
        common = {"keys": keys, "table": table.name, "dataset": status, "warnings": warnings}
        if data_action and writes_data:
            after = want.model_copy(update={"columns": _target_columns(table), "source": table.source})
            self._action(ActionType.CREATE_TABLE, "table", backend, id, before=_live_state(live, keys),
                         after=after, write_mode=data_action, registers=live is None,
                         reason=_write_reason(table, data_action), **common)
            if live is None:
                return
        if live is None:
            self._action(ActionType.DECLARE_TABLE, "table", backend, id, before=None, after=want,
                         reason="declared in the manifest, absent", **common)
            return
        if not live.is_lance:
            self.result.conflicts.append(f"table '{self._display(backend, id)}' in backend '{backend}' exists "
                                         "and is not a Lance table; lance-sync will not replace it")
            return
        have = project(live.properties, live.location, keys)
        owner = live.properties.get(OWNER_KEY)
        if owner is not None and owner != self.desired.owner:
            self._owner_conflict("table", backend, id, owner)
            return
        if have == want:
            return
        in_place = (self.capabilities[backend].update_table_properties
                    and (have.location == want.location or self.capabilities[backend].update_table_location))
        if owner is None:
            self._action(ActionType.ADOPT, "table", backend, id, before=have, after=want,
                         method="in_place" if in_place else "replace",
                         reason="exists without an owner mark: adopt it", **common)
        elif in_place:
            self._action(ActionType.UPDATE_TABLE, "table", backend, id, before=have, after=want,
                         reason=_diff_reason(have, want), **common)
        else:
            why = "location differs" if have.location != want.location else \
                "the backend cannot update table properties in place"
            self._action(ActionType.REPLACE_TABLE, "table", backend, id, before=have, after=want,
                         reason=f"{_diff_reason(have, want)}; {why}: deregister and declare again "
                         "(metadata only, data untouched)", **common)

    # --- removals --------------------------------------------------------------------------------

    def _table_removals(self) -> None:
        wanted = {(r.backend, r.id) for t in self.desired.tables for r in t.registrations}
        kept_locations = {t.location for t in self.desired.tables}
        dropped_locations: dict[str, Action] = {}
        deregistrations: dict[str, list[Action]] = defaultdict(list)
        for key in sorted(self.live.tables):
            if key in wanted:
                continue
            backend, id = key
            info = self.live.tables[key]
            if not info.is_lance:
                continue
            owner = info.properties.get(OWNER_KEY)
            if owner != self.desired.owner:
                reason = "not a Lance table" if not info.is_lance else (
                    f"owned by '{owner}'" if owner else "no lance-sync owner mark")
                self._left_alone("table", backend, id, reason)
                continue
            action = self._remove_table(info, key, kept_locations, dropped_locations)
            if action.action == ActionType.DEREGISTER_TABLE and info.location:
                deregistrations[info.location].append(action)
        for location, drop in dropped_locations.items():
            drop.depends_on = sorted(a.key for a in deregistrations.get(location, []))

    def _remove_table(self, info: TableInfo, key: ObjectKey, kept_locations: set[str],
                      dropped_locations: dict[str, Action]) -> Action:
        backend, id = key
        keys = sorted(info.properties)
        before = project(info.properties, info.location, keys)
        protected = info.properties.get(PROTECT_KEY, "").lower() == "true"
        wants_drop = info.properties.get(ON_REMOVE_KEY) == "drop"
        location = info.location
        if wants_drop and location and location not in kept_locations and location not in dropped_locations:
            action = self._action(ActionType.DROP_TABLE, "table", backend, id, before=before, after=None,
                                  keys=keys, reason="left the manifest; on_remove: drop deletes its data",
                                  blocked="protected" if protected else None)
            dropped_locations[location] = action
            return action
        reason = "left the manifest; deregistered, data kept"
        if wants_drop and location in kept_locations:
            reason += " (another table of the manifest uses this location)"
        return self._action(ActionType.DEREGISTER_TABLE, "table", backend, id, before=before, after=None,
                            keys=keys, reason=reason, blocked="protected" if protected else None)

    def _namespace_removals(self) -> None:
        wanted = {(ns.backend, ns.id) for ns in self.desired.namespaces}
        holds_tables = {(r.backend, r.id[:-1]) for t in self.desired.tables for r in t.registrations}
        removed_tables = {a.key for a in self.result.actions if a.object == "table" and a.after is None}
        for key in sorted(self.live.namespaces, key=lambda k: (k[0], -len(k[1]), k[1])):
            backend, id = key
            info = self.live.namespaces[key]
            if key in wanted or info.properties.get(OWNER_KEY) != self.desired.owner:
                if key not in wanted and key in self.live.scanned:
                    self._left_alone("namespace", backend, id, "no lance-sync owner mark"
                                     if OWNER_KEY not in info.properties else
                                     f"owned by '{info.properties[OWNER_KEY]}'")
                continue
            if key in holds_tables:
                self.result.warnings.append(
                    f"namespace '{self._display(backend, id)}' in backend '{backend}' left the manifest but "
                    "tables of the manifest are registered in it; kept")
                continue
            blockers = self._foreign_contents(key, removed_tables)
            if blockers:
                self.result.warnings.append(
                    f"namespace '{self._display(backend, id)}' in backend '{backend}' left the manifest but "
                    f"holds objects lance-sync does not own ({', '.join(blockers[:3])}); kept")
                continue
            protected = info.properties.get(PROTECT_KEY, "").lower() == "true"
            keys = sorted(info.properties)
            self._action(ActionType.DROP_NAMESPACE, "namespace", backend, id,
                         before=project(info.properties, None, keys), after=None, keys=keys,
                         reason="left the manifest", blocked="protected" if protected else None)

    def _foreign_contents(self, key: ObjectKey, removed_tables: set[str]) -> list[str]:
        """What keeps a namespace from being dropped: tables and namespaces not being removed."""
        backend, id = key
        dropping = {(a.backend, tuple(a.id)) for a in self.result.actions
                    if a.action == ActionType.DROP_NAMESPACE}
        blockers = [self._display(backend, t_id) for (b, t_id) in self.live.tables
                    if b == backend and t_id[:-1] == id
                    and action_key("table", b, t_id) not in removed_tables]
        blockers += [self._display(backend, n_id) for (b, n_id) in self.live.namespaces
                     if b == backend and n_id[:-1] == id and (b, n_id) not in dropping]
        return blockers

    # --- ordering --------------------------------------------------------------------------------

    def _link_dependencies(self) -> None:
        """Which action must finish before which: parents first on create, children first on drop."""
        by_key = {a.key: a for a in self.result.actions}
        data_writes = {a.after.location: a for a in self.result.actions
                       if a.action == ActionType.CREATE_TABLE and a.after}
        for action in self.result.actions:
            needs: set[str] = set(action.depends_on)
            parent = action_key("namespace", action.backend, action.id[:-1])
            if action.action != ActionType.DROP_NAMESPACE and parent in by_key and \
                    by_key[parent].action == ActionType.CREATE_NAMESPACE:
                needs.add(parent)
            if action.action == ActionType.DECLARE_TABLE and action.after.location in data_writes:
                needs.add(data_writes[action.after.location].key)
            if action.action == ActionType.DROP_NAMESPACE:
                needs |= {a.key for a in self.result.actions if a.after is None and a.key != action.key
                          and a.backend == action.backend and a.id[:-1] == action.id}
            action.depends_on = sorted(needs - {action.key})


def compare(desired: DesiredState, live: LiveState, capabilities: dict[str, Capabilities],
            datasets: dict[str, DatasetStatus]) -> Comparison:
    return Comparer(desired, live, capabilities, datasets).compare()


def _order(action: Action) -> tuple:
    depth = len(action.id) if action.action != ActionType.DROP_NAMESPACE else -len(action.id)
    return (PHASES[action.action], depth, action.backend, action.id)


def _live_state(live: TableInfo | None, keys: list[str]) -> ObjectState | None:
    return None if live is None else project(live.properties, live.location, keys)


def _diff_reason(have: ObjectState, want: ObjectState) -> str:
    changed = sorted(k for k in set(have.properties) | set(want.properties)
                     if have.properties.get(k) != want.properties.get(k))
    parts = []
    if have.location != want.location:
        parts.append("location")
    if changed:
        parts.append("properties " + ", ".join(changed))
    return "changed: " + "; ".join(parts) if parts else "changed"


def _target_columns(table: DesiredTable) -> list[dict] | None:
    """The columns the dataset must have: the declared schema, else the source casts (partial)."""
    if table.columns:
        return columns_from_schema(schema_from_columns(table.columns))
    return None


def _same_columns(found: list[dict] | None, expected: list[dict]) -> bool:
    if found is None:
        return False
    normalize = lambda cols: [(c["name"], parse_type(c["type"]), c.get("nullable", True)) for c in cols]  # noqa: E731
    return normalize(found) == normalize(expected)


def _describe_columns(columns: list[dict] | None) -> str:
    if not columns:
        return "(unknown)"
    return "(" + ", ".join(f"{c['name']}: {c['type']}" for c in columns) + ")"


def _write_reason(table: DesiredTable, mode: str) -> str:
    origin = f"from {table.source['format']} source {table.source['path']}" if table.source else \
        "empty, with the declared schema"
    if mode == "overwrite":
        return f"dataset schema differs from the manifest; rewrite it {origin} (on_mismatch: overwrite)"
    return f"no dataset at the location: write it {origin}, then register"


def _dataset_warnings(table: DesiredTable, status: DatasetStatus | None, data_action: str | None) -> list[str]:
    if data_action or status is None or status.status == "valid":
        return []
    if status.status == "missing":
        return [f"no Lance dataset at {table.location} yet (declare only: the table is registered "
                "before its data exists)"]
    if status.status == "not_lance":
        return [f"{table.location} holds data that is not a Lance dataset"]
    if status.status == "unreachable":
        return [f"could not look at {table.location}: {status.error}"]
    return [f"the Lance dataset at {table.location} looks corrupt: {status.error or 'unreadable'}"]

