"""`--changed-since REF` where the files themselves changed, on the `dir` backend in a real git
repository: a plan of the changes never shows less than apply does to the objects of the
manifest at REF and now. The first four failed before the revision's files were found as git
finds them (a `-f` file renamed, an overlay deleted), before a backend removed or renamed
widened the plan (it failed with a KeyError), and before the plan named the variables it
resolved; the last keeps finding renamed files from hiding a manifest moved to another folder.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import cli_env, describe, run_cli

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def table(name: str, namespace: str = "hr", **extra: Any) -> dict[str, Any]:
    return {"name": name, "location": f"./lake/data/{name}.lance", "register": [{"backend": "lake", "namespace": namespace}],
            "schema": [{"name": "id", "type": "int64"}], **extra}


class Repo:
    """A git repository of a split manifest for one `dir` catalog."""

    def __init__(self, root: Path, **variables: str):
        self.root = root
        self.env = cli_env(**GIT_ENV, **variables)
        self.git("init", "-q")
        (root / ".gitignore").write_text("lake/\n.lance-sync/\n")
        self.write("base.yaml", {"version": 1, "owner": "o", "backends": {"lake": {"type": "dir", "root": "./lake"}},
                                 "namespaces": [{"backend": "lake", "id": "hr"}]})

    def git(self, *args: str) -> None:
        subprocess.run(["git", *args], cwd=self.root, env=self.env, check=True, capture_output=True)

    def write(self, name: str, data: dict[str, Any]) -> None:
        (self.root / name).write_text(yaml.safe_dump(data, sort_keys=False))

    def commit(self) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "change")

    def cli(self, command: str, files: list[str], *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        more = [arg for name in files[1:] for arg in ("-f", str(self.root / name))]
        result = run_cli(self.root / files[0], command, *more, *args, env=self.env)
        assert result.returncode == expect, describe(result)
        return result

    def plan(self, files: list[str], *args: str) -> dict[str, Any]:
        return json.loads(self.cli("plan", files, "--format", "json", *args).stdout)


def keys(plan: dict[str, Any]) -> list[str]:
    return sorted(f"{action['verb']} {action['kind']} {action['display_id']}" for action in plan["actions"])


def test_a_renamed_file_is_read_where_the_revision_had_it(tmp_path: Path):
    """`git mv` of a split manifest's table file that also deletes a table: the plan since the
    revision reads the file at its old path, so it forgets the table as the full plan does
    (it said "No changes" and exited 0)."""
    repo = Repo(tmp_path)
    repo.write("old.yaml", {"tables": [table("t1"), table("t3")]})
    repo.cli("apply", ["base.yaml", "old.yaml"], "--auto-approve")
    repo.commit()
    repo.git("mv", "old.yaml", "tables.yaml")
    repo.write("tables.yaml", {"tables": [table("t1")]})
    repo.commit()
    files = ["base.yaml", "tables.yaml"]
    partial, full = repo.plan(files, "--changed-since", "HEAD~1"), repo.plan(files)
    assert keys(full) == ["forget table hr$t3"] and keys(partial) == keys(full), (partial, full)
    assert partial["partial"]["widened"] == [], partial["partial"]
    repo.cli("plan", files, "--changed-since", "HEAD~1", "--detailed-exitcode", expect=2)


def test_a_deleted_overlay_widens_to_a_full_plan_and_says_why(tmp_path: Path):
    """`git rm prod.overlay.yaml`: the revision does not say it was a part of the manifest,
    so the plan covers everything (the full plan reverts its property and forgets its table),
    and says why in every format."""
    repo = Repo(tmp_path)
    repo.write("tables.yaml", {"tables": [table("t1", properties={"tier": "silver"})]})
    repo.write("prod.overlay.yaml", {"tables": [{"name": "t1", "properties": {"tier": "gold"}}, table("t2")]})
    repo.cli("apply", ["base.yaml", "tables.yaml", "prod.overlay.yaml"], "--auto-approve")
    repo.commit()
    repo.git("rm", "-q", "prod.overlay.yaml")
    files = ["base.yaml", "tables.yaml"]
    partial, full = repo.plan(files, "--changed-since", "HEAD"), repo.plan(files)
    assert keys(full) == ["forget table hr$t2", "update table hr$t1"] and keys(partial) == keys(full)
    reason = "prod.overlay.yaml was deleted or renamed since HEAD and may have been part of the manifest there"
    assert partial["partial"]["widened"] == [f"{reason}: everything is planned"], partial["partial"]
    for output in ("text", "markdown"):
        assert reason in repo.cli("plan", files, "--changed-since", "HEAD", "--format", output).stdout, output


def test_a_renamed_backend_widens_instead_of_failing(tmp_path: Path):
    """A backend key renamed in the change: every `--changed-since` command failed with
    `KeyError: 'lake'`; the plan covers everything instead, as the full plan does."""
    repo = Repo(tmp_path)
    repo.write("tables.yaml", {"tables": [table("t1")]})
    files = ["base.yaml", "tables.yaml"]
    repo.cli("apply", files, "--auto-approve")
    repo.commit()
    base = yaml.safe_load((tmp_path / "base.yaml").read_text())
    base["backends"] = {"lake2": base["backends"]["lake"]}
    base["namespaces"] = [{"backend": "lake2", "id": "hr"}]
    repo.write("base.yaml", base)
    repo.write("tables.yaml", {"tables": [{**table("t1"), "register": [{"backend": "lake2", "namespace": "hr"}]}]})
    partial, full = repo.plan(files, "--changed-since", "HEAD"), repo.plan(files)
    assert keys(partial) == keys(full)
    assert partial["partial"]["widened"] == ["backend 'lake' was removed or renamed: everything is planned"]
    repo.cli("drift", files, "--changed-since", "HEAD")
    repo.cli("apply", files, "--changed-since", "HEAD", "--auto-approve")


def test_the_plan_names_the_variables_it_resolved_but_no_secret(tmp_path: Path):
    """The revision has no record of the environment it was applied in: a plan since it under
    other values plans only the edited entries. It names every variable it resolved, with its
    value, but a secret's (a credential's name, a place that holds one), in every format."""
    repo = Repo(tmp_path, DS="a", STORE_TOKEN="hunter2-token-value", TIER="g")
    repo.write("tables.yaml", {"tables": [
        {**table("t1"), "location": "./lake/${DS}/t1.lance", "properties": {"tier": "${TIER}", "key": "${OPAQUE:-x}"}},
        table("t2")]})
    base = yaml.safe_load((tmp_path / "base.yaml").read_text())
    base["backends"]["lake"]["storage"] = {"aws_session_token": "${STORE_TOKEN}"}
    repo.write("base.yaml", base)
    files = ["base.yaml", "tables.yaml"]
    repo.commit()
    plan = repo.plan(files, "--changed-since", "HEAD")
    assert plan["partial"]["variables"] == [
        {"name": "DS", "value": "a", "secret": False}, {"name": "OPAQUE", "value": "x", "secret": False},
        {"name": "STORE_TOKEN", "value": None, "secret": True}, {"name": "TIER", "value": "g", "secret": False}]
    for output, name in (("text", "STORE_TOKEN"), ("markdown", "STORE\\_TOKEN")):
        shown = repo.cli("plan", files, "--changed-since", "HEAD", "--format", output).stdout
        assert f"variables resolved: DS='a', OPAQUE='x', {name}=(secret), TIER='g'" in shown, shown
        assert "hunter2" not in shown


def test_a_manifest_moved_to_another_folder_widens(tmp_path: Path):
    """Relative paths resolve from the first file's folder: when it moved (`git mv` into a
    folder), every location and the catalog's root mean other places, though each entry, read
    where git renamed it from, is as it was; the plan covers everything, as the full plan
    creates everything anew (without this, finding renamed files would say "No changes")."""
    repo = Repo(tmp_path)
    repo.write("tables.yaml", {"tables": [table("t1")]})
    repo.cli("apply", ["base.yaml", "tables.yaml"], "--auto-approve")
    repo.commit()
    (tmp_path / "catalog").mkdir()
    repo.git("mv", "base.yaml", "tables.yaml", "catalog/")
    files = ["catalog/base.yaml", "catalog/tables.yaml"]
    partial, full = repo.plan(files, "--changed-since", "HEAD"), repo.plan(files)
    assert keys(partial) == keys(full) and "create table hr$t1" in keys(full), (partial, full)
    assert partial["partial"]["widened"] == [
        "the manifest's first file was in ./ at HEAD (relative paths resolve from its folder): everything is planned"]
