"""Every catalog backend with its tables on S3 (issue 17): the CLI end to end, moto S3 as the store.

For each of the suite's catalog servers (Iceberg REST twice: on InMemoryCatalog, which keeps
table metadata in memory, and on JdbcCatalog writing each table's metadata.json into its
location on S3 as a real deployment does; Glue; Unity; the real Hive Metastore 2.3; the Hive
3 server), and for the directory backend with its root on S3, one manifest puts its tables at `s3://<a bucket of the test's own>/lake/...` on the
session's moto S3 server (`s3_server`): two tables with a declared
`schema` (lance-sync writes their empty datasets on S3) and one dataset pylance wrote there
before, which apply registers. A dataset nobody registers sits beside them, its name
starting with one of theirs. Through the CLI (a subprocess, as a user runs it):

- `apply` from scratch exits 0; `plan --detailed-exitcode` then finds nothing, `verify` says
  every location is ok, `drift` is clean, and `discover s3://<bucket>/lake` lists only the
  unregistered dataset;
- each catalog's own client (pyiceberg, boto3, unitycatalog-client, pymetastore, pylance's
  DirectoryNamespace) reads the registered location back as the `s3://` URI, and pylance
  opens the dataset there;
- a registration removed with that client and a column added with pylance show in `drift`
  (exit 2) and `plan`; apply repairs the registration;
- the tables leave the manifest with `on_remove: drop`: apply refuses without
  `--allow-drop` (exit 4), and with it deletes lance-sync's own dataset from S3 (boto3 finds
  none of its objects), deregisters the adopted one and leaves its data, and leaves the
  unregistered dataset's objects exactly as they were.

The S3 settings reach lance-sync in two ways: the backend's `storage:` options (secrets as
`${VAR}`, set in the subprocess's environment, with no AWS variable set there), and, once
per backend family, only the standard AWS environment (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`,
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`) with no `storage:` block.

Also per backend: a table declared before its data, then given a schema (what each catalog
leaves at the location meanwhile stays); and on HMS, a table a Hive user registered at
`s3a://` adopted in place, with the metastore counting the dataset's files on S3.

What is not the real thing, and why: no AWS SDK, hadoop-aws or iceberg-aws bundle can be
downloaded here (no Maven), so the metastore reaches S3 through the suite's own Hadoop file
system (tests/servers/java/LoopbackS3FileSystem.java) and the Iceberg server writes its
metadata through the suite's own FileIO (java/iceberg_rest/LocalFileIO.java); both send
SigV4-signed S3 requests to the same moto server (java/s3/LoopbackS3Client.java). moto does
not check signatures or IAM. Unity and the Hive 3 server are the project's own servers and
record locations without touching the store (as UC OSS does for external tables).
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import lance_namespace
import pyarrow as pa
import pytest
import yaml
from lance_namespace import DeregisterTableRequest, DescribeTableRequest, ListTablesRequest
from pymetastore.hive_metastore.ttypes import (
    Database,
    GetTableRequest,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from unitycatalog.client import TablesApi

from tests.conformance.harness_hive3 import Hive3Harness
from tests.conformance.harness_unity import ensure_catalog, run_sdk
from tests.servers import s3
from tests.servers.base import RunningServer
from tests.servers.glue import glue_client
from tests.servers.hive_support import hive_client
from tests.support.catalogs import UNITY_CATALOG, glue_backend, glue_env, pyiceberg
from tests.support.cli import cli_env, describe, run_cli

pytestmark = pytest.mark.servers

#: iceberg: the suite's Iceberg REST server (InMemoryCatalog: table metadata stays in memory);
#: iceberg_jdbc: the same on JdbcCatalog, writing metadata files into the table location on S3
BACKENDS = ("dir", "iceberg", "iceberg_jdbc", "glue", "unity", "hms", "hive3")
#: one backend of each family for the variant configured only through the AWS environment
FAMILIES = ("dir", "iceberg", "glue", "unity", "hms")
MARK = "lance_sync.owner"
SCHEMA = [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"}]
#: variables the `storage:` options name for their secrets
KEY_VARIABLE = "LS_E2E_S3_ACCESS_KEY_ID"
SECRET_VARIABLE = "LS_E2E_S3_SECRET_ACCESS_KEY"


@dataclass
class Catalog:
    """One catalog server under test: its manifest backend block, the test's namespace in it,
    and its own client's view of a table's registration."""

    kind: str
    server: RunningServer | None  # None: the directory backend, no server
    backend: dict[str, Any]
    namespace: list[str]
    env: dict[str, str] = field(default_factory=dict)
    #: the location the catalog records for a table (None: no such table), read with its own client
    registered: Callable[[str], str | None] = lambda name: None
    #: removes a table's registration with the catalog's own client (never its data)
    deregister: Callable[[str], None] = lambda name: None

    def display_id(self, name: str) -> str:
        """How plans and reports write a table of the test's namespace."""
        return ("." if self.kind.startswith("iceberg") else "$").join([*self.namespace, name])


def iceberg_catalog(kind: str, server: RunningServer, namespace: str, tmp_path: Path, store: Store) -> Catalog:
    client = pyiceberg(server)

    def registered(name: str) -> str | None:
        if (namespace, name) not in client.list_tables(namespace):  # listed without loading metadata
            return None
        return client.load_table((namespace, name)).location()

    return Catalog(kind, server, {"type": "iceberg", "endpoint": server.endpoint, "root": str(tmp_path)},
                   [server.extra["warehouse"], namespace], registered=registered,
                   deregister=lambda name: client.drop_table((namespace, name)))


def glue_catalog(kind: str, server: RunningServer, namespace: str, tmp_path: Path, store: Store) -> Catalog:
    glue, account = glue_client(server), server.extra["account_id"]

    def registered(name: str) -> str | None:
        try:
            table = glue.get_table(CatalogId=account, DatabaseName=namespace, Name=name)["Table"]
        except glue.exceptions.EntityNotFoundException:
            return None
        return table["StorageDescriptor"]["Location"]

    return Catalog(kind, server, glue_backend(server), [account, namespace], glue_env(server),
                   registered=registered,
                   deregister=lambda name: glue.delete_table(CatalogId=account, DatabaseName=namespace, Name=name))


def unity_catalog(kind: str, server: RunningServer, namespace: str, tmp_path: Path, store: Store) -> Catalog:
    ensure_catalog(server, UNITY_CATALOG)

    def registered(name: str) -> str | None:
        async def listing(client: Any) -> list[Any]:
            return (await TablesApi(client).list_tables(UNITY_CATALOG, namespace)).tables or []

        found = {table.name: table.storage_location for table in run_sdk(server, listing)}
        return found.get(name)

    def deregister(name: str) -> None:
        async def delete(client: Any) -> None:
            await TablesApi(client).delete_table(f"{UNITY_CATALOG}.{namespace}.{name}")

        run_sdk(server, delete)

    return Catalog(kind, server, {"type": "unity", "endpoint": server.endpoint, "catalog": UNITY_CATALOG,
                                     "root": str(tmp_path)},
                   [UNITY_CATALOG, namespace], registered=registered, deregister=deregister)


def hive_catalog(kind: str, server: RunningServer, namespace: str, tmp_path: Path, store: Store) -> Catalog:
    catalog = "hive" if kind == "hms" else Hive3Harness(server, tmp_path).parent_namespace()[0]
    database = namespace if kind == "hms" else f"@{catalog}#{namespace}"

    def registered(name: str) -> str | None:
        with hive_client(server.endpoint) as client:
            names = client.get_tables(database, "*")
            if name not in names:
                return None
            request = GetTableRequest(dbName=namespace, tblName=name, catName=catalog)
            return client.get_table_req(request).table.sd.location

    def deregister(name: str) -> None:
        with hive_client(server.endpoint) as client:
            client.drop_table(database, name, False)

    return Catalog(kind, server, {"type": "hive3", "uri": server.endpoint, "root": str(tmp_path)},
                   [catalog, namespace], registered=registered, deregister=deregister)


def dir_catalog(kind: str, server: RunningServer | None, namespace: str, tmp_path: Path, store: Store) -> Catalog:
    """The directory backend with its root on the store; pylance's own DirectoryNamespace is
    the independent client."""
    root = store.uri("lake")
    client = lance_namespace.connect("dir", {"root": root, **{f"storage.{k}": v for k, v in store.options().items()}})

    def registered(name: str) -> str | None:
        if name not in client.list_tables(ListTablesRequest(id=[namespace])).tables:
            return None
        return client.describe_table(DescribeTableRequest(id=[namespace, name])).location

    return Catalog(kind, server, {"type": "dir", "root": root}, [namespace], registered=registered,
                   deregister=lambda name: client.deregister_table(DeregisterTableRequest(id=[namespace, name])))


#: kind -> (server fixture, how the test's Catalog is made)
KINDS: dict[str, tuple[str | None, Callable[..., Catalog]]] = {
    "dir": (None, dir_catalog),
    "iceberg": ("iceberg_server", iceberg_catalog),
    "iceberg_jdbc": ("iceberg_s3_server", iceberg_catalog),
    "glue": ("glue_server", glue_catalog),
    "unity": ("unity_server", unity_catalog),
    "hms": ("hms_server", hive_catalog),
    "hive3": ("hive3_server", hive_catalog),
}


def catalog_for(kind: str, request: pytest.FixtureRequest, tmp_path: Path, store: Store) -> Catalog:
    fixture, make = KINDS[kind]
    server = request.getfixturevalue(fixture) if fixture else None
    return make(kind, server, f"s3_{uuid.uuid4().hex[:10]}", tmp_path, store)


# --- the store ---------------------------------------------------------------------------------------


@dataclass
class Store:
    """The test's bucket on the session's S3 server, and how lance-sync is told about it."""

    server: RunningServer
    bucket: str
    #: True: the backend's `storage:` options; False: only the standard AWS environment
    through_options: bool

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def options(self) -> dict[str, str]:
        """Storage options for pylance and boto3 in this test process."""
        return s3.storage_options(self.endpoint)

    def manifest_options(self) -> dict[str, str]:
        """The backend's `storage:` block: the secrets as ${VAR} (validation requires it)."""
        return {**s3.storage_options(self.endpoint), "aws_access_key_id": "${" + KEY_VARIABLE + "}",
                "aws_secret_access_key": "${" + SECRET_VARIABLE + "}"}

    def environment(self) -> dict[str, str]:
        """What the lance-sync subprocess gets on top of the catalog's variables."""
        if self.through_options:
            return {KEY_VARIABLE: s3.ACCESS_KEY_ID, SECRET_VARIABLE: s3.SECRET_ACCESS_KEY}
        return s3.aws_environment(self.endpoint)

    def keys(self, prefix: str) -> dict[str, str]:
        """{key: ETag} of every object under `prefix` (boto3, every page)."""
        client = s3.s3_client(self.endpoint)
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            found.update({item["Key"]: item["ETag"] for item in page.get("Contents", [])})
        return found

    def lance_keys(self, key: str) -> dict[str, str]:
        """{key: ETag} of the objects of the dataset at `key`, without the `metadata/` folder an
        Iceberg catalog writes its own files into (Lance never writes one) and without empty
        directory markers (`key/`: S3A's mkdirs writes one, pyarrow one for a folder it empties)."""
        return {k: etag for k, etag in self.keys(f"{key}/").items()
                if not k.startswith(f"{key}/metadata/") and not k.endswith("/")}

    def iceberg_metadata(self, key: str) -> list[str]:
        return [k for k in self.keys(f"{key}/metadata/") if k.endswith(".metadata.json")]


def new_store(s3_server: RunningServer, kind: str, through_options: bool) -> Store:
    bucket = f"ls-{kind.replace('_', '-')}-{'opt' if through_options else 'env'}-{uuid.uuid4().hex[:12]}"
    return Store(s3_server, s3.new_bucket(s3_server.endpoint, bucket), through_options)


# --- the manifest, shared by every backend ------------------------------------------------------------


def object_store_manifest(catalog: Catalog, store: Store, owner: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    """A manifest with one backend (`cat`), the test's namespace and `tables` on the store."""
    backend = dict(catalog.backend)
    if store.through_options:
        backend["storage"] = store.manifest_options()
    registration = {"backend": "cat", "namespace": catalog.namespace}
    return {"version": 1, "owner": owner, "backends": {"cat": backend},
            "namespaces": [{"backend": "cat", "id": catalog.namespace}],
            "tables": [{**table, "register": [registration]} for table in tables]}


def declared_tables(store: Store, drop: bool = True) -> list[dict[str, Any]]:
    """orders and events: written by lance-sync; legacy: pylance's dataset, registered as it is."""
    on_remove = {"on_remove": "drop"} if drop else {}
    return [{"name": "orders", "location": store.uri("lake/orders.lance"), "schema": SCHEMA, **on_remove},
            {"name": "events", "location": store.uri("lake/events.lance"), "schema": SCHEMA},
            {"name": "legacy", "location": store.uri("lake/legacy.lance"), **on_remove}]


def write(manifest: dict[str, Any], path: Path) -> Path:
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def cli_environment(catalog: Catalog, store: Store) -> dict[str, str]:
    """The lance-sync subprocess's environment: no AWS variable of the caller's, then the
    catalog's credentials and the store's settings."""
    base = {name: value for name, value in cli_env().items() if not name.startswith("AWS_")}
    return {**base, **catalog.env, **store.environment()}


def run(manifest: Path, command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli(manifest, command, *args, env=env)


def seed(store: Store) -> None:
    """Before any apply: pylance's dataset for `legacy` and a dataset nobody registers whose
    key starts with the key of `orders`."""
    legacy = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "note": ["a", "b", "c"]})
    lance.write_dataset(legacy, store.uri("lake/legacy.lance"), storage_options=store.options())
    lance.write_dataset(pa.table({"x": [1, 2]}), store.uri("lake/orders.lance.bak"), storage_options=store.options())


def dataset(store: Store, location: str) -> lance.LanceDataset:
    return lance.dataset(location, storage_options=store.options())


# --- the tests -----------------------------------------------------------------------------------------


def check_round_trip(catalog: Catalog, store: Store, tmp_path: Path) -> None:
    owner = f"s3-{catalog.kind}-{uuid.uuid4().hex[:8]}"
    env = cli_environment(catalog, store)
    seed(store)
    foreign = store.keys("lake/orders.lance.bak/")
    legacy = store.lance_keys("lake/legacy.lance")
    assert foreign and legacy
    manifest = write(object_store_manifest(catalog, store, owner, declared_tables(store)), tmp_path / "lance-sync.yaml")

    applied = run(manifest, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, describe(applied)
    plan = run(manifest, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 0, describe(plan)
    verified = run(manifest, "verify", "--engine", "threads", env=env)
    assert verified.returncode == 0, describe(verified)
    assert "0 broken, 3 ok." in verified.stdout, describe(verified)
    for name in ("orders", "events", "legacy"):
        assert f"    ok  {store.uri(f'lake/{name}.lance')}  (version " in verified.stdout, describe(verified)
    drift = run(manifest, "drift", env=env)
    assert drift.returncode == 0, describe(drift)
    storage_args = [] if not store.through_options else [
        f"--storage=aws_endpoint={store.endpoint}", "--storage=allow_http=true", f"--storage=aws_region={s3.REGION}",
        f"--storage=aws_access_key_id=${{{KEY_VARIABLE}}}", f"--storage=aws_secret_access_key=${{{SECRET_VARIABLE}}}"]
    discovered = run(manifest, "discover", store.uri("lake"), "--engine", "threads", *storage_args, env=env)
    assert discovered.returncode == 0, describe(discovered)
    found = yaml.safe_load(discovered.stdout)["tables"]
    assert [table["location"] for table in found] == [store.uri("lake/orders.lance.bak")], describe(discovered)

    # what the catalog's own client reads, and what pylance opens there
    registered = {name: catalog.registered(name) for name in ("orders", "events", "legacy")}
    assert registered == {name: store.uri(f"lake/{name}.lance") for name in registered}
    for name in ("orders", "events"):
        written = dataset(store, str(registered[name]))
        assert written.count_rows() == 0 and written.schema.names == ["id", "name"]
        assert written.schema.metadata == {MARK.encode(): owner.encode()}
    assert dataset(store, str(registered["legacy"])).count_rows() == 3
    assert store.lance_keys("lake/legacy.lance") == legacy, "registering changed the adopted dataset"
    if catalog.kind == "iceberg_jdbc":  # the catalog wrote its metadata files into each location on S3
        assert all(store.iceberg_metadata(f"lake/{name}.lance") for name in ("orders", "events", "legacy"))

    # out of band: a registration removed with the catalog's client, a column added with pylance
    catalog.deregister("events")
    dataset(store, store.uri("lake/orders.lance")).add_columns({"extra": "id * 2"})
    drift = run(manifest, "drift", env=env)
    assert drift.returncode == 2, describe(drift)
    events_id = catalog.display_id("events")
    assert f"! missing: table cat: {events_id}" in drift.stdout, describe(drift)
    assert (f"the dataset at {store.uri('lake/orders.lance')} has columns beyond the manifest (extra: int64)"
            in drift.stdout), describe(drift)
    plan = run(manifest, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 2, describe(plan)
    assert re.search(rf"\+ create table +cat: {re.escape(events_id)}\n", plan.stdout), describe(plan)
    repaired = run(manifest, "apply", "--auto-approve", env=env)
    assert repaired.returncode == 0, describe(repaired)
    assert catalog.registered("events") == store.uri("lake/events.lance")
    plan = run(manifest, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 0, describe(plan)

    # orders and legacy leave the manifest: only lance-sync's own dataset is deleted
    kept = [table for table in declared_tables(store) if table["name"] == "events"]
    write(object_store_manifest(catalog, store, owner, kept), manifest)
    refused = run(manifest, "apply", "--auto-approve", env=env)
    assert refused.returncode == 4, describe(refused)
    assert store.keys("lake/orders.lance/"), "a refused apply deleted data"
    dropped = run(manifest, "apply", "--auto-approve", "--allow-drop", env=env)
    assert dropped.returncode == 0, describe(dropped)
    assert store.lance_keys("lake/orders.lance") == {}, "lance-sync's dataset is still on S3"
    if catalog.kind == "iceberg_jdbc":  # the catalog's files stay, as Iceberg's drop without purge leaves them
        assert store.keys("lake/orders.lance/metadata/").keys() == set(store.iceberg_metadata("lake/orders.lance"))
    else:
        assert store.keys("lake/orders.lance/") == {}
    assert catalog.registered("orders") is None and catalog.registered("legacy") is None
    assert store.lance_keys("lake/legacy.lance") == legacy, "the adopted dataset was touched"
    assert store.keys("lake/orders.lance.bak/") == foreign, "the unregistered dataset was touched"
    assert dataset(store, store.uri("lake/events.lance")).count_rows() == 0
    assert catalog.registered("events") == store.uri("lake/events.lance")
    plan = run(manifest, "plan", "--detailed-exitcode", env=env)
    assert plan.returncode == 0, describe(plan)


@pytest.mark.parametrize("kind", BACKENDS)
def test_tables_on_s3_through_the_backends_storage_options(kind: str, request: pytest.FixtureRequest,
                                                           s3_server: RunningServer, tmp_path: Path):
    store = new_store(s3_server, kind, through_options=True)
    check_round_trip(catalog_for(kind, request, tmp_path, store), store, tmp_path)


@pytest.mark.parametrize("kind", FAMILIES)
def test_tables_on_s3_through_the_aws_environment_only(kind: str, request: pytest.FixtureRequest,
                                                       s3_server: RunningServer, tmp_path: Path):
    store = new_store(s3_server, kind, through_options=False)
    check_round_trip(catalog_for(kind, request, tmp_path, store), store, tmp_path)


def test_the_hive_metastore_reaches_the_store_itself(request: pytest.FixtureRequest, s3_server: RunningServer,
                                                     tmp_path: Path):
    """Unlike the REST catalogs, HMS opens a table's location itself with its own Hadoop file
    system and credentials (here java/LoopbackS3FileSystem.java with S3A's settings, in place
    of hadoop-aws) and counts the files there for its statistics. A Hive user registers `legacy`
    at `s3a://` (as Spark writes it); the manifest says `s3://`: the same place, so apply adopts
    it in place and the metastore keeps its spelling."""
    store = new_store(s3_server, "hms-s3a", through_options=True)
    catalog = catalog_for("hms", request, tmp_path, store)
    env = cli_environment(catalog, store)
    owner = f"s3-hms-{uuid.uuid4().hex[:8]}"
    seed(store)
    database = catalog.namespace[1]
    with hive_client(catalog.server.endpoint) as client:
        client.create_database(Database(name=database, parameters={MARK: owner}))
        client.create_table(Table(
            tableName="legacy", dbName=database, tableType="EXTERNAL_TABLE", partitionKeys=[],
            parameters={"EXTERNAL": "TRUE", "table_type": "lance"},
            sd=StorageDescriptor(cols=[], location=f"s3a://{store.bucket}/lake/legacy.lance", parameters={},
                                 serdeInfo=SerDeInfo(parameters={}))))
    tables = [{"name": "legacy", "location": store.uri("lake/legacy.lance")}]
    manifest = write(object_store_manifest(catalog, store, owner, tables), tmp_path / "lance-sync.yaml")

    plan = run(manifest, "plan", env=env)
    assert re.search(rf"~ update table +cat: {re.escape(catalog.display_id('legacy'))}  \(adopt\)\n", plan.stdout), \
        describe(plan)
    assert "0 to replace" in plan.stdout and "-/+" not in plan.stdout, describe(plan)
    applied = run(manifest, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, describe(applied)
    with hive_client(catalog.server.endpoint) as client:
        legacy = client.get_table(database, "legacy")
    assert legacy.sd.location == f"s3a://{store.bucket}/lake/legacy.lance" and legacy.parameters[MARK] == owner
    # the metastore listed the dataset on S3: one data file (Lance's _versions/ etc. are hidden to Hive)
    assert [key for key in store.keys("lake/legacy.lance/") if "/data/" in key]
    assert legacy.parameters["numFiles"] == "1", legacy.parameters
    assert run(manifest, "plan", "--detailed-exitcode", env=env).returncode == 0
    verified = run(manifest, "verify", "--engine", "threads", env=env)
    assert verified.returncode == 0, describe(verified)
    assert f"    ok  {store.uri('lake/legacy.lance')}  (version 1, 3 rows)" in verified.stdout, describe(verified)


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_table_declared_before_its_data_on_s3(kind: str, request: pytest.FixtureRequest,
                                                s3_server: RunningServer, tmp_path: Path):
    """`pending` is declared without data or schema: apply registers it, and what the catalog
    leaves at the location stays there (HMS: a directory marker, as S3A's mkdirs writes it on
    create_table; an Iceberg catalog writing metadata: its `metadata/` files); verify calls the
    registration dangling. Once the manifest gives it a schema, lance-sync writes the dataset
    there, beside the catalog's objects."""
    store = new_store(s3_server, kind, through_options=True)
    catalog = catalog_for(kind, request, tmp_path, store)
    env = cli_environment(catalog, store)
    owner = f"s3-{kind.replace('_', '-')}-{uuid.uuid4().hex[:8]}"
    tables: list[dict[str, Any]] = [{"name": "pending", "location": store.uri("lake/pending.lance")}]
    manifest = write(object_store_manifest(catalog, store, owner, tables), tmp_path / "lance-sync.yaml")
    applied = run(manifest, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, describe(applied)
    assert catalog.registered("pending") == store.uri("lake/pending.lance")
    left = set(store.keys("lake/pending.lance/"))
    if kind == "hms":
        assert left == {"lake/pending.lance/"}, left
    elif kind == "iceberg_jdbc":
        assert left and left == set(store.iceberg_metadata("lake/pending.lance")), left
    else:
        assert left == set(), left
    assert run(manifest, "plan", "--detailed-exitcode", env=env).returncode == 0
    dangling = run(manifest, "verify", "--engine", "threads", env=env)
    assert dangling.returncode == 1, describe(dangling)
    assert f"BROKEN  {store.uri('lake/pending.lance')}  (missing)" in dangling.stdout, describe(dangling)

    tables[0]["schema"] = SCHEMA
    write(object_store_manifest(catalog, store, owner, tables), manifest)
    plan = run(manifest, "plan", env=env)
    assert "+ create dataset" in plan.stdout, describe(plan)
    applied = run(manifest, "apply", "--auto-approve", env=env)
    assert applied.returncode == 0, describe(applied)
    verified = run(manifest, "verify", "--engine", "threads", env=env)
    if kind == "unity":  # Unity recorded no columns when the table was declared, and has no table update
        assert verified.returncode == 1, describe(verified)
        assert "records (), the dataset has (id: bigint, name: string)" in verified.stdout, describe(verified)
    else:
        assert verified.returncode == 0 and "0 broken, 1 ok." in verified.stdout, describe(verified)
    assert dataset(store, store.uri("lake/pending.lance")).schema.metadata == {MARK.encode(): owner.encode()}
    assert left <= set(store.keys("lake/pending.lance/")), "the catalog's objects were removed"
    assert run(manifest, "plan", "--detailed-exitcode", env=env).returncode == 0
