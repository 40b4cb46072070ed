"""Locations are compared as the filesystem resolves them, and a dir root's own folders are no
table's (issue 46).

The issue's story on a `dir` root: `hr$a` holds data at ./lake/data/a.lance; `ln -s data
lake/alias`; `ops$z` at ./lake/alias/a.lance with on_remove: drop. On main at 94cefba `z` was
created without a block (locations were compared as text), and removing it with --allow-drop
deleted the data `hr$a` still declares, exit 0. And ./lake/__manifest (the root's catalog table)
was registered as a table, ./lake/_lance_sync_leases planned as a create. Each test below
failed there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from lance_namespace import DeclareTableRequest

from lance_sync.cli.app import main
from lance_sync.drivers.dir.driver import DirNamespace
from tests.support.cli import cli_env, describe, run_cli

OWNER = "team-a"
SCHEMA = [{"name": "id", "type": "int64"}]


def table(name: str, namespace: str, location: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "location": location, "schema": SCHEMA,
            "register": [{"backend": "lake", "namespace": namespace}], **more}


def write(folder: Path, *tables: dict[str, Any]) -> Path:
    manifest = {"version": 1, "owner": OWNER, "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "hr"}, {"backend": "lake", "id": "ops"}],
                "tables": list(tables)}
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


A = table("a", "hr", "./lake/data/a.lance")
Z = table("z", "ops", "./lake/alias/a.lance", on_remove="drop")


def lake_with_a(folder: Path) -> Path:
    """`hr$a` created by lance-sync, with 3 rows, and `lake/alias` a link to `lake/data`."""
    manifest = write(folder, A)
    applied = run_cli(manifest, "apply", "--auto-approve", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(folder / "lake" / "data" / "a.lance"), mode="append")
    os.symlink("data", folder / "lake" / "alias")
    return manifest


def location_line(manifest: Path, name: str) -> str:
    """`lance-sync.yaml:LINE:` of the location of table `name` (the line after its name)."""
    lines = manifest.read_text().splitlines()
    return f"lance-sync.yaml:{2 + lines.index(f'- name: {name}')}:"


def rows(folder: Path) -> int:
    return lance.dataset(str(folder / "lake" / "data" / "a.lance")).count_rows()


def register_z_behind_lance_syncs_back(folder: Path) -> DirNamespace:
    """`ops$z` at the alias with this owner's marks and on_remove=drop, as an apply of main made it."""
    lake = DirNamespace(root=str(folder / "lake"))
    lake.declare_table(DeclareTableRequest(id=["ops", "z"], location="alias/a.lance",
                                           properties={"lance_sync.owner": OWNER, "lance_sync.on_remove": "drop"}))
    return lake


def test_a_second_table_through_a_symlink_is_refused_by_validate_plan_and_apply(tmp_path: Path):
    """One asset per path sees the alias: validate names the file and line of `z`'s location and
    both spellings; plan and apply stop before anything is written."""
    lake_with_a(tmp_path)
    manifest = write(tmp_path, A, Z)
    for command in ("validate", "plan", "apply"):
        refused = run_cli(manifest, command, *(["--auto-approve"] if command == "apply" else []), env=cli_env())
        assert refused.returncode == 1, describe(refused)
        assert (location_line(manifest, "z") in refused.stderr
                and "table 'z' has the same location as table 'a'" in refused.stderr
                and "./lake/alias/a.lance is ./lake/data/a.lance" in refused.stderr), \
            describe(refused)
    assert DirNamespace(root=str(tmp_path / "lake")).get_table_info(("ops", "z")) is None
    assert rows(tmp_path) == 3


def test_dropping_a_table_registered_through_a_symlink_keeps_the_data_a_declared_table_uses(tmp_path: Path):
    """`z` registered at the alias (as main's apply did), then removed with --allow-drop: the
    manifest's `a` uses the resolved location, so `z` is deregistered and the data kept."""
    manifest = lake_with_a(tmp_path)
    lake = register_z_behind_lance_syncs_back(tmp_path)
    applied = run_cli(manifest, "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    assert "table 'a' of the manifest uses this location" in applied.stdout, describe(applied)
    assert "delete dataset" not in applied.stdout, describe(applied)
    assert lake.get_table_info(("ops", "z")) is None and lake.get_table_info(("hr", "a")) is not None
    assert rows(tmp_path) == 3


def test_apply_guards_resolve_the_location_they_would_delete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A saved plan deletes `z`'s data when nothing else pointed at it; by apply, `hr$a` is
    registered at the same folder through its other spelling. Apply reads every registration
    again and refuses (exit 4), naming `a` and the resolution; the data stays."""
    lake_with_a(tmp_path)
    lake = DirNamespace(root=str(tmp_path / "lake"))
    lake.deregister_table({"id": ["hr", "a"]})
    register_z_behind_lance_syncs_back(tmp_path)
    saved = tmp_path / "drop.plan.json"
    planned = run_cli(write(tmp_path), "plan", "-o", str(saved), env=cli_env())
    assert planned.returncode == 0 and "delete dataset" in planned.stdout, describe(planned)
    lake.declare_table(DeclareTableRequest(id=["hr", "a"], location="data/a.lance",
                                           properties={"lance_sync.owner": OWNER}))
    monkeypatch.chdir(tmp_path)
    refused = CliRunner().invoke(main, ["apply", str(saved), "--auto-approve", "--allow-drop"])
    assert refused.exit_code == 4, refused.output
    assert ("is the location of hr$a in backend 'lake' (owner 'team-a') once symbolic links are resolved "
            f"({tmp_path}/lake/alias/a.lance is {tmp_path}/lake/data/a.lance)") in refused.stderr, refused.output
    assert rows(tmp_path) == 3


def test_a_location_that_is_a_link_is_shown_blocked_in_the_plan_and_never_deleted(tmp_path: Path):
    """`z` registered at ./lake/zlink.lance, itself a link to data/a.lance, with nothing else
    registered there: the plan shows its delete blocked (before, only apply refused it, after
    the plan had promised the delete), and apply deletes nothing."""
    lake_with_a(tmp_path)
    lake = DirNamespace(root=str(tmp_path / "lake"))
    lake.deregister_table({"id": ["hr", "a"]})
    os.symlink("data/a.lance", tmp_path / "lake" / "zlink.lance")
    lake.declare_table(DeclareTableRequest(id=["ops", "z"], location="zlink.lance",
                                           properties={"lance_sync.owner": OWNER, "lance_sync.on_remove": "drop"}))
    planned = run_cli(write(tmp_path), "plan", env=cli_env())
    assert "zlink.lance is a symbolic link (to data/a.lance)" in planned.stdout, describe(planned)
    refused = run_cli(write(tmp_path), "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert refused.returncode == 4, describe(refused)
    assert rows(tmp_path) == 3


def test_a_dir_roots_own_folders_are_no_tables_location(tmp_path: Path):
    """The root's catalog table, its lease folder and what lies inside its state folder, also
    through a link to the root, are refused by validate with the file and line of each
    location, and so by plan."""
    (tmp_path / "lake").mkdir()
    os.symlink(".", tmp_path / "lake" / "again")
    manifest = write(tmp_path, table("m", "ops", "./lake/__manifest"), table("l", "ops", "./lake/_lance_sync_leases"),
                     table("s", "ops", "./lake/.lance-sync/s.lance"), table("n", "ops", "./lake/again/__manifest"))
    for command in ("validate", "plan"):
        refused = run_cli(manifest, command, env=cli_env())
        assert refused.returncode == 1, describe(refused)
        for name, what in (("m", "is the catalog table of backend 'lake'"),
                           ("l", "is the apply lease folder of backend 'lake'"),
                           ("s", "lies inside ./lake/.lance-sync, the state folder"),
                           ("n", "(./lake/again/__manifest is ./lake/__manifest) is the catalog table of backend "
                                 "'lake'")):
            assert location_line(manifest, name) in refused.stderr and f"table '{name}': its location" in refused.stderr \
                and what in refused.stderr, describe(refused)
