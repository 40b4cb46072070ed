"""Carry out a plan.

Before anything changes: the guards (blocked actions, data loss without --allow-drop) and,
for a saved plan, the staleness check (every touched object is re-read and must still
match its fingerprint). Then actions run in parallel as soon as the actions they depend on
have succeeded; an action whose dependency failed is skipped. Every step is written to a
journal, and the inverses of what succeeded are written as a rollback plan that
`lance-sync apply` accepts like any saved plan.

Every action is idempotent from the planner's point of view: after a partial failure the
next plan sees what did happen and plans only the rest.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DropNamespaceRequest,
)
from lance_namespace.errors import TableNotFoundError

from lance_sync.arrow_types import schema_from_columns
from lance_sync.drivers.base import SyncNamespace
from lance_sync.errors import ExitCode, GuardRefusal
from lance_sync.locations import normalize_location
from lance_sync.plan.model import Action, ActionType, Plan, fingerprint, project

Status = Literal["succeeded", "failed", "skipped"]

#: declares sent in one request to a backend that takes them in bulk
DECLARE_BATCH_SIZE = 1000


@dataclass
class ApplyOptions:
    allow_drop: bool = False
    parallelism: int = 4
    #: --spark value, for create_table actions that read a source
    spark: str | None = None
    #: where journals and rollback plans are written
    state_dir: Path = Path(".lance-sync")


@dataclass
class Outcome:
    action: Action
    status: Status
    error: str | None = None


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


# --- guards ------------------------------------------------------------------------------------------

def check_guards(plan: Plan, allow_drop: bool) -> None:
    """Refuse a plan with blocked actions, or with data loss unless --allow-drop."""
    blocked = plan.blocked()
    if blocked:
        lines = [f"  - {a.action.value} {a.backend}: {a.display_id}: {a.blocked}" for a in blocked]
        raise GuardRefusal("refusing to apply: the plan has blocked actions\n" + "\n".join(lines)
                           + "\n(a protected object is removed only after `protect: false` is applied)")
    losing = plan.data_loss()
    if losing and not allow_drop:
        lines = [f"  - {a.action.value} {a.backend}: {a.display_id}" for a in losing]
        raise GuardRefusal("refusing to apply: these actions delete data or catalog objects; "
                           "rerun with --allow-drop to allow them\n" + "\n".join(lines))


def check_fresh(plan: Plan, drivers: dict[str, SyncNamespace], parallelism: int = 8) -> None:
    """Refuse a saved plan when an object it touches changed since it was made."""
    with ThreadPoolExecutor(max(1, parallelism)) as pool:
        current = list(pool.map(lambda a: _current_fingerprint(a, drivers[a.backend]), plan.actions))
    stale = [a for a, now in zip(plan.actions, current, strict=True) if now != a.fingerprint]
    if stale:
        lines = [f"  - {a.backend}: {a.display_id} ({a.action.value})" for a in stale[:20]]
        more = f"\n  ... and {len(stale) - 20} more" if len(stale) > 20 else ""
        raise GuardRefusal("the saved plan is stale: these objects changed since it was made; "
                           "run `lance-sync plan` again\n" + "\n".join(lines) + more)


def _current_fingerprint(action: Action, driver: SyncNamespace) -> str:
    id = tuple(action.id)
    if action.object == "namespace":
        info = driver.get_namespace_info(id)
        state = None if info is None else project(info.properties, None, action.compared_keys)
    else:
        info = driver.get_table_info(id)
        location = normalize_location(info.location) if info and info.location else None
        state = None if info is None else project(info.properties, location, action.compared_keys)
    return fingerprint(state, action.compared_keys)


# --- execution -------------------------------------------------------------------------------------

class Journal:
    """Append-only JSON lines: one per action start and end."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, event: str, action: Action | None = None, **details: object) -> None:
        record = {"time": _now(), "event": event, **details}
        if action is not None:
            record.update(action=action.action.value, backend=action.backend, id=action.id)
        with self._lock:
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


class ActionRunner:
    """How each action type changes a backend."""

    def __init__(self, plan: Plan, drivers: dict[str, SyncNamespace], options: ApplyOptions):
        self.plan = plan
        self.drivers = drivers
        self.options = options
        self._bulk_backends: dict[str, bool] = {}

    def run(self, action: Action) -> None:
        driver = self.drivers[action.backend]
        handler = {
            ActionType.CREATE_NAMESPACE: self._create_namespace,
            ActionType.UPDATE_NAMESPACE: self._update_properties,
            ActionType.DROP_NAMESPACE: self._drop_namespace,
            ActionType.DECLARE_TABLE: self._declare,
            ActionType.CREATE_TABLE: self._create_table,
            ActionType.UPDATE_TABLE: self._update_properties,
            ActionType.REPLACE_TABLE: self._replace,
            ActionType.DEREGISTER_TABLE: self._deregister,
            ActionType.DROP_TABLE: self._drop_table,
            ActionType.ADOPT: self._adopt,
        }[action.action]
        handler(action, driver)

    def batches(self, ready: list[Action]) -> list[list[Action]]:
        """Ready actions as units of work: declares for a bulk-capable backend go together."""
        units: list[list[Action]] = []
        bulk: dict[str, list[Action]] = defaultdict(list)
        for action in ready:
            if action.action == ActionType.DECLARE_TABLE and self._bulk(action.backend):
                bulk[action.backend].append(action)
            else:
                units.append([action])
        for actions in bulk.values():
            units += [actions[i:i + DECLARE_BATCH_SIZE] for i in range(0, len(actions), DECLARE_BATCH_SIZE)]
        return units

    def declare_batch(self, actions: list[Action]) -> list[Exception | None]:
        """One bulk declare; an error for the whole call is every action's error."""
        requests = [DeclareTableRequest(id=a.id, location=a.after.location, properties=a.after.properties)
                    for a in actions]
        try:
            return list(self.drivers[actions[0].backend].declare_tables(requests))
        except Exception as error:  # noqa: BLE001 - reported per action
            return [error] * len(actions)

    def _bulk(self, backend: str) -> bool:
        if backend not in self._bulk_backends:
            self._bulk_backends[backend] = self.drivers[backend].capabilities().bulk_declare
        return self._bulk_backends[backend]

    def _create_namespace(self, action: Action, driver: SyncNamespace) -> None:
        driver.create_namespace(CreateNamespaceRequest(id=action.id, mode="Create",
                                                       properties=action.after.properties))

    def _update_properties(self, action: Action, driver: SyncNamespace) -> None:
        if action.object == "table" and action.before.location != action.after.location:
            driver.update_table_location(tuple(action.id), action.after.location)
        before, after = action.before.properties, action.after.properties
        updates = {k: v for k, v in after.items() if before.get(k) != v}
        removals = sorted(k for k in before if k not in after)
        update = driver.update_namespace_properties if action.object == "namespace" else \
            driver.update_table_properties
        update(tuple(action.id), updates, removals)

    def _adopt(self, action: Action, driver: SyncNamespace) -> None:
        if action.method == "replace":
            self._replace(action, driver)
        else:
            self._update_properties(action, driver)

    def _drop_namespace(self, action: Action, driver: SyncNamespace) -> None:
        driver.drop_namespace(DropNamespaceRequest(id=action.id, mode="Fail", behavior="Restrict"))

    def _declare(self, action: Action, driver: SyncNamespace) -> None:
        driver.declare_table(DeclareTableRequest(id=action.id, location=action.after.location,
                                                 properties=action.after.properties))

    def _create_table(self, action: Action, driver: SyncNamespace) -> None:
        self._write_data(action, driver)
        if action.registers:
            self._declare(action, driver)

    def _write_data(self, action: Action, driver: SyncNamespace) -> None:
        after = action.after
        options = driver.storage_options() or None
        schema = schema_from_columns(after.columns) if after.columns else None
        if after.source:
            from lance_sync.data.materialize import materialize
            from lance_sync.data.spark import resolve_spark_settings

            settings = resolve_spark_settings(self.options.spark, self.plan.spark)
            materialize(after.source, after.location, schema, action.write_mode, settings,
                        storage_options=options)
        else:
            import lance

            lance.write_dataset(schema.empty_table(), after.location, mode=action.write_mode,
                                storage_options=options)

    def _replace(self, action: Action, driver: SyncNamespace) -> None:
        """Deregister and declare again (metadata only), carrying properties lance-sync does not manage."""
        id = tuple(action.id)
        current = driver.get_table_info(id)
        if current is None:
            self._declare(action, driver)
            return
        carried = {k: v for k, v in current.properties.items()
                   if k not in action.compared_keys and k != "table_type"}
        driver.deregister_table(DeregisterTableRequest(id=action.id))
        try:
            driver.declare_table(DeclareTableRequest(id=action.id, location=action.after.location,
                                                     properties={**carried, **action.after.properties}))
        except Exception:
            driver.declare_table(DeclareTableRequest(id=action.id, location=current.location,
                                                     properties=current.properties))
            raise

    def _deregister(self, action: Action, driver: SyncNamespace) -> None:
        driver.deregister_table(DeregisterTableRequest(id=action.id))

    def _drop_table(self, action: Action, driver: SyncNamespace) -> None:
        """Delete the data first, then the registration: a failure in between is re-planned as a drop."""
        from lance_sync.data.storage import open_storage

        location = action.before.location
        storage = open_storage(location, driver.storage_options() or None)
        path = storage.path(normalize_location(location))
        if storage.info(path).type.name != "NotFound":
            storage.filesystem.delete_dir(path)
        if action.registers is not False:
            with contextlib.suppress(TableNotFoundError):
                driver.deregister_table(DeregisterTableRequest(id=action.id))


def execute(plan: Plan, drivers: dict[str, SyncNamespace], options: ApplyOptions,
            on_done: Callable[[Outcome], None] | None = None) -> ApplyReport:
    """Run every action of a checked plan; independent actions in parallel."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    journal = Journal(options.state_dir / "journal" / f"apply-{stamp}.jsonl")
    journal.write("start", plan_owner=plan.owner, actions=len(plan.actions), pid=os.getpid())
    runner = ActionRunner(plan, drivers, options)
    report = ApplyReport(journal_path=journal.path)
    by_key = {a.key: a for a in plan.actions}
    dependents: dict[str, list[str]] = defaultdict(list)
    remaining: dict[str, int] = {}
    for action in plan.actions:
        needs = {d for d in action.depends_on if d in by_key}
        remaining[action.key] = len(needs)
        for need in needs:
            dependents[need].append(action.key)

    def finish(outcome: Outcome) -> None:
        report.outcomes.append(outcome)
        journal.write(outcome.status, outcome.action, error=outcome.error)
        if on_done:
            on_done(outcome)

    def attempt(batch: list[Action]) -> list[Outcome]:
        for action in batch:
            journal.write("started", action)
        if len(batch) > 1:
            return [Outcome(action, "failed" if error else "succeeded", _describe(error))
                    for action, error in zip(batch, runner.declare_batch(batch), strict=True)]
        try:
            runner.run(batch[0])
        except Exception as error:  # noqa: BLE001 - reported per action; the run goes on
            return [Outcome(batch[0], "failed", _describe(error))]
        return [Outcome(batch[0], "succeeded")]

    def skip_dependents(key: str) -> None:
        for dependent in dependents[key]:
            if remaining[dependent] >= 0:
                remaining[dependent] = -1
                finish(Outcome(by_key[dependent], "skipped", "an action it depends on did not succeed"))
                skip_dependents(dependent)

    with ThreadPoolExecutor(max(1, options.parallelism), thread_name_prefix="apply") as pool:
        def submit(ready: list[Action]) -> set:
            return {pool.submit(attempt, batch) for batch in runner.batches(ready)}

        running = submit([a for a in plan.actions if remaining[a.key] == 0])
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            ready: list[Action] = []
            for future in done:
                for outcome in future.result():
                    finish(outcome)
                    if outcome.status != "succeeded":
                        skip_dependents(outcome.action.key)
                        continue
                    for dependent in dependents[outcome.action.key]:
                        remaining[dependent] -= 1
                        if remaining[dependent] == 0:
                            ready.append(by_key[dependent])
            running |= submit(ready)
    finished = {o.action.key for o in report.outcomes}
    for action in plan.actions:
        if action.key not in finished:
            finish(Outcome(action, "skipped", "its dependencies form a cycle"))
    journal.write("end", succeeded=len(report.with_status("succeeded")),
                  failed=len(report.with_status("failed")), skipped=len(report.with_status("skipped")))
    journal.close()
    report.rollback_path = write_rollback(plan, report, journal.path.with_suffix(".rollback.json"))
    return report


def _describe(error: Exception | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


def rollback_plan(plan: Plan, report: ApplyReport) -> Plan:
    """The inverses of the succeeded actions, ordered so that undoing runs opposite to doing."""
    succeeded = [o.action for o in report.outcomes if o.status == "succeeded"]
    keys = {id(a): a.key for a in succeeded}
    inverses = {keys[id(a)]: a.inverse() for a in succeeded}
    dependents: dict[str, list[str]] = defaultdict(list)
    for action in succeeded:
        for need in action.depends_on:
            dependents[need].append(keys[id(action)])
    actions = []
    notes = []
    for action in reversed(succeeded):
        inverse = inverses[keys[id(action)]]
        if inverse is None:
            notes.append(f"{action.action.value} {action.backend}: {action.display_id} cannot be undone")
            continue
        inverse.depends_on = sorted(inverses[k].key for k in dependents[keys[id(action)]]
                                    if inverses.get(k) is not None)
        actions.append(inverse)
    return plan.model_copy(update={
        "actions": actions, "left_alone": [], "warnings": notes, "api_calls": {},
        "created_at": _now()})


def write_rollback(plan: Plan, report: ApplyReport, path: Path) -> Path | None:
    rollback = rollback_plan(plan, report)
    if not rollback.actions and not rollback.warnings:
        return None
    path.write_text(rollback.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
