"""The guards every plan passes before anything changes, whatever it came from (a fresh plan, a
saved one, a rollback).

Blocked actions and destruction without its flag are refused (`check_flags`), and every action
is checked against the live object it will touch (`check_live`): it must still match the
plan's fingerprint (a dataset's version included), must not have become protected, and must
still be this owner's; a rename's new id must still be free. Data is deleted or rewritten only
when the dataset carries this owner's record (lance-sync created it) and nothing else
registered, in any namespace of any backend the plan names, points at or into its location:
every registration is read again for that, and locations are compared as the filesystem
resolves them (through symbolic links).
An apply session (lance_sync.apply.session) runs them while it holds the backends' leases.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from lance_sync.apply.lease import touched_ids
from lance_sync.apply.live import OWN_STATE, current_fingerprint, inspected, live_state, read_object
from lance_sync.apply.options import ApplyOptions
from lance_sync.drivers.base import Drivers, Identifier, SyncNamespace, TableInfo
from lance_sync.model.actions import (
    DATASET_PARTS,
    Action,
    Destruction,
    Kind,
    Plan,
    Reason,
    Verb,
    fingerprint,
)
from lance_sync.model.errors import GuardRefusal
from lance_sync.model.locations import (
    LocationIndex,
    LocationResolver,
    overlap_relation,
    resolution_note,
)
from lance_sync.model.marks import describe_dataset_owner, is_protected, owner_of
from lance_sync.model.shared import DEFAULT_PARALLELISM
from lance_sync.model.table_state import part_owner

#: stale or blocked objects listed in a refusal before "... and N more"
LISTED = 20
STALE = "stale"


def check_flags(plan: Plan, options: ApplyOptions) -> None:
    """Refuse a plan that breaks its policy or has blocked actions, or that destroys what its
    flags do not allow."""
    if plan.policy_violations:
        raise GuardRefusal("refusing to apply: the plan breaks the policy\n" + "\n".join(
            f"  - rule '{v.rule}': {v.message}" for v in plan.policy_violations[:LISTED])
            + (f"\n  ... and {len(plan.policy_violations) - LISTED} more"
               if len(plan.policy_violations) > LISTED else ""))
    blocked = plan.blocked()
    if blocked:
        raise GuardRefusal("refusing to apply: the plan has blocked actions\n"
                           + _listed([(a, a.blocked) for a in blocked]))
    losing = plan.destroying(Destruction.DATA)
    if losing and not options.allow_drop:
        raise GuardRefusal("refusing to apply: these actions delete data or namespaces; "
                           "rerun with --allow-drop to allow them\n" + _listed([(a, None) for a in losing]))
    replacing = plan.destroying(Destruction.IDENTITY)
    if replacing and not options.allow_replace:
        raise GuardRefusal("refusing to apply: these tables would be replaced (deregistered and declared "
                           "again: a new table id, and any grants on them are lost); rerun with --allow-replace "
                           "to allow it\n" + _listed([(a, None) for a in replacing]))
    revoking = plan.destroying(Destruction.ACCESS)
    if revoking and not options.allow_revoke:
        raise GuardRefusal("refusing to apply: these actions revoke privileges; rerun with --allow-revoke to "
                           "allow them\n" + _listed([(a, None) for a in revoking]))


def check_live(plan: Plan, drivers: Drivers, *, include_creates: bool = True,
               parallelism: int = DEFAULT_PARALLELISM) -> None:
    """Refuse when an object an action touches changed since the plan, or may not be touched.

    Creates are exclusive everywhere, so a fresh plan (read under the lease) skips them;
    saved and rollback plans check everything.
    """
    checked = [a for a in plan.actions if include_creates or a.verb != Verb.CREATE]
    with ThreadPoolExecutor(max(1, parallelism)) as pool:
        problems = list(pool.map(lambda a: _live_problem(a, drivers, plan.owner), checked))
    shared = _shared_data(plan, drivers, parallelism)
    problems = [p if p not in (None, STALE) else shared.get(a.key, p) for a, p in zip(checked, problems, strict=True)]
    stale = [(a, None) for a, p in zip(checked, problems, strict=True) if p == STALE]
    forbidden = [(a, p) for a, p in zip(checked, problems, strict=True) if p not in (None, STALE)]
    if forbidden:
        raise GuardRefusal("refusing to apply: the live objects forbid these actions\n" + _listed(forbidden))
    if stale:
        raise GuardRefusal("the plan is stale: these objects changed since it was made; run "
                           "`lance-sync plan` again\n" + _listed(stale))


def _live_problem(action: Action, drivers: Drivers, owner: str) -> str | None:
    """STALE, a reason the action is forbidden, or None."""
    driver = drivers[action.backend]
    if action.kind in OWN_STATE:
        return _part_problem(action, driver, owner)
    if action.kind in (Kind.DATASET, Kind.COLUMN):  # the data at a location: a column's is its dataset's
        for address in action.registrations if action.removes else []:
            info = drivers[address.backend].get_table_info(tuple(address.id))
            if info is not None and is_protected(info.properties):
                return f"registration {address.backend}: {list(address.id)} is protected"
        report = inspected(action.location, driver) if action.destroys == Destruction.DATA else None
        if report is not None and report.status == "valid" and report.owner != owner:  # else: stale
            return (f"the dataset {describe_dataset_owner(report.owner)}; lance-sync deletes and rewrites only the "
                    f"datasets it created for '{owner}'")
    elif action.kind not in DATASET_PARTS:  # a part's live state is its fingerprint's
        live = read_object(action, driver)
        properties = live[1] if live else {}
        if action.verb != Verb.CREATE and live is not None:
            lifted = action.verb == Verb.REPLACE and action.after is not None \
                and not is_protected(action.after.properties)
            if is_protected(properties) and action.removes and not lifted:
                return "protected (lance_sync.protect=true)"
            live_owner = owner_of(properties)
            if live_owner is not None and live_owner != owner:
                return f"owned by '{live_owner}', not '{owner}'"
        if action.renamed_from is not None and read_object(action, driver, action.id) is not None:
            return f"{action.display_id} is registered already: the new name was taken since the plan"
    return None if current_fingerprint(action, driver) == action.fingerprint else STALE


def _part_problem(action: Action, driver: SyncNamespace, owner: str) -> str | None:
    """STALE, a reason the part action is forbidden, or None: old versions are removed only from
    a dataset lance-sync created; an index or tag is moved or removed only when this owner made
    it (a replace adopts one made outside lance-sync)."""
    live = live_state(action, driver)
    if action.kind == Kind.VERSIONS:
        report = inspected(action.location, driver)
        if report is not None and report.status == "valid" and report.owner != owner:
            return (f"the dataset {describe_dataset_owner(report.owner)}; lance-sync removes old versions only of "
                    f"the datasets it created for '{owner}'")
    elif live is not None and (action.removes or action.verb == Verb.UPDATE) and action.reason != Reason.ADOPT:
        made_by = part_owner(live)
        if made_by != owner:
            whose = f"lance-sync owner '{made_by}'" if made_by else "someone outside lance-sync"
            return f"{action.kind.value} '{action.part}' was made by {whose}, not for '{owner}'"
    return None if fingerprint(live, action.compared_keys) == action.fingerprint else STALE


def _shared_data(plan: Plan, drivers: Drivers, parallelism: int) -> dict[str, str]:
    """For each action that deletes or rewrites data: why it is forbidden when a registration
    that is not the action's own points at, into or around its location, once symbolic links are
    resolved. Every registration of every backend the plan names is read again, in every
    namespace (only when the plan destroys data)."""
    from lance_sync.plan.observe import read_every_registration

    destroying = [a for a in plan.actions if a.kind == Kind.DATASET and a.destroys == Destruction.DATA]
    if not destroying:
        return {}
    named = {name: drivers[name] for name in plan.backends if name in drivers}
    found = read_every_registration(named, _containers(plan, named), parallelism)
    resolve = LocationResolver()
    index = LocationIndex((resolve(info.location), key) for key, info in found.tables.items() if info.location)
    problems = {}
    for action in destroying:
        own = {(r.backend, tuple(r.id)) for r in action.registrations}
        location = action.location or ""
        others = sorted(key for key in index.overlapping(resolve(location)) if key not in own)
        if others:
            texts = "; ".join(_registration_text(location, key, found.tables[key], drivers, resolve)
                              for key in others[:3])
            more = f"; and {len(others) - 3} more" if len(others) > 3 else ""
            problems[action.key] = f"one asset per path: the location {texts}{more}"
    return problems


def _containers(plan: Plan, drivers: Drivers) -> dict[str, set[Identifier]]:
    """The first-level namespaces the plan names per backend (an Iceberg warehouse, a catalog),
    for backends whose root cannot be listed."""
    containers: dict[str, set[Identifier]] = defaultdict(set)
    for backend, ids in touched_ids(plan).items():
        containers[backend] |= {id[:1] for id in ids if id}
    for scope in plan.scope:
        if scope.backend in drivers:
            for namespace in scope.namespaces:
                if namespace != "(root)":
                    containers[scope.backend].add(drivers[scope.backend].parse_identifier(namespace)[:1])
    return containers


def _registration_text(location: str, key: tuple[str, Identifier], info: TableInfo,
                       drivers: Drivers, resolve: LocationResolver) -> str:
    backend, id = key
    owner = owner_of(info.properties)
    whose = f"owner '{owner}'" if owner else "no lance-sync owner mark"
    other = info.location or ""
    return (f"{overlap_relation(resolve(location), resolve(other))} the location of "
            f"{drivers[backend].format_identifier(id)} in backend '{backend}' ({whose})"
            + resolution_note((location, resolve(location)), (other, resolve(other))))


def _listed(items: Sequence[tuple[Action, str | None]]) -> str:
    """One line per action (and why), the first LISTED of them."""
    lines = [f"  - {a.headline}" + (f": {why}" if why else "") for a, why in items[:LISTED]]
    if len(items) > LISTED:
        lines.append(f"  ... and {len(items) - LISTED} more")
    return "\n".join(lines)
