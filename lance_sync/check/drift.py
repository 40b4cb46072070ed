"""`lance-sync drift`: what differs between the manifest and the catalogs, and what would fix it.

Drift is the plan seen differently. It reads the same live state and makes the same
comparison as `plan` (without stopping at conflicts), then tells each difference by *what*
differs, with the repair the next apply would do beside it:

- missing: a declared namespace or table is absent (everywhere the table is registered);
- missing_registration: a table registered in several catalogs is absent from some of them;
- renamed: a registration is found under a former id the manifest's `renamed_from` names (the
  repair renames it, or replaces it where the backend cannot rename);
- split_brain: the catalogs that register one table disagree about its location;
- location, properties: a declared value differs from the live one;
- ownership: lance-sync's marks differ (no owner mark, another owner's, protect, on_remove);
- grants: a declared principal lacks a declared privilege (revoked out of band) or holds one the
  manifest does not declare (granted out of band), or, with grants_mode authoritative, an
  undeclared principal holds grants;
- data: no Lance dataset where a table's data should be;
- schema: the dataset's columns differ from the manifest's schema (a column dropped, renamed or
  altered out of band: apply changes it back in place where Lance can, see docs/table-state.md);
- catalog_schema: the columns a catalog records differ from the dataset's;
- dataset_state: a declared index or tag is absent, differs or was moved out of band (an
  index's or the dataset's maintenance and a retention cleanup are scheduled work, not drift);
- not_declared: an object this owner made has left the manifest (apply would remove it;
  shown so, since it is drift only in that sense);
- conflict: something apply cannot repair (a table of another format under the name, a
  namespace neither there nor declared, storage that cannot be read).

Objects not owned by the manifest's owner are never drift: they are counted as left alone.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterator
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from lance_sync import __version__
from lance_sync.check.verify import catalog_schema_problem
from lance_sync.drivers.base import Drivers
from lance_sync.manifest.history import Baseline
from lance_sync.model.actions import (
    Action,
    Destruction,
    Kind,
    Plan,
    Reason,
    Scope,
    Verb,
    action_key,
)
from lance_sync.model.desired import DesiredState
from lance_sync.model.locations import with_manifest_relative_paths
from lance_sync.model.marks import MANAGED_KEYS, OWNER_KEY
from lance_sync.model.shared import DEFAULT_PARALLELISM, Progress
from lance_sync.model.table_state import refreshes_index
from lance_sync.plan.changes import changed_scope
from lance_sync.plan.compare import Conflict
from lance_sync.plan.html_page import (
    attention,
    counts_list,
    escaper,
    group_section,
    html_page,
    report_head,
    toolbar,
)
from lance_sync.plan.planner import (
    Observation,
    assemble_plan,
    compare_all,
    read_changes,
    read_state,
)
from lance_sync.plan.render import MARKDOWN_LIMIT, SYMBOLS


class DriftKind(str, Enum):
    MISSING = "missing"
    MISSING_REGISTRATION = "missing_registration"
    RENAMED = "renamed"
    SPLIT_BRAIN = "split_brain"
    LOCATION = "location"
    PROPERTIES = "properties"
    OWNERSHIP = "ownership"
    GRANTS = "grants"
    DATA = "data"
    SCHEMA = "schema"
    CATALOG_SCHEMA = "catalog_schema"
    DATASET_STATE = "dataset_state"
    NOT_DECLARED = "not_declared"
    CONFLICT = "conflict"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DriftItem(_Model):
    kind: DriftKind
    #: what drifted, for people: "table lake: sales$orders", "table 'orders'"
    subject: str
    backend: str | None = None
    display_id: str | None = None
    #: the manifest table it concerns, if any
    table: str | None = None
    #: what differs
    detail: str
    #: what the next apply would do about it; None: apply cannot, a person must
    repair: str | None = None
    #: keys of the plan's actions that are the repair
    actions: list[str] = Field(default_factory=list)


class DriftReport(_Model):
    tool_version: str
    created_at: str
    owner: str
    manifest_files: list[str]
    #: the first manifest's folder: text and markdown show the paths below it relative to it, as
    #: a plan does (JSON keeps them absolute)
    base_dir: str | None = None
    items: list[DriftItem] = Field(default_factory=list)
    #: objects seen in scope that this owner does not own: never drift, never removed
    left_alone: int = 0
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    scope: list[Scope] = Field(default_factory=list)
    api_calls: dict[str, int] = Field(default_factory=dict)

    @property
    def has_drift(self) -> bool:
        return bool(self.items)

    def counts(self) -> dict[str, int]:
        counts = {kind.value: 0 for kind in DriftKind}
        for item in self.items:
            counts[item.kind.value] += 1
        return {kind: count for kind, count in counts.items() if count}


def drift_report(state: DesiredState, drivers: Drivers, parallelism: int = DEFAULT_PARALLELISM,
                 progress: Progress | None = None, scan_all: bool = False,
                 baseline: Baseline | None = None) -> DriftReport:
    """The drift of the whole manifest, or (with `baseline`) of the entries changed since it."""
    if baseline is not None:
        scope = changed_scope(baseline, state)
        if not scope.whole:
            return report_drift(scope.state, read_changes(scope, drivers, parallelism, progress), drivers)
    return report_drift(state, read_state(state, drivers, parallelism, progress, scan_all), drivers)


def report_drift(state: DesiredState, observation: Observation, drivers: Drivers) -> DriftReport:
    """The drift between a manifest and what was read: the plan's comparison, told by what differs."""
    comparison = compare_all(state, observation, drivers, strict=False)
    plan = assemble_plan(state, observation, comparison)
    items = drift_items(state, observation, plan, comparison.conflicts, drivers)
    return DriftReport(
        tool_version=__version__,
        created_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        owner=state.owner, manifest_files=[os.path.relpath(f) for f in state.files], base_dir=state.base_dir,
        items=items,
        left_alone=len(plan.left_alone), notes=plan.notes, warnings=plan.warnings, scope=plan.scope,
        api_calls=plan.api_calls)


def drift_items(state: DesiredState, observation: Observation, plan: Plan, conflicts: list[Conflict],
                drivers: Drivers) -> list[DriftItem]:
    """Each difference a plan (made without stopping at conflicts) and its conflicts stand for."""
    return _Reader(state, observation, plan, conflicts, drivers).items()


class _Reader:
    """Turns a plan, its conflicts and the observation into drift items."""

    def __init__(self, state: DesiredState, observation: Observation, plan: Plan, conflicts: list[Conflict],
                 drivers: Drivers):
        self.state = state
        self.observation = observation
        self.plan = plan
        self.conflicts = conflicts
        self.drivers = drivers
        self.by_key = {a.key: a for a in plan.actions}
        #: registrations whose location is told as part of a split brain
        self.split: set[str] = set()

    def items(self) -> list[DriftItem]:
        found = [*self._split_brains(), *(item for a in self.plan.actions for item in self._from_action(a)),
                 *self._from_conflicts(), *self._catalog_schemas()]
        order = list(DriftKind)
        return sorted(found, key=lambda item: (order.index(item.kind), item.subject))

    # --- tables registered in several catalogs --------------------------------------------------

    def _split_brains(self) -> Iterator[DriftItem]:
        for table in self.state.tables:
            registered = [(r, info) for r in table.registrations
                          if (info := self.observation.live.tables.get((r.backend, r.id))) is not None and info.is_lance]
            if len({info.location for _, info in registered}) < 2:
                continue
            where = "; ".join(f"{r.backend}: {self._display(r.backend, r.id)} -> {info.location}"
                              for r, info in registered)
            repairs = [a for r, info in registered if info.location != table.location
                       and (a := self.by_key.get(action_key(Kind.TABLE, r.backend, r.id))) is not None]
            self.split |= {a.key for a in repairs}
            yield DriftItem(
                kind=DriftKind.SPLIT_BRAIN, subject=f"table '{table.name}'", table=table.name,
                detail=f"registered at {len({i.location for _, i in registered})} locations ({where}); the "
                f"manifest says {table.location}",
                repair="; ".join(repair_text(a) for a in repairs) or None, actions=[a.key for a in repairs])

    def _other_registrations(self, table: str | None, key: str) -> list[str]:
        """Where else the manifest table of a missing registration is registered."""
        declared = next((t for t in self.state.tables if t.name == table), None)
        if declared is None:
            return []
        return [f"{r.backend}: {self._display(r.backend, r.id)}" for r in declared.registrations
                if (r.backend, r.id) in self.observation.live.tables
                and action_key(Kind.TABLE, r.backend, r.id) != key]

    # --- one action, told by what differs -------------------------------------------------------

    def _from_action(self, action: Action) -> Iterator[DriftItem]:
        def item(kind: DriftKind, detail: str) -> DriftItem:
            return DriftItem(kind=kind, subject=_subject(action), backend=action.backend,
                             display_id=action.display_id, table=action.table, detail=detail,
                             repair=repair_text(action), actions=[action.key])

        if action.reason == Reason.LEFT_MANIFEST:
            owner = (action.before.properties.get(OWNER_KEY) if action.before else None) or self.state.owner
            yield item(DriftKind.NOT_DECLARED, f"owned by '{owner}' and no longer in the manifest: apply would "
                       "remove it (a removal: reconcile leaves it for approval)")
        elif action.is_grant:
            if not self._on_new_object(action):
                yield item(DriftKind.GRANTS, _grant_drift(action))
        elif is_upkeep(action) or action.verb == Verb.RECORD:  # a record is lance-sync's bookkeeping
            return
        elif action.kind in (Kind.INDEX, Kind.TAG):
            yield item(DriftKind.DATASET_STATE, action.detail)
        elif action.kind == Kind.DATASET:
            yield item(DriftKind.SCHEMA if action.verb == Verb.REPLACE else DriftKind.DATA, action.detail)
        elif action.kind == Kind.COLUMN:
            yield item(DriftKind.SCHEMA, _column_drift(action))
        elif action.renamed_from is not None:
            yield item(DriftKind.RENAMED, f"registered as {action.renamed_from.display_id}; the manifest calls it "
                       f"{action.display_id} (renamed_from)")
            yield from (item(kind, detail) for kind, detail in self._differences(action))
        elif action.verb == Verb.CREATE:
            elsewhere = self._other_registrations(action.table, action.key) if action.kind == Kind.TABLE else []
            if elsewhere:
                yield item(DriftKind.MISSING_REGISTRATION, f"table '{action.table}' is registered in "
                           f"{', '.join(elsewhere)} but not here")
            else:
                yield item(DriftKind.MISSING, f"declared in the manifest, absent from backend '{action.backend}'")
        else:
            yield from (item(kind, detail) for kind, detail in self._differences(action))

    def _on_new_object(self, action: Action) -> bool:
        """A grant that follows its object's create or replace: the object's drift says it."""
        return any(self.by_key[key].verb in (Verb.CREATE, Verb.REPLACE)
                   for key in action.depends_on if key in self.by_key)

    def _differences(self, action: Action) -> Iterator[tuple[DriftKind, str]]:
        """An update or replace: location, declared properties, marks; each its own item."""
        before, after = action.before, action.after
        if before is None or after is None:
            return
        if before.location != after.location and action.key not in self.split:
            yield DriftKind.LOCATION, f"location is {before.location}; the manifest says {after.location}"
        changed = sorted(k for k in set(before.properties) | set(after.properties)
                         if before.properties.get(k) != after.properties.get(k))
        declared = [k for k in changed if k not in MANAGED_KEYS]
        if declared:
            yield DriftKind.PROPERTIES, "; ".join(
                _property_difference(k, before.properties.get(k), after.properties.get(k)) for k in declared)
        marks = [k for k in changed if k in MANAGED_KEYS]
        if action.reason == Reason.ADOPT:
            yield DriftKind.OWNERSHIP, f"no {OWNER_KEY} mark: the next apply adopts it (stamps the mark)"
        elif marks:
            yield DriftKind.OWNERSHIP, "; ".join(
                _property_difference(k, before.properties.get(k), after.properties.get(k)) for k in marks)

    # --- what apply cannot repair ---------------------------------------------------------------

    def _from_conflicts(self) -> Iterator[DriftItem]:
        schema_tables: list[str] = []
        for conflict in self.conflicts:
            if conflict.topic == "schema":
                if conflict.table is not None and conflict.table not in schema_tables:
                    schema_tables.append(conflict.table)
                continue
            kind = DriftKind.OWNERSHIP if conflict.topic == "owner" else DriftKind.CONFLICT
            subject = (f"table {conflict.backend}: {self._display(conflict.backend, conflict.id)}"
                       if conflict.backend and conflict.id else f"table '{conflict.table}'")
            yield DriftItem(kind=kind, subject=subject, backend=conflict.backend,
                            display_id=self._display(conflict.backend, conflict.id)
                            if conflict.backend and conflict.id else None,
                            table=conflict.table, detail=conflict.message,
                            repair=None)
        for name in schema_tables:
            table = next(t for t in self.state.tables if t.name == name)
            problems = [c.detail or c.message for c in self.conflicts if c.topic == "schema" and c.table == name]
            yield DriftItem(kind=DriftKind.SCHEMA, subject=f"table '{name}'", table=name,
                            detail=f"the dataset at {table.location}: {'; '.join(problems)}", repair=None)

    def _catalog_schemas(self) -> Iterator[DriftItem]:
        for table in self.state.tables:
            status = self.observation.datasets.get(table.location)
            if status is None or status.status != "valid":
                continue
            for registration in table.registrations:
                info = self.observation.live.tables.get((registration.backend, registration.id))
                if info is None or info.columns is None or info.location != table.location:
                    continue
                problem = catalog_schema_problem(info.columns, status.columns or [], self.drivers[registration.backend])
                if problem:
                    display = self._display(registration.backend, registration.id)
                    yield DriftItem(kind=DriftKind.CATALOG_SCHEMA, subject=f"table {registration.backend}: {display}",
                                    backend=registration.backend, display_id=display, table=table.name,
                                    detail=f"the catalog {problem}; apply does not rewrite recorded columns: "
                                    "register the table again to refresh them", repair=None)

    def _display(self, backend: str, id: tuple[str, ...]) -> str:
        return self.state.backends[backend].format_id(id)


def is_upkeep(action: Action) -> bool:
    """Work a policy schedules rather than a difference: an index brought up to date, a
    dataset compacted, old versions cleaned up."""
    return action.kind == Kind.VERSIONS or refreshes_index(action) or (
        action.verb == Verb.UPDATE and action.kind == Kind.DATASET)


def _subject(action: Action) -> str:
    if action.kind == Kind.DATASET:
        return f"dataset {action.display_id}"
    return f"{action.kind.value} {action.backend}: {action.shown_id}"


def _column_drift(action: Action) -> str:
    """A column the dataset lacks or has otherwise than declared: dropped, renamed or altered out
    of band, or declared since."""
    if action.verb == Verb.CREATE:
        return f"declared in the manifest, absent from the dataset (dropped or renamed out of band?): {action.detail}"
    if action.verb == Verb.DELETE:
        return f"declared removed, still in the dataset: {action.detail}"
    return f"the dataset's column differs from the manifest's: {action.detail}"


def _property_difference(key: str, live: str | None, declared: str | None) -> str:
    if live is None:
        return f"{key} is not set; the manifest says {declared!r}"
    if declared is None:
        return f"{key} = {live!r}; the manifest does not set it"
    return f"{key} = {live!r}; the manifest says {declared!r}"


def repair_text(action: Action) -> str:
    """'~ update table ice: wh.db.orders', and what stands in the way of doing it."""
    text = f"{SYMBOLS[action.verb]} {action.headline}"
    if action.blocked:
        return f"{text} (blocked: {action.blocked})"
    if action.destroys == Destruction.DATA:
        what = "deletes the namespace" if action.kind == Kind.NAMESPACE else "destroys data"
        text += f" ({what}: apply needs --allow-drop)"
    elif action.destroys == Destruction.IDENTITY:
        text += " (a new table id: apply needs --allow-replace)"
    elif action.destroys == Destruction.ACCESS:
        text += " (apply needs --allow-revoke)"
    return text


# --- rendering -----------------------------------------------------------------------------------

def summary_line(report: DriftReport) -> str:
    if not report.items:
        return "No drift. The catalogs match the manifest."
    counts = ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in report.counts().items())
    return f"Drift: {len(report.items)} difference(s): {counts}."


def render_drift(report: DriftReport, output_format: str) -> str:
    if output_format == "json":
        return report.model_dump_json(indent=2) + "\n"
    if output_format == "html":
        return render_html(report)
    text = render_markdown(report) if output_format == "markdown" else render_text(report)
    return with_manifest_relative_paths(text, report.base_dir)


def render_text(report: DriftReport) -> str:
    folder = "; ./ is the manifest's folder" if report.base_dir else ""
    lines = [f"lance-sync drift for owner '{report.owner}' ({', '.join(report.manifest_files)}{folder})", ""]
    for item in report.items:
        lines += [f"! {item.kind.value.replace('_', ' ')}: {item.subject}", f"      {item.detail}",
                  f"      repair: {item.repair or 'none by apply: a person must act'}", ""]
    if report.left_alone:
        lines += [f"Left alone: {report.left_alone} object(s) in scope not owned by '{report.owner}' (never "
                  "drift, never removed).", ""]
    lines += [f"Note: {note}" for note in report.notes]
    lines += [f"Warning: {warning}" for warning in report.warnings]
    if report.notes or report.warnings:
        lines.append("")
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def render_markdown(report: DriftReport, limit: int = MARKDOWN_LIMIT) -> str:
    """A pull-request or issue comment: counts first, details collapsed, always under `limit`."""
    head = ["### lance-sync drift", "", f"Owner `{report.owner}` · {summary_line(report)}", ""]
    if report.items:
        head += ["| drift | count |", "| --- | ---: |"]
        head += [f"| {kind.replace('_', ' ')} | {count} |" for kind, count in report.counts().items()]
        head.append("")
    head += [f"> {warning}" for warning in report.warnings]
    text = "\n".join(head) + "\n"
    if not report.items:
        return text
    opening = f"<details><summary>Details ({len(report.items)} differences)</summary>\n\n```\n"
    closing = "```\n\n</details>\n"
    budget = limit - len(text) - len(opening) - len(closing) - 300
    body, used = [], 0
    for item in report.items:
        block = (f"{item.kind.value.replace('_', ' ')}: {item.subject}\n    {item.detail}\n"
                 f"    repair: {item.repair or 'none by apply: a person must act'}\n").replace("```", "'''")
        if used + len(block) > budget:
            break
        body.append(block)
        used += len(block)
    note = ""
    if len(body) < len(report.items):
        note = (f"\n_Truncated: {len(report.items) - len(body)} of {len(report.items)} differences not shown to "
                f"stay under {limit:,} characters. Run `lance-sync drift` for the full report._\n")
    return text + opening + "".join(body) + closing + note


def render_html(report: DriftReport) -> str:
    """One self-contained page: the counts of each kind of drift, then each difference (with its
    repair) collapsed under its backend; differences of the manifest's tables under 'manifest'."""
    escape = escaper(None)
    body = [report_head("drift", report.owner, ", ".join(report.manifest_files), report.created_at,
                        report.tool_version, summary_line(report), escape),
            counts_list({kind.replace("_", " "): count for kind, count in report.counts().items()}),
            attention([f"Warning: {escape(w)}" for w in report.warnings] + [f"Note: {escape(n)}" for n in report.notes])]
    if report.items:
        groups: dict[str, list[str]] = {}
        for item in report.items:
            groups.setdefault(item.backend or "manifest", []).append(_html_item(item, escape))
        body.append(toolbar(len(report.items), "differences"))
        body += [group_section(name, items, "differences") for name, items in groups.items()]
    if report.left_alone:
        body.append(f"<p class=\"note\">Left alone: {report.left_alone:,} object(s) in scope not owned by "
                    f"<code>{escape(report.owner)}</code> (never drift, never removed).</p>\n")
    return html_page(f"lance-sync drift: {report.owner}", "".join(body))


def _html_item(item: DriftItem, escape: Callable[[object], str]) -> str:
    repair = escape(item.repair) if item.repair else "none by apply: a person must act"
    return (f"<details class=\"item\" data-kind=\"{item.kind.value}\"><summary><span class=\"badge\">"
            f"{escape(item.kind.value.replace('_', ' '))}</span> {escape(item.subject)}</summary><div class=\"body\">"
            f"<p>{escape(item.detail)}</p><p class=\"note\">repair: {repair}</p></div></details>\n")


def _grant_drift(action: Action) -> str:
    """'alice holds SELECT; the manifest declares SELECT, MODIFY (MODIFY was revoked out of band?)'."""
    held = ", ".join(action.before.privileges or []) if action.before and action.before.privileges else "nothing"
    if action.verb == Verb.GRANT:
        return (f"{action.principal} holds {held}, without {', '.join(action.privileges)} that the manifest "
                "declares (revoked out of band, or never granted)")
    if action.reason == Reason.LEFT_GRANTS:
        return (f"{action.principal} holds {', '.join(action.privileges)}, and left the manifest; lance-sync "
                "granted it")
    if action.reason == Reason.UNDECLARED:
        return (f"{action.principal} holds {', '.join(action.privileges)}, and the manifest declares no grants for "
                "them (grants_mode: authoritative)")
    return f"{action.principal} holds {', '.join(action.privileges)} beyond what the manifest declares"
