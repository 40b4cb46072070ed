"""`lance-sync status`: every object the manifest declares, on two axes, and the last apply of each.

The axes are Argo CD's:

- sync: does the live object match the manifest? `Synced`; `OutOfSync` (it differs: the
  plan has an action for it, or something apply cannot repair; an object an apply made that is
  gone since, dropped out of band, is OutOfSync too, with health `Missing`); `Missing` (absent
  and never applied: the next apply creates it); `Unknown` (its backend, or its storage,
  cannot be read);
- health: is the object usable as it is? `Healthy`; `Degraded` (a dataset that does not
  open, an unfinished write whose intent record is still there, declared columns missing,
  a stale index); `Missing` (not there); `Unknown`.

The objects are the manifest's namespaces, each table's registrations, its dataset and the
dataset's declared columns, then whatever else a full plan has an action for (an index or a
tag a manifest declares, an owned object that left the manifest). What differs, and why, is
drift's reading of the plan (lance_sync.check.drift), so `status`, `drift` and `plan` never
disagree. Reads only.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from lance_sync import __version__
from lance_sync.apply.journal import Applied
from lance_sync.check.drift import DriftItem, drift_items
from lance_sync.drivers.base import Drivers
from lance_sync.model.actions import (
    Action,
    DatasetStatus,
    Kind,
    Plan,
    Verb,
    action_key,
    dataset_key,
    part_key,
)
from lance_sync.model.arrow_types import column_drift, columns_from_schema, schema_from_columns
from lance_sync.model.desired import DesiredState, DesiredTable
from lance_sync.model.errors import ExitCode
from lance_sync.model.locations import shown_path, with_manifest_relative_paths
from lance_sync.model.secrets import mask
from lance_sync.model.shared import DEFAULT_PARALLELISM, Progress
from lance_sync.model.table_state import refreshes_index
from lance_sync.plan.compare import Conflict
from lance_sync.plan.planner import (
    Observation,
    assemble_plan,
    compare_all,
    only_backends,
    read_state,
)
from lance_sync.plan.render import MARKDOWN_LIMIT


class Sync(str, Enum):
    SYNCED = "Synced"
    OUT_OF_SYNC = "OutOfSync"
    MISSING = "Missing"
    UNKNOWN = "Unknown"


class Health(str, Enum):
    HEALTHY = "Healthy"
    DEGRADED = "Degraded"
    MISSING = "Missing"
    UNKNOWN = "Unknown"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LastApplied(_Model):
    """The last apply that changed an object (from the journals in the state dir)."""

    time: str
    #: what it did: 'create table', 'update namespace'
    action: str
    #: the manifest's git revision then (None outside git)
    revision: str | None = None
    journal: str


class StatusObject(_Model):
    kind: str
    #: the backend whose catalog holds it (a dataset's: its first registration's)
    backend: str | None = None
    #: the id in the backend's syntax; a dataset's location; a column's location#name
    id: str
    #: the manifest table it belongs to, if any
    table: str | None = None
    sync: Sync
    health: Health
    #: why sync or health is not green; None when both are
    reason: str | None = None
    last_applied: LastApplied | None = None
    #: what the next apply would do about it, as the plan words it ('+ create table lake: sales$orders')
    repairs: list[str] = Field(default_factory=list)
    #: the keys of those plan actions
    actions: list[str] = Field(default_factory=list)

    @property
    def green(self) -> bool:
        return self.sync == Sync.SYNCED and self.health == Health.HEALTHY


class StatusSummary(_Model):
    objects: int
    #: objects per sync value, then per health value (every value, zeros included)
    sync: dict[str, int]
    health: dict[str, int]


class StatusReport(_Model):
    tool_version: str
    created_at: str
    owner: str
    manifest_files: list[str]
    #: the first manifest's folder: paths below it are shown relative to it (./lake/orders.lance)
    base_dir: str | None = None
    #: the manifest's git revision ('3f2a1c9d0b7e', ' (modified)' when it differs); None outside git
    revision: str | None = None
    objects: list[StatusObject] = Field(default_factory=list)
    summary: StatusSummary
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        """0: all Synced and Healthy; 1: a backend or storage could not be read (health Unknown);
        2: anything else."""
        if any(o.health == Health.UNKNOWN for o in self.objects):
            return ExitCode.ERROR
        return ExitCode.OK if all(o.green for o in self.objects) else ExitCode.CHANGES_PRESENT


@dataclass
class Reading:
    """What a status is made from: the part of the manifest whose backends could be read, what
    was read there, the plan of it (made without stopping at conflicts) and its conflicts."""

    state: DesiredState
    observation: Observation
    plan: Plan
    conflicts: list[Conflict]
    #: backends that could not be read -> why
    unreadable: dict[str, str] = field(default_factory=dict)


def read_estate(state: DesiredState, drivers: Drivers, parallelism: int = DEFAULT_PARALLELISM,
                progress: Progress | None = None, scan_all: bool = False) -> Reading:
    """The live state of the manifest's backends and its plan; a backend that cannot be read is
    left out (its objects are Unknown), never taken for an empty one."""
    try:
        readable, observation, unreadable = state, read_state(state, drivers, parallelism, progress, scan_all), {}
    except Exception:  # noqa: BLE001 - which backend failed is found below; a status reports it
        unreadable = _unreadable_backends(state, drivers, parallelism, scan_all)
        if not unreadable:
            raise
        readable = only_backends(state, set(state.backends) - unreadable.keys())
        observation = read_state(readable, drivers, parallelism, progress, scan_all)
    comparison = compare_all(readable, observation, drivers, parallelism, strict=False)
    return Reading(readable, observation, assemble_plan(readable, observation, comparison), comparison.conflicts,
                   unreadable)


def _unreadable_backends(state: DesiredState, drivers: Drivers, parallelism: int, scan_all: bool) -> dict[str, str]:
    failed = {}
    for backend in state.backends:
        try:
            read_state(only_backends(state, {backend}), drivers, parallelism, None, scan_all)
        except Exception as error:  # noqa: BLE001 - any failure to read makes its objects Unknown
            failed[backend] = mask(str(error) or type(error).__name__)
    return failed


def estate_status(state: DesiredState, reading: Reading, drivers: Drivers, applied: dict[str, Applied],
                  revision: str | None = None) -> StatusReport:
    """Every object of `state` with its sync, health and last apply, from a `reading` of it."""
    objects = _Estate(state, reading, drivers, applied).objects()
    return StatusReport(
        tool_version=__version__,
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        owner=state.owner, manifest_files=[shown_path(f) for f in state.files], base_dir=state.base_dir,
        revision=revision,
        objects=objects, summary=_summary(objects), notes=reading.plan.notes, warnings=reading.plan.warnings)


def after_apply(report: StatusReport, succeeded: Iterable[Action], applied: LastApplied) -> StatusReport:
    """The status once the actions `succeeded` were carried out by the apply `applied` names: an
    object all of whose repairs succeeded is Synced (and no longer Missing), last applied then."""
    done = {action.key: action for action in succeeded}
    objects = []
    for row in report.objects:
        if row.actions and all(key in done for key in row.actions):
            health = Health.HEALTHY if row.health == Health.MISSING else row.health
            row = row.model_copy(update={
                "sync": Sync.SYNCED, "health": health, "repairs": [], "actions": [],
                "reason": None if health == Health.HEALTHY else row.reason,
                "last_applied": applied.model_copy(update={"action": done[row.actions[-1]].name})})
        objects.append(row)
    return report.model_copy(update={"objects": objects, "summary": _summary(objects)})


def _summary(objects: list[StatusObject]) -> StatusSummary:
    return StatusSummary(objects=len(objects), sync={s.value: sum(o.sync == s for o in objects) for s in Sync},
                         health={h.value: sum(o.health == h for o in objects) for h in Health})


@dataclass
class _Row:
    kind: str
    backend: str | None
    id: str
    table: str | None = None
    sync: Sync = Sync.SYNCED
    health: Health = Health.HEALTHY
    reasons: list[str] = field(default_factory=list)
    #: why it is not green when nothing else says so (drift's reading of the plan usually does)
    fallback: str | None = None
    repairs: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)

    def mark(self, sync: Sync | None = None, health: Health | None = None, reason: str | None = None) -> None:
        """Worse values win: Unknown over Missing over OutOfSync/Degraded over green."""
        if sync is not None and _SYNC_RANK[sync] > _SYNC_RANK[self.sync]:
            self.sync = sync
        if health is not None and _HEALTH_RANK[health] > _HEALTH_RANK[self.health]:
            self.health = health
        if reason and reason not in self.reasons:
            self.reasons.append(reason)


_SYNC_RANK = {Sync.SYNCED: 0, Sync.OUT_OF_SYNC: 1, Sync.MISSING: 2, Sync.UNKNOWN: 3}
_HEALTH_RANK = {Health.HEALTHY: 0, Health.DEGRADED: 1, Health.MISSING: 2, Health.UNKNOWN: 3}


class _Estate:
    """The rows of a status: the declared objects first, then those only the plan names."""

    def __init__(self, state: DesiredState, reading: Reading, drivers: Drivers, applied: dict[str, Applied]):
        self.state = state
        self.reading = reading
        self.drivers = drivers
        self.applied = applied
        self.rows: dict[str, _Row] = {}
        #: each dataset's key -> the rows of its declared columns
        self.columns: dict[str, list[_Row]] = {}
        self.by_key = {a.key: a for a in reading.plan.actions}

    def objects(self) -> list[StatusObject]:
        self._declared()
        for item in drift_items(self.reading.state, self.reading.observation, self.reading.plan,
                                self.reading.conflicts, self.drivers):
            self._drift(item)
        self._columns_follow_their_dataset()
        self._stale_indexes()
        return [self._object(key, row) for key, row in self.rows.items()]

    # --- what the manifest declares --------------------------------------------------------------

    def _declared(self) -> None:
        live = self.reading.observation.live
        for namespace in self.state.namespaces:
            row = self._add(action_key(Kind.NAMESPACE, namespace.backend, namespace.id), Kind.NAMESPACE.value,
                            namespace.backend, self._display(namespace.backend, namespace.id))
            if not self._unknown(row, [namespace.backend]) and (namespace.backend, namespace.id) not in live.namespaces:
                row.mark(health=Health.MISSING)
                row.fallback = f"absent from backend '{namespace.backend}'"
        for table in self.state.tables:
            for registration in table.registrations:
                key = action_key(Kind.TABLE, registration.backend, registration.id)
                row = self._add(key, Kind.TABLE.value, registration.backend,
                                self._display(registration.backend, registration.id), table.name)
                renamed = key in self.by_key and self.by_key[key].renamed_from is not None
                if (not self._unknown(row, [registration.backend]) and not renamed
                        and (registration.backend, registration.id) not in live.tables):
                    row.mark(health=Health.MISSING)
                    row.fallback = f"absent from backend '{registration.backend}'"
            self._dataset(table)

    def _dataset(self, table: DesiredTable) -> None:
        backends = [r.backend for r in table.registrations]
        row = self._add(dataset_key(table.location), Kind.DATASET.value, backends[0] if backends else None,
                        table.location, table.name)
        declared = columns_from_schema(schema_from_columns(table.columns)) if table.columns else []
        columns = [self._add(part_key(Kind.COLUMN, table.location, c["name"]), Kind.COLUMN.value, row.backend,
                             f"{table.location}#{c['name']}", table.name) for c in declared]
        self.columns[dataset_key(table.location)] = columns
        own = table.table_state or {}
        for kind, names in ((Kind.INDEX, [i["name"] for i in own.get("indexes") or []]),
                            (Kind.TAG, list(own.get("tags") or {}))):
            for name in names:  # the dataset's declared indexes and tags: rows that drift marks
                self._add(part_key(kind, table.location, name), kind.value, row.backend, f"{table.location}#{name}",
                          table.name)
        status = self.reading.observation.datasets.get(table.location)
        if (backends and self._unknown(row, backends)) or status is None:
            for column in columns:
                column.mark(Sync.UNKNOWN, Health.UNKNOWN, row.reasons[0] if row.reasons else None)
            if status is None:
                row.mark(Sync.UNKNOWN, Health.UNKNOWN, "its location was not read")
            return
        health, reason = _dataset_health(status)
        row.mark(Sync.UNKNOWN if health == Health.UNKNOWN else None, health,
                 reason if health != Health.MISSING else None)
        row.fallback = reason
        if status.status != "valid":
            for column in columns:
                if status.status == "missing":
                    column.mark(Sync.MISSING, Health.MISSING, "no dataset to hold it")
                else:  # its columns cannot be read, and cannot be used either
                    column.mark(Sync.UNKNOWN, Health.DEGRADED if health == Health.DEGRADED else Health.UNKNOWN, reason)
            return
        differs = column_drift(declared, status.columns or [])
        if differs.missing:
            row.mark(health=Health.DEGRADED, reason=f"missing columns: {', '.join(differs.missing)}")
        for column, entry in zip(columns, declared, strict=True):
            one = column_drift([entry], status.columns or [])
            if one.missing:
                column.mark(Sync.MISSING, Health.MISSING, "declared but missing from the dataset")
            elif one.changed:
                column.mark(Sync.OUT_OF_SYNC, reason="; ".join(one.problems()))

    def _unknown(self, row: _Row, backends: list[str]) -> bool:
        """Every backend of the object is unreadable: its row is Unknown, with why."""
        unreadable = self.reading.unreadable
        if not backends or any(b not in unreadable for b in backends):
            return False
        row.mark(Sync.UNKNOWN, Health.UNKNOWN, "; ".join(
            why if why.startswith(f"backend '{b}'") else f"backend '{b}' cannot be read: {why}"
            for b in dict.fromkeys(backends) for why in [unreadable[b]]))
        return True

    # --- what the plan would change --------------------------------------------------------------

    def _drift(self, item: DriftItem) -> None:
        actions = [self.by_key[key] for key in item.actions if key in self.by_key]
        missing = bool(actions) and all(a.verb == Verb.CREATE and not a.is_grant for a in actions)
        sync = Sync.MISSING if missing else Sync.OUT_OF_SYNC
        for row in self._rows_of(item, actions):
            row.mark(sync, reason=item.detail)
            row.repairs.append(item.repair or "none by apply: a person must act")
            row.actions.extend(key for key in item.actions if key not in row.actions)

    def _rows_of(self, item: DriftItem, actions: list[Action]) -> list[_Row]:
        """The rows a drift item concerns: its actions' objects, else its registration, else its
        table's dataset; an object only the plan names gets a row of its own."""
        if actions:
            return [self.rows.get(_object_key(a)) or self._add(_object_key(a), a.kind.value, a.backend,
                                                               a.display_id, a.table) for a in actions]
        if item.backend is not None and item.display_id is not None:
            found = [r for r in self.rows.values() if (r.backend, r.id) == (item.backend, item.display_id)
                     and r.kind in (Kind.TABLE.value, Kind.NAMESPACE.value)]
            if found:
                return found
        table = next((t for t in self.state.tables if t.name == item.table), None)
        if table is not None:
            return [self.rows[dataset_key(table.location)]]
        return [self._add(f"drift:{item.subject}", item.subject.split(" ")[0], item.backend,
                          item.display_id or item.subject, item.table)]

    def _columns_follow_their_dataset(self) -> None:
        """A missing column that the dataset's create (or rewrite) brings has that as its repair."""
        for key, columns in self.columns.items():
            dataset = self.rows[key]
            for column in columns:
                if column.sync == Sync.MISSING and not column.actions and dataset.actions:
                    column.repairs, column.actions = list(dataset.repairs), list(dataset.actions)

    def _stale_indexes(self) -> None:
        """An index the plan would refresh in place is stale: its queries miss newer rows."""
        for action in self.reading.plan.actions:
            if refreshes_index(action):
                row = self.rows.get(_object_key(action)) or self._add(_object_key(action), Kind.INDEX.value,
                                                                      action.backend, action.display_id, action.table)
                row.mark(health=Health.DEGRADED, reason=f"stale index: {action.detail}")

    # --- rows -------------------------------------------------------------------------------------

    def _add(self, key: str, kind: str, backend: str | None, id: str, table: str | None = None) -> _Row:
        if key not in self.rows:
            self.rows[key] = _Row(kind, backend, id, table)
        return self.rows[key]

    def _object(self, key: str, row: _Row) -> StatusObject:
        last = self.applied.get(key)
        green = row.sync == Sync.SYNCED and row.health == Health.HEALTHY
        # an apply made it and it is gone: drift, not an object still to be made
        sync = Sync.OUT_OF_SYNC if row.sync == Sync.MISSING and last is not None else row.sync
        return StatusObject(
            kind=row.kind, backend=row.backend, id=row.id, table=row.table, sync=sync, health=row.health,
            reason=None if green else "; ".join(row.reasons) or row.fallback, repairs=row.repairs, actions=row.actions,
            last_applied=LastApplied(time=last.time, action=last.action, revision=last.revision,
                                     journal=last.journal) if last else None)

    def _display(self, backend: str, id: tuple[str, ...]) -> str:
        return self.state.backends[backend].format_id(id)


def _object_key(action: Action) -> str:
    """The key of the object an action changes: a grant's or record's is its namespace's or table's."""
    return action_key(action.kind, action.backend, action.id) if action.about_grants else action.key


def _dataset_health(status: DatasetStatus) -> tuple[Health, str | None]:
    if status.status == "missing":
        return Health.MISSING, "no dataset at the location"
    if status.status == "unreachable":
        return Health.UNKNOWN, f"the storage cannot be read: {status.error or 'unreachable'}"
    if status.status != "valid":
        return Health.DEGRADED, f"the dataset does not open ({status.status}): {status.error or ''}".rstrip(": ")
    if status.intent is not None:
        return Health.DEGRADED, f"an unfinished write: intent record of {status.intent.describe()}"
    return Health.HEALTHY, None


# --- rendering -----------------------------------------------------------------------------------

def summary_line(report: StatusReport) -> str:
    counts = report.summary
    if counts.sync[Sync.SYNCED.value] == counts.health[Health.HEALTHY.value] == counts.objects:
        return f"All {counts.objects} object(s) Synced and Healthy."
    sync = ", ".join(f"{n} {value}" for value, n in counts.sync.items() if n)
    health = ", ".join(f"{n} {value}" for value, n in counts.health.items() if n)
    return f"{counts.objects} object(s): sync {sync}; health {health}."


def render_status(report: StatusReport, output_format: str, base_dir: str | None = None) -> str:
    if output_format == "json":
        return mask(report.model_dump_json(indent=2)) + "\n"
    if output_format == "markdown":
        return mask(with_manifest_relative_paths(render_markdown(report), base_dir))
    return mask(render_text(report, base_dir))


def object_name(row: StatusObject) -> str:
    """'table lake: sales$orders', 'dataset /data/orders.lance': how people read an object."""
    catalog = row.kind in (Kind.NAMESPACE.value, Kind.TABLE.value) and row.backend
    return f"{row.kind} {f'{row.backend}: ' if catalog else ''}{row.id}"


def render_text(report: StatusReport, base_dir: str | None = None) -> str:
    revision = f" at {report.revision}" if report.revision else ""
    lines = [f"lance-sync status for owner '{report.owner}' ({', '.join(report.manifest_files)}){revision}", ""]
    names = [with_manifest_relative_paths(object_name(row), base_dir) for row in report.objects]
    width = max(map(len, names), default=0)
    for name, row in zip(names, report.objects, strict=True):
        mark = " " if row.green else "!"
        lines.append(f"{mark} {name:<{width}}  {row.sync.value:<9}  {row.health.value}")
        if row.reason:
            lines.append(f"      {row.reason}")
        lines += [f"      repair: {repair}" for repair in row.repairs]
        if row.last_applied and not row.green:
            lines.append(f"      last applied: {_applied(row.last_applied)}")
    lines.append("")
    lines += [f"Warning: {warning}" for warning in report.warnings]
    lines.append(summary_line(report))
    return with_manifest_relative_paths("\n".join(lines), base_dir) + "\n"


def _applied(last: LastApplied) -> str:
    revision = f" at {last.revision}" if last.revision else ""
    return f"{last.action} {last.time}{revision} ({last.journal})"


def render_markdown(report: StatusReport, limit: int = MARKDOWN_LIMIT) -> str:
    """A comment: the counts, then the objects that are not green (cut to stay under `limit`)."""
    head = ["### lance-sync status", "", f"Owner `{report.owner}`"
            + (f" at `{report.revision}`" if report.revision else "") + f" · {summary_line(report)}", "",
            "| sync | objects | health | objects |", "| --- | ---: | --- | ---: |"]
    head += [f"| {s} | {report.summary.sync[s]} | {h} | {report.summary.health[h]} |"
             for s, h in zip(report.summary.sync, report.summary.health, strict=True)]
    text = "\n".join(head) + "\n"
    rows = [row for row in report.objects if not row.green]
    if not rows:
        return text
    body = ["", "| object | sync | health | reason |", "| --- | --- | --- | --- |"]
    used = len(text) + 200
    for shown, row in enumerate(rows):
        line = f"| `{object_name(row)}` | {row.sync.value} | {row.health.value} | {_cell(row.reason or '')} |"
        if used + len(line) + 1 > limit - 200:
            body.append(f"\n_Truncated: {len(rows) - shown} of {len(rows)} objects not shown to stay under "
                        f"{limit:,} characters. Run `lance-sync status` for the full list._")
            break
        body.append(line)
        used += len(line) + 1
    return text + "\n".join(body) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
