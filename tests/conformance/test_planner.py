"""The planner end to end against every backend, through the CLI, and across all backends at once."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner
from pydantic import SecretStr

from lance_sync.cli.app import main
from lance_sync.drivers import driver_class
from lance_sync.drivers.base import SyncNamespace
from lance_sync.model.locations import normalize_location
from tests.conformance.conftest import BACKENDS, harness_class
from tests.conformance.harness import Harness

pytestmark = pytest.mark.servers


def backend_entry(harness: Harness, name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The harness's config as a manifest backend, secrets moved into the environment."""
    config = dict(harness.config())
    model = driver_class(harness.backend_type).config_model
    for key, info in model.model_fields.items():
        alias = info.alias or key
        if alias in config and SecretStr in getattr(info.annotation, "__args__", (info.annotation,)):
            variable = f"LS_TEST_{name.upper()}_{alias.upper()}"
            monkeypatch.setenv(variable, str(config[alias]))
            config[alias] = "${" + variable + "}"
    return {"type": harness.backend_type, **config}


class ManifestProject:
    """A manifest with an owner of its own: what other tests left in the shared servers is not its."""

    def __init__(self, directory: Path):
        self.path = directory / "lance-sync.yaml"
        self.owner = f"conformance-{uuid.uuid4().hex[:8]}"
        self.manifest: dict[str, Any] = {"version": 1, "owner": self.owner, "backends": {},
                                         "namespaces": [], "tables": []}

    def save(self) -> None:
        self.path.write_text(yaml.safe_dump(self.manifest, sort_keys=False, allow_unicode=True))

    def run(self, *args: str):
        self.save()
        result = CliRunner().invoke(main, [args[0], "-f", str(self.path), *args[1:]], catch_exceptions=False)
        assert "Traceback" not in result.output
        return result


def test_plan_apply_update_remove(harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    driver: SyncNamespace = harness.driver()
    project = ManifestProject(tmp_path)
    project.manifest["backends"]["b"] = backend_entry(harness, "b", monkeypatch)
    namespace = list(harness.new_namespace_id())
    project.manifest["namespaces"].append({"backend": "b", "id": namespace, "properties": {"team": "core"}})
    existing = harness.location(harness.unique("existing"))
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), existing)
    project.manifest["tables"] = [
        {"name": "events", "location": existing, "properties": {"tier": "gold"},
         "register": [{"backend": "b", "namespace": namespace}]},
        {"name": "created", "location": harness.location(harness.unique("created")),
         "schema": [{"name": "id", "type": "int64"}, {"name": "v", "type": "fixed_size_list<float32>[4]"}],
         "register": [{"backend": "b", "namespace": namespace}]},
    ]

    first = project.run("apply", "--auto-approve")
    assert first.exit_code == 0, first.output
    assert project.run("plan", "--detailed-exitcode").exit_code == 0
    harness.check_lance_table((*namespace, "events"), existing, {"tier": "gold", "lance_sync.owner": project.owner})
    created = lance.dataset(project.manifest["tables"][1]["location"])
    assert created.schema.field("v").type == pa.list_(pa.float32(), 4)

    project.manifest["tables"][0]["properties"]["tier"] = "silver"
    changed = project.run("plan", "--detailed-exitcode")
    assert changed.exit_code == 2
    in_place = driver.capabilities().update_table_properties
    assert ("~ update table" if in_place else "-/+ replace table") in changed.stdout
    if not in_place:  # a replace gives the table a new id: refused unless allowed
        refused = project.run("apply", "--auto-approve")
        assert refused.exit_code == 4 and "--allow-replace" in refused.output
        assert "[new table id, grants are lost]" in changed.stdout
    assert project.run("apply", "--auto-approve", "--allow-replace").exit_code == 0
    assert driver.get_table_info((*namespace, "events")).properties["tier"] == "silver"
    assert project.run("plan", "--detailed-exitcode").exit_code == 0

    moved = harness.location(harness.unique("moved"))
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), moved)
    project.manifest["tables"][0]["location"] = moved
    relocation = project.run("plan")
    capabilities = driver.capabilities()
    in_place = capabilities.update_table_location and capabilities.update_table_properties
    assert ("~ update table" if in_place else "-/+ replace table") in relocation.stdout
    assert project.run("apply", "--auto-approve", "--allow-replace").exit_code == 0
    assert normalize_location(driver.get_table_info((*namespace, "events")).location) == normalize_location(moved)
    assert project.run("plan", "--detailed-exitcode").exit_code == 0

    project.manifest["tables"].pop(0)
    removed = project.run("apply", "--auto-approve")
    assert removed.exit_code == 0, removed.output
    assert "- forget table" in removed.stdout
    assert driver.get_table_info((*namespace, "events")) is None
    assert lance.dataset(existing).count_rows() == 3
    assert project.run("plan", "--detailed-exitcode").exit_code == 0


def test_renamed_from_renames_in_place_or_replaces_where_the_backend_cannot(
        harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A rename where `capabilities().rename_table` says the backend can: the table keeps what
    its catalog tells it by (an Iceberg UUID, a Hive create time), needs no flag, and its
    rollback plan renames it back. Elsewhere one replace under the new name that says why and
    needs --allow-replace."""
    driver: SyncNamespace = harness.driver()
    project = ManifestProject(tmp_path)
    project.manifest["backends"]["b"] = backend_entry(harness, "b", monkeypatch)
    namespace = list(harness.new_namespace_id())
    project.manifest["namespaces"].append({"backend": "b", "id": namespace})
    location = harness.location(harness.unique("orders"))
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), location)
    project.manifest["tables"] = [{"name": "orders", "location": location, "properties": {"tier": "gold"},
                                   "register": [{"backend": "b", "namespace": namespace}]}]
    assert project.run("apply", "--auto-approve").exit_code == 0
    identity = harness.table_identity((*namespace, "orders"))
    harness.wait_out_identity_resolution()
    project.manifest["tables"][0].update(name="orders_v2", renamed_from="orders")

    planned = project.run("plan")
    renames = driver.capabilities().rename_table
    assert ("~> rename table" if renames else "-/+ replace table") in planned.stdout, planned.stdout
    if not renames:
        assert "has no table rename: the table is declared again under the new name" in planned.stdout
        assert project.run("apply", "--auto-approve").exit_code == 4
    applied = project.run("apply", "--auto-approve", *([] if renames else ["--allow-replace"]))
    assert applied.exit_code == 0, applied.output
    assert driver.get_table_info((*namespace, "orders")) is None
    harness.check_lance_table((*namespace, "orders_v2"), location, {"tier": "gold", "lance_sync.owner": project.owner})
    assert lance.dataset(location).version == 1
    assert project.run("plan", "--detailed-exitcode").exit_code == 0
    if not renames:
        return
    assert harness.table_identity((*namespace, "orders_v2")) == identity

    rollback = next(line.split(": ", 1)[1].split(" (")[0] for line in applied.stdout.splitlines()
                    if line.startswith("Rollback plan:"))
    undone = CliRunner().invoke(main, ["apply", rollback, "--auto-approve"], catch_exceptions=False)
    assert undone.exit_code == 0, undone.output
    assert driver.get_table_info((*namespace, "orders_v2")) is None
    harness.check_lance_table((*namespace, "orders"), location, {"tier": "gold", "lance_sync.owner": project.owner})
    assert harness.table_identity((*namespace, "orders")) == identity


def test_a_move_to_another_namespace_keeps_the_table(harness: Harness, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch):
    """`renamed_from` naming the table's former id in another namespace moves it in place where
    the backend can move tables, keeping what its catalog tells it by."""
    driver: SyncNamespace = harness.driver()
    if not driver.capabilities().move_table:
        pytest.skip("the backend cannot move a table (a move is a replace there, as a rename is)")
    project = ManifestProject(tmp_path)
    project.manifest["backends"]["b"] = backend_entry(harness, "b", monkeypatch)
    source, target = list(harness.new_namespace_id()), list(harness.new_namespace_id())
    project.manifest["namespaces"] += [{"backend": "b", "id": source}, {"backend": "b", "id": target}]
    location = harness.location(harness.unique("orders"))
    lance.write_dataset(pa.table({"id": [1]}), location)
    project.manifest["tables"] = [{"name": "orders", "location": location,
                                   "register": [{"backend": "b", "namespace": source}]}]
    assert project.run("apply", "--auto-approve").exit_code == 0
    identity = harness.table_identity((*source, "orders"))
    harness.wait_out_identity_resolution()
    former = driver.format_identifier((*source, "orders"))
    project.manifest["tables"][0].update(renamed_from=[former], register=[{"backend": "b", "namespace": target}])

    planned = project.run("plan")
    assert "~> rename table" in planned.stdout, planned.stdout
    applied = project.run("apply", "--auto-approve")
    assert applied.exit_code == 0, applied.output
    assert driver.get_table_info((*source, "orders")) is None
    harness.check_lance_table((*target, "orders"), location, {"lance_sync.owner": project.owner})
    assert harness.table_identity((*target, "orders")) == identity
    assert project.run("plan", "--detailed-exitcode").exit_code == 0


def test_a_location_change_is_made_in_place_where_the_backend_can(harness: Harness, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch):
    """A table pointed at another location is updated in place where
    `capabilities().update_table_location` says so (keeping what its catalog tells it by);
    elsewhere it is a replace that needs --allow-replace."""
    driver: SyncNamespace = harness.driver()
    project = ManifestProject(tmp_path)
    project.manifest["backends"]["b"] = backend_entry(harness, "b", monkeypatch)
    namespace = list(harness.new_namespace_id())
    project.manifest["namespaces"].append({"backend": "b", "id": namespace})
    first, second = harness.location(harness.unique("orders")), harness.location(harness.unique("orders_moved"))
    for location in (first, second):
        lance.write_dataset(pa.table({"id": [1, 2]}), location)
    project.manifest["tables"] = [{"name": "orders", "location": first,
                                   "register": [{"backend": "b", "namespace": namespace}]}]
    assert project.run("apply", "--auto-approve").exit_code == 0
    identity = harness.table_identity((*namespace, "orders"))
    harness.wait_out_identity_resolution()
    project.manifest["tables"][0]["location"] = second

    in_place = driver.capabilities().update_table_location
    planned = project.run("plan")
    assert ("~ update table" if in_place else "-/+ replace table") in planned.stdout, planned.stdout
    applied = project.run("apply", "--auto-approve", *([] if in_place else ["--allow-replace"]))
    assert applied.exit_code == 0, applied.output
    harness.check_lance_table((*namespace, "orders"), second, {"lance_sync.owner": project.owner})
    assert project.run("plan", "--detailed-exitcode").exit_code == 0
    if in_place and identity is not None:
        assert harness.table_identity((*namespace, "orders")) == identity


def test_one_table_registered_in_every_backend(request: pytest.FixtureRequest, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch):
    """One physical table, declared in the directory backend and all four catalogs by one manifest."""
    harnesses = {}
    for backend in BACKENDS:
        cls = harness_class(backend)
        server = request.getfixturevalue(cls.server_fixture) if cls.server_fixture else None
        harnesses[backend] = cls(server, tmp_path / "data" if backend == "dir" else tmp_path / backend)
    project = ManifestProject(tmp_path)
    location = str(tmp_path / "data" / "shared" / "orders.lance")
    lance.write_dataset(pa.table({"id": [1, 2]}), location)
    registrations = []
    for backend, harness in harnesses.items():
        project.manifest["backends"][backend] = backend_entry(harness, backend, monkeypatch)
        namespace = list(harness.new_namespace_id())
        project.manifest["namespaces"].append({"backend": backend, "id": namespace})
        registrations.append({"backend": backend, "namespace": namespace})
    project.manifest["tables"] = [{"name": "orders", "location": location, "register": registrations,
                                   "properties": {"tier": "gold"}}]
    result = project.run("apply", "--auto-approve")
    assert result.exit_code == 0, result.output
    for registration in registrations:
        harness = harnesses[registration["backend"]]
        harness.check_lance_table((*registration["namespace"], "orders"), location,
                                  {"tier": "gold", "lance_sync.owner": project.owner})
    assert project.run("plan", "--detailed-exitcode").exit_code == 0
