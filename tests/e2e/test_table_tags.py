"""A table's `tags:` end to end on the `dir` backend, through the CLI in this process, read
back with pylance; and a promotion from staging to prod by tag, an overlay per environment
(issue 47)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.table_state import TAG_OWNER_KEY
from tests.support.cli import cli_env, describe, run_cli

VERSIONS = 5


class TaggedProject:
    def __init__(self, root: Path):
        self.root = root
        self.manifest = root / "lance-sync.yaml"
        self.location = str(root / "lake" / "events.lance")
        rows = pa.table({"id": pa.array(range(10), pa.int64())})
        lance.write_dataset(rows, self.location)
        for _ in range(VERSIONS - 1):
            lance.write_dataset(rows, self.location, mode="append")
        self.write({"stable": 2, "prod": 3})

    def write(self, tags: dict[str, int], owner: str = "team", path: Path | None = None, root: str = "./lake",
              **more: Any) -> None:
        (path or self.manifest).write_text(yaml.safe_dump({
            "version": 1, "owner": owner, "backends": {"lake": {"type": "dir", "root": root}},
            "namespaces": [] if path else [{"backend": "lake", "id": "ev"}],
            "tables": [{"name": "events", "location": "./lake/events.lance",
                        "register": [{"backend": "lake", "namespace": "ev"}], "tags": tags, **more}]}))

    def cli(self, command: str, *args: str, code: int = 0, manifest: Path | None = None):
        result = run_cli(manifest or self.manifest, command, *args, env=cli_env())
        assert result.returncode == code, describe(result)
        return result

    def dataset(self) -> lance.LanceDataset:
        return lance.dataset(self.location)

    def tags(self) -> dict[str, tuple[int, str | None]]:
        return {name: (tag["version"], (tag["metadata"] or {}).get(TAG_OWNER_KEY))
                for name, tag in self.dataset().tags.list().items()}


@pytest.fixture
def project(tmp_path: Path) -> TaggedProject:
    return TaggedProject(tmp_path)


def test_tags_are_created_with_the_owner_and_a_reapply_writes_nothing(project: TaggedProject):
    """Guards: declared tags are made, marked as this owner's in their metadata; in sync after."""
    project.cli("apply", "--auto-approve")
    assert project.tags() == {"stable": (2, "team"), "prod": (3, "team")}
    version = project.dataset().version
    project.cli("plan", "--detailed-exitcode")
    project.cli("apply", "--auto-approve")
    assert project.dataset().version == version


def test_moves_and_removals_touch_only_lance_syncs_tags(project: TaggedProject):
    """Guards: a declared version moves lance-sync's tag; a tag it made and the manifest dropped
    is deleted; a tag someone else made is left alone and listed."""
    project.cli("apply", "--auto-approve")
    project.dataset().tags.create("theirs", 1)
    project.write({"prod": 4})
    plan = project.cli("plan").stdout
    assert "  ~ update tag       lake: ./lake/events.lance#prod" in plan and "moves from version 3 to version 4" in plan
    assert "  - delete tag       lake: ./lake/events.lance#stable" in plan
    assert "tag lake: ./lake/events.lance#theirs (made outside lance-sync; names version 1)" in plan
    project.cli("apply", "--auto-approve")
    assert project.tags() == {"prod": (4, "team"), "theirs": (1, None)}


def test_a_tag_on_a_missing_version_or_someone_elses_tag_stops_the_plan(project: TaggedProject):
    """Guards: a tag naming a version that does not exist is a plan error, and so is moving a
    tag lance-sync did not make."""
    project.write({"prod": 99})
    missing = project.cli("plan", code=1)
    assert "tag 'prod' names version 99, which does not exist (the dataset has versions 1 to 5)" in missing.stderr
    project.dataset().tags.create("theirs", 1)
    project.write({"theirs": 2})
    foreign = project.cli("plan", code=1)
    assert "tag 'theirs' names version 1 and was made outside lance-sync" in foreign.stderr


def test_a_tag_moved_out_of_band_is_drift_and_the_rollback_moves_it_back(project: TaggedProject):
    """Guards: drift exits 2 on a tag moved behind lance-sync's back; the rollback plan of an
    apply that moved a tag puts it back."""
    project.cli("apply", "--auto-approve")
    project.dataset().tags.update("prod", 5)
    drift = project.cli("drift", code=2).stdout
    assert "! dataset state: tag lake: " in drift and "moves from version 5 to version 3" in drift
    applied = project.cli("apply", "--auto-approve").stdout
    assert project.tags()["prod"] == (3, "team")
    rollback = next(line.split(": ", 1)[1].split(" (")[0] for line in applied.splitlines()
                    if line.startswith("Rollback plan:"))
    undone = CliRunner().invoke(main, ["apply", str(project.root / rollback), "--auto-approve"],
                                catch_exceptions=False)
    assert undone.exit_code == 0, undone.output
    assert project.tags()["prod"] == (5, "team")


def test_promotion_from_staging_to_prod_is_a_change_of_the_prod_overlay(project: TaggedProject):
    """Guards: the docs' promotion: one base manifest, an overlay per environment (its own
    catalog, owner and tag) over one dataset; promoting changes only prod's tag."""
    base = project.root / "base.yaml"
    project.write({}, owner="events-staging", path=base)
    staging, prod = project.root / "staging.yaml", project.root / "prod.yaml"
    for overlay, environment, tag, root in ((staging, "staging", 4, "./lake"), (prod, "prod", 3, ".")):
        overlay.write_text(yaml.safe_dump({
            "owner": f"events-{environment}", "backends": {"lake": {"root": root}},
            "namespaces": [{"backend": "lake", "id": environment}],
            "tables": [{"name": "events", "register": [{"backend": "lake", "namespace": environment}],
                        "tags": {environment: tag}}]}))
    project.cli("apply", "-f", str(staging), "--auto-approve", manifest=base)
    project.cli("apply", "-f", str(prod), "--auto-approve", manifest=base)
    assert project.tags() == {"staging": (4, "events-staging"), "prod": (3, "events-prod")}
    prod.write_text(prod.read_text().replace("prod: 3", "prod: 4"))
    plan = project.cli("plan", "-f", str(prod), manifest=base).stdout
    assert "moves from version 3 to version 4" in plan and "#staging (made by lance-sync owner 'events-staging'" in plan
    project.cli("apply", "-f", str(prod), "--auto-approve", manifest=base)
    assert project.tags() == {"staging": (4, "events-staging"), "prod": (4, "events-prod")}
    assert lance.dataset(project.location, version="prod").count_rows() == 40


def test_a_declared_tag_without_an_owner_mark_at_its_version_is_adopted(project: TaggedProject):
    """Guards: like a table without a mark, a tag at the declared version is stamped in place
    (what a create cut off before its mark leaves), without a dataset version."""
    project.dataset().tags.create("stable", 2)
    version = project.dataset().version
    plan = project.cli("plan").stdout
    assert "  ~ update tag       lake: ./lake/events.lance#stable  (adopt)" in plan
    project.cli("apply", "--auto-approve")
    assert project.tags() == {"stable": (2, "team"), "prod": (3, "team")}
    assert project.dataset().version == version


def test_status_shows_a_tag_moved_or_deleted_out_of_band_as_out_of_sync(project: TaggedProject):
    """Guards: a tag lance-sync made and someone moved, or deleted, is OutOfSync in `status`
    with apply's repair; the table's other rows stay Synced."""
    project.cli("apply", "--auto-approve")
    project.dataset().tags.update("prod", 4)
    project.dataset().tags.delete("stable")
    status = run_cli(project.manifest, "status", env=cli_env())
    assert status.returncode == 2, describe(status)
    assert "! tag ./lake/events.lance#prod    OutOfSync  Healthy\n      moves from version 4 to version 3\n" \
           "      repair: ~ update tag lake: ./lake/events.lance#prod" in status.stdout, describe(status)
    assert "! tag ./lake/events.lance#stable  OutOfSync  Healthy\n      declared, absent: tag version 2\n" \
           "      repair: + create tag lake: ./lake/events.lance#stable" in status.stdout, describe(status)
    project.cli("apply", "--auto-approve")
    assert project.tags() == {"stable": (2, "team"), "prod": (3, "team")}
    assert "Synced and Healthy." in project.cli("status").stdout
