"""What `--changed-since` covers, offline: two manifests (then and now) compared entry by entry
(lance_sync.plan.changes.changed_scope), and the manifest read at a git revision."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync.manifest import load_manifest
from lance_sync.manifest.history import Baseline, load_baseline, raw_manifest
from lance_sync.model.errors import LanceSyncError
from lance_sync.plan.changes import changed_scope, tables_to_build

BASE: dict[str, Any] = {
    "version": 1, "owner": "o",
    "backends": {"a": {"type": "dir", "root": "./a"}, "b": {"type": "dir", "root": "./b"}},
    "namespaces": [{"backend": "a", "id": "sales"}, {"backend": "a", "id": "hr"}, {"backend": "b", "id": "x"}],
    "tables": [{"name": f"t{i}", "location": f"./a/t{i}.lance", "register": [{"backend": "a", "namespace": "sales"}]}
               for i in range(5)] + [{"name": "u", "location": "./b/u.lance", "register": [{"backend": "b", "namespace": "x"}]}],
}


def scope_of(tmp_path: Path, change) -> Any:
    """The scope of `change` applied to BASE: both written in turn to one file, as a revision
    and the working tree have the same path."""
    path = tmp_path / "m.yaml"
    now = copy.deepcopy(BASE)
    change(now)
    path.write_text(yaml.safe_dump(BASE))
    then = raw_manifest([str(path)])
    path.write_text(yaml.safe_dump(now))
    baseline = Baseline("HEAD", "0" * 40, then, raw_manifest([str(path)]))
    scope = changed_scope(baseline, load_manifest([str(path)]))
    # a load of only the tables the plan compares covers the same
    partial = changed_scope(baseline, load_manifest([str(path)], tables=tables_to_build(baseline)))
    assert (names(partial), partial.whole, partial.whole_backends, partial.removals, partial.widened) == \
        (names(scope), scope.whole, scope.whole_backends, scope.removals, scope.widened)
    return scope


def names(scope) -> tuple[list[str], list[str]]:
    return (sorted(f"{ns.backend}:{'$'.join(ns.id)}" for ns in scope.state.namespaces),
            sorted(t.name for t in scope.state.tables))


def test_nothing_changed_covers_nothing(tmp_path: Path):
    scope = scope_of(tmp_path, lambda m: None)
    assert not scope.whole and names(scope) == ([], []) and not scope.removals


def test_a_changed_table_brings_its_namespace(tmp_path: Path):
    scope = scope_of(tmp_path, lambda m: m["tables"][1].update(properties={"tier": "gold"}))
    assert names(scope) == (["a:sales"], ["t1"]) and not scope.whole_backends


def test_removed_entries_are_read_by_id(tmp_path: Path):
    def change(m):
        del m["tables"][2]
        del m["namespaces"][1]
    scope = scope_of(tmp_path, change)
    assert scope.removed_tables == {("a", ("sales", "t2"))} and scope.removed_namespaces == {("a", ("hr",))}
    namespaces, tables = scope.read_by_id()
    assert tables == {("a", ("sales", "t2"))} and ("a", ("hr",)) in namespaces and ("a", ("sales",)) in namespaces


def test_a_registration_moved_away_is_removed_and_one_taken_over_is_not(tmp_path: Path):
    def change(m):
        m["tables"][1]["register"] = [{"backend": "a", "namespace": "hr"}]  # t1 leaves sales
        m["tables"][4]["register"] = [{"backend": "a", "namespace": "sales", "name": "t3"}]
        del m["tables"][3]  # t3 leaves, and t4 takes its registration over
    scope = scope_of(tmp_path, change)
    assert scope.removed_tables == {("a", ("sales", "t1")), ("a", ("sales", "t4"))}
    assert names(scope) == (["a:hr", "a:sales"], ["t1", "t4"])


def test_a_backend_configuration_change_covers_that_backend(tmp_path: Path):
    scope = scope_of(tmp_path, lambda m: m["backends"]["b"].update(scope=["x"]))
    assert scope.whole_backends == {"b"} and names(scope) == (["b:x"], ["u"])
    assert any("backend 'b'" in reason for reason in scope.widened)


@pytest.mark.parametrize("change, why", [
    (lambda m: m.update(owner="p"), "the owner changed"),
    (lambda m: m.update(storage={"region": "x"}), "the default storage options changed"),
    (lambda m: m.update(policy={"rules": [{"name": "r", "max_removals": 1}]}), "the policy changed"),
])
def test_an_owner_storage_or_policy_change_covers_everything(tmp_path: Path, change, why: str):
    scope = scope_of(tmp_path, change)
    assert scope.whole and scope.widened[0].startswith(why)


def test_a_backend_removed_or_renamed_covers_everything(tmp_path: Path):
    """The objects a backend key that left the manifest registered are no entry's now (a plan
    of the changes read them under that key, and failed with a KeyError)."""
    def rename(manifest: dict[str, Any]) -> None:
        manifest["backends"]["c"] = manifest["backends"].pop("b")
        manifest["namespaces"][2]["backend"] = manifest["tables"][5]["register"][0]["backend"] = "c"

    scope = scope_of(tmp_path, rename)
    assert scope.whole and scope.widened == ["backend 'b' was removed or renamed: everything is planned"]


def test_the_manifest_at_a_revision(tmp_path: Path):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "PATH": "/usr/bin:/bin"}
    path = tmp_path / "m.yaml"
    with pytest.raises(LanceSyncError, match="git repository"):
        path.write_text(yaml.safe_dump(BASE))
        load_baseline("HEAD", [str(path)])
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "m"], cwd=tmp_path, check=True, env=env)
    changed = copy.deepcopy(BASE)
    changed["tables"][0]["properties"] = {"k": "v"}
    path.write_text(yaml.safe_dump(changed))
    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump({"tables": [{"name": "t1", "properties": {"o": "v"}}]}))
    baseline = load_baseline("HEAD", [str(path), str(tmp_path / "overlay.yaml")])
    assert baseline.then is not None and "properties" not in baseline.then.tables["t0"]  # as committed
    assert baseline.now.tables["t1"]["properties"] == {"o": "v"}  # the overlay the revision lacks
    assert baseline.shown.startswith("HEAD (") and len(baseline.revision) == 40
    with pytest.raises(LanceSyncError, match="no such commit"):
        load_baseline("not-a-ref", [str(path)])
    scope = changed_scope(baseline, load_manifest([str(path), str(tmp_path / "overlay.yaml")]))
    assert names(scope) == (["a:sales"], ["t0", "t1"])
