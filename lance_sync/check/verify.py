"""`lance-sync verify`: what is really at the table locations.

Every location of the manifest's tables and of every table the backends register in scope
is inspected (one function, run by a thread pool or by Spark). Broken: no Lance dataset
behind a registration (dangling), data that is not Lance, a corrupt dataset, storage that
cannot be read, and columns a catalog records that differ from the dataset's.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lance_sync.drivers.base import Drivers, SyncNamespace
from lance_sync.model.arrow_types import (
    column_drift,
    columns_from_schema,
    describe_columns,
    schema_from_columns,
)
from lance_sync.model.desired import DesiredState
from lance_sync.model.shared import DEFAULT_PARALLELISM, STATE_DIRECTORY, Progress
from lance_sync.plan.observe import observe

if TYPE_CHECKING:
    from lance_sync.data.inspection import Engine

logger = logging.getLogger(__name__)


@dataclass
class RegistrationCheck:
    """A catalog's registration of a table at a location verify inspects."""

    backend: str
    id: list[str]
    display_id: str
    in_manifest: bool


@dataclass
class LocationFinding:
    location: str
    status: str
    version: int | None = None
    row_count: int | None = None
    columns: list[dict] | None = None
    error: str | None = None
    #: manifest tables at this location
    tables: list[str] = field(default_factory=list)
    registrations: list[RegistrationCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: worth knowing, not broken (e.g. columns a writer added beyond the manifest's)
    notes: list[str] = field(default_factory=list)


@dataclass
class VerifyReport:
    engine: str
    findings: list[LocationFinding]

    @property
    def broken(self) -> list[LocationFinding]:
        return [f for f in self.findings if f.problems]

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "locations": len(self.findings), "broken": len(self.broken),
                "findings": [asdict(f) for f in self.findings]}


def verify(state: DesiredState, drivers: Drivers, engine: Engine = "auto",
           spark: str | None = None, parallelism: int = DEFAULT_PARALLELISM, progress: Progress | None = None) -> VerifyReport:
    from lance_sync.data.inspection import choose_engine, inspect_locations
    from lance_sync.data.spark_session import resolve_spark_settings

    live = observe(state, drivers, parallelism, progress)
    findings: dict[str, LocationFinding] = {}
    options_of: dict[str, dict[str, str]] = {}

    def finding(location: str, backend: str) -> LocationFinding:
        options_of.setdefault(location, drivers[backend].storage_options())
        return findings.setdefault(location, LocationFinding(location, "unknown"))

    manifest_registrations = {(r.backend, r.id) for t in state.tables for r in t.registrations}
    for table in state.tables:
        if table.registrations:
            finding(table.location, table.registrations[0].backend).tables.append(table.name)
    registered_columns: dict[str, list[tuple[RegistrationCheck, list[dict], SyncNamespace]]] = defaultdict(list)
    for (backend, id), info in sorted(live.tables.items()):
        if not info.is_lance or not info.location:
            continue
        registration = RegistrationCheck(backend, list(id), state.backends[backend].format_id(id),
                                    (backend, id) in manifest_registrations)
        finding(info.location, backend).registrations.append(registration)
        if info.columns is not None:
            registered_columns[info.location].append((registration, info.columns, drivers[backend]))

    by_options: dict[tuple, list[str]] = defaultdict(list)
    for location in findings:
        by_options[tuple(sorted(options_of[location].items()))].append(location)
    settings = resolve_spark_settings(spark, state.spark, spark_log_file(state))
    chosen = choose_engine(engine, len(findings), 2000)
    logger.info("verify: %d location(s) of %d table(s), inspected with %s", len(findings), len(state.tables), chosen)
    for options, locations in by_options.items():
        if progress:
            progress(f"inspecting {len(locations)} location(s) with {chosen}")
        reports = inspect_locations(locations, storage_options=dict(options) or None, engine=chosen,
                                    spark_settings=settings)
        for location, report in zip(locations, reports, strict=True):
            item = findings[location]
            item.status, item.version, item.row_count = report.status, report.version, report.row_count
            item.columns, item.error = report.columns, report.error
    declared = {t.location: t.columns for t in state.tables if t.columns}
    for item in findings.values():
        item.problems = _problems(item, registered_columns.get(item.location, []))
        if item.status == "valid" and item.location in declared:
            _check_declared_columns(item, declared[item.location])
    return VerifyReport(chosen, sorted(findings.values(), key=lambda f: f.location))


def _problems(item: LocationFinding,
              catalog_columns: list[tuple[RegistrationCheck, list[dict], SyncNamespace]]) -> list[str]:
    problems = []
    if item.status == "missing" and item.registrations:
        names = ", ".join(f"{r.backend}: {r.display_id}" for r in item.registrations)
        problems.append(f"dangling registration: no data behind {names}")
    elif item.status == "not_lance":
        problems.append("the location holds data that is not a Lance dataset")
    elif item.status == "corrupt":
        problems.append(f"corrupt Lance dataset: {item.error}")
    elif item.status == "interrupted":
        problems.append(f"{item.error}: the owner's next apply finishes it")
    elif item.status == "unreachable":
        problems.append(f"storage unreachable: {item.error}")
    if item.status == "valid":
        for registration, recorded, driver in catalog_columns:
            problem = catalog_schema_problem(recorded, item.columns or [], driver)
            if problem:
                problems.append(f"schema drift: {registration.backend}: {registration.display_id} {problem}")
    return problems


def catalog_schema_problem(recorded: list[dict], dataset_columns: list[dict], driver: SyncNamespace) -> str | None:
    """'records (a: bigint), the dataset has (a: string)' when a catalog's columns differ from the
    dataset's as that catalog would record them; None when they agree or it records none."""
    expected = driver.catalog_columns(schema_from_columns(dataset_columns))
    if expected is None or recorded == expected:
        return None
    return f"records {describe_columns(recorded)}, the dataset has {describe_columns(expected)}"


def _check_declared_columns(item: LocationFinding, declared: list[dict]) -> None:
    """The same schema drift rules as the planner: extra columns are fine, a declared one that is
    missing or of another type is broken."""
    drift = column_drift(columns_from_schema(schema_from_columns(declared)), item.columns or [])
    item.problems += [f"schema drift against the manifest: {problem}" for problem in drift.problems()]
    if drift.extra:
        item.notes.append(f"columns beyond the manifest (schema evolution, fine): {drift.describe_extra()}")


def spark_log_file(state: DesiredState) -> Path:
    """Spark's log, in lance-sync's state directory next to the manifest."""
    from lance_sync.data.spark_session import SPARK_LOG

    return Path(state.base_dir) / STATE_DIRECTORY / SPARK_LOG


def render_verify(report: VerifyReport) -> str:
    """Each location and its state; a manifest table's location with no dataset and no
    registration yet (before its first apply) is neither broken nor ok: not written yet."""
    lines = [f"lance-sync verify: {len(report.findings)} location(s), engine {report.engine}", ""]
    unwritten = [item for item in report.findings if not item.problems and item.status == "missing"]
    for item in report.findings:
        mark = "BROKEN" if item.problems else "absent" if item in unwritten else "ok"
        detail = f"version {item.version}, {item.row_count:,} rows" if item.status == "valid" else \
            "no dataset yet: apply writes it" if item in unwritten else item.status
        lines.append(f"{mark:>6}  {item.location}  ({detail})")
        for name in item.tables:
            lines.append(f"          manifest table: {name}")
        for registration in item.registrations:
            lines.append(f"          registered: {registration.backend}: {registration.display_id}"
                         + ("" if registration.in_manifest else " (not in the manifest)"))
        lines.extend(f"          ! {problem}" for problem in item.problems)
        lines.extend(f"          note: {note}" for note in item.notes)
    ok = len(report.findings) - len(report.broken) - len(unwritten)
    not_yet = f", {len(unwritten)} not written yet (lance-sync apply writes them)" if unwritten else ""
    lines += ["", f"{len(report.broken)} broken, {ok} ok{not_yet}."]
    return "\n".join(lines) + "\n"
