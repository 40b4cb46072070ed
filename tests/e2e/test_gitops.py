"""Drift and targeted applies end to end, against the suite's Glue and Unity servers.

Changes "behind lance-sync's back" are made with each catalog's own client (boto3,
unitycatalog-client) and with pylance; what lance-sync says is read from its CLI, run as a
subprocess like a user or a CI job runs it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from botocore.exceptions import ClientError
from unitycatalog.client import TablesApi

from tests.conformance.harness_unity import ensure_catalog, run_sdk
from tests.servers.base import RunningServer
from tests.servers.glue import glue_client
from tests.support.catalogs import (
    GLUE_CATALOG,
    UNITY_CATALOG,
    ensure_glue_catalog,
    glue_backend,
    glue_catalog_id,
    glue_env,
    plain_path,
    unity_backend,
    unity_schemas,
    unity_tables,
)
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers

INT64 = [{"name": "id", "type": "int64"}]


class Estate:
    """A manifest with an owner and namespaces of its own in Glue and Unity."""

    def __init__(self, tmp_path: Path, glue_server: RunningServer, unity_server: RunningServer):
        ensure_glue_catalog(glue_server)
        ensure_catalog(unity_server, UNITY_CATALOG)
        self.glue_server, self.unity_server = glue_server, unity_server
        self.glue = glue_client(glue_server)
        self.catalog_id = glue_catalog_id(glue_server)
        self.data = tmp_path / "data"
        self.data.mkdir()
        self.path = tmp_path / "lance-sync.yaml"
        self.env = cli_env(**glue_env(glue_server))
        self.suffix = uuid.uuid4().hex[:8]
        self.manifest: dict[str, Any] = {
            "version": 1, "owner": f"gitops-{self.suffix}",
            "backends": {"glue": glue_backend(glue_server), "uc": unity_backend(unity_server, tmp_path)},
            "namespaces": [], "tables": []}

    def namespace(self, name: str) -> str:
        """A namespace of this estate in both catalogs; its per-run name."""
        unique = f"{name}_{self.suffix}"
        self.manifest["namespaces"] += [{"backend": "glue", "id": [GLUE_CATALOG, unique]},
                                        {"backend": "uc", "id": [UNITY_CATALOG, unique]}]
        return unique

    def table(self, name: str, namespace: str, backends: tuple[str, ...] = ("glue", "uc"),
              **extra: Any) -> dict[str, Any]:
        parents = {"glue": GLUE_CATALOG, "uc": UNITY_CATALOG}
        entry = {"name": name, "location": str(self.data / f"{name}.lance"), "schema": INT64,
                 "register": [{"backend": b, "namespace": [parents[b], namespace]} for b in backends], **extra}
        self.manifest["tables"].append(entry)
        return entry

    def run(self, command: str, *args: str):
        self.path.write_text(yaml.safe_dump(self.manifest, sort_keys=False))
        return run_cli(self.path, command, *args, env=self.env)

    # --- behind lance-sync's back --------------------------------------------------------------

    def glue_table(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.glue.get_table(CatalogId=self.catalog_id, DatabaseName=namespace, Name=name)["Table"]
        except ClientError as error:
            if error.response["Error"]["Code"] == "EntityNotFoundException":
                return None
            raise

    def change_glue_table(self, namespace: str, name: str, parameters: dict[str, str] | None = None,
                          location: str | None = None) -> None:
        table = self.glue_table(namespace, name)
        assert table is not None
        descriptor = dict(table["StorageDescriptor"])
        if location is not None:
            descriptor["Location"] = location
        self.glue.update_table(CatalogId=self.catalog_id, DatabaseName=namespace, TableInput={
            "Name": name, "TableType": table["TableType"], "StorageDescriptor": descriptor,
            "Parameters": {**table.get("Parameters", {}), **(parameters or {})}})

    def delete_unity_table(self, namespace: str, name: str) -> None:
        run_sdk(self.unity_server, lambda client: TablesApi(client).delete_table(f"{UNITY_CATALOG}.{namespace}.{name}"))

    def unity_tables(self, namespace: str) -> list[str]:
        return sorted(unity_tables(self.unity_server, UNITY_CATALOG, namespace)[0])

    def unity_schemas(self) -> set[str]:
        return set(unity_schemas(self.unity_server, UNITY_CATALOG))

    def glue_databases(self) -> set[str]:
        pages = self.glue.get_paginator("get_databases").paginate(CatalogId=self.catalog_id)
        return {database["Name"] for page in pages for database in page["DatabaseList"]}


@pytest.fixture
def estate(tmp_path: Path, glue_server: RunningServer, unity_server: RunningServer) -> Estate:
    return Estate(tmp_path, glue_server, unity_server)


def test_drift_names_a_changed_property_a_lost_registration_a_changed_schema_and_a_split_brain(estate: Estate):
    ns = estate.namespace("drift")
    estate.table("orders", ns, properties={"tier": "gold"})
    estate.table("events", ns)
    metrics = estate.table("metrics", ns)
    estate.table("items", ns)
    applied = estate.run("apply", "--auto-approve")
    assert applied.returncode == 0, describe(applied)
    clean = estate.run("drift")
    assert clean.returncode == 0 and "No drift" in clean.stdout, describe(clean)

    estate.change_glue_table(ns, "orders", parameters={"tier": "bronze"})
    estate.delete_unity_table(ns, "events")
    lance.write_dataset(pa.table({"id": ["a", "b"]}), metrics["location"], mode="overwrite")
    elsewhere = str(estate.data / "items_copy.lance")
    estate.change_glue_table(ns, "items", location=elsewhere)

    text = estate.run("drift")
    assert text.returncode == 2, describe(text)
    out = text.stdout
    glue_id, uc_id = f"{GLUE_CATALOG}${ns}", f"{UNITY_CATALOG}${ns}"
    assert f"! properties: table glue: {glue_id}$orders\n      tier = 'bronze'; the manifest says 'gold'\n" \
           f"      repair: ~ update table glue: {glue_id}$orders" in out
    assert f"! missing registration: table uc: {uc_id}$events\n      table 'events' is registered in " \
           f"glue: {glue_id}$events but not here\n      repair: + create table uc: {uc_id}$events" in out
    assert "! schema: table 'metrics'" in out and "column 'id' is declared int64 but the dataset has string" in out
    assert f"! catalog schema: table uc: {uc_id}$metrics" in out  # Unity still records bigint
    # drift shows paths as plan does: relative to the manifest's folder
    assert "! split brain: table 'items'" in out and f"glue: {glue_id}$items -> ./data/items_copy.lance" in out
    assert f"repair: ~ update table glue: {glue_id}$items" in out

    document = json.loads(estate.run("drift", "--format", "json").stdout)
    assert sorted((i["kind"], i["table"]) for i in document["items"]) == [
        ("catalog_schema", "metrics"), ("missing_registration", "events"), ("properties", "orders"),
        ("schema", "metrics"), ("split_brain", "items")]
    markdown = estate.run("drift", "--format", "markdown")
    assert markdown.returncode == 2 and "| split brain | 1 |" in markdown.stdout

    # the data is put back; apply repairs the rest, as the report said
    lance.write_dataset(pa.table({"id": [1, 2]}), metrics["location"], mode="overwrite")
    repaired = estate.run("apply", "--auto-approve")
    assert repaired.returncode == 0, describe(repaired)
    assert estate.glue_table(ns, "orders")["Parameters"]["tier"] == "gold"
    assert plain_path(estate.glue_table(ns, "items")["StorageDescriptor"]["Location"]) == \
        plain_path(str(estate.data / "items.lance"))
    assert "events" in estate.unity_tables(ns)
    after = estate.run("drift")
    assert after.returncode == 0, describe(after)


def test_a_targeted_plan_and_apply_touch_only_the_targeted_objects(estate: Estate):
    first, second = estate.namespace("first"), estate.namespace("second")
    estate.table("a", first)
    estate.table("b", first)
    estate.table("c", second)

    plan = estate.run("plan", "--target", f"glue:{GLUE_CATALOG}${first}$a", "--format", "json")
    assert plan.returncode == 0, describe(plan)
    document = json.loads(plan.stdout)
    assert sorted((a["verb"], a["kind"], a["backend"], a["display_id"]) for a in document["actions"]) == [
        ("create", "dataset", "glue", str(estate.data / "a.lance")),
        ("create", "namespace", "glue", f"{GLUE_CATALOG}${first}"),
        ("create", "table", "glue", f"{GLUE_CATALOG}${first}$a")]
    assert document["partial"]["by"] == "target" and len(document["partial"]["omitted"]) == 10
    text = estate.run("plan", "--target", f"glue:{GLUE_CATALOG}${first}$a")
    assert "This plan is partial: only --target" in text.stdout and "Partial: 10 change(s) left out." in text.stdout

    applied = estate.run("apply", "--auto-approve", "--target", f"glue:{GLUE_CATALOG}${first}$a")
    assert applied.returncode == 0, describe(applied)
    databases = estate.glue_databases()
    assert first in databases and second not in databases
    assert estate.glue_table(first, "a") is not None and estate.glue_table(first, "b") is None
    assert first not in estate.unity_schemas() and second not in estate.unity_schemas()
    assert not (estate.data / "b.lance").exists() and not (estate.data / "c.lance").exists()

    globbed = estate.run("apply", "--auto-approve", "--target", f"uc:*${second}*")
    assert globbed.returncode == 0, describe(globbed)
    assert estate.unity_tables(second) == ["c"] and first not in estate.unity_schemas()
    assert second not in estate.glue_databases()

    rest = estate.run("plan", "--format", "json")
    assert sorted(a["display_id"] for a in json.loads(rest.stdout)["actions"] if a["kind"] == "table") == sorted([
        f"{GLUE_CATALOG}${first}$b", f"{GLUE_CATALOG}${second}$c", f"{UNITY_CATALOG}${first}$a",
        f"{UNITY_CATALOG}${first}$b"])
    assert estate.run("apply", "--auto-approve").returncode == 0
    assert estate.run("plan", "--detailed-exitcode").returncode == 0
