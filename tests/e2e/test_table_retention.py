"""A table's `retention:` end to end on the `dir` backend, through the CLI in this process, read
back with pylance; and when reconcile may run the cleanup unattended (issue 47)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml

from lance_sync import api
from lance_sync.apply.reconcile import needs_person
from lance_sync.model.actions import Action, Kind, ObjectState, Reason, Verb
from lance_sync.model.policy import DEFAULT_UNATTENDED
from tests.support.cli import cli_env, describe, run_cli

#: runs `lance-sync ARGS` and kills itself (SIGKILL) right before or right after (LS_KILL) a
#: retention cleanup: what a kill inside one leaves, as far as lance-sync can tell
KILL_DURING_CLEANUP = r"""
import os, signal, sys, lance, lance_sync.cli.app
original = lance.LanceDataset.cleanup_old_versions
def cleanup(self, *args, **kwargs):
    if os.environ["LS_KILL"] == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    original(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
lance.LanceDataset.cleanup_old_versions = cleanup
sys.argv = ["lance-sync", *sys.argv[1:]]
lance_sync.cli.app.main()
"""


class RetainedProject:
    """A table lance-sync creates (so its dataset carries the owner's record), then appended to."""

    def __init__(self, root: Path):
        self.root = root
        self.manifest = root / "lance-sync.yaml"
        self.location = str(root / "lake" / "events.lance")
        self.write()
        self.cli("apply", "--auto-approve")
        for start in range(0, 50, 10):
            lance.write_dataset(pa.table({"id": pa.array(range(start, start + 10), pa.int64())}), self.location,
                                mode="append")

    def write(self, retention: dict | None = None, location: str = "./lake/events.lance") -> None:
        table = {"name": "events", "location": location, "register": [{"backend": "lake", "namespace": "ev"}],
                 "schema": [{"name": "id", "type": "int64"}], "retention": retention or {"keep_versions": 2}}
        self.manifest.write_text(yaml.safe_dump({
            "version": 1, "owner": "team", "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "ev"}], "tables": [table]}))

    def cli(self, command: str, *args: str, code: int = 0):
        result = run_cli(self.manifest, command, *args, env=cli_env())
        assert result.returncode == code, describe(result)
        return result

    def versions(self) -> list[int]:
        return [v["version"] for v in lance.dataset(self.location).versions()]


@pytest.fixture
def project(tmp_path: Path) -> RetainedProject:
    return RetainedProject(tmp_path)


def test_the_plan_says_what_a_cleanup_removes_and_tagged_versions_stay(project: RetainedProject):
    """Guards: the plan names the versions, files and bytes; the cleanup deletes data, so it
    needs --allow-drop; a tagged version is never removed; afterwards the plan is clean."""
    lance.dataset(project.location).tags.create("keep", 2)
    plan = project.cli("plan").stdout
    assert "  - delete versions  lake: ./lake/events.lance  [destroys data]" in plan
    assert "retention (keep the newest 2): remove 3 old version(s) (versions 1, 3-4): " in plan
    assert "tagged versions and the latest are kept" in plan
    refused = project.cli("apply", "--auto-approve", code=4)
    assert "--allow-drop" in refused.stdout + refused.stderr
    assert project.versions() == [1, 2, 3, 4, 5, 6]
    project.cli("apply", "--auto-approve", "--allow-drop")
    assert project.versions() == [2, 5, 6]
    assert lance.dataset(project.location).count_rows() == 50
    project.cli("plan", "--detailed-exitcode")


def test_retention_leaves_a_dataset_lance_sync_did_not_create_alone(tmp_path: Path):
    """Guards: a cleanup runs only on a dataset carrying this owner's record; others are listed."""
    project = RetainedProject(tmp_path)
    other = tmp_path / "lake" / "theirs.lance"
    for _ in range(3):
        lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), str(other), mode="append")
    project.write(location="./lake/theirs.lance")
    plan = project.cli("plan").stdout
    assert "delete versions" not in plan
    assert "versions lake: ./lake/theirs.lance (retention: the dataset " in plan
    assert "lance-sync cleans up only the datasets it created for 'team')" in plan


def test_a_reconcile_cycle_cleans_up_only_when_the_policy_names_it(project: RetainedProject):
    """Guards: reconcile leaves a cleanup pending by default, and runs it (with nothing else that
    destroys data) once policy.unattended names `delete versions`."""
    waiting = api.reconcile([project.manifest], once=True, state_dir=project.root / ".state")
    assert waiting is not None and waiting.outcome == "pending"
    assert [o.action for o in waiting.pending] == ["delete versions"]
    assert project.versions() == [1, 2, 3, 4, 5, 6]
    manifest = yaml.safe_load(project.manifest.read_text())
    manifest["policy"] = {"unattended": ["create", "update", "rename", "grant", "delete versions"]}
    project.manifest.write_text(yaml.safe_dump(manifest))
    cleaned = api.reconcile([project.manifest], once=True, state_dir=project.root / ".state")
    assert cleaned is not None and cleaned.outcome == "applied", cleaned
    assert project.versions() == [5, 6]


def test_reconcile_runs_a_cleanup_only_when_the_policy_names_it():
    """Guards: `delete versions` in policy.unattended lets reconcile run a retention cleanup;
    by default it waits for a person."""
    cleanup = Action(verb=Verb.DELETE, kind=Kind.VERSIONS, reason=Reason.CHANGED, backend="lake", id=[],
                     display_id="/lake/events.lance", detail="retention", fingerprint="x",
                     before=ObjectState(location="/lake/events.lance", version=6))
    assert needs_person(cleanup, DEFAULT_UNATTENDED) == \
        "needs approval: delete versions is not in policy.unattended (create, update, rename, grant)"
    assert needs_person(cleanup, (*DEFAULT_UNATTENDED, "delete versions")) is None


@pytest.mark.parametrize("moment", ["before", "after"])
def test_an_apply_killed_during_a_cleanup_converges(project: RetainedProject, moment: str, subprocesses):
    """Guards: crash safety with a real kill -9 at a cleanup: the next apply finishes it (or finds
    nothing left to do), the tagged and the newest versions and every row stay."""
    lance.dataset(project.location).tags.create("keep", 2)
    killed = subprocess.run([sys.executable, "-c", KILL_DURING_CLEANUP, "apply", "-f", str(project.manifest),
                             "--auto-approve", "--allow-drop"], capture_output=True, text=True, cwd=project.root,
                            env={**cli_env(), "LS_KILL": moment}, stdin=subprocess.DEVNULL, timeout=300)
    assert killed.returncode == -signal.SIGKILL, describe(killed)
    project.cli("apply", "--auto-approve", "--allow-drop")
    assert project.versions() == [2, 5, 6]
    assert lance.dataset(project.location).count_rows() == 50
    project.cli("plan", "--detailed-exitcode")
