"""Drift, one case per row, without any server: desired + live -> what differs, and its repair."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from lance_sync.check.drift import DriftKind, DriftReport, render_drift, report_drift
from lance_sync.cli.app import main
from lance_sync.drivers.base import Capabilities, NamespaceInfo, TableInfo
from lance_sync.model.actions import DatasetStatus
from lance_sync.model.desired import (
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
)
from lance_sync.plan.observe import LiveState
from lance_sync.plan.planner import Observation
from tests.support.manifests import dir_backend

OWNER = "me"
MARK = {"lance_sync.owner": OWNER}
HERE, THERE = "/data/t.lance", "/data/moved.lance"
INT64 = [{"name": "id", "type": "int64"}]


class RecordingColumns:
    """A driver that records columns the way a catalog such as Unity does."""

    def catalog_columns(self, schema: Any) -> list[dict[str, str]]:
        return [{"name": f.name, "type": str(f.type)} for f in schema]


@dataclass
class Case:
    """Table `t` declared in backends b and c (namespace ns), against what is live there."""

    b: dict | None = field(default_factory=lambda: dict(MARK))   # properties of b's ns$t (None: absent)
    c: dict | None = field(default_factory=lambda: dict(MARK))
    b_location: str = HERE
    c_location: str = HERE
    table: dict = field(default_factory=dict)                    # overrides of the desired table
    dataset: DatasetStatus | None = None
    c_columns: list[dict] | None = None                          # columns catalog c records
    declared: bool = True
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(update_table_location=True))


def report(case: Case) -> DriftReport:
    specs = {name: dir_backend(name) for name in ("b", "c")}
    table = DesiredTable(**{"name": "t", "location": HERE, "registrations": (
        Registration("b", ("ns", "t")), Registration("c", ("ns", "t"))), "properties": {}, **case.table})
    state = DesiredState(owner=OWNER, files=[], base_dir="/", backends=specs,
                         namespaces=[DesiredNamespace(n, ("ns",), {}) for n in ("b", "c")],
                         tables=[table] if case.declared else [])
    live = LiveState()
    for name, properties, location in (("b", case.b, case.b_location), ("c", case.c, case.c_location)):
        live.namespaces[(name, ("ns",))] = NamespaceInfo(("ns",), dict(MARK))
        live.scanned.add((name, ("ns",)))
        if properties is not None:
            columns = case.c_columns if name == "c" else None
            live.tables[(name, ("ns", "t"))] = TableInfo(("ns", "t"), location, properties, columns=columns)
    datasets = {HERE: case.dataset} if case.dataset else {}
    observation = Observation(live, {"b": case.capabilities, "c": case.capabilities}, datasets, {})
    return report_drift(state, observation, {"b": RecordingColumns(), "c": RecordingColumns()})  # type: ignore[dict-item]


def kinds(case: Case) -> list[tuple[str, str]]:
    return [(item.kind.value, item.subject) for item in report(case).items]


VALID = DatasetStatus(status="valid", version=3, row_count=1, columns=INT64)
STRINGS = DatasetStatus(status="valid", version=4, row_count=1, columns=[{"name": "id", "type": "string"}])

CASES = {
    "in sync: no drift": (Case(), []),
    "a property changed": (Case(b={**MARK, "tier": "bronze"}, table={"properties": {"tier": "gold"}},
                                c={**MARK, "tier": "gold"}),
                           [("properties", "table b: ns$t")]),
    "one registration missing": (Case(c=None), [("missing_registration", "table c: ns$t")]),
    "absent everywhere": (Case(b=None, c=None), [("missing", "table b: ns$t"), ("missing", "table c: ns$t")]),
    "split brain": (Case(c_location=THERE), [("split_brain", "table 't'")]),
    "both moved the same way: location, not split brain": (
        Case(b_location=THERE, c_location=THERE), [("location", "table b: ns$t"), ("location", "table c: ns$t")]),
    "no owner mark": (Case(b={}), [("ownership", "table b: ns$t")]),
    "another owner's": (Case(b={"lance_sync.owner": "them"}), [("ownership", "table b: ns$t")]),
    "protect mark differs": (Case(b={**MARK, "lance_sync.protect": "true"}), [("ownership", "table b: ns$t")]),
    "no data where the schema says data is": (
        Case(table={"columns": INT64}, dataset=DatasetStatus(status="missing")), [("data", f"dataset {HERE}")]),
    "the dataset's schema changed": (Case(table={"columns": INT64}, dataset=STRINGS), [("schema", "table 't'")]),
    "columns a writer added are no drift": (
        Case(table={"columns": INT64}, dataset=DatasetStatus(status="valid", version=5, columns=[
            *INT64, {"name": "extra", "type": "string"}])), []),
    "a catalog records other columns": (Case(dataset=VALID, c_columns=[{"name": "id", "type": "string"}]),
                                        [("catalog_schema", "table c: ns$t")]),
    "owned, left the manifest": (Case(declared=False),
                                 [("not_declared", "table b: ns$t"), ("not_declared", "table c: ns$t")]),
    "not owned, left the manifest: left alone": (Case(declared=False, b={"x": "1"}, c={}),
                                                 []),
}


@pytest.mark.parametrize("name", CASES)
def test_drift(name: str):
    case, expected = CASES[name]
    assert kinds(case) == expected


def test_a_split_brain_names_every_location_and_the_repair():
    (item,) = report(Case(c_location=THERE)).items
    assert f"b: ns$t -> {HERE}" in item.detail and f"c: ns$t -> {THERE}" in item.detail
    assert item.detail.endswith(f"the manifest says {HERE}")
    assert item.repair == "~ update table c: ns$t" and item.actions == ['table:c:["ns", "t"]']


def test_a_split_brain_a_backend_cannot_move_in_place_is_repaired_by_a_replace():
    (item,) = report(Case(c_location=THERE, capabilities=Capabilities())).items
    assert item.kind == DriftKind.SPLIT_BRAIN
    assert item.repair == "-/+ replace table c: ns$t (a new table id: apply needs --allow-replace)"


def test_repairs_say_what_the_next_apply_does_and_what_it_needs():
    missing, = report(Case(c=None)).items
    assert missing.repair == "+ create table c: ns$t" and "registered in b: ns$t but not here" in missing.detail
    schema, = report(Case(table={"columns": INT64}, dataset=STRINGS)).items
    assert schema.repair is None and "column 'id' is declared int64 but the dataset has string" in schema.detail
    left = report(Case(declared=False)).items[0]
    assert left.repair == "- forget table b: ns$t" and "reconcile leaves it for approval" in left.detail
    unowned = report(Case(declared=False, b={"x": "1"}, c={}))
    assert unowned.left_alone == 2 and not unowned.has_drift


def test_the_three_formats_name_each_difference():
    drifted = report(Case(c=None, b={**MARK, "tier": "bronze"}, table={"properties": {"tier": "gold"}}))
    text = render_drift(drifted, "text")
    assert "! missing registration: table c: ns$t" in text and "! properties: table b: ns$t" in text
    assert text.rstrip().endswith("Drift: 2 difference(s): 1 missing registration, 1 properties.")
    markdown = render_drift(drifted, "markdown")
    assert "| missing registration | 1 |" in markdown and "| properties | 1 |" in markdown
    document = DriftReport.model_validate_json(render_drift(drifted, "json"))
    assert [i.kind for i in document.items] == [DriftKind.MISSING_REGISTRATION, DriftKind.PROPERTIES]
    assert render_drift(report(Case()), "text").rstrip().endswith("No drift. The catalogs match the manifest.")


def test_drift_exits_2_when_anything_differs_and_0_when_nothing_does(tmp_path: Path):
    manifest: dict[str, Any] = {
        "version": 1, "owner": "drift-test", "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": [{"name": "orders", "location": "./lake/orders.lance", "properties": {"tier": "gold"},
                    "register": [{"backend": "lake", "namespace": "sales"}], "schema": INT64}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))

    def run(*args: str):
        return CliRunner().invoke(main, [*args, "-f", str(path)], catch_exceptions=False)

    before = run("drift")
    assert before.exit_code == 2 and "! missing: namespace lake: sales" in before.stdout
    assert run("apply", "--auto-approve").exit_code == 0
    assert run("drift").exit_code == 0
    manifest["tables"][0]["properties"]["tier"] = "silver"
    path.write_text(yaml.safe_dump(manifest))
    changed = run("drift", "--format", "json")
    assert changed.exit_code == 2
    assert [(i.kind, i.detail) for i in DriftReport.model_validate_json(changed.stdout).items] == [
        (DriftKind.PROPERTIES, "tier = 'gold'; the manifest says 'silver'")]
