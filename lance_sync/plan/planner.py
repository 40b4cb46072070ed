"""From a desired state and its drivers to a Plan: observe, inspect data, compare; then limit
the plan to its targets and check it against the policy."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lance_sync import __version__
from lance_sync.drivers.base import Capabilities, Drivers, Identifier
from lance_sync.manifest.history import Baseline
from lance_sync.model.actions import (
    DATASET_PARTS,
    Action,
    DatasetStatus,
    Kind,
    Partial,
    Plan,
    ResolvedVariable,
    Scope,
    Verb,
)
from lance_sync.model.desired import DesiredState, DesiredTable
from lance_sync.model.errors import LanceSyncError, PlanConflicts
from lance_sync.model.locations import shown_path
from lance_sync.model.marks import owner_of
from lance_sync.model.policy import declared_subjects, enforce
from lance_sync.model.shared import DEFAULT_PARALLELISM, Progress
from lance_sync.model.table_state import LiveTableState
from lance_sync.plan.changes import ChangeScope, changed_scope, with_declared
from lance_sync.plan.compare import Comparison, compare
from lance_sync.plan.grants import plan_grants
from lance_sync.plan.in_sync import unchanged_tables, unmatched
from lance_sync.plan.observe import LiveState, PointObserver, merge_live, observe
from lance_sync.plan.select import leave_out, parse_targets, select_targets

if TYPE_CHECKING:
    import lance

    from lance_sync.data.inspection import LocationReport, OnOpen



def inspect_datasets(state: DesiredState, live: LiveState, drivers: Drivers,
                     progress: Progress | None = None) -> dict[str, DatasetStatus]:
    """What each table location of the manifest holds, and each location an owned table that
    left the manifest points at (thread pool; no Spark at plan time)."""
    statuses = inspect_declared_datasets(state, drivers, progress)
    statuses.update(_inspect_leaving_datasets(state, live, drivers, statuses))
    return statuses


def inspect_declared_datasets(state: DesiredState, drivers: Drivers, progress: Progress | None = None,
                              table_states: dict[str, LiveTableState] | None = None,
                              tables: Sequence[DesiredTable] | None = None) -> dict[str, DatasetStatus]:
    """What each table location of the manifest (or of `tables` of it) holds. It needs no live
    state, so a plan looks at the locations while it reads the catalogs (`read_state`). With
    `table_states`, the own state of each dataset whose table declares some is read into it
    from the dataset as the inspection opened it (one open each; see `read_table_states`)."""
    options_of = _storage_options(drivers)
    by_options: dict[tuple[tuple[str, str], ...], set[str]] = {}
    for table in state.tables if tables is None else tables:
        options = options_of[table.registrations[0].backend] if table.registrations else ()
        by_options.setdefault(options, set()).add(table.location)
    on_open = None
    if table_states is not None and (declared := _declared_states(state)):
        from lance_sync.data.table_state import read_opened_state

        def on_open(location: str, dataset: lance.LanceDataset) -> None:
            if location in declared:
                table_states[location] = read_opened_state(dataset, declared[location])
    return _inspect(by_options, progress, on_open)


def _declared_states(state: DesiredState) -> dict[str, dict]:
    """Each location whose table declares its own state (indexes, tags, retention): what it declares."""
    return {t.location: t.table_state for t in state.tables if t.table_state and t.registrations}


def _inspect_leaving_datasets(state: DesiredState, live: LiveState, drivers: Drivers,
                              known: dict[str, DatasetStatus],
                              locations: tuple[set[str], dict[str, str]] | None = None) -> dict[str, DatasetStatus]:
    """What each location of an owned table that left the manifest holds, and each location a
    declared table moves away from, with its size: what the move leaves there (unless known).
    `locations`: `_leaving_locations`, when worked out already."""
    options_of = _storage_options(drivers)
    removed, moved = locations or _leaving_locations(state, live)
    leaving = (removed | moved.keys()) - known.keys()
    if not leaving:
        return {}
    by_options: dict[tuple[tuple[str, str], ...], set[str]] = {}
    for (backend, _id), info in live.tables.items():
        if info.location is not None and info.location in leaving:
            by_options.setdefault(options_of[backend], set()).add(info.location)
    statuses = _inspect(by_options, None)
    from lance_sync.data.inspection import dataset_bytes

    for location in moved.keys() & statuses.keys():
        if statuses[location].status == "valid":
            size = dataset_bytes(location, dict(options_of[moved[location]]) or None)
            statuses[location] = statuses[location].model_copy(update={"bytes": size})
    return statuses


def _leaving_locations(state: DesiredState, live: LiveState) -> tuple[set[str], dict[str, str]]:
    """The live locations a plan may leave, in one pass over the live tables not in sync
    (lance_sync.plan.in_sync.unmatched): those of owned
    tables that left the manifest (their datasets are inspected too, so that a removal's
    fingerprint covers the data it would leave or delete), and those of declared registrations
    the manifest points elsewhere, each with its backend."""
    removed: set[str] = set()
    moved: dict[str, str] = {}
    for key, wanted in unmatched(state, live):  # a registration in sync neither leaves nor moves
        info = live.tables[key]
        location = info.location
        if not location:
            continue
        if wanted is None:
            if owner_of(info.properties) == state.owner:
                removed.add(location)
        elif wanted != location:
            moved[location] = key[0]
    return removed, moved


def _storage_options(drivers: Drivers) -> dict[str, tuple[tuple[str, str], ...]]:
    return {name: tuple(sorted(driver.storage_options().items())) for name, driver in drivers.items()}


#: locations inspected at a time, at least (`_chunks`): a report is an object for each, and a
#: million of them at once were the largest part of a large plan's read
INSPECT_CHUNK = 50_000


def _chunks(locations: list[str]) -> Iterator[list[str]]:
    """`locations` (sorted) INSPECT_CHUNK or more at a time, a chunk ending where their folder
    changes: the listing of a folder, which tells which of its locations exist, is made once."""
    begin = 0
    while begin < len(locations):
        end = min(begin + INSPECT_CHUNK, len(locations))
        folder = locations[end - 1].rstrip("/").rpartition("/")[0]
        while end < len(locations) and locations[end].rstrip("/").rpartition("/")[0] == folder:
            end += 1
        yield locations[begin:end]
        begin = end


def _inspect(by_options: dict[tuple[tuple[str, str], ...], set[str]], progress: Progress | None,
             on_open: OnOpen | None = None) -> dict[str, DatasetStatus]:
    from lance_sync.data.inspection import inspect_locations

    statuses = {}
    #: one status object for each distinct simple answer (a large plan's locations are mostly missing)
    simple: dict[tuple[str, str | None], DatasetStatus] = {}
    for option_items, location_set in by_options.items():
        if progress:
            progress(f"inspecting {len(location_set)} table location(s)")
        for chunk in _chunks(sorted(location_set)):
            reports = inspect_locations(chunk, storage_options=dict(option_items) or None, engine="threads",
                                        on_open=on_open)
            for location, report in zip(chunk, reports, strict=True):
                if report.status != "valid" and report.intent is None:
                    key = (report.status, report.error)
                    if key not in simple:
                        simple[key] = DatasetStatus(status=report.status, error=report.error)
                    statuses[location] = simple[key]
                    continue
                statuses[location] = dataset_status(report)
    return statuses


def dataset_status(report: LocationReport) -> DatasetStatus:
    """The plan's form of what inspecting a location found."""
    return DatasetStatus(status=report.status, version=report.version, row_count=report.row_count,
                         columns=report.columns, error=report.error, owner=report.owner, intent=report.intent)


@dataclass
class Observation:
    """What a plan is made from besides the manifest: the live catalogs, what each backend can
    change in place, what each table location holds, and the calls it took to read them."""

    live: LiveState
    capabilities: dict[str, Capabilities]
    datasets: dict[str, DatasetStatus]
    api_calls: dict[str, int]
    #: the own state (indexes, tags, versions) of each dataset whose table declares some
    table_states: dict[str, LiveTableState] = field(default_factory=dict)


def read_state(state: DesiredState, drivers: Drivers,
               parallelism: int = DEFAULT_PARALLELISM, progress: Progress | None = None,
               scan_all: bool = False, every_location: bool = True) -> Observation:
    """The catalogs read and the locations inspected: every declared location, or, without
    `every_location` (a plan's), the ones its comparison reads (`_read_first`)."""
    calls_before = {name: driver.api_calls for name, driver in drivers.items()}
    read_as_inspected: dict[str, LiveTableState] = {}
    if not every_location and _read_first(state, drivers):
        live = observe(state, drivers, parallelism, progress, scan_all)
        leaving = _leaving_locations(state, live)
        datasets = inspect_declared_datasets(state, drivers, progress, read_as_inspected,
                                             _compared_in_full(state, live, leaving))
        datasets.update(_inspect_leaving_datasets(state, live, drivers, datasets, leaving))
    else:
        with ThreadPoolExecutor(1, thread_name_prefix="inspect") as beside:
            declared = beside.submit(inspect_declared_datasets, state, drivers, progress, read_as_inspected)
            live = observe(state, drivers, parallelism, progress, scan_all)
            datasets = declared.result()
        datasets.update(_inspect_leaving_datasets(state, live, drivers, datasets))
    api_calls = {name: driver.api_calls - calls_before[name] for name, driver in drivers.items()}
    return Observation(live, _CapabilitiesOnDemand(drivers, api_calls), datasets, api_calls,
                       read_table_states(state, datasets, drivers, parallelism, read_as_inspected))


def _read_first(state: DesiredState, drivers: Drivers) -> bool:
    """Whether a plan reads the catalogs before it inspects the locations, to inspect only those
    of the tables the read does not show in sync: where every backend of the manifest is read in
    one snapshot (a `dir` root: one scan, short beside the inspections it spares; a catalog read
    call by call overlaps the inspection instead) and the plan keeps no row counts (a policy
    that reads them needs every dataset)."""
    return not state.policy.needs_rows and all(b in drivers and drivers[b].snapshot_reads for b in state.backends)


def _compared_in_full(state: DesiredState, live: LiveState,
                      leaving: tuple[set[str], dict[str, str]]) -> list[DesiredTable]:
    """The tables whose locations a plan inspects: those the read does not show in sync
    (lance_sync.plan.in_sync), those that declare their dataset's own state, and those at a
    location a live registration leaves (as `read_state` beside the read inspects them)."""
    left = leaving[0] | leaving[1].keys()
    return [t for t, same in zip(state.tables, unchanged_tables(state, live), strict=True)
            if not same or t.table_state or (left and t.location in left)]


def read_table_states(state: DesiredState, datasets: dict[str, DatasetStatus], drivers: Drivers,
                      parallelism: int = DEFAULT_PARALLELISM,
                      known: dict[str, LiveTableState] | None = None) -> dict[str, LiveTableState]:
    """The own state of each valid dataset whose table declares some (indexes, tags, retention),
    with its first registration's storage options; no other is opened. `known`: states read as
    the inspection opened the datasets (`inspect_declared_datasets`), not read again."""
    known = known or {}
    options_of = _storage_options(drivers)
    valid = [t for t in state.tables if t.table_state and t.registrations
             and (status := datasets.get(t.location)) is not None and status.status == "valid"]
    wanted = [(t.location, dict(options_of[t.registrations[0].backend]) or None, t.table_state or {})
              for t in valid if t.location not in known]
    states = {t.location: known[t.location] for t in valid if t.location in known}
    if wanted:
        from lance_sync.data.table_state import read_table_states as read

        states.update(read(wanted, parallelism))
    return states


class _CapabilitiesOnDemand(dict[str, Capabilities]):
    """Each driver's capabilities, asked for when the comparison first needs them: a Hive
    metastore's take a call, which a plan that finds everything in sync does without. Calls
    made for them count with the plan's (`api_calls`)."""

    def __init__(self, drivers: Drivers, api_calls: dict[str, int]):
        super().__init__()
        self.drivers = drivers
        self.api_calls = api_calls

    def __missing__(self, name: str) -> Capabilities:
        driver = self.drivers[name]
        before = driver.api_calls
        self[name] = driver.capabilities()
        self.api_calls[name] += driver.api_calls - before
        return self[name]


def build_plan(state: DesiredState, drivers: Drivers,
               parallelism: int = DEFAULT_PARALLELISM, progress: Progress | None = None,
               scan_all: bool = False, targets: Sequence[str] = (), enforce_policy: bool = True,
               baseline: Baseline | None = None) -> Plan:
    """The plan of a manifest; with `targets` (BACKEND:ID globs) only what they need; with a
    `baseline` only what changed since it (lance_sync.plan.changes); checked against the
    manifest's policy unless `enforce_policy` is False (reconcile checks the part it runs)."""
    chosen = parse_targets(targets, state)
    if chosen and baseline is not None:
        raise LanceSyncError("give --target or --changed-since, not both")
    if state.unbuilt is not None and baseline is None:
        raise LanceSyncError("internal error: a manifest loaded in part is planned only against its baseline")
    if baseline is not None:
        plan = plan_changes(changed_scope(baseline, state), drivers, parallelism, progress)
    else:
        plan = _made(state, read_state(state, drivers, parallelism, progress, scan_all, every_location=False),
                     drivers, parallelism)
    if chosen:
        declared = [(s.backend, s.display_id) for s in declared_subjects(state)]
        plan = select_targets(plan, chosen, declared, namespace_contents(state))
    if enforce_policy and state.policy:
        enforce(state.policy, plan, state)
    return plan


def namespace_contents(state: DesiredState) -> dict[tuple[str, str], list[str]]:
    """Per declared namespace (backend, display id), the display ids of the tables declared in it."""
    contents: dict[tuple[str, str], list[str]] = {
        (n.backend, state.backends[n.backend].format_id(n.id)): [] for n in state.namespaces}
    for table in state.tables:
        for r in table.registrations:
            namespace = (r.backend, state.backends[r.backend].format_id(r.id[:-1]))
            if namespace in contents:
                contents[namespace].append(state.backends[r.backend].format_id(r.id))
    return contents


def plan_changes(scope: ChangeScope, drivers: Drivers, parallelism: int = DEFAULT_PARALLELISM,
                 progress: Progress | None = None) -> Plan:
    """The plan of what changed since a revision (`scope`): read by id, compared, and marked
    partial; a removal the change does not ask for is left out and listed."""
    if scope.whole:
        plan = _made(scope.full, read_state(scope.full, drivers, parallelism, progress, every_location=False),
                     drivers, parallelism)
    else:
        observation = read_changes(scope, drivers, parallelism, progress)  # adds the entries it turns up
        plan = _made(scope.state, observation, drivers, parallelism)
    variables = [ResolvedVariable(**variable._asdict()) for variable in scope.baseline.now.variables]
    partial = Partial(by="changed_since", since=scope.baseline.shown, revision=scope.baseline.revision,
                      widened=scope.widened, variables=variables)
    plan = plan.model_copy(update={"partial": partial})
    if scope.whole:
        return plan
    # read by id, a backend kept in one place shows the owner's unchanged tables beside the
    # changed ones: they are not "outside the scope" a full plan would widen
    plan.scope = [s.model_copy(update={"owned_elsewhere": []}) for s in plan.scope]
    return leave_out(plan, lambda action: None if _asked_for(action, scope) else
                     f"not changed since {scope.baseline.shown} (a full plan removes it)")


def _made(state: DesiredState, observation: Observation, drivers: Drivers, parallelism: int) -> Plan:
    """The plan of what was read; PlanConflicts, with that plan, when something conflicts."""
    comparison = compare_all(state, observation, drivers, parallelism, strict=False)
    plan = assemble_plan(state, observation, comparison)
    if comparison.conflicts:
        raise PlanConflicts(comparison.conflicts, plan)
    return plan


def _asked_for(action: Action, scope: ChangeScope) -> bool:
    """A removal the change asks for (its entry left the manifest since the revision, or a part
    of a changed entry's dataset it declares removed), or not a removal."""
    if action.verb not in (Verb.FORGET, Verb.DELETE) or action.backend in scope.whole_backends \
            or action.kind in DATASET_PARTS:
        return True
    if action.kind in DATASET_PARTS:  # planned only for the tables the change names
        return True
    if action.kind == Kind.DATASET:
        return any((r.backend, tuple(r.id)) in scope.removals or r.backend in scope.whole_backends
                   for r in action.registrations)
    return (action.backend, tuple(action.id)) in scope.removals


def read_changes(scope: ChangeScope, drivers: Drivers, parallelism: int = DEFAULT_PARALLELISM,
                 progress: Progress | None = None) -> Observation:
    """What a plan since a revision reads: its objects by id, the listings of removed
    namespaces, and in full the backends whose configuration changed; then the entries of the
    manifest those reads turned up join the scope."""
    calls_before = {name: driver.api_calls for name, driver in drivers.items()}
    namespaces, tables = scope.read_by_id()
    live = PointObserver(scope.state, drivers, namespaces, tables, scope.removed_namespaces, parallelism,
                         progress).observe()
    if scope.whole_backends:
        whole = only_backends(scope.full, scope.whole_backends)
        live = merge_live(live, observe(whole, drivers, parallelism, progress))
    with_declared(scope, {key for key in live.namespaces}, {key for key in live.tables})
    datasets = inspect_datasets(scope.state, live, drivers, progress)
    api_calls = {name: driver.api_calls - calls_before[name] for name, driver in drivers.items()}
    return Observation(live, _CapabilitiesOnDemand(drivers, api_calls), datasets, api_calls,
                       read_table_states(scope.state, datasets, drivers, parallelism))


def only_backends(state: DesiredState, backends: set[str]) -> DesiredState:
    """The desired state of some backends only (tables keep their registrations there)."""
    tables = [dataclasses.replace(t, registrations=kept) for t in state.tables
              if (kept := tuple(r for r in t.registrations if r.backend in backends))]
    return dataclasses.replace(state, backends={n: s for n, s in state.backends.items() if n in backends},
                               namespaces=[ns for ns in state.namespaces if ns.backend in backends], tables=tables)


def compare_all(state: DesiredState, observation: Observation, drivers: Drivers,
                parallelism: int = DEFAULT_PARALLELISM, strict: bool = True) -> Comparison:
    """The objects compared (with `strict`, a PlanError on conflicts), then their grants, whose
    reads count with the plan's calls."""
    comparison = compare(state, observation.live, observation.capabilities, observation.datasets, strict,
                         observation.table_states)
    _warn_of_writes_without_engine(comparison, state)
    live = observation.live

    def found(backend: str, kind: Kind, id: Identifier) -> bool:
        return (backend, id) in (live.namespaces if kind == Kind.NAMESPACE else live.tables)

    def observed(backend: str, kind: Kind, id: Identifier) -> dict[str, str] | None:
        info = (live.namespaces if kind == Kind.NAMESPACE else live.tables).get((backend, id))
        return info.properties if info is not None else None

    plan_grants(state, comparison, drivers, observation.capabilities, parallelism, found, observation.api_calls,
                observed)
    return comparison


def _warn_of_writes_without_engine(comparison: Comparison, state: DesiredState) -> None:
    """A dataset to write from a source needs Spark: where it cannot start here (pyspark or
    Java missing), the plan names each such table and what to install. Apply still runs the
    rest; that write fails with the same words and what depends on it waits (the manifest's
    spark.master decides classic or Spark Connect)."""
    writes = [a for a in comparison.actions.kept() if a.kind == Kind.DATASET and a.after is not None and a.after.source]
    if not writes:
        return
    from lance_sync.model.engines import missing_engine

    problem = missing_engine((state.spark or {}).get("master"))
    for action in writes if problem else []:
        comparison.warnings.append(
            f"table '{action.table or action.shown_id}' is written from its source by Spark, "
            f"which cannot start here: {problem}. Apply runs the rest; this write fails and what depends on "
            "it waits.")


def assemble_plan(state: DesiredState, observation: Observation, comparison: Comparison) -> Plan:
    return Plan(
        tool_version=__version__,
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        owner=state.owner,
        manifest_files=[shown_path(f) for f in state.files],
        base_dir=state.base_dir,
        backends={name: dict(spec.template) for name, spec in state.backends.items()},
        spark=state.spark,
        actions=comparison.actions,
        left_alone=comparison.left_alone,
        grants_left_alone=comparison.grants_left_alone,
        adopted_unmarked=comparison.adopted_unmarked,
        notes=comparison.notes,
        warnings=observation.live.warnings + comparison.warnings,
        scope=_scope(state, observation.live),
        api_calls=observation.api_calls,
        dataset_rows={location: status.row_count for location, status in observation.datasets.items()
                      if status.row_count is not None} if state.policy.needs_rows else {},
    )


def _scope(state: DesiredState, live: LiveState) -> list[Scope]:
    """Per backend, the namespaces whose tables the plan listed, and the tables of this owner
    the manifest does not declare seen outside them (what --scan-all would plan)."""
    scanned: dict[str, list[str]] = {name: [] for name in state.backends}
    for backend, id in sorted(live.scanned):
        scanned[backend].append(state.backends[backend].format_id(id) or "(root)")
    elsewhere: dict[str, list[str]] = {name: [] for name in state.backends}
    declared = state.ids_by_backend() if live.beyond_scope else {}
    for (backend, id), info in sorted(live.beyond_scope.items()):
        if backend in elsewhere and id not in declared[backend] and owner_of(info.properties) == state.owner:
            elsewhere[backend].append(state.backends[backend].format_id(id))
    return [Scope(backend=name, namespaces=ids, complete=live.complete, owned_elsewhere=elsewhere[name])
            for name, ids in scanned.items()]
