"""Compare declared grants with live ones and plan grant and revoke actions.

Runs after the objects are compared (lance_sync.plan.compare), because what a grant starts
from depends on what happens to its object: a namespace or table the plan creates, or a table
it replaces (a new table id), holds no grants yet, so every declared privilege is granted
after it; a table renamed in place keeps its grants, read at the id it has now. Then:

- only the principals an object's `grants:` names are managed (mode named): each ends with
  exactly the declared privileges; everyone else's grants are left alone and listed as such,
  except a principal the object's record names (lance-sync managed it) that the manifest no
  longer does: its privileges are revoked. Mode authoritative also revokes every other
  principal's grants. A revoke is destructive (apply needs --allow-revoke);
- where the principals the manifest names differ from the object's record (or there is no
  record yet: an object managed before records were kept), a `record` action writes them,
  after the object's grants and revokes; it changes no privilege and no declared property;
- a replace that would lose grants the manifest does not declare says which, in a warning;
- a grant of no use without a privilege on a parent namespace that the principal lacks
  (`BackendRules.parent_needs`) gets a note; it is never granted unasked.

Live grants are read only for objects that declare grants, tables a plan replaces and the
parents of declared grants: calls in proportion to what the manifest manages. Records are read
from the properties the plan observed, else from the backend.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from lance_namespace.errors import LanceNamespaceError, NamespaceNotFoundError, TableNotFoundError

from lance_sync.drivers.base import Capabilities, Drivers, Identifier, SyncNamespace
from lance_sync.drivers.support.retry import with_retries
from lance_sync.model.actions import (
    Action,
    Kind,
    LeftAlone,
    ObjectState,
    Reason,
    Verb,
    action_key,
    fingerprint,
)
from lance_sync.model.desired import DesiredState
from lance_sync.model.grants import (
    AUTHORITATIVE,
    DeclaredGrants,
    GrantMap,
    ParentNeed,
    Securable,
    format_privileges,
)
from lance_sync.model.marks import grants_record
from lance_sync.model.shared import DEFAULT_PARALLELISM
from lance_sync.plan.compare import Comparison
from lance_sync.plan.observe import READ_RETRIES, ObserveError
from lance_sync.plan.order import action_order

#: (backend, kind, id): an object whose grants are read
GrantKey = tuple[str, Securable, Identifier]
#: (backend, kind, id) -> the properties the plan observed of that namespace or table; None
#: where it did not observe them
Observed = Callable[[str, Kind, Identifier], dict[str, str] | None]
#: what one read of an object's grants answers
_Read = TypeVar("_Read")


@dataclass(frozen=True)
class _Managed:
    """One object whose grants the manifest declares, and what the plan does to the object."""

    backend: str
    kind: Securable
    id: Identifier
    declared: DeclaredGrants
    #: the action on the object itself, if any (a create, rename, replace, update)
    action: Action | None
    table: str | None

    @property
    def fresh(self) -> bool:
        """The object holds no grants when its grants are applied: created or replaced here."""
        return self.action is not None and self.action.verb in (Verb.CREATE, Verb.REPLACE)

    @property
    def read_at(self) -> Identifier | None:
        """Where its live grants are now: the id a rename starts from; None when there is no
        object yet."""
        if self.action is not None and self.action.verb == Verb.CREATE:
            return None
        return tuple(self.action.current_id) if self.action is not None else self.id


def plan_grants(state: DesiredState, comparison: Comparison, drivers: Drivers,
                capabilities: dict[str, Capabilities], parallelism: int = DEFAULT_PARALLELISM,
                objects_found: Callable[[str, Kind, Identifier], bool] | None = None,
                api_calls: dict[str, int] | None = None, observed: Observed | None = None) -> None:
    """Add the grant, revoke and record actions, notes and warnings to `comparison`; the calls
    its reads take are added to `api_calls`.

    `objects_found(backend, kind, id)` says whether the plan saw the object live (an object
    neither found nor created, say a table whose namespace is missing, has no grants to plan);
    `observed` answers the properties that hold records, where the plan read them already.
    """
    if not any(ns.grants for ns in state.namespaces) and not any(
            r.grants for t in state.tables for r in t.registrations) and not any(
            a.kind == Kind.TABLE and a.verb == Verb.REPLACE for a in comparison.actions.kept()):
        return  # nothing to read: most plans
    # the creates kept as rows have no grants to plan (lance_sync.plan.compare: Comparer._create)
    by_key = {a.key: a for a in comparison.actions.kept()}
    managed = [m for m in _managed(state, by_key)
               if objects_found is None or m.action is not None or objects_found(m.backend, Kind(m.kind), m.id)]
    without = sorted({m.backend for m in managed if not capabilities[m.backend].grants})
    for backend in without:
        comparison.warnings.append(f"backend '{backend}': this server has no grants API; the manifest's grants "
                                   "there are not managed")
    managed = [m for m in managed if capabilities[m.backend].grants]
    replaced = [a for a in comparison.actions.kept() if a.kind == Kind.TABLE and a.verb == Verb.REPLACE
                and capabilities[a.backend].grants]
    if not managed and not replaced:
        return
    calls_before = {name: driver.api_calls for name, driver in drivers.items()}
    try:
        _plan(state, comparison, drivers, managed, replaced, parallelism, observed)
    finally:
        for name, driver in drivers.items():
            if api_calls is not None:
                api_calls[name] = api_calls.get(name, 0) + driver.api_calls - calls_before[name]


def _plan(state: DesiredState, comparison: Comparison, drivers: Drivers, managed: list[_Managed],
          replaced: list[Action], parallelism: int, observed: Observed | None) -> None:
    existing: set[GrantKey] = {(m.backend, m.kind, m.read_at) for m in managed if m.read_at is not None}
    live = _read(drivers, existing | {(a.backend, "table", tuple(a.current_id)) for a in replaced}, parallelism)
    records = _records(drivers, existing, parallelism, observed)
    planned: list[Action] = []
    for item in managed:
        key = (item.backend, item.kind, item.read_at) if item.read_at is not None else None
        held = live.get(key, {}) if key is not None else {}
        recorded = records.get(key) if key is not None else None
        changes = _actions(state, item, held, recorded)
        planned += changes
        planned += _record(state, item, recorded, changes)
        others = item.declared.others({} if item.fresh else held, recorded)
        if others:
            comparison.grants_left_alone.append(LeftAlone(
                kind=Kind(item.kind), backend=item.backend, id=list(item.id),
                display_id=state.backends[item.backend].format_id(item.id), reason=_describe(others)))
    for action in replaced:
        _warn_lost(state, action, live.get((action.backend, "table", tuple(action.current_id)), {}))
    comparison.notes += _parent_notes(state, managed, live, drivers, parallelism)
    comparison.actions += planned
    # an object's record after its grants and revokes
    comparison.actions.sort(key=lambda a: (*action_order(a), a.verb == Verb.RECORD, a.principal or "",
                                           a.verb.value))


def _managed(state: DesiredState, by_key: dict[str, Action]) -> list[_Managed]:
    found = [_Managed(ns.backend, "namespace", ns.id, ns.grants,
                      by_key.get(action_key(Kind.NAMESPACE, ns.backend, ns.id)), None)
             for ns in state.namespaces if ns.grants is not None]
    found += [_Managed(r.backend, "table", r.id, r.grants, by_key.get(action_key(Kind.TABLE, r.backend, r.id)),
                       table.name)
              for table in state.tables for r in table.registrations if r.grants is not None]
    return found


def _read(drivers: Drivers, keys: set[GrantKey], parallelism: int) -> dict[GrantKey, GrantMap]:
    """Each object's live grants; an object gone since it was seen holds none."""
    return _read_each(drivers, keys, parallelism, "grants", lambda driver, kind, id: driver.list_grants(kind, id), {})


def _records(drivers: Drivers, keys: set[GrantKey], parallelism: int,
             observed: Observed | None) -> dict[GrantKey, frozenset[str] | None]:
    """Each object's record of the principals lance-sync manages there (None: no record), from
    the properties the plan observed where it did, else read."""
    found: dict[GrantKey, frozenset[str] | None] = {}
    for key in keys:
        backend, kind, id = key
        place = drivers[backend].grants_record_place(kind, id)
        properties = observed(backend, Kind(place.kind), place.id) if observed is not None else None
        if properties is not None:
            found[key] = grants_record(properties.get(place.key))
    return {**found, **_read_each(drivers, keys - found.keys(), parallelism, "record of managed principals",
                                  lambda driver, kind, id: driver.grants_record(kind, id), None)}


def _read_each(drivers: Drivers, keys: set[GrantKey], parallelism: int, what: str,
               read_one: Callable[[SyncNamespace, Securable, Identifier], _Read],
               missing: _Read) -> dict[GrantKey, _Read]:
    """`read_one` of each object, on the pool; `missing` for an object gone since it was seen."""
    def read(key: GrantKey) -> _Read:
        backend, kind, id = key
        try:
            return with_retries(lambda: read_one(drivers[backend], kind, id), READ_RETRIES,
                                backend=backend, label=f"{what} of {kind} {id}")
        except (NamespaceNotFoundError, TableNotFoundError):
            return missing
        except LanceNamespaceError as error:
            raise ObserveError(f"backend '{backend}': reading the {what} on {kind} "
                               f"{drivers[backend].format_identifier(id)} failed: {type(error).__name__}: "
                               f"{error}") from error

    ordered = sorted(keys)
    if not ordered:
        return {}
    with ThreadPoolExecutor(max(1, min(parallelism, len(ordered)))) as pool:
        return dict(zip(ordered, pool.map(read, ordered), strict=True))


def _actions(state: DesiredState, item: _Managed, held: GrantMap,
             recorded: frozenset[str] | None) -> list[Action]:
    """One grant and/or revoke per principal whose privileges differ from the declared ones, and
    a revoke of everything a principal that left the manifest holds."""
    start = {} if item.fresh else held
    display = state.backends[item.backend].format_id(item.id)
    # what the guards compare at apply time: the object at its id now (none for one not there yet)
    at_id = item.read_at == item.id
    actions = []
    left = item.declared.left(recorded)
    for principal, (grant, revoke) in item.declared.changes(start, recorded).items():
        before_privileges = held.get(principal, frozenset())
        before = ObjectState(privileges=sorted(before_privileges)) if at_id else None
        common: dict[str, Any] = {"kind": Kind(item.kind), "backend": item.backend, "id": list(item.id), "display_id": display,
                  "before": before, "fingerprint": fingerprint(before, []), "principal": principal,
                  "table": item.table, "depends_on": [item.action.key] if item.action is not None else []}
        now = start.get(principal, frozenset())
        if grant:
            actions.append(Action(
                verb=Verb.GRANT, reason=Reason.ABSENT if item.fresh or not now else Reason.CHANGED,
                privileges=sorted(grant),
                after=ObjectState(privileges=sorted((now | grant) - revoke)),
                detail=_grant_detail(item, now, grant), **common))
        if revoke:
            reason, detail = _revoke_reason(item, principal, now, left)
            actions.append(Action(verb=Verb.REVOKE, reason=reason, privileges=sorted(revoke),
                                  after=ObjectState(privileges=sorted((now | grant) - revoke)),
                                  detail=detail, **common))
    return actions


def _revoke_reason(item: _Managed, principal: str, now: frozenset[str],
                   left: frozenset[str]) -> tuple[Reason, str]:
    if principal in item.declared.grants:
        return Reason.CHANGED, (f"declares {format_privileges(item.declared.grants[principal]) or 'no privileges'}"
                                f" for {principal}, who holds {format_privileges(now)}")
    if principal in left:
        return Reason.LEFT_GRANTS, f"principal {principal} left the manifest; lance-sync granted it"
    return Reason.UNDECLARED, f"{principal} is not declared and grants_mode is {AUTHORITATIVE}"


def _record(state: DesiredState, item: _Managed, recorded: frozenset[str] | None,
            changes: list[Action]) -> list[Action]:
    """The record action of an object whose record is not the principals the manifest names
    there: after its grants and revokes, it records them (the runner keeps any recorded one
    whose revoke did not happen)."""
    declared = sorted(item.declared.grants)
    if recorded is not None and recorded == frozenset(declared):
        return []
    names = ", ".join(declared) or "no principals"
    if item.action is not None and item.action.verb == Verb.CREATE:
        detail = f"records the principals lance-sync manages here: {names}"
    elif recorded is None:
        detail = (f"records the principals lance-sync manages here: {names} (no record yet: until it is "
                  "written, a principal removed from grants: keeps its privileges)")
    else:
        detail = f"records {names}; recorded: {', '.join(sorted(recorded)) or 'no principals'}"
    # what the guards compare at apply time: the record of the object at its id now
    before = ObjectState(principals=None if recorded is None else sorted(recorded)) \
        if item.read_at == item.id else None
    depends = [item.action.key] if item.action is not None else []
    return [Action(verb=Verb.RECORD, kind=Kind(item.kind), reason=Reason.ABSENT if recorded is None else Reason.CHANGED,
                   backend=item.backend, id=list(item.id), display_id=state.backends[item.backend].format_id(item.id),
                   detail=detail, before=before, after=ObjectState(principals=declared),
                   fingerprint=fingerprint(before, []), depends_on=depends + [a.key for a in changes],
                   table=item.table)]


def _grant_detail(item: _Managed, now: frozenset[str], grant: frozenset[str]) -> str:
    if item.fresh and item.action is not None:
        return f"declared; the {item.kind} is {item.action.verb.value}d first, with no grants"
    if now:
        return f"declared; holds {format_privileges(now)} only"
    return "declared, not granted"


def _warn_lost(state: DesiredState, action: Action, held: GrantMap) -> None:
    """A replaced table starts with no grants: say which live ones the manifest will not restore."""
    registration = next((r for t in state.tables for r in t.registrations
                         if r.backend == action.backend and list(r.id) == action.id), None)
    declared = registration.grants.grants if registration is not None and registration.grants else {}
    lost = {p: privileges - declared.get(p, frozenset()) for p, privileges in held.items()}
    lost = {p: privileges for p, privileges in lost.items() if privileges}
    if lost:
        action.warnings.append(f"the new table will not have these grants, which the manifest does not declare: "
                               f"{_describe(lost)}")
    elif declared:
        action.warnings.append("the declared grants are granted again on the new table")


def _parent_notes(state: DesiredState, managed: list[_Managed], live: dict[GrantKey, GrantMap],
                  drivers: Drivers, parallelism: int) -> list[str]:
    """Declared grants that are of no use until the principal holds a privilege on a parent."""
    declared_on = {(m.backend, m.id): m for m in managed if m.kind == "namespace"}
    needs = []
    for item in managed:
        spec = state.backends[item.backend]
        for need in spec.rules.parent_needs(item.kind, item.id, spec.config):
            for principal, privileges in item.declared.grants.items():
                if privileges:
                    needs.append((item, principal, need))
    # where a backend passes privileges down (Unity), one held on an ancestor of the parent counts
    places = {(item.backend, need): _holders(state, item.backend, need.id) for item, _, need in needs}
    unread: set[GrantKey] = {(backend, "namespace", id) for ids in places.values() for backend, id in ids
                             if (backend, id) not in declared_on}
    unread -= live.keys()
    live = {**live, **_read(drivers, unread, parallelism)}

    def holds(backend: str, id: Identifier) -> GrantMap:
        parent = declared_on.get((backend, id))
        if parent is not None:
            return _after(parent, live.get((backend, "namespace", parent.read_at or ()), {}))
        return live.get((backend, "namespace", id), {})

    missing: dict[tuple[str, str, ParentNeed], list[str]] = {}
    for item, principal, need in needs:
        if not any(holds(*place).get(principal, frozenset()) & need.any_of
                   for place in places[(item.backend, need)]):
            spec = state.backends[item.backend]
            missing.setdefault((item.backend, principal, need), []).append(f"{item.kind} {spec.format_id(item.id)}")
    return [f"{principal} holds no {need.shown} on {state.backends[backend].format_id(need.id)} in backend "
            f"'{backend}': what the manifest grants them on {', '.join(objects)} has no effect until they do "
            "(lance-sync does not grant it unasked)" for (backend, principal, need), objects in missing.items()]


def _holders(state: DesiredState, backend: str, id: Identifier) -> list[tuple[str, Identifier]]:
    """Where a privilege on namespace `id` may be held: `id`, and its ancestors where the
    backend's privileges pass down (`BackendRules.grants_inherit`)."""
    if not state.backends[backend].rules.grants_inherit:
        return [(backend, id)]
    return [(backend, id[:n]) for n in range(len(id), 0, -1)]


def _after(item: _Managed, held: GrantMap) -> GrantMap:
    """The grants an object will hold after the plan."""
    start = {} if item.fresh else held
    if item.declared.mode == AUTHORITATIVE:
        return dict(item.declared.grants)
    return {**start, **item.declared.grants}


def _describe(grants: GrantMap) -> str:
    return "; ".join(f"{p}: {format_privileges(privileges)}" for p, privileges in sorted(grants.items()))
