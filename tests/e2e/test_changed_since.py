"""`--changed-since REF` in a real git repository, against the suite's servers: the Iceberg REST
server (upstream Iceberg), the Glue server and the real Hive Metastore 2.3.

A manifest of 2 namespaces and 12 tables is applied and committed. Then the working tree
changes a few entries (a property, a new table, a removed one, a rename; an overlay file; a
backend's configuration), and `plan --changed-since HEAD` must:
- hold exactly the actions a full plan holds for those changes (nothing missed, nothing
  invented: no unchanged table taken for one that left the manifest);
- read the catalog in proportion to the change (a handful of calls, against a full plan's);
- say it is partial and which revision it compared; widen to the whole backend when its
  configuration changed.
`apply --changed-since HEAD` then converges: a full plan finds nothing to do.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml

from tests.conformance.conftest import harness_class
from tests.conformance.harness import Harness
from tests.support.catalogs import GLUE_KEY_VARIABLE, GLUE_SECRET_VARIABLE, glue_env
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers

TABLES = 12


@pytest.fixture(params=["iceberg", "glue", "hms"])
def harness(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Harness:
    cls = harness_class(request.param)
    return cls(request.getfixturevalue(cls.server_fixture), tmp_path_factory.mktemp(f"since_{request.param}"))


class Repo:
    """A git repository holding one manifest (and maybe an overlay), for one backend."""

    def __init__(self, harness: Harness, root: Path):
        self.harness, self.root = harness, root
        self.path = root / "lance-sync.yaml"
        self.overlay = root / "overlay.yaml"
        self.env = cli_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
                           GIT_COMMITTER_EMAIL="t@example.com")
        self.backend: dict[str, Any] = {"type": harness.backend_type, **harness.config()}
        if harness.backend_type == "glue" and "access_key_id" in self.backend:
            self.backend.update(access_key_id=f"${{{GLUE_KEY_VARIABLE}}}",
                                secret_access_key=f"${{{GLUE_SECRET_VARIABLE}}}")
            self.env.update(glue_env(harness.server))
        suffix = uuid.uuid4().hex[:6]
        self.owner = f"since-{suffix}"  # other tests' objects in the same catalog are not this owner's
        self.namespaces = [list(harness.new_namespace_id(f"since_{suffix}_{i}")) for i in range(2)]
        self.tables: list[dict[str, Any]] = []
        for i in range(TABLES):
            location = root / "data" / f"t{i}.lance"
            lance.write_dataset(pa.table({"id": pa.array([i], pa.int64())}), str(location))
            self.tables.append({"name": f"t{i}", "location": f"./data/t{i}.lance", "properties": {"tier": "gold"},
                                "register": [{"backend": "b", "namespace": self.namespaces[i % 2]}]})
        self.git("init", "-q")
        (root / ".gitignore").write_text(".lance-sync/\ndata/\n")

    def git(self, *args: str) -> None:
        subprocess.run(["git", *args], cwd=self.root, env=self.env, check=True, capture_output=True)

    def commit(self) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "manifest")

    def write(self) -> None:
        self.path.write_text(yaml.safe_dump({
            "version": 1, "owner": self.owner, "backends": {"b": self.backend},
            "namespaces": [{"backend": "b", "id": ns} for ns in self.namespaces], "tables": self.tables},
            sort_keys=False))

    def files(self) -> list[str]:
        files = ["-f", str(self.path)]
        return files + (["-f", str(self.overlay)] if self.overlay.exists() else [])

    def cli(self, command: str, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        result = run_cli(self.path, command, *self.files()[2:], *args, env=self.env)
        assert result.returncode == expect, describe(result)
        return result

    def plan(self, *args: str) -> dict[str, Any]:
        return json.loads(self.cli("plan", "--format", "json", *args).stdout)


def actions(plan: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((a["verb"], a["kind"], a["display_id"]) for a in plan["actions"])


def test_a_plan_since_a_revision_reads_and_plans_only_what_changed(harness: Harness, tmp_path: Path):
    repo = Repo(harness, tmp_path)
    repo.write()
    repo.cli("apply", "--auto-approve")
    repo.commit()
    unchanged = repo.plan("--changed-since", "HEAD")
    assert unchanged["actions"] == [] and unchanged["partial"]["by"] == "changed_since"
    assert sum(unchanged["api_calls"].values()) == 0, unchanged["api_calls"]
    full_calls = sum(repo.plan()["api_calls"].values())

    # a property, a new table, a removed table, a rename
    repo.tables[0]["properties"] = {"tier": "platinum"}
    location = tmp_path / "data" / "new.lance"
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), str(location))
    repo.tables.append({"name": "fresh", "location": "./data/new.lance",
                        "register": [{"backend": "b", "namespace": repo.namespaces[0]}]})
    del repo.tables[3]
    repo.tables[4].update(name="t5_v2", renamed_from="t5")
    repo.write()
    partial = repo.plan("--changed-since", "HEAD")
    full = repo.plan()
    assert actions(partial) == actions(full), (actions(partial), actions(full))
    assert {verb for verb, _, _ in actions(partial)} >= {"update", "create", "forget"}, actions(partial)
    # a point read per changed object and its namespace: a bound that does not grow with the estate
    # (at 12 tables a bulk listing can cost less; the benchmark compares at 100,000)
    calls = sum(partial["api_calls"].values())
    assert calls <= 20, (calls, full_calls)
    assert partial["partial"]["revision"] == subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    text = repo.cli("plan", "--changed-since", "HEAD").stdout
    assert "This plan is partial: only the manifest entries changed since HEAD (" in text, text

    repo.cli("apply", "--auto-approve", "--allow-replace", "--changed-since", "HEAD")  # Glue renames by replacing
    repo.cli("plan", "--detailed-exitcode")
    repo.commit()

    # an overlay the revision does not have: its entries are changes
    repo.overlay.write_text(yaml.safe_dump({"tables": [{"name": "t7", "properties": {"tier": "bronze"}}]}))
    partial = repo.plan("--changed-since", "HEAD")
    assert actions(partial) == actions(repo.plan()) and len(partial["actions"]) == 1, actions(partial)
    repo.cli("apply", "--auto-approve", "--changed-since", "HEAD")
    repo.commit()

    # a backend's configuration: the whole backend is planned, and said so
    repo.backend["scope"] = [repo.namespaces[1]]
    repo.write()
    widened = repo.plan("--changed-since", "HEAD")
    assert any("backend 'b'" in reason for reason in widened["partial"]["widened"]), widened["partial"]
    assert actions(widened) == actions(repo.plan())


def test_drift_outside_the_change_is_not_read_and_a_full_plan_finds_it(harness: Harness, tmp_path: Path):
    """In proportion to the change means: an unchanged table drifted by someone else is the
    full plan's to find (the partial plan says it read only what changed)."""
    repo = Repo(harness, tmp_path)
    repo.write()
    repo.cli("apply", "--auto-approve")
    repo.commit()
    driver = harness.driver()
    drifted = (*repo.namespaces[1], "t9")
    driver.update_table_properties(drifted, {"tier": "tin"}, [])
    repo.tables[0]["properties"] = {"tier": "platinum"}
    repo.write()
    assert [a[2].rsplit(driver.id_delimiter, 1)[-1] for a in actions(repo.plan("--changed-since", "HEAD"))] == ["t0"]
    assert sorted(a[2].rsplit(driver.id_delimiter, 1)[-1] for a in actions(repo.plan())) == ["t0", "t9"]
    drift = json.loads(repo.cli("drift", "--format", "json", "--changed-since", "HEAD", expect=2).stdout)
    assert [item["kind"] for item in drift["items"]] == ["properties"], drift["items"]


def test_changed_since_refuses_what_it_cannot_compare(harness: Harness, tmp_path: Path):
    repo = Repo(harness, tmp_path)
    repo.write()
    result = run_cli(repo.path, "plan", "--changed-since", "HEAD", env=repo.env)
    assert result.returncode == 1 and "no such commit" in result.stderr, describe(result)
    repo.commit()
    result = run_cli(repo.path, "plan", "--changed-since", "nope", env=repo.env)
    assert result.returncode == 1 and "--changed-since nope: no such commit" in result.stderr, describe(result)
    result = run_cli(repo.path, "plan", "--changed-since", "HEAD", "--target", "b:x", env=repo.env)
    assert result.returncode == 1 and "not both" in result.stderr, describe(result)
