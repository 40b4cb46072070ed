"""The Python API: the CLI's commands as functions, with the same guards, leases and objects."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml

from lance_sync import api
from lance_sync.model.actions import Plan
from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import ExitCode, GuardRefusal, LanceSyncError, ManifestErrors
from tests.support.project import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def without_run_details(document: dict) -> dict:
    """A plan document less what differs between two runs (time, call counts, file paths)."""
    return {k: v for k, v in document.items() if k not in ("created_at", "api_calls", "manifest_files")}


def test_load_plan_and_render_give_what_the_cli_prints(project: Project):
    state = api.load(project.manifest_path)
    assert isinstance(state, DesiredState) and state.owner == "quickstart"
    plan = api.plan(state)
    assert isinstance(plan, Plan) and plan.has_changes and len(plan.actions) == 7
    cli = json.loads(project.plan("--format", "json").stdout)
    assert without_run_details(json.loads(api.render(plan, "json"))) == without_run_details(cli)
    assert "Plan: 7 to create" in api.render(plan)


def test_apply_a_manifest_then_nothing_is_left(project: Project):
    state = api.load([project.manifest_path])
    heard: dict[str, list] = {"plans": [], "outcomes": [], "confirmed": []}
    hooks = api.ApplyHooks(on_plan=heard["plans"].append, on_outcome=heard["outcomes"].append,
                           confirm=lambda plan: heard["confirmed"].append(plan) or True)
    result = api.apply(state, hooks=hooks)
    assert result.status == "applied" and result.exit_code == ExitCode.OK
    assert result.report is not None and {o.status for o in result.report.outcomes} == {"succeeded"}
    assert len(heard["outcomes"]) == 7 and heard["plans"] == heard["confirmed"] == [result.plan]
    assert result.report.journal_path.is_file()
    assert result.report.journal_path.parent.parent == project.root / ".lance-sync"
    assert project.tables("sales") == ["orders", "returns"]
    again = api.apply(state)
    assert again.status == "no_changes" and again.report is None
    # one manifest scan reads every namespace (the nested one too) and table of the root
    assert api.plan(state).api_calls == {"lake": 1}


def test_dry_run_and_a_cancelled_confirmation_change_nothing(project: Project):
    state = api.load(project.manifest_path)
    assert api.apply(state, dry_run=True).status == "dry_run"
    with pytest.raises(LanceSyncError, match="apply cancelled"):
        api.apply(state, hooks=api.ApplyHooks(confirm=lambda plan: False))
    assert not (project.root / "lakehouse" / "data").exists()
    assert api.plan(state).has_changes


def test_the_guards_refuse_as_in_the_cli(project: Project):
    assert api.apply(api.load(project.manifest_path)).status == "applied"
    manifest = project.manifest
    orders = next(t for t in manifest["tables"] if t["name"] == "orders")
    orders["on_remove"] = "drop"
    project.write(manifest)
    api.apply(api.load(project.manifest_path))  # stamps lance_sync.on_remove=drop
    manifest["tables"].remove(orders)
    project.write(manifest)
    state = api.load(project.manifest_path)
    with pytest.raises(GuardRefusal, match="allow-drop") as refused:
        api.apply(state)
    assert refused.value.exit_code == ExitCode.REFUSED
    assert (project.root / "lakehouse" / "data" / "orders.lance").is_dir()
    assert api.apply(state, allow_drop=True).status == "applied"
    assert not (project.root / "lakehouse" / "data" / "orders.lance").exists()


def test_a_saved_plan_applies_once_and_is_stale_after_a_change(project: Project, tmp_path: Path):
    state = api.load(project.manifest_path)
    api.save_plan(api.plan(state), tmp_path / "plan.json")
    saved = api.load_plan(tmp_path / "plan.json")
    assert api.apply(saved, state_dir=tmp_path / "state").status == "applied"
    manifest = project.manifest
    manifest["namespaces"][0]["properties"]["team"] = "finance"
    project.write(manifest)
    api.save_plan(api.plan(api.load(project.manifest_path)), tmp_path / "changed.json")
    api.apply(api.load(project.manifest_path))  # someone applies the change first
    manifest["namespaces"][0]["properties"]["team"] = "ops"
    project.write(manifest)
    api.apply(api.load(project.manifest_path))
    with pytest.raises(GuardRefusal, match="stale|changed since"):
        api.apply(api.load_plan(tmp_path / "changed.json"), state_dir=tmp_path / "state")


def test_a_second_apply_meets_the_first_one_s_lease(project: Project):
    state = api.load(project.manifest_path)
    refusals: list[str] = []

    def second_apply(plan: Plan) -> bool:
        with pytest.raises(GuardRefusal) as refused:
            api.apply(api.load(project.manifest_path))
        refusals.append(str(refused.value))
        return True

    assert api.apply(state, hooks=api.ApplyHooks(confirm=second_apply)).status == "applied"
    assert len(refusals) == 1 and "lease" in refusals[0]


def test_verify_and_discover(project: Project):
    state = api.load(project.manifest_path)
    api.apply(state)
    report = api.verify(state, engine="threads")
    assert not report.broken and {f.status for f in report.findings} == {"valid"}
    stray = project.root / "lakehouse" / "data" / "stray.lance"
    lance.write_dataset(pa.table({"x": [1]}), str(stray))
    found = api.discover(state, str(project.root / "lakehouse"), engine="threads")
    assert [Path(location).name for location in found] == ["stray.lance"]


def test_drift_is_what_the_next_apply_would_repair(project: Project):
    state = api.load(project.manifest_path)
    before = api.drift(state)
    assert before.has_drift and {item.kind.value for item in before.items} == {"missing", "data"}
    api.apply(state)
    assert not api.drift(state).has_drift


def test_leases_are_listed_and_a_dead_apply_s_is_removed(project: Project):
    from lance_sync.apply.lease import Leases, lease_stores

    state = api.load(project.manifest_path)
    assert api.held_leases(state) == []
    holder = Leases(lease_stores(api.connect(state), state.ids_by_backend(), state.owner), state.owner)
    holder.acquire(timeout=0)
    holder._stop.set()  # its renewals stop, as an apply's that died
    [(where, record)] = api.held_leases(state)
    assert record.id == holder.record.id and "lake" in where
    with pytest.raises(LanceSyncError, match="no lease nope for owner 'quickstart'"):
        api.unlock(state, "nope")
    assert len(api.unlock(state, holder.record.id)) == 1
    assert api.held_leases(state) == []


def test_import_manifest_of_a_manifest_s_backend_or_of_a_backend_type(project: Project, tmp_path: Path):
    state = api.load(project.manifest_path)
    api.apply(state)
    imported = api.import_manifest("lake", state, base_dir=project.root)
    written = yaml.safe_load(imported.text)
    assert written["owner"] == "quickstart" and imported.left_out == []
    assert {t["name"] for t in written["tables"]} == {t.name for t in state.tables}
    root = str(project.root / "lakehouse")
    other = api.import_manifest("lake", backend_type="dir", properties={"root": root}, owner="them",
                                base_dir=tmp_path)
    assert yaml.safe_load(other.text)["owner"] == "them" and not yaml.safe_load(other.text)["tables"]
    assert other.left_out and all(item.endswith("(owned by 'quickstart')") for item in other.left_out)
    with pytest.raises(LanceSyncError, match="an owner is required with a backend_type"):
        api.import_manifest("lake", backend_type="dir", properties={"root": root})
    with pytest.raises(LanceSyncError, match="backend 'nope' is not defined in the manifest"):
        api.import_manifest("nope", state)


def test_errors_are_the_cli_s(project: Project, tmp_path: Path):
    (tmp_path / "bad.yaml").write_text("version: 1\nowner: x\nbackends: {}\ntables: [{name: t}]\n")
    with pytest.raises(ManifestErrors):
        api.load(tmp_path / "bad.yaml")
    (tmp_path / "not-a-plan.json").write_text("{}")
    with pytest.raises(LanceSyncError, match="not a lance-sync plan"):
        api.load_plan(tmp_path / "not-a-plan.json")


def test_targets_and_a_policy_file_as_in_the_cli(project: Project, tmp_path: Path):
    state = api.load(project.manifest_path)
    whole = api.plan(state)
    targeted = api.plan(state, targets=["lake:sales"])
    assert targeted.partial is not None and 0 < len(targeted.actions) < len(whole.actions)
    assert api.apply(state, targets=["lake:sales"]).status == "applied"
    assert project.tables("sales") == []  # only the namespace was targeted

    api.save_plan(api.plan(state), tmp_path / "plan.json")
    with pytest.raises(LanceSyncError, match="targets and a baseline limit a fresh plan"):
        api.apply(api.load_plan(tmp_path / "plan.json"), targets=["lake:sales"])
    (tmp_path / "policy.yaml").write_text("rules:\n  - {name: no-new-tables, forbidden_actions: [create table]}\n")
    checked = api.load_plan(tmp_path / "plan.json", policy_file=tmp_path / "policy.yaml")
    assert checked.refused and {v.rule for v in checked.policy_violations} == {"no-new-tables"}
    with pytest.raises(GuardRefusal, match="breaks the policy"):
        api.apply(checked)
    assert api.plan(api.load(project.manifest_path, tmp_path / "policy.yaml")).refused


def test_reconcile_once_applies_what_the_policy_lets_run_unattended(project: Project):
    records: list[dict] = []
    last = api.reconcile([project.manifest_path], once=True, on_record=records.append)
    assert last is not None and last.exit_code == ExitCode.OK
    assert [record["event"] for record in records] == ["start", "cycle", "stop"]
    assert project.tables("sales") == ["orders", "returns"]


def test_json_schema_is_what_lance_sync_schema_prints(project: Project):
    for document in ("manifest", "overlay", "plan", "policy"):
        shipped = json.loads((Path(__file__).resolve().parents[2] / "schemas" / f"{document}.schema.json").read_text())
        assert api.json_schema(document) == shipped
