"""A load of some tables only (`--changed-since`, lance_sync.manifest.strategy): the tables asked
for are built as a full load builds them, the checks that span entries still cover every table,
and anything these checks cannot settle as written takes the full road."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync import api
from lance_sync.manifest import load_manifest
from lance_sync.manifest.history import Baseline, raw_manifest
from lance_sync.model.errors import LanceSyncError, ManifestErrors
from lance_sync.plan.changes import changed_scope, with_declared

BASE: dict[str, Any] = {
    "version": 1, "owner": "o",
    "backends": {"a": {"type": "dir", "root": "./a"}},
    "namespaces": [{"backend": "a", "id": "sales"}, {"backend": "a", "id": "hr"}],
    "tables": [{"name": f"t{i}", "location": f"./a/t{i}.lance", "properties": {"n": str(i)},
                "register": [{"backend": "a", "namespace": "sales" if i % 2 else "hr"}]} for i in range(6)],
}


def write(tmp_path: Path, manifest: dict[str, Any]) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return str(path)


def test_only_the_tables_asked_for_are_built_and_the_others_on_demand(tmp_path: Path):
    path = write(tmp_path, BASE)
    full = load_manifest([path])
    state = load_manifest([path], tables={"t1", "t4"})
    assert state.tables == [t for t in full.tables if t.name in ("t1", "t4")]
    assert state.namespaces == full.namespaces and state.backends.keys() == full.backends.keys()
    assert state.unbuilt is not None
    assert state.unbuilt.registered == {("a", ("sales" if i % 2 else "hr", f"t{i}")): f"t{i}" for i in (0, 2, 3, 5)}
    assert state.unbuilt.build({"t3", "t0"}) == [t for t in full.tables if t.name in ("t0", "t3")]
    assert state.ids_by_backend() == full.ids_by_backend()  # an apply holds the same leases


def test_a_read_that_turns_up_an_unbuilt_table_builds_it(tmp_path: Path):
    path = write(tmp_path, BASE)
    changed = copy.deepcopy(BASE)
    changed["tables"][1]["properties"] = {"n": "changed"}
    then = raw_manifest([path])
    write(tmp_path, changed)
    state = load_manifest([path], tables={"t1"})
    scope = changed_scope(Baseline("HEAD", "0" * 40, then, raw_manifest([path])), state)
    assert [t.name for t in scope.state.tables] == ["t1"]
    with_declared(scope, set(), {("a", ("sales", "t3"))})  # live, and declared by unchanged t3
    assert [t.name for t in scope.state.tables] == ["t1", "t3"]
    assert scope.state.tables[1] == next(t for t in load_manifest([path]).tables if t.name == "t3")


@pytest.mark.parametrize("change, message", [
    (lambda m: m["tables"][3].update(name="t2"), "table 't2' is declared twice"),
    (lambda m: m["tables"][5]["register"][0].update(name="t3"), "registered by both 't3' and 't5'"),
    (lambda m: m["tables"][5]["register"][0].update(name="t3", namespace=["sales"]),
     "registered by both 't3' and 't5'"),  # the same namespace, written as a list
    (lambda m: m["tables"][4].update(location="./a/t1.lance/inner"), "a location inside that of table 't1'"),
    (lambda m: m["tables"][2].update(location="./a/t1.lance"), "the same location as table 't1'"),
])
def test_checks_across_entries_cover_the_tables_not_asked_for(tmp_path: Path, change, message: str):
    """The conflict is between tables not asked for, or one asked for and one not: the error is
    the full load's, with its file and line."""
    manifest = copy.deepcopy(BASE)
    change(manifest)
    path = write(tmp_path, manifest)
    with pytest.raises(ManifestErrors) as full:
        load_manifest([path])
    with pytest.raises(ManifestErrors) as partial:
        load_manifest([path], tables={"t1"})
    assert message in str(full.value) and str(partial.value) == str(full.value) and "m.yaml:" in str(full.value)


def test_a_rename_anywhere_builds_every_table(tmp_path: Path):
    """Rename checks span every table's registrations and former ids: they need all built."""
    manifest = copy.deepcopy(BASE)
    manifest["tables"][5]["renamed_from"] = "old5"
    path = write(tmp_path, manifest)
    state = load_manifest([path], tables={"t1"})
    assert state.unbuilt is None and state.tables == load_manifest([path]).tables


def test_an_entry_not_asked_for_is_checked_when_built(tmp_path: Path):
    """An unchanged entry is not checked on its own by the partial load (`validate` checks every
    entry); when a plan needs it built, its problem is reported with file and line."""
    manifest = copy.deepcopy(BASE)
    manifest["tables"][3]["properties"] = {"lance_sync.mine": "x"}
    path = write(tmp_path, manifest)
    state = load_manifest([path], tables={"t1"})
    assert [t.name for t in state.tables] == ["t1"] and state.unbuilt is not None
    with pytest.raises(ManifestErrors, match=r"m\.yaml:\d+.*managed by lance-sync"):
        state.unbuilt.build({"t3"})


def test_a_state_loaded_in_part_is_planned_only_with_its_baseline(tmp_path: Path):
    state = load_manifest([write(tmp_path, BASE)], tables={"t1"})
    with pytest.raises(LanceSyncError, match="planned only against its baseline"):
        api.plan(state, drivers={})


def test_a_plan_since_a_revision_builds_the_unchanged_table_a_listing_turns_up(tmp_path: Path):
    """On the embedded `dir` backend: namespace `hr` leaves the manifest while its tables stay
    declared. Its listing turns up t0, t2 and t4, unchanged and unbuilt: they are built and
    planned (in sync), never taken for tables that left the manifest, as a full plan has it."""
    import subprocess

    path = write(tmp_path, BASE)
    assert api.apply(api.load(path)).status == "applied"
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"}
    for command in (["init", "-q"], ["add", "m.yaml"], ["commit", "-qm", "m"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True, env=env, capture_output=True)
    changed = copy.deepcopy(BASE)
    changed["namespaces"] = [{"backend": "a", "id": "sales"}]
    write(tmp_path, changed)
    state, baseline = api.load_changed([path], "HEAD")
    assert [t.name for t in state.tables] == [] and state.unbuilt is not None
    partial, full = api.plan(state, baseline=baseline), api.plan(api.load(path))
    assert [(a.verb, a.address) for a in partial.actions] == [(a.verb, a.address) for a in full.actions]
    assert not any(a.verb.value in ("forget", "delete") for a in partial.actions)
    assert any("tables of the manifest are registered in it; kept" in w for w in partial.warnings)
