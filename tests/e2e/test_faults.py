"""Convergence under faults: apply through a FaultProxy in front of Iceberg, Glue and Unity.

One manifest (an owner of its own) declares one namespace in each of the three catalogs and
150 Lance tables, each registered in all three. Every request of lance-sync goes through a
FaultProxy (tests/servers/faults.py) at rate 0.10 with every fault kind: 503, 429 with
Retry-After 0, 500, connection reset, a request carried out whose answer is dropped, an
answer cut short. `lance-sync apply` runs as a subprocess, at most 1 + 3 times, until it
exits 0; `plan --detailed-exitcode` through the same faulty proxies must then find nothing
to do. The state is then read straight from the servers with each catalog's own client
(pyiceberg, boto3, unitycatalog-client): exactly the 150 tables plus the foreign table made
beforehand, with the manifest's locations, properties and the owner mark, nothing
duplicated, nothing missing, the foreign objects untouched, no lease left behind.

The faults are seeded: which request gets which fault depends only on the request and the
seed, so a run sees the same faults for the same requests whatever the thread scheduling.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from unitycatalog.client import (
    ColumnInfo,
    ColumnTypeName,
    CreateSchema,
    CreateTable,
    DataSourceFormat,
    SchemasApi,
    TablesApi,
    TableType,
)

from tests.conformance.harness_unity import ensure_catalog, run_sdk
from tests.servers.base import RunningServer
from tests.servers.faults import ALL_KINDS, FaultProxy, proxy_fixture
from tests.servers.glue import glue_client
from tests.support.catalogs import (
    GLUE_CATALOG,
    OWNER_KEY,
    UNITY_CATALOG,
    ensure_glue_catalog,
    glue_backend,
    glue_catalog_id,
    glue_env,
    glue_leases_held,
    glue_tables,
    iceberg_backend,
    iceberg_lance_tables,
    iceberg_leases_held,
    own_lease_prefix,
    plain_path,
    pyiceberg,
    unity_backend,
    unity_schemas,
    unity_tables,
)
from tests.support.cli import cli_env, describe, failures, run_cli

pytestmark = pytest.mark.servers

iceberg_proxy = proxy_fixture("iceberg_server")
glue_proxy = proxy_fixture("glue_server")
unity_proxy = proxy_fixture("unity_server")


TABLES = 150
FAULT_RATE = 0.10
FAULT_SEED = int(os.environ.get("LANCE_SYNC_TEST_FAULT_SEED", "20261123"))
#: the first apply plus at most three re-runs
MAX_APPLIES = 4
FOREIGN = "foreign_plain"
#: every WRITTEN_EVERY-th table has a schema, so its dataset is written by apply
WRITTEN_EVERY = 30
FOREIGN_ICEBERG_SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def fault_summary(proxies: dict[str, FaultProxy]) -> dict[str, dict[str, int]]:
    keys = ("requests", "forwarded", "faults", *ALL_KINDS)
    return {name: {key: proxy.stats[key] for key in keys} for name, proxy in proxies.items()}


# --- the test ------------------------------------------------------------------------------------


def make_foreign_objects(servers: dict[str, RunningServer], namespace: str, data: Path) -> None:
    """Each namespace, and a non-Lance table in it, made with the catalog's own client."""
    catalog = pyiceberg(servers["ice"])
    catalog.create_namespace(namespace, {"origin": "pyiceberg"})
    catalog.create_table((namespace, FOREIGN), FOREIGN_ICEBERG_SCHEMA,
                         location=(data / "foreign_iceberg").as_uri())

    glue = glue_client(servers["glue"])
    catalog_id = glue_catalog_id(servers["glue"])
    glue.create_database(CatalogId=catalog_id, DatabaseInput={"Name": namespace,
                                                              "Parameters": {"origin": "boto3"}})
    glue.create_table(CatalogId=catalog_id, DatabaseName=namespace, TableInput={
        "Name": FOREIGN, "TableType": "EXTERNAL_TABLE", "Parameters": {"classification": "parquet"},
        "StorageDescriptor": {"Location": (data / "foreign_glue").as_uri()}})

    column = ColumnInfo(name="id", type_name=ColumnTypeName.LONG, type_text="bigint", position=0, nullable=True,
                        type_json='{"name":"id","type":"long","nullable":true,"metadata":{}}')

    async def unity(client: Any) -> None:
        await SchemasApi(client).create_schema(CreateSchema(name=namespace, catalog_name=UNITY_CATALOG,
                                                            properties={"origin": "sdk"}))
        await TablesApi(client).create_table(CreateTable(
            name=FOREIGN, catalog_name=UNITY_CATALOG, schema_name=namespace, table_type=TableType.EXTERNAL,
            data_source_format=DataSourceFormat.DELTA, columns=[column],
            storage_location=(data / "foreign_unity").as_uri(), properties={"origin": "sdk"}))

    run_sdk(servers["uc"], unity)


def foreign_snapshot(servers: dict[str, RunningServer], namespace: str) -> dict[str, Any]:
    """Everything each catalog says about the foreign table, read directly."""
    table = pyiceberg(servers["ice"]).load_table((namespace, FOREIGN))
    glue = glue_client(servers["glue"]).get_table(CatalogId=glue_catalog_id(servers["glue"]),
                                                  DatabaseName=namespace, Name=FOREIGN)["Table"]
    unity = run_sdk(servers["uc"], lambda client: TablesApi(client).get_table(
        f"{UNITY_CATALOG}.{namespace}.{FOREIGN}"))
    return {"ice": (table.metadata_location, table.metadata.model_dump_json()),
            "glue": glue, "uc": unity.to_dict()}


def write_manifest(path: Path, owner: str, namespace: str, data: Path,
                   backends: dict[str, dict[str, Any]], servers: dict[str, RunningServer],
                   tables_count: int = TABLES) -> dict[str, Any]:
    parents = {"ice": servers["ice"].extra["warehouse"], "glue": GLUE_CATALOG, "uc": UNITY_CATALOG}
    tables = []
    for i in range(tables_count):
        table: dict[str, Any] = {
            "name": f"t{i:03d}", "location": str(data / f"t{i:03d}.lance"),
            "properties": {"tier": "gold" if i % 2 else "silver", "idx": str(i)},
            "register": [{"backend": b, "namespace": [parents[b], namespace]} for b in backends],
        }
        if i % WRITTEN_EVERY == 0:
            table["schema"] = [{"name": "id", "type": "int64", "nullable": False},
                               {"name": "v", "type": "fixed_size_list<float32>[4]"}]
        tables.append(table)
    manifest = {"version": 1, "owner": owner, "backends": backends,
                "namespaces": [{"backend": b, "id": [parents[b], namespace], "properties": {"team": "faults"}}
                               for b in backends],
                "tables": tables}
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return manifest


def set_up_faults_estate(servers: dict[str, RunningServer], proxies: dict[str, FaultProxy], tmp_path: Path,
                         prefix: str, tables_count: int = TABLES
                         ) -> tuple[str, str, Path, dict[str, Any], dict[str, str]]:
    """A fresh namespace holding foreign objects in every backend, and a manifest that registers
    `tables_count` tables in all three through their proxies, every retry setting at its
    default (what a user gets): (owner, namespace, manifest path, manifest, CLI environment)."""
    ensure_glue_catalog(servers["glue"])
    ensure_catalog(servers["uc"], UNITY_CATALOG)
    owner = f"{prefix}-{uuid.uuid4().hex[:8]}"
    namespace = f"{prefix}_{uuid.uuid4().hex[:8]}"
    data = tmp_path / "data"
    data.mkdir()
    make_foreign_objects(servers, namespace, data)
    backends = {"ice": iceberg_backend(proxies["ice"].server, tmp_path),
                "glue": glue_backend(proxies["glue"].server),
                "uc": unity_backend(proxies["uc"].server, tmp_path)}
    manifest_path = tmp_path / "lance-sync.yaml"
    manifest = write_manifest(manifest_path, owner, namespace, data, backends, servers, tables_count)
    return owner, namespace, manifest_path, manifest, cli_env(**glue_env(servers["glue"]))


def test_apply_converges_under_faults_in_iceberg_glue_and_unity(
        iceberg_server: RunningServer, glue_server: RunningServer, unity_server: RunningServer,
        iceberg_proxy: FaultProxy, glue_proxy: FaultProxy, unity_proxy: FaultProxy, tmp_path: Path):
    servers = {"ice": iceberg_server, "glue": glue_server, "uc": unity_server}
    proxies = {"ice": iceberg_proxy, "glue": glue_proxy, "uc": unity_proxy}
    owner, namespace, manifest_path, manifest, env = set_up_faults_estate(servers, proxies, tmp_path, "faults")
    foreign_before = foreign_snapshot(servers, namespace)
    for proxy in proxies.values():
        proxy.configure(rate=FAULT_RATE, seed=FAULT_SEED, kinds=ALL_KINDS)

    runs = []
    #: partial failures that said a re-run would not converge (every fault here is transient)
    misjudged = []
    #: applies that gave up because a transient fault hit the request taking their lease
    lease_failures = []
    began = time.monotonic()
    for _ in range(MAX_APPLIES):
        result = run_cli(manifest_path, "apply", "--auto-approve", "--format", "json", env=env)
        document = json.loads(result.stdout)  # one JSON document, whatever happened
        runs.append((result.returncode, document.get("status"),
                     sum(o["status"] == "failed" for o in document.get("outcomes") or []),
                     document.get("error", "")[:300]))
        if result.returncode == 0:
            plan = run_cli(manifest_path, "plan", "--detailed-exitcode", env=env)
            assert plan.returncode == 0, describe(plan)
            break
        # a partial failure under transient faults says so; an unreadable backend is an error
        assert result.returncode in (1, 3), describe(result)
        if result.returncode == 1 and "apply lease" in document.get("error", ""):
            lease_failures.append(document["error"])
        if result.returncode == 3 and document["rerun_converges"] is not True:
            misjudged.append(failures(document, result))
        if result.returncode == 3:
            print(failures(document, result))
    elapsed = time.monotonic() - began
    summary = fault_summary(proxies)
    print(f"\nfault injection (rate {FAULT_RATE}, seed {FAULT_SEED}), {elapsed:.1f} s: "
          f"apply runs (exit, status, failed actions, error):")
    for run in runs:
        print(f"  {run}")
    for name, counts in summary.items():
        print(f"  {name:5} {counts}")
    assert runs[-1][0] == 0, f"no convergence within {MAX_APPLIES} applies: {runs}"
    # not vacuous: every backend saw faults, and every kind was injected (per-backend counts vary
    # from run to run: request bodies hold the temporary paths, which are part of the draw)
    assert all(counts["faults"] >= 5 for counts in summary.values()), summary
    assert all(sum(counts[kind] for counts in summary.values()) > 0 for kind in ALL_KINDS), summary

    # --- the state, read directly from each server with its own client ---
    expected = {t["name"]: (plain_path(t["location"]), {**t["properties"], OWNER_KEY: owner})
                for t in manifest["tables"]}

    names, tables = iceberg_lance_tables(iceberg_server, namespace)
    assert sorted(names) == sorted([*expected, FOREIGN]) and len(names) == len(set(names))
    for name, (location, properties) in expected.items():
        live_location, live = tables[name]
        assert plain_path(live_location) == location, name
        assert {k: live.get(k) for k in properties} == properties, (name, live)
        assert live.get("table_type", "").lower() == "lance", (name, live)
    namespace_properties = pyiceberg(iceberg_server).load_namespace_properties(namespace)
    assert namespace_properties.get(OWNER_KEY) == owner and namespace_properties.get("team") == "faults"
    assert namespace_properties.get("origin") == "pyiceberg"  # adopting kept what was there
    leases_held = iceberg_leases_held(iceberg_server, owner)

    catalog_id = glue_catalog_id(glue_server)
    names, tables = glue_tables(glue_server, catalog_id, namespace)
    assert sorted(names) == sorted([*expected, FOREIGN]) and len(names) == len(set(names))
    for name, (location, properties) in expected.items():
        table = tables[name]
        parameters = table.get("Parameters", {})
        assert table["TableType"] == "EXTERNAL_TABLE", (name, table)
        assert plain_path(table["StorageDescriptor"]["Location"]) == location, name
        assert {k: parameters.get(k) for k in properties} == properties, (name, parameters)
        assert parameters.get("table_type", "").lower() == "lance", (name, parameters)
    database = glue_client(glue_server).get_database(CatalogId=catalog_id, Name=namespace)["Database"]
    assert database["Parameters"].get(OWNER_KEY) == owner and database["Parameters"].get("team") == "faults"
    assert database["Parameters"].get("origin") == "boto3"  # adopting kept what was there
    leases_held += glue_leases_held(glue_server, catalog_id, owner)

    names, tables = unity_tables(unity_server, UNITY_CATALOG, namespace)
    assert sorted(names) == sorted([*expected, FOREIGN]) and len(names) == len(set(names))
    for name, (location, properties) in expected.items():
        table = tables[name]
        live = table.properties or {}
        assert (table.table_type, table.data_source_format) == (TableType.EXTERNAL, DataSourceFormat.TEXT)
        assert plain_path(table.storage_location) == location, name
        assert {k: live.get(k) for k in properties} == properties, (name, live)
        assert live.get("table_type", "").lower() == "lance", (name, live)
    schema = run_sdk(unity_server, lambda client: SchemasApi(client).get_schema(f"{UNITY_CATALOG}.{namespace}"))
    assert (schema.properties or {}).get(OWNER_KEY) == owner and schema.properties.get("team") == "faults"
    assert schema.properties.get("origin") == "sdk"
    leases_held += [n for n in unity_schemas(unity_server, UNITY_CATALOG) if n.startswith(own_lease_prefix(owner))]

    assert foreign_snapshot(servers, namespace) == foreign_before
    assert not leases_held, f"leases left held: {leases_held}"
    for table in manifest["tables"]:
        if "schema" in table:
            dataset = lance.dataset(table["location"])
            assert dataset.schema.field("v").type == pa.list_(pa.float32(), 4)
    # checked last, so that the convergence and the state above are checked whatever these say
    assert not lease_failures, ("apply exited 1 because a transient fault hit taking its lease (a "
                                "create that may have landed is not read back):\n" + "\n".join(lease_failures))
    assert not misjudged, ("apply exited 3 with rerun_converges false although every fault was "
                           "transient and a re-run converged:\n" + "\n".join(misjudged))


def test_writes_whose_answers_are_lost_are_never_misjudged(
        iceberg_server: RunningServer, glue_server: RunningServer, unity_server: RunningServer,
        iceberg_proxy: FaultProxy, glue_proxy: FaultProxy, unity_proxy: FaultProxy, tmp_path: Path):
    """Every write, and on Glue every read too (all its requests are POSTs), fails twice: it
    reaches the server and its answer is dropped or cut short, or the connection is reset
    before it is sent. A resent create then meets its own object, whose AlreadyExists answer
    may itself be cut short, and the read that checks it fails too. No apply may crash (exit 1)
    or call such a failure final: each says that a re-run converges, and one does."""
    servers = {"ice": iceberg_server, "glue": glue_server, "uc": unity_server}
    proxies = {"ice": iceberg_proxy, "glue": glue_proxy, "uc": unity_proxy}
    _, _, manifest_path, _, env = set_up_faults_estate(servers, proxies, tmp_path, "lost", tables_count=31)
    for proxy in proxies.values():
        proxy.configure(rate=1.0, seed=FAULT_SEED, kinds=["dropped", "truncated", "reset"],
                        methods=["POST", "PUT", "PATCH", "DELETE"], max_faults_per_request=2)

    for _ in range(MAX_APPLIES):
        result = run_cli(manifest_path, "apply", "--auto-approve", "--format", "json", env=env)
        document = json.loads(result.stdout)
        assert result.returncode in (0, 3), failures(document, result)
        assert result.returncode == 0 or document["rerun_converges"] is True, failures(document, result)
        if result.returncode == 0:
            break
    assert result.returncode == 0, failures(document, result)
    assert all(proxy.stats["dropped"] and proxy.stats["truncated"] for proxy in proxies.values()), \
        fault_summary(proxies)
    for proxy in proxies.values():
        proxy.configure(rate=0.0)
    plan = run_cli(manifest_path, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 0, describe(plan)
