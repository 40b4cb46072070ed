"""One asset per path, and data deleted only when lance-sync created it (issue 16, observation 1).

On a `dir` root, the issue's own story: team-b registers `precious` at ./lh/data/shared.lance;
team-a declares `mine` at the same location (and `inner` inside it) with on_remove: drop. On
main at dbc981d team-a's apply registered it, and a later apply --allow-drop deleted team-b's
data, exit 0. Now the create is refused (exit 4) naming team-b's table, and a registration made
behind lance-sync's back with team-a's marks cannot make it delete data it did not create.

Across catalogs, on the suite's Glue and Iceberg REST servers: team-a's own dataset, registered
by team-b in an Iceberg namespace team-a's plan never reads, is not deleted (apply reads every
registration of every backend first: exit 4); and a Glue table forged with team-a's marks and
`on_remove=drop`, pointing at team-b's data, deletes nothing (the data carries team-b's record).
Each dataset is read back with pylance, the catalogs with pyiceberg and boto3.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from lance_namespace import CreateNamespaceRequest, DeclareTableRequest

from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.drivers.iceberg.driver import IcebergNamespace
from tests.servers.base import RunningServer
from tests.servers.glue import glue_client
from tests.support.catalogs import glue_backend, glue_env, glue_tables, iceberg_backend, pyiceberg
from tests.support.cli import LANCE_SYNC, cli_env, describe, run_cli

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

MARK = "lance_sync.owner"
DROP = {"lance_sync.on_remove": "drop"}
SCHEMA = [{"name": "id", "type": "int64"}]


def write(manifest: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def dir_manifest(owner: str, namespace: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 1, "owner": owner, "backends": {"lake": {"type": "dir", "root": "./lh"}},
            "namespaces": [{"backend": "lake", "id": namespace}],
            "tables": [{**t, "register": [{"backend": "lake", "namespace": namespace}]} for t in tables]}


def rows(location: Path | str) -> int:
    return lance.dataset(str(location)).count_rows()


def test_the_issue_story_on_a_dir_root(tmp_path: Path):
    shared = tmp_path / "lh" / "data" / "shared.lance"
    lance.write_dataset(pa.table({"x": [1, 2, 3]}), str(shared))
    team_b = write(dir_manifest("team-b", "sales", [{"name": "precious", "location": "./lh/data/shared.lance"}]),
                   tmp_path / "b.yaml")
    assert run_cli(team_b, "apply", "--auto-approve", env=cli_env()).returncode == 0

    for name, location in (("mine", "./lh/data/shared.lance"), ("inner", "./lh/data/shared.lance/inner.lance")):
        team_a = write(dir_manifest("team-a", "ops", [{"name": name, "location": location, "on_remove": "drop"}]),
                       tmp_path / "a.yaml")
        refused = run_cli(team_a, "apply", "--auto-approve", env=cli_env())
        assert refused.returncode == 4, describe(refused)
        relation = "is" if name == "mine" else "lies inside"
        assert (f"one asset per path: {location.removeprefix('.').join([str(tmp_path), ''])} {relation} the location "
                "of sales$precious in backend 'lake' (owner 'team-b')") in refused.stderr, describe(refused)
        assert run_cli(team_a, "plan", env=cli_env()).returncode == 4
    lake = DirNamespace(root=str(tmp_path / "lh"))
    assert lake.get_table_info(("ops", "mine")) is None and lake.get_table_info(("ops", "inner")) is None

    # a registration made behind lance-sync's back (an older lance-sync, anyone with catalog write
    # access) carrying team-a's marks and on_remove=drop: the data it points at is not team-a's
    lake.create_namespace(CreateNamespaceRequest(id=["ops"], properties={MARK: "team-a"}))
    lake.declare_table(DeclareTableRequest(id=["ops", "mine"], location="data/shared.lance",
                                           properties={MARK: "team-a", **DROP}))
    left = write(dir_manifest("team-a", "ops", []), tmp_path / "a.yaml")
    applied = run_cli(left, "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    assert "delete dataset" not in applied.stdout and "carries no lance-sync owner record" in applied.stdout
    assert lake.get_table_info(("ops", "mine")) is None and rows(shared) == 3


def test_data_lance_sync_created_is_deleted_when_nothing_else_points_at_it(tmp_path: Path):
    created = write(dir_manifest("team-a", "ops", [{"name": "t", "location": "./lh/data/t.lance",
                                                    "schema": SCHEMA, "on_remove": "drop"}]), tmp_path / "a.yaml")
    assert run_cli(created, "apply", "--auto-approve", env=cli_env()).returncode == 0
    data = tmp_path / "lh" / "data" / "t.lance"
    assert lance.dataset(str(data)).schema.metadata == {MARK.encode(): b"team-a"}
    # another owner's table inside it (made behind lance-sync's back): the deletion waits
    lake = DirNamespace(root=str(tmp_path / "lh"))
    lake.create_namespace(CreateNamespaceRequest(id=["b"], properties={MARK: "team-b"}))
    lake.declare_table(DeclareTableRequest(id=["b", "nested"], location="data/t.lance/nested.lance",
                                           properties={MARK: "team-b"}))
    gone = write(dir_manifest("team-a", "ops", []), tmp_path / "a.yaml")
    blocked = run_cli(gone, "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert blocked.returncode == 4 and "contains the location of b$nested" in blocked.stdout + blocked.stderr
    assert rows(data) == 0
    lake.deregister_table({"id": ["b", "nested"]})
    applied = run_cli(gone, "apply", "--auto-approve", "--allow-drop", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    assert not data.exists()


@pytest.mark.servers
def test_across_catalogs_apply_reads_every_registration_before_it_deletes_data(
        glue_server: RunningServer, iceberg_server: RunningServer, tmp_path: Path):
    suffix = uuid.uuid4().hex[:8]
    warehouse = iceberg_server.extra["warehouse"]
    account = glue_server.extra["account_id"]
    database, theirs = f"a_{suffix}", f"b_{suffix}"
    env = cli_env(**glue_env(glue_server))
    backends = {"glue": glue_backend(glue_server), "ice": iceberg_backend(iceberg_server, tmp_path)}
    base = {"version": 1, "owner": "team-a", "backends": backends,
            "namespaces": [{"backend": "glue", "id": [account, database]},
                           {"backend": "ice", "id": [warehouse, f"a_{suffix}"]}]}
    location = tmp_path / "data" / "t.lance"
    table = {"name": "t", "location": str(location), "schema": SCHEMA, "on_remove": "drop",
             "register": [{"backend": "glue", "namespace": [account, database]}]}
    manifest = write({**base, "tables": [table]}, tmp_path / "a.yaml")
    assert run_cli(manifest, "apply", "--auto-approve", env=env).returncode == 0
    assert lance.dataset(str(location)).schema.metadata == {MARK.encode(): b"team-a"}

    # team-b registers the same data in an Iceberg namespace team-a's plans never read
    ice = IcebergNamespace(endpoint=iceberg_server.endpoint, root=str(tmp_path))
    ice.create_namespace(CreateNamespaceRequest(id=[warehouse, theirs], properties={MARK: "team-b"}))
    ice.declare_table(DeclareTableRequest(id=[warehouse, theirs, "copy"], location=str(location),
                                          properties={MARK: "team-b"}))
    gone = write({**base, "tables": []}, tmp_path / "a.yaml")
    plan = run_cli(gone, "plan", env=env)
    assert "delete dataset" in plan.stdout, describe(plan)  # the plan does not see team-b's namespace
    refused = run_cli(gone, "apply", "--auto-approve", "--allow-drop", env=env)
    assert refused.returncode == 4, describe(refused)
    assert (f"one asset per path: the location is the location of {warehouse}.{theirs}.copy in backend 'ice' "
            "(owner 'team-b')") in refused.stderr, describe(refused)
    assert rows(location) == 0 and glue_tables(glue_server, account, database)[0] == ["t"]
    assert (theirs, "copy") in pyiceberg(iceberg_server).list_tables(theirs)

    # a Glue table forged with team-a's marks and on_remove=drop, pointing at team-b's data
    their_data = tmp_path / "data" / "theirs.lance"
    lance.write_dataset(pa.table({"x": [1, 2, 3]}, schema=pa.schema([("x", pa.int64())]).with_metadata(
        {MARK: "team-b"})), str(their_data))
    glue_client(glue_server).create_table(CatalogId=account, DatabaseName=database, TableInput={
        "Name": "forged", "TableType": "EXTERNAL_TABLE", "StorageDescriptor": {"Location": str(their_data)},
        "Parameters": {"table_type": "lance", MARK: "team-a", **DROP}})
    forged = run_cli(gone, "plan", env=env)
    assert "the dataset at ./data/theirs.lance records owner 'team-b'" in forged.stdout, describe(forged)
    applied = run_cli(gone, "apply", "--auto-approve", "--allow-drop", "--target", f"glue:{account}${database}$forged",
                      env=env)
    assert applied.returncode == 0, describe(applied)
    assert rows(their_data) == 3 and "forged" not in glue_tables(glue_server, account, database)[0]


def test_saved_and_rollback_plans_pass_the_same_guards(tmp_path: Path):
    manifest = write(dir_manifest("team-a", "ops", [{"name": "t", "location": "./lh/data/t.lance", "schema": SCHEMA,
                                                     "on_remove": "drop"}]), tmp_path / "a.yaml")
    created = run_cli(manifest, "apply", "--auto-approve", env=cli_env())
    assert created.returncode == 0, describe(created)
    rollback = next((tmp_path / ".lance-sync" / "journal").glob("*.rollback.json"))
    gone = write(dir_manifest("team-a", "ops", []), tmp_path / "gone.yaml")
    saved = tmp_path / "drop.plan.json"
    assert run_cli(gone, "plan", "-o", str(saved), env=cli_env()).returncode == 0
    # after both plans were made, another owner registers a table inside the data
    lake = DirNamespace(root=str(tmp_path / "lh"))
    lake.create_namespace(CreateNamespaceRequest(id=["b"], properties={MARK: "team-b"}))
    lake.declare_table(DeclareTableRequest(id=["b", "inside"], location="data/t.lance/inside.lance",
                                           properties={MARK: "team-b"}))
    for plan_file in (saved, rollback):
        refused = subprocess.run([LANCE_SYNC, "apply", str(plan_file), "--auto-approve", "--allow-drop"],
                                 capture_output=True, text=True, env=cli_env(), cwd=tmp_path)
        assert refused.returncode == 4, describe(refused)
        assert "contains the location of b$inside in backend 'lake' (owner 'team-b')" in refused.stderr
    assert rows(tmp_path / "lh" / "data" / "t.lance") == 0
    assert lake.get_table_info(("ops", "t")) is not None
