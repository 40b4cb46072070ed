"""Carry out a plan.

Before anything changes, one set of guards runs for every plan, whatever it came from (a
fresh plan, a saved one, a rollback): blocked actions and destruction without its flag
are refused (`check_flags`), and every action is checked against the live object it will
touch (`check_live`): it must still match the plan's fingerprint (a dataset's version
included), must not have become protected, and must still be this owner's. Data is deleted
or rewritten only when the dataset carries this owner's record (lance-sync created it) and
nothing else registered, in any namespace of any backend the plan names, points at or into
its location: every registration is read again for that. Apply holds the backends' leases
(lance_sync.apply.lease) while it checks and runs.

Then the `Scheduler` runs actions in parallel as soon as the actions they depend on have
succeeded, skipping what depends on a failure; the `ActionRunner` says how each (kind,
verb) changes a backend. A transient failure is retried; a retried create that meets
"already exists" (or a removal that meets "not found") is checked against the live object
and counted as done when it matches. Every step is journalled, and the inverses of what
succeeded are written as a rollback plan that `lance-sync apply` checks like any other.
"""

from __future__ import annotations

import datetime
import json
import os
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DropNamespaceRequest,
)
from lance_namespace.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from lance_sync.drivers.base import Drivers, Identifier, SyncNamespace, TableInfo
from lance_sync.drivers.support.retry import backoff_seconds, is_transient
from lance_sync.model.actions import (
    Action,
    Destruction,
    Kind,
    ObjectState,
    Plan,
    Verb,
    fingerprint,
    project,
)
from lance_sync.model.arrow_types import schema_from_columns
from lance_sync.model.errors import ExitCode, GuardRefusal, PlanError
from lance_sync.model.locations import LocationIndex, normalize_location, overlap_relation
from lance_sync.model.marks import TABLE_TYPE_KEY, describe_dataset_owner, is_protected, owner_of
from lance_sync.model.secrets import mask
from lance_sync.model.shared import DEFAULT_PARALLELISM

if TYPE_CHECKING:
    import pyarrow as pa

    from lance_sync.data.inspection import LocationReport

Status = Literal["succeeded", "failed", "skipped"]

#: declares sent in one request to a backend that takes them in bulk
DECLARE_BATCH_SIZE = 1000
#: times an action is sent again after a transient failure
ACTION_RETRIES = 2
#: stale or blocked objects listed in a refusal before "... and N more"
LISTED = 20
STALE = "stale"


class StopSignal(Protocol):
    """Set when an apply must start nothing more (a threading.Event is one)."""

    def is_set(self) -> bool: ...


@dataclass
class ApplyOptions:
    allow_drop: bool = False
    allow_replace: bool = False
    parallelism: int = DEFAULT_PARALLELISM
    #: --spark value, for dataset writes that read a source
    spark: str | None = None
    #: where journals and rollback plans are written
    state_dir: Path = Path(".lance-sync")
    action_retries: int = ACTION_RETRIES


@dataclass
class Outcome:
    action: Action
    status: Status
    error: str | None = None
    #: the failure may pass if the apply is run again (unavailable, throttled, cut-off answer)
    transient: bool = False
    #: a dataset write: the version it committed (what a rollback must find to delete it)
    version: int | None = None


@dataclass
class ApplyReport:
    outcomes: list[Outcome] = field(default_factory=list)
    journal_path: Path | None = None
    rollback_path: Path | None = None

    def with_status(self, status: Status) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status]

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if not self.with_status("failed") and not self.with_status("skipped") \
            else ExitCode.PARTIAL_APPLY

    @property
    def rerun_converges(self) -> bool:
        """Every failure was transient: running apply again can finish the job."""
        return all(o.transient for o in self.with_status("failed"))


# --- guards ------------------------------------------------------------------------------------------

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
                           "again: a new table id, and their grants are lost); rerun with --allow-replace "
                           "to allow it\n" + _listed([(a, None) for a in replacing]))


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
    if action.kind == Kind.DATASET:
        for address in action.registrations if action.removes else []:
            info = drivers[address.backend].get_table_info(tuple(address.id))
            if info is not None and is_protected(info.properties):
                return f"registration {address.backend}: {list(address.id)} is protected"
        report = _inspected(action.location, driver) if action.destroys == Destruction.DATA else None
        if report is not None and report.status == "valid" and report.owner != owner:  # else: stale
            return (f"the dataset {describe_dataset_owner(report.owner)}; lance-sync deletes and rewrites only the "
                    f"datasets it created for '{owner}'")
    else:
        live = _read_object(action, driver)
        properties = live[1] if live else {}
        if action.verb != Verb.CREATE and live is not None:
            lifted = action.verb == Verb.REPLACE and action.after is not None \
                and not is_protected(action.after.properties)
            if is_protected(properties) and action.removes and not lifted:
                return "protected (lance_sync.protect=true)"
            live_owner = owner_of(properties)
            if live_owner is not None and live_owner != owner:
                return f"owned by '{live_owner}', not '{owner}'"
    return None if current_fingerprint(action, driver) == action.fingerprint else STALE


def current_fingerprint(action: Action, driver: SyncNamespace) -> str:
    return fingerprint(live_state(action, driver), action.compared_keys)


def live_state(action: Action, driver: SyncNamespace) -> ObjectState | None:
    """The live counterpart of `action.before`: what its fingerprint was computed from."""
    if action.kind == Kind.DATASET:
        version = dataset_version(action.location, driver)
        return None if version is None else ObjectState(location=action.location, version=version)
    live = _read_object(action, driver)
    if live is None:
        return None
    location, properties = live
    state = project(properties, location, action.compared_keys)
    if action.kind == Kind.TABLE and action.verb == Verb.FORGET:
        state.version = dataset_version(location, driver)
    return state


def _read_object(action: Action, driver: SyncNamespace) -> tuple[str | None, dict[str, str]] | None:
    id = tuple(action.id)
    if action.kind == Kind.NAMESPACE:
        info = driver.get_namespace_info(id)
        return None if info is None else (None, info.properties)
    table = driver.get_table_info(id)
    if table is None:
        return None
    return (normalize_location(table.location) if table.location else None), table.properties


def dataset_version(location: str | None, driver: SyncNamespace) -> int | None:
    """The Lance version at a location; None when there is no dataset. Unreadable storage raises."""
    report = _inspected(location, driver)
    return report.version if report is not None and report.status == "valid" else None


def _inspected(location: str | None, driver: SyncNamespace) -> LocationReport | None:
    if not location:
        return None
    from lance_sync.data.inspection import inspect_location

    report = inspect_location(location, driver.storage_options() or None)
    if report.status == "unreachable":
        raise GuardRefusal(f"cannot read {location} to check the plan against it: {report.error}")
    return report


def _shared_data(plan: Plan, drivers: Drivers, parallelism: int) -> dict[str, str]:
    """For each action that deletes or rewrites data: why it is forbidden when a registration
    that is not the action's own points at, into or around its location. Every registration of
    every backend the plan names is read again, in every namespace (only when the plan
    destroys data)."""
    from lance_sync.plan.observe import read_every_registration

    destroying = [a for a in plan.actions if a.kind == Kind.DATASET and a.destroys == Destruction.DATA]
    if not destroying:
        return {}
    named = {name: drivers[name] for name in plan.backends if name in drivers}
    found = read_every_registration(named, _containers(plan, named), parallelism)
    index = LocationIndex((info.location, key) for key, info in found.tables.items() if info.location)
    problems = {}
    for action in destroying:
        own = {(r.backend, tuple(r.id)) for r in action.registrations}
        location = action.location or ""
        others = sorted(key for key in index.overlapping(location) if key not in own)
        if others:
            texts = "; ".join(_registration_text(location, key, found.tables[key], drivers) for key in others[:3])
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
                       drivers: Drivers) -> str:
    backend, id = key
    owner = owner_of(info.properties)
    whose = f"owner '{owner}'" if owner else "no lance-sync owner mark"
    return (f"{overlap_relation(location, info.location or '')} the location of "
            f"{drivers[backend].format_identifier(id)} in backend '{backend}' ({whose})")


def _listed(items: Sequence[tuple[Action, str | None]]) -> str:
    """One line per action (and why), the first LISTED of them."""
    lines = [f"  - {a.name} {a.backend}: {a.display_id}" + (f": {why}" if why else "") for a, why in items[:LISTED]]
    if len(items) > LISTED:
        lines.append(f"  ... and {len(items) - LISTED} more")
    return "\n".join(lines)


# --- how each action changes a backend ---------------------------------------------------------------

class ActionRunner:
    """The backend calls of each (kind, verb); a retried write checked against the live object."""

    def __init__(self, plan: Plan, drivers: Drivers, options: ApplyOptions, apply: str = ""):
        self.plan = plan
        self.drivers = drivers
        self.options = options
        #: this apply, as its journal names it: recorded in the intent record of each dataset it writes
        self.apply = apply
        self._bulk_backends: dict[str, bool] = {}
        self._handlers: dict[tuple[Kind, Verb], Callable[[Action, SyncNamespace], int | None]] = {
            (Kind.NAMESPACE, Verb.CREATE): self._create_namespace,
            (Kind.NAMESPACE, Verb.UPDATE): self._update_properties,
            (Kind.NAMESPACE, Verb.DELETE): self._delete_namespace,
            (Kind.TABLE, Verb.CREATE): self._declare,
            (Kind.TABLE, Verb.UPDATE): self._update_properties,
            (Kind.TABLE, Verb.REPLACE): self._replace,
            (Kind.TABLE, Verb.FORGET): self._forget,
            (Kind.DATASET, Verb.CREATE): self._write_data,
            (Kind.DATASET, Verb.REPLACE): self._write_data,
            (Kind.DATASET, Verb.DELETE): self._delete_data,
        }

    def run(self, action: Action) -> Outcome:
        """Run one action; transient failures are retried, each retry reconciled with the live
        object. Never raises: a failure, reconciling included, is the action's outcome."""
        driver = self.drivers[action.backend]
        attempt = 0
        while True:
            try:
                return self._attempt(action, driver)
            except Exception as error:  # noqa: BLE001 - reported per action; the run goes on
                if not is_transient(error) or attempt >= self.options.action_retries:
                    return _failed(action, error)
            time.sleep(backoff_seconds(attempt))
            attempt += 1

    def _attempt(self, action: Action, driver: SyncNamespace) -> Outcome:
        """One try; a create that meets its object, or a removal that misses it, is checked
        against the live object (a read that may itself fail transiently and be tried again)."""
        try:
            version = self._handlers[(action.kind, action.verb)](action, driver)
            return Outcome(action, "succeeded", version=version)
        except (TableAlreadyExistsError, NamespaceAlreadyExistsError) as error:
            # a create whose first answer was lost and that was sent again (by us or the
            # driver's client) meets its own object
            if action.verb == Verb.CREATE and self._matches_after(action, driver):
                return Outcome(action, "succeeded")
            return _failed(action, error)
        except (TableNotFoundError, NamespaceNotFoundError) as error:
            if action.verb in (Verb.FORGET, Verb.DELETE) and live_state(action, driver) is None:
                return Outcome(action, "succeeded")
            return _failed(action, error)

    def batches(self, ready: list[Action]) -> list[list[Action]]:
        """Ready actions as units of work: declares for a bulk-capable backend go together."""
        units: list[list[Action]] = []
        bulk: dict[str, list[Action]] = defaultdict(list)
        for action in ready:
            if action.kind == Kind.TABLE and action.verb == Verb.CREATE and self._bulk(action.backend):
                bulk[action.backend].append(action)
            else:
                units.append([action])
        for actions in bulk.values():
            units += [actions[i:i + DECLARE_BATCH_SIZE] for i in range(0, len(actions), DECLARE_BATCH_SIZE)]
        return units

    def run_batch(self, actions: list[Action]) -> list[Outcome]:
        """One bulk declare; an action whose part failed transiently is run again on its own."""
        if len(actions) == 1:
            return [self.run(actions[0])]
        requests = [_declare_request(a) for a in actions]
        try:
            errors: list[Exception | None] = list(self.drivers[actions[0].backend].declare_tables(requests))
        except Exception as error:  # noqa: BLE001 - reported per action
            errors = [error] * len(actions)
        return [Outcome(a, "succeeded") if e is None else (self.run(a) if is_transient(e) else _failed(a, e))
                for a, e in zip(actions, errors, strict=True)]

    def _bulk(self, backend: str) -> bool:
        if backend not in self._bulk_backends:
            self._bulk_backends[backend] = self.drivers[backend].capabilities().bulk_declare
        return self._bulk_backends[backend]

    def _matches_after(self, action: Action, driver: SyncNamespace) -> bool:
        """A create that met an existing object: done when that object is what it would have made."""
        live = live_state(action, driver)
        return live is not None and action.after is not None and \
            project(live.properties, live.location, action.compared_keys) == \
            project(action.after.properties, action.after.location, action.compared_keys)

    # --- handlers ------------------------------------------------------------------------------------

    def _create_namespace(self, action: Action, driver: SyncNamespace) -> None:
        driver.create_namespace(CreateNamespaceRequest(id=action.id, mode="Create",
                                                       properties=_after(action).properties))

    def _update_properties(self, action: Action, driver: SyncNamespace) -> None:
        location = _after(action).location
        if action.kind == Kind.TABLE and location is not None and _before(action).location != location:
            driver.update_table_location(tuple(action.id), location)
        before, after = _before(action).properties, _after(action).properties
        updates = {k: v for k, v in after.items() if before.get(k) != v}
        removals = sorted(k for k in before if k not in after)
        update = driver.update_namespace_properties if action.kind == Kind.NAMESPACE else \
            driver.update_table_properties
        update(tuple(action.id), updates, removals)

    def _delete_namespace(self, action: Action, driver: SyncNamespace) -> None:
        driver.drop_namespace(DropNamespaceRequest(id=action.id, mode="Fail", behavior="Restrict"))

    def _declare(self, action: Action, driver: SyncNamespace) -> None:
        driver.declare_table(_declare_request(action))

    def _replace(self, action: Action, driver: SyncNamespace) -> None:
        """Deregister and declare again, carrying the properties lance-sync does not manage;
        if the declare fails, the table is put back as it was."""
        id = tuple(action.id)
        current = driver.get_table_info(id)
        if current is None:
            self._declare(action, driver)
            return
        carried = {k: v for k, v in current.properties.items()
                   if k not in action.compared_keys and k != TABLE_TYPE_KEY}
        driver.deregister_table(DeregisterTableRequest(id=action.id))
        after = _after(action)
        try:
            driver.declare_table(DeclareTableRequest(id=action.id, location=after.location,
                                                     properties={**carried, **after.properties}))
        except Exception:
            driver.declare_table(DeclareTableRequest(id=action.id, location=current.location,
                                                     properties=current.properties))
            raise

    def _forget(self, action: Action, driver: SyncNamespace) -> None:
        driver.deregister_table(DeregisterTableRequest(id=action.id))

    def _write_data(self, action: Action, driver: SyncNamespace) -> int:
        """Write the dataset all or nothing (create, or overwrite on a schema mismatch, see
        lance_sync.data.datasets); returns its new version."""
        from lance_sync.data.datasets import write_dataset

        location = _dataset_location(action)
        after = _after(action)
        mode: Literal["create", "overwrite"] = "overwrite" if action.verb == Verb.REPLACE else "create"
        options = driver.storage_options() or None
        schema = schema_from_columns(after.columns) if after.columns else None
        if not after.source and schema is None:
            raise PlanError(f"{action.name} {location}: the plan gives neither a schema nor a source")
        source = after.source

        def write(at: str, write_mode: Literal["create", "overwrite"], target: pa.Schema | None) -> None:
            if source:
                from lance_sync.data.materialize import materialize
                from lance_sync.data.session import SPARK_LOG, resolve_spark_settings

                settings = resolve_spark_settings(self.options.spark, self.plan.spark,
                                                  log_file=self.options.state_dir / SPARK_LOG)
                materialize(source, at, target, write_mode, settings, storage_options=options, owner=self.plan.owner)
            else:
                import lance

                assert target is not None
                lance.write_dataset(target.empty_table(), at, mode=write_mode, storage_options=options)

        return write_dataset(location, mode=mode, owner=self.plan.owner, apply=self.apply, schema=schema,
                             write=write, storage_options=options)

    def _delete_data(self, action: Action, driver: SyncNamespace) -> None:
        from lance_sync.data.datasets import delete_dataset

        delete_dataset(_dataset_location(action), owner=self.plan.owner,
                       storage_options=driver.storage_options() or None)


def _declare_request(action: Action) -> DeclareTableRequest:
    after = _after(action)
    return DeclareTableRequest(id=action.id, location=after.location, properties=after.properties)


def _after(action: Action) -> ObjectState:
    """The state the action leads to, which every create, update and replace has."""
    if action.after is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no state to reach")
    return action.after


def _dataset_location(action: Action) -> str:
    """A dataset action's address: the location it writes or deletes."""
    if action.location is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no location")
    return action.location


def _before(action: Action) -> ObjectState:
    """The state the action starts from, which every update, replace and removal has."""
    if action.before is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no state to start from")
    return action.before


def _failed(action: Action, error: Exception) -> Outcome:
    transient = is_transient(error) or isinstance(error, ConnectionError | TimeoutError)
    return Outcome(action, "failed", f"{type(error).__name__}: {error}", transient=transient)


# --- order and parallelism -------------------------------------------------------------------------

class Scheduler:
    """Runs units of work as soon as what they depend on succeeded; skips what depends on a failure."""

    def __init__(self, actions: list[Action], parallelism: int):
        self.by_key = {a.key: a for a in actions}
        self.parallelism = max(1, parallelism)
        self.dependents: dict[str, list[str]] = defaultdict(list)
        self.waiting: dict[str, int] = {}
        for action in actions:
            needs = {d for d in action.depends_on if d in self.by_key}
            self.waiting[action.key] = len(needs)
            for need in needs:
                self.dependents[need].append(action.key)

    def run(self, runner: ActionRunner, finish: Callable[[Outcome], None],
            stop: StopSignal | None = None) -> None:
        """Each unit of work goes to the pool as soon as it is ready; finished units come back
        through a queue (waiting on the set of running futures instead costs a pass over all of
        them per finished unit: quadratic with 10,000 declares in flight)."""
        finished: set[str] = set()
        done: queue.SimpleQueue[Future[list[Outcome]]] = queue.SimpleQueue()
        running = 0

        def record(outcome: Outcome) -> None:
            finished.add(outcome.action.key)
            finish(outcome)

        with ThreadPoolExecutor(self.parallelism, thread_name_prefix="apply") as pool:
            def submit(ready: list[Action]) -> None:
                nonlocal running
                if stop is not None and stop.is_set():
                    for action in ready:
                        record(Outcome(action, "skipped", "the apply was told to stop (its lease was lost, or "
                                                        "SIGTERM); nothing more was started"))
                    return
                for batch in runner.batches(ready):
                    pool.submit(runner.run_batch, batch).add_done_callback(done.put)
                    running += 1

            submit([a for a in self.by_key.values() if self.waiting[a.key] == 0])
            while running:
                future = done.get()
                running -= 1
                ready: list[Action] = []
                for outcome in future.result():
                    record(outcome)
                    if outcome.status == "succeeded":
                        ready += self._released(outcome.action.key)
                    else:
                        self._skip_dependents(outcome.action.key, record)
                submit(ready)
        for key, action in self.by_key.items():
            if key not in finished:
                record(Outcome(action, "skipped", "its dependencies form a cycle"))

    def _released(self, key: str) -> list[Action]:
        ready = []
        for dependent in self.dependents[key]:
            self.waiting[dependent] -= 1
            if self.waiting[dependent] == 0:
                ready.append(self.by_key[dependent])
        return ready

    def _skip_dependents(self, key: str, record: Callable[[Outcome], None]) -> None:
        for dependent in self.dependents[key]:
            if self.waiting[dependent] >= 0:
                self.waiting[dependent] = -1
                record(Outcome(self.by_key[dependent], "skipped", "an action it depends on did not succeed"))
                self._skip_dependents(dependent, record)


# --- journal and rollback --------------------------------------------------------------------------

class Journal:
    """Append-only JSON lines: one per action start and end, masked (`lance_sync.model.secrets`)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, event: str, action: Action | None = None, **details: object) -> None:
        record = {"time": _now(), "event": event, **details}
        if action is not None:
            record.update(verb=action.verb.value, kind=action.kind.value, backend=action.backend,
                          id=action.id, display_id=action.display_id)
        with self._lock:
            self._file.write(mask(json.dumps(record, ensure_ascii=False)) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def execute(plan: Plan, drivers: Drivers, options: ApplyOptions,
            on_done: Callable[[Outcome], None] | None = None, stop: StopSignal | None = None) -> ApplyReport:
    """Run every action of a checked plan; independent actions in parallel."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    journal = Journal(options.state_dir / "journal" / f"apply-{stamp}.jsonl")
    journal.write("start", plan_owner=plan.owner, actions=len(plan.actions), pid=os.getpid())
    report = ApplyReport(journal_path=journal.path)
    lock = threading.Lock()

    def finish(outcome: Outcome) -> None:
        with lock:
            report.outcomes.append(outcome)
        journal.write(outcome.status, outcome.action, error=outcome.error, version=outcome.version)
        if on_done:
            on_done(outcome)

    try:
        Scheduler(plan.actions, options.parallelism).run(ActionRunner(plan, drivers, options, stamp), finish, stop)
    finally:
        journal.write("end", succeeded=len(report.with_status("succeeded")),
                      failed=len(report.with_status("failed")), skipped=len(report.with_status("skipped")))
        journal.close()
    report.rollback_path = write_rollback(plan, report, journal.path.with_suffix(".rollback.json"))
    return report


def rollback_plan(plan: Plan, report: ApplyReport) -> Plan:
    """The inverses of the succeeded actions, ordered so that undoing runs opposite to doing."""
    succeeded = [o for o in report.outcomes if o.status == "succeeded"]
    # the version of each dataset after the apply: a rollback that forgets or deletes it is
    # stale once newer data is written
    versions = {o.action.location: o.version for o in succeeded if o.action.kind == Kind.DATASET}
    inverses: dict[str, Action | None] = {}
    for outcome in succeeded:
        inverse = outcome.action.inverse()
        if inverse is not None and inverse.verb in (Verb.FORGET, Verb.DELETE) and inverse.kind != Kind.NAMESPACE:
            known = outcome.action.dataset.version if outcome.action.dataset is not None else None
            _before(inverse).version = versions.get(inverse.location, known)
            inverse.fingerprint = fingerprint(inverse.before, inverse.compared_keys)
        inverses[outcome.action.key] = inverse
    dependents: dict[str, list[str]] = defaultdict(list)
    for outcome in succeeded:
        for need in outcome.action.depends_on:
            dependents[need].append(outcome.action.key)
    actions, notes = [], []
    for outcome in reversed(succeeded):
        action, inverse = outcome.action, inverses[outcome.action.key]
        if inverse is None:
            notes.append(f"{action.name} {action.backend}: {action.display_id} cannot be undone")
            continue
        needed = (inverses.get(k) for k in dependents[action.key])
        inverse.depends_on = sorted(need.key for need in needed if need is not None)
        actions.append(inverse)
    return plan.model_copy(update={
        "actions": actions, "left_alone": [], "adopted_unmarked": [], "notes": [], "warnings": notes,
        "api_calls": {}, "created_at": _now(), "policy_violations": [], "partial": None})


def write_rollback(plan: Plan, report: ApplyReport, path: Path) -> Path | None:
    """The rollback plan, masked like a saved plan (its secrets are `${VAR}` references)."""
    rollback = rollback_plan(plan, report)
    if not rollback.actions and not rollback.warnings:
        return None
    path.write_text(mask(rollback.model_dump_json(indent=2)) + "\n", encoding="utf-8")
    return path


def touched_ids(plan: Plan) -> dict[str, set[tuple[str, ...]]]:
    """Per backend, the ids a plan's actions touch: where its leases must be held."""
    touched: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for action in plan.actions:
        if action.id:
            touched[action.backend].add(tuple(action.id))
        for address in action.registrations:
            touched[address.backend].add(tuple(address.id))
    return touched


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")

