"""Plan and apply N Lance tables against the test suite's catalog servers, beside the raw
protocol and native clients.

    python bench/bench_catalogs.py                         # 10,000 tables: iceberg, glue, hms, dir, unity
    python bench/bench_catalogs.py --backends glue --tables 2000 --repeat 1 --changed-tables 5000
    python bench/bench_catalogs.py --scale                 # adds 100,000 (glue, dir), 500,000 (dir)

Per backend, the server the suite uses is started (tests/servers: upstream Iceberg REST, moto
Glue with Glue's paging, Hive Metastore 2.3, the Unity Catalog OSS-faithful server; `dir` needs
none), 10 namespaces are created and N tables seeded with the backend's own client (pyiceberg,
boto3, pymetastore, pylance, unitycatalog-client), each exactly as lance-sync declares it, and
a manifest declaring every table is written. Then, each `--repeat` times (the median is printed), each in a fresh process but the native read:

- raw: the raw-protocol lower bound (bench_raw.py): the minimum requests sent with plain
  urllib3 (Iceberg, Unity), SigV4-signed urllib3 (Glue), the generated Thrift client (HMS) or
  one pylance scan of the manifest table (dir), 16 threads, no SDK objects; wall and CPU
  (user+sys, every thread) of the read, its client built beforehand; "raw process" is that
  read's whole process (the interpreter, its imports, the read), the lower bound of a whole
  process (dir: importing pylance alone is many times its scan);
- api.plan: `lance_sync.api.plan` (read, inspect locations, compare, policy) with its
  drivers built beforehand: wall and CPU of the call;
- native read (the SDK baseline): the fewest calls of the native client that give every
  table's location and properties (a listing per namespace, then loads or batches), 16
  threads (Unity: unitycatalog-client's listTables pages of 50, the OpenAPI maximum, which
  carry every table's location and properties; the SDK is asyncio: 16 requests in flight);
- lance-sync read: the read phase of build_plan (observe), which also reports the time of
  the other phases (imports, load and validate, connect, inspect locations, compare);
- plan process: `python -m lance_sync plan` as a user runs it: wall, CPU (user+sys), peak RSS;
  "parse cache warm": the same with the parse cache that an earlier plan of the same files
  left (a user's second plan, or the GitHub Action's, which keeps the cache);
- calls: api.plan's, counted by the server (for dir: by the client). "minimum" is the native
  read's calls plus the namespace reads a plan needs beyond them (Glue: GetDatabases pages;
  Unity: listSchemas pages of 100; Iceberg and HMS: one per namespace; dir: none, as the scan
  reads every row); the raw read must send exactly the minimum.

The table shows medians; below it, each run's api.plan and plan process against that run's raw
read, so that a goal's ratio can be seen to hold in every run, not only in the median.

Changed-since rows (iceberg, glue, hms; `--changed-tables`, default 100,000; per backend as
iceberg=N,glue=N,hms=N): an estate of N tables seeded once, its manifest committed in a git
repository, 5 tables' properties changed in the working tree, then `lance-sync plan
--changed-since HEAD` as a whole process: wall, CPU, calls counted by the server; with an
empty parse cache, and with the one a run of the committed manifest left (other processes
run with the parse cache off). `--seed-changed-only` seeds the catalog with the 5 changed
tables only: the plan reads no other (its calls show it), and seeding 100,000 tables into the
Hive Metastore takes over half an hour here. `--changed-json` writes those manifests as JSON
files (a table a line) instead of YAML ones: the same entries, parsed by the json module.

Apply (`--apply`, on by default at 10,000): on a fresh server each time, 10 namespaces and N
tables in them are created by the raw create loop (bench_raw.py), by a 16-thread native loop
(pyiceberg, boto3, pymetastore, unitycatalog-client; `--no-native` leaves it out) and by
`lance-sync apply --auto-approve` of a manifest declaring them, each into namespaces of its
own; "apply phase" is the apply's `execute` (wall, the process's CPU, the calls its drivers
sent, against the minimum: one create per namespace and per table), "process" the whole
command.

lance_sync is byte-compiled before anything is measured (bench_cli.compile_sources), as an
install compiles it: with PYTHONDONTWRITEBYTECODE set and no `__pycache__` in the checkout,
each fresh process would compile every lance_sync module it imports (about 0.1 s of CPU).

Nothing here is part of the test suite; the machine's load average is printed with the table.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

NAMESPACES = 10
THREADS = 16
OWNER = "bench"
PROPERTIES = {"tier": "gold"}
#: what lance-sync stamps on a table it declares, so that the seeded state plans no change
STAMPED = {**PROPERTIES, "lance_sync.owner": OWNER, "table_type": "lance"}


def namespace_properties(namespace: str) -> dict[str, str]:
    """What a manifest declares on a namespace (team), and what lance-sync stamps on it."""
    return {"team": namespace, "lance_sync.owner": OWNER}


@dataclass
class Table:
    namespace: str
    name: str
    location: str


@dataclass
class Measure:
    seconds: float
    calls: int = 0
    cpu: float = 0.0
    rss_mb: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    #: the raw read's whole process (interpreter, its imports, the read): a whole process's lower bound
    process_seconds: float = 0.0


# --- backends: server, native client, manifest -------------------------------------------------------

class Backend:
    """One backend under test: its server, its native client, and its manifest entry."""

    name: str
    #: namespace reads a plan needs beyond the native read (see the module docstring)
    plan_namespace_reads: Callable[[int], int] = staticmethod(lambda namespaces: namespaces)

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.data = workdir / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.server: Any = None

    def start(self) -> None: ...

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def calls(self) -> int:
        return self.server.requests_served()

    def reset_calls(self) -> None:
        self.server.reset_request_count()

    def backend_entry(self) -> str: ...

    def namespace_id(self, namespace: str) -> str: ...

    def env(self) -> dict[str, str]:
        return {}

    def create_namespaces(self, names: list[str]) -> None: ...

    def create_tables(self, tables: list[Table]) -> None:
        """Natively, THREADS at a time."""

    def native_read(self, namespaces: list[str]) -> int:
        """Every table's location and properties, natively; returns the tables read."""
        raise NotImplementedError

    def declared(self, namespace: str, name: str) -> dict[str, Any]:
        """What a declare made of a table and its namespace, as the native client reads them
        back (apply rows)."""
        raise NotImplementedError

    def create_location(self, table: Table) -> str:
        """The location as the driver sends it in a create (the raw create loop sends the same)."""
        return table.location

    def raw_spec(self) -> dict[str, Any]:
        """What bench_raw.py needs to send the plan's minimum requests raw."""
        return {"backend": self.name, "endpoint": self.server.endpoint,
                "namespaces": [f"ns{i}" for i in range(NAMESPACES)]}


class Iceberg(Backend):
    name = "iceberg"

    def start(self) -> None:
        from pyiceberg.catalog.rest import RestCatalog
        from requests.adapters import HTTPAdapter

        from tests.servers import iceberg_rest
        self.server = iceberg_rest.start(self.workdir / "server")
        self.warehouse = self.server.extra["warehouse"]
        self.catalog = RestCatalog("bench", uri=self.server.endpoint, warehouse=self.warehouse)
        self.catalog._session.mount("http://", HTTPAdapter(pool_connections=THREADS, pool_maxsize=THREADS))

    def backend_entry(self) -> str:
        return f"{{type: iceberg, endpoint: '{self.server.endpoint}', root: '{self.data}'}}"

    def namespace_id(self, namespace: str) -> str:
        return f"{self.warehouse}.{namespace}"

    def create_namespaces(self, names: list[str]) -> None:
        for name in names:
            self.catalog.create_namespace((name,), {"team": name})

    def create_tables(self, tables: list[Table]) -> None:
        from pyiceberg.schema import Schema
        from pyiceberg.types import NestedField, StringType
        schema = Schema(NestedField(1, "dummy", StringType(), required=False))
        _parallel(lambda t: self.catalog.create_table((t.namespace, t.name), schema, location=t.location,
                                                      properties=STAMPED), tables)

    def native_read(self, namespaces: list[str]) -> int:
        from pyiceberg.catalog.rest import RestCatalog
        catalog = RestCatalog("bench", uri=self.server.endpoint, warehouse=self.warehouse)
        listed = _parallel(lambda ns: catalog.list_tables((ns,)), namespaces)
        names = [identifier for identifiers in listed for identifier in identifiers]
        loaded = _parallel(lambda identifier: _location_and_properties(catalog.load_table(identifier)), names)
        return len(loaded)


    def declared(self, namespace: str, name: str) -> dict[str, Any]:
        metadata = self.catalog.load_table((namespace, name)).metadata
        return {"location": metadata.location, "properties": metadata.properties,
                "schema": metadata.schema().model_dump(mode="json"),
                "namespace": self.catalog.load_namespace_properties((namespace,))}

    def raw_spec(self) -> dict[str, Any]:
        return {**super().raw_spec(), "prefix": self.server.extra["prefix"], "warehouse": self.warehouse}

    def conditional_floor(self, tables: list[Table]) -> tuple[float, float]:
        """Seconds to GET every table (a load) and to HEAD it (tableExists: the same round
        trip and lookup without a body, which is what a 304 to If-None-Match would cost), 16
        threads of plain urllib3: how much an unchanged re-plan could save with ETags."""
        import urllib3
        pool = urllib3.PoolManager(maxsize=THREADS)
        prefix = self.server.extra["prefix"]

        def send(method: str) -> float:
            def one(table: Table) -> None:
                answer = pool.request(method, f"{self.server.endpoint}/v1/{prefix}/namespaces/{table.namespace}"
                                              f"/tables/{table.name}")
                if answer.status not in (200, 204):
                    raise SystemExit(f"{method} {table.name}: {answer.status}")
            return timed(lambda: _parallel(one, tables))

        return send("GET"), send("HEAD")


def _location_and_properties(table: Any) -> tuple[str, dict[str, str]]:
    return table.metadata.location, table.metadata.properties


class Glue(Backend):
    name = "glue"
    plan_namespace_reads = staticmethod(lambda namespaces: -(-namespaces // 100))

    def start(self) -> None:
        from tests.servers import glue
        self.server = glue.start(self.workdir)
        self.account = self.server.extra["account_id"]
        self.client = glue.glue_client(self.server, max_pool_connections=2 * THREADS,
                                       retries={"mode": "standard"})

    def backend_entry(self) -> str:
        return (f"{{type: glue, endpoint: '{self.server.endpoint}', catalog_id: '{self.account}', "
                "region: us-east-1, access_key_id: '${BENCH_AWS_KEY}', "
                "secret_access_key: '${BENCH_AWS_SECRET}'}")

    def env(self) -> dict[str, str]:
        return {"BENCH_AWS_KEY": self.server.extra["access_key_id"],
                "BENCH_AWS_SECRET": self.server.extra["secret_access_key"]}

    def namespace_id(self, namespace: str) -> str:
        return f"{self.account}${namespace}"

    def create_namespaces(self, names: list[str]) -> None:
        for name in names:
            self.client.create_database(CatalogId=self.account,
                                        DatabaseInput={"Name": name, "Parameters": {"team": name}})

    def create_tables(self, tables: list[Table]) -> None:
        _parallel(lambda t: self.client.create_table(CatalogId=self.account, DatabaseName=t.namespace,
                                                     TableInput=self.table_input(t)), tables)

    def table_input(self, table: Table) -> dict[str, Any]:
        """The TableInput of a CreateTable that stores `table` as lance-sync declares it."""
        return {"Name": table.name, "TableType": "EXTERNAL_TABLE", "Parameters": STAMPED,
                "StorageDescriptor": {"Location": table.location}}

    def seed_tables(self, tables: list[Table], batch: int = 10_000) -> None:
        """CreateTable of every table through the server's seeding path (many in one control
        request, stored exactly as CreateTable stores them): a large estate in minutes, not
        hours; then checks that a seeded table reads back (GetTable) as a CreateTable'd one."""
        from tests.servers.glue import GlueControl
        control = GlueControl(self.server.endpoint)
        by_database: dict[str, list[Table]] = {}
        for table in tables:
            by_database.setdefault(table.namespace, []).append(table)
        for database, chosen in by_database.items():
            for start in range(0, len(chosen), batch):
                control.seed_tables(self.account, database,
                                    [self.table_input(t) for t in chosen[start:start + batch]])
        self._check_seeded(tables[0])

    def _check_seeded(self, seeded: Table) -> None:
        probe = Table(seeded.namespace, f"{seeded.name}_probe", seeded.location)
        self.create_tables([probe])
        try:
            answers = [self.client.get_table(CatalogId=self.account, DatabaseName=t.namespace, Name=t.name)["Table"]
                       for t in (seeded, probe)]
        finally:
            self.client.delete_table(CatalogId=self.account, DatabaseName=probe.namespace, Name=probe.name)
        ignored = ("Name", "CreateTime", "UpdateTime")
        if [{k: v for k, v in a.items() if k not in ignored} for a in answers[:1]] != \
                [{k: v for k, v in a.items() if k not in ignored} for a in answers[1:]]:
            raise SystemExit(f"glue: a seeded table reads back unlike a CreateTable'd one: {answers}")

    def native_read(self, namespaces: list[str]) -> int:
        def tables_of(database: str) -> list[tuple[str, dict]]:
            pages = self.client.get_paginator("get_tables").paginate(
                CatalogId=self.account, DatabaseName=database, PaginationConfig={"PageSize": 100})
            return [(t["StorageDescriptor"]["Location"], t.get("Parameters", {}))
                    for page in pages for t in page["TableList"]]

        return sum(len(tables) for tables in _parallel(tables_of, namespaces))

    def declared(self, namespace: str, name: str) -> dict[str, Any]:
        table = self.client.get_table(CatalogId=self.account, DatabaseName=namespace, Name=name)["Table"]
        database = self.client.get_database(CatalogId=self.account, Name=namespace)["Database"]
        return {**{key: table.get(key) for key in ("Name", "TableType", "Parameters", "StorageDescriptor")},
                "namespace": {key: database.get(key) for key in ("Parameters", "LocationUri", "Description")}}

    def raw_spec(self) -> dict[str, Any]:
        extra = self.server.extra
        return {**super().raw_spec(), "account_id": self.account, "region": extra["region"],
                "access_key_id": extra["access_key_id"], "secret_access_key": extra["secret_access_key"]}


class Hms(Backend):
    name = "hms"
    #: one get_database per declared database: HMS has no bulk read of database properties
    plan_namespace_reads = staticmethod(lambda namespaces: namespaces)
    #: HMS's metastore.batch.retrieve.max default
    batch = 300

    def start(self) -> None:
        from tests.servers import hms
        self.server = hms.start(self.workdir)

    def backend_entry(self) -> str:
        # one connection per worker, as the raw loops have: with the default pool of 3, 16 apply
        # workers queue for 3 connections, and the lease's heartbeat queues behind them
        return f"{{type: hive3, uri: '{self.server.endpoint}', root: '{self.data}', 'client.pool-size': {THREADS}}}"

    def namespace_id(self, namespace: str) -> str:
        return f"hive${namespace}"

    @contextmanager
    def clients(self) -> Iterator[Callable[[], Any]]:
        """One connection per thread (a Thrift client is not thread-safe)."""
        from tests.servers.hive_support import hive_client
        local = threading.local()
        opened: list[Any] = []

        def client() -> Any:
            if not hasattr(local, "client"):
                context = hive_client(self.server.endpoint)
                local.client = context.__enter__()
                opened.append(context)
            return local.client

        try:
            yield client
        finally:
            for context in opened:
                context.__exit__(None, None, None)

    def create_namespaces(self, names: list[str]) -> None:
        from pymetastore.hive_metastore.ttypes import Database
        with self.clients() as client:
            for name in names:
                client().create_database(Database(name=name, locationUri=(self.data / name).as_uri(),
                                                  parameters={"team": name}))

    def create_tables(self, tables: list[Table]) -> None:
        from pymetastore.hive_metastore.ttypes import SerDeInfo, StorageDescriptor
        from pymetastore.hive_metastore.ttypes import Table as HiveTable
        with self.clients() as client:
            _parallel(lambda t: client().create_table(HiveTable(
                tableName=t.name, dbName=t.namespace, tableType="EXTERNAL_TABLE", partitionKeys=[],
                parameters={**STAMPED, "EXTERNAL": "TRUE"},
                sd=StorageDescriptor(cols=[], location=Path(t.location).as_uri(), compressed=False,
                                     numBuckets=-1, serdeInfo=SerDeInfo(name=t.name, parameters={}),
                                     bucketCols=[], sortCols=[], parameters={}))), tables)

    def native_read(self, namespaces: list[str]) -> int:
        from pymetastore.hive_metastore.ttypes import GetTablesRequest
        with self.clients() as client:
            listed = _parallel(lambda ns: (ns, client().get_all_tables(ns)), namespaces)
            batches = [(ns, names[i:i + self.batch]) for ns, names in listed
                       for i in range(0, len(names), self.batch)]
            read = _parallel(lambda b: [(t.sd.location, t.parameters) for t in client().get_table_objects_by_name_req(
                GetTablesRequest(dbName=b[0], tblNames=b[1])).tables], batches)
        return sum(len(tables) for tables in read)

    def declared(self, namespace: str, name: str) -> dict[str, Any]:
        with self.clients() as client:
            table, database = client().get_table(namespace, name), client().get_database(namespace)
        sd = table.sd
        return {"tableType": table.tableType, "parameters": _without(table.parameters, "transient_lastDdlTime"),
                "partitionKeys": table.partitionKeys, "location": sd.location, "cols": sd.cols,
                "serde": (sd.serdeInfo.name, sd.serdeInfo.parameters), "sd": (sd.compressed, sd.numBuckets,
                                                                               sd.bucketCols, sd.sortCols,
                                                                               sd.parameters),
                "namespace": (database.parameters, database.locationUri, database.description,
                              database.ownerName)}

    def create_location(self, table: Table) -> str:
        return f"file://{table.location}"


def _without(mapping: dict[str, str] | None, key: str) -> dict[str, str]:
    return {k: v for k, v in (mapping or {}).items() if k != key}


class Dir(Backend):
    """No server: pylance's DirectoryNamespace, whose `__manifest` table holds every object."""

    name = "dir"
    plan_namespace_reads = staticmethod(lambda namespaces: 0)

    def start(self) -> None:
        from lance.namespace import DirectoryNamespace
        self.native = DirectoryNamespace(root=str(self.data))
        self.native_calls = 0

    def calls(self) -> int:
        return self.native_calls

    def reset_calls(self) -> None:
        self.native_calls = 0

    def backend_entry(self) -> str:
        return f"{{type: dir, root: '{self.data}'}}"

    def namespace_id(self, namespace: str) -> str:
        return namespace

    def create_namespaces(self, names: list[str]) -> None:
        from lance_namespace import CreateNamespaceRequest
        for name in names:
            self.native.create_namespace(CreateNamespaceRequest(id=[name], properties={"team": name}))

    def create_tables(self, tables: list[Table]) -> None:
        """Rows appended to the manifest table the way pylance's register_table writes them."""
        import lance
        import pyarrow as pa
        manifest = lance.dataset(str(self.data / "__manifest"))
        metadata = json.dumps(STAMPED)
        for start in range(0, len(tables), 100_000):
            rows = [{"object_id": f"{t.namespace}${t.name}", "object_type": "table",
                     "location": os.path.relpath(t.location, self.data), "metadata": metadata,
                     "base_objects": None} for t in tables[start:start + 100_000]]
            manifest = lance.write_dataset(pa.Table.from_pylist(rows, schema=manifest.schema), manifest.uri,
                                           mode="append")

    def native_read(self, namespaces: list[str]) -> int:
        """One scan of the manifest table: what any client of the format needs at least."""
        import lance
        self.native_calls += 1
        rows = lance.dataset(str(self.data / "__manifest")).to_table(
            columns=["object_id", "location", "metadata"], filter="object_type = 'table'")
        return len([(row["location"], json.loads(row["metadata"])) for row in rows.to_pylist()])

    def raw_spec(self) -> dict[str, Any]:
        return {"backend": self.name, "manifest": str(self.data / "__manifest")}


class Unity(Backend):
    """The suite's Unity Catalog OSS server; the native client is unitycatalog-client (asyncio:
    THREADS requests in flight stand for THREADS threads)."""

    name = "unity"
    catalog = "bench"
    #: one page of schemas (they carry their properties); UC lists at most 100 per page
    plan_namespace_reads = staticmethod(lambda namespaces: -(-namespaces // 100))
    #: listTables' maximum max_results in the Unity Catalog OpenAPI document (and the SDK's)
    page = 50

    def start(self) -> None:
        from tests.servers import unity
        self.server = unity.start(self.workdir / "server")
        self.api_url = self.server.extra["api_url"]
        self.catalog_made = False

    def backend_entry(self) -> str:
        return f"{{type: unity, endpoint: '{self.server.endpoint}', catalog: {self.catalog}, root: '{self.data}'}}"

    def namespace_id(self, namespace: str) -> str:
        return f"{self.catalog}${namespace}"

    def sdk(self, scenario: Callable[[Any], Any]) -> Any:
        """Runs `scenario(client)` (a coroutine function) on a fresh event loop and SDK client."""
        import asyncio

        from unitycatalog.client import ApiClient, Configuration

        async def run() -> Any:
            configuration = Configuration(host=self.api_url)
            configuration.connection_pool_maxsize = THREADS
            async with ApiClient(configuration) as client:
                return await scenario(client)

        return asyncio.run(run())

    def create_namespaces(self, names: list[str]) -> None:
        from unitycatalog.client import CatalogsApi, CreateCatalog, CreateSchema, SchemasApi

        async def create(client: Any) -> None:
            if not self.catalog_made:
                await CatalogsApi(client).create_catalog(CreateCatalog(name=self.catalog))
                self.catalog_made = True
            for name in names:
                await SchemasApi(client).create_schema(CreateSchema(name=name, catalog_name=self.catalog,
                                                                    properties={"team": name}))

        self.sdk(create)

    def create_tables(self, tables: list[Table]) -> None:
        """Each as lance-sync declares it: EXTERNAL, TEXT, file:// location, no columns (no dataset)."""
        from unitycatalog.client import CreateTable, DataSourceFormat, TablesApi, TableType

        async def create(client: Any) -> None:
            api = TablesApi(client)
            await _gather_bounded([api.create_table(CreateTable(
                name=t.name, catalog_name=self.catalog, schema_name=t.namespace, table_type=TableType.EXTERNAL,
                data_source_format=DataSourceFormat.TEXT, columns=[], storage_location=f"file://{t.location}",
                properties=STAMPED)) for t in tables])

        self.sdk(create)

    def native_read(self, namespaces: list[str]) -> int:
        from unitycatalog.client import TablesApi

        async def read(client: Any) -> int:
            api = TablesApi(client)

            async def tables_of(schema: str) -> list[tuple[str | None, dict[str, str] | None]]:
                read, token = [], None
                while True:
                    page = await api.list_tables(self.catalog, schema, max_results=self.page, page_token=token)
                    read += [(t.storage_location, t.properties) for t in page.tables or []]
                    token = page.next_page_token
                    if not token:
                        return read

            listed = await _gather_bounded([tables_of(schema) for schema in namespaces])
            return sum(map(len, listed))

        return self.sdk(read)

    def raw_spec(self) -> dict[str, Any]:
        return {**super().raw_spec(), "api_url": self.api_url, "catalog": self.catalog, "page": self.page}

    def declared(self, namespace: str, name: str) -> dict[str, Any]:
        from unitycatalog.client import SchemasApi, TablesApi

        async def read(client: Any) -> dict[str, Any]:
            table = await TablesApi(client).get_table(f"{self.catalog}.{namespace}.{name}")
            schema = await SchemasApi(client).get_schema(f"{self.catalog}.{namespace}")
            return {**table.model_dump(mode="json", include={"name", "table_type", "data_source_format",
                                                             "columns", "storage_location", "properties"}),
                    "namespace": schema.model_dump(mode="json", include={"properties", "comment"})}

        return self.sdk(read)

    def create_location(self, table: Table) -> str:
        return f"file://{table.location}"


async def _gather_bounded(calls: list[Any]) -> list[Any]:
    """The coroutines, at most THREADS at a time, in order."""
    import asyncio
    gate = asyncio.Semaphore(THREADS)

    async def bounded(call: Any) -> Any:
        async with gate:
            return await call

    return await asyncio.gather(*map(bounded, calls))


BACKENDS: dict[str, type[Backend]] = {b.name: b for b in (Iceberg, Glue, Hms, Dir, Unity)}


def _parallel(call: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(call, items))


# --- manifests and processes ----------------------------------------------------------------------

def tables_for(backend: Backend, count: int, prefix: str = "ns") -> list[Table]:
    return [Table(f"{prefix}{i % NAMESPACES}", f"t{i}", str(backend.data / f"{prefix}{i % NAMESPACES}" / f"t{i}.lance"))
            for i in range(count)]


#: tables per manifest file: a larger set is split into overlays (`-f` more than once), as a
#: manifest file is limited to 16 MiB
TABLES_PER_FILE = 50_000


def write_manifest(backend: Backend, tables: list[Table], path: Path, silver: frozenset[str] = frozenset(),
                   as_json: bool = False, namespaces: list[str] = ()) -> list[Path]:
    """The manifest as a base file and, beyond TABLES_PER_FILE tables, overlays of more tables;
    the tables named in `silver` declared with tier: silver (the seeded state has gold). YAML
    flow mappings, a table a line; with `as_json` the same data as JSON, a table a line
    (`.json` files). `namespaces` are declared in the base file (YAML only), each with
    team: its name."""
    paths = []
    for start in range(0, max(len(tables), 1), TABLES_PER_FILE):
        chunk = tables[start:start + TABLES_PER_FILE]
        name = path.with_name(f"{path.stem}-{start // TABLES_PER_FILE}{path.suffix}") if start else path
        paths.append(name.with_suffix(".json") if as_json else name)
        if as_json:
            head = {"version": 1, "owner": OWNER, "backends": {"cat": yaml.safe_load(backend.backend_entry())}} \
                if not start else {}
            lines = [json.dumps(head)[:-1] + (", " if head else "") + '"tables": [']
            lines.append(",\n".join("  " + json.dumps({
                "name": t.name, "location": t.location,
                "properties": {"tier": "silver" if t.name in silver else "gold"},
                "register": [{"backend": "cat", "namespace": backend.namespace_id(t.namespace)}]}) for t in chunk))
            lines.append("]}")
        else:
            lines = ["version: 1", f"owner: {OWNER}", "backends:", f"  cat: {backend.backend_entry()}"] \
                if not start else []
            if namespaces and not start:
                lines.append("namespaces:")
                lines += [f"  - {{backend: cat, id: '{backend.namespace_id(n)}', properties: {{team: {n}}}}}"
                          for n in namespaces]
            lines.append("tables:")
            lines += [f"  - {{name: {t.name}, location: '{t.location}', "
                      f"properties: {{tier: {'silver' if t.name in silver else 'gold'}}}, "
                      f"register: [{{backend: cat, namespace: '{backend.namespace_id(t.namespace)}'}}]}}"
                      for t in chunk]
        paths[-1].write_text("\n".join(lines) + "\n")
    return paths


def file_options(paths: list[Path]) -> list[str]:
    return [option for path in paths for option in ("-f", str(path))]


def run_process(argv: list[str], env: dict[str, str], stdout: Path | None = None, cwd: Path = PROJECT) -> Measure:
    """Wall, CPU (user+sys) and peak RSS of one child process; fails on a non-zero exit."""
    with open(stdout or os.devnull, "wb") as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        process = subprocess.Popen(argv, env={**os.environ, **env}, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - began
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv[:4])} ... exited {process.returncode}:\n"
                             f"{err.read().decode(errors='replace')[-3000:]}")
    return Measure(seconds, cpu=usage.ru_utime + usage.ru_stime, rss_mb=usage.ru_maxrss / 1024)


def python_env(parse_cache: Path | None = None) -> dict[str, str]:
    """A child's environment: this checkout's lance_sync; the parse cache off, so that each run
    parses, unless a `parse_cache` folder is given (the changed-since rows)."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
            "LANCE_SYNC_CACHE": str(parse_cache) if parse_cache else "off"}


def lance_sync_read(manifest: list[Path], backend: Backend) -> Measure:
    """The phases of build_plan in a fresh process (see `child_read`); calls counted by the server."""
    backend.reset_calls()
    output = backend.workdir / "read.json"
    measure = run_process([sys.executable, __file__, "--child-read", *map(str, manifest)],
                          {**backend.env(), **python_env()}, stdout=output)
    phases = json.loads(output.read_text())
    calls = backend.calls() if backend.name != "dir" else phases.pop("calls")
    phases.pop("calls", None)
    return Measure(phases["read"], calls=calls, cpu=measure.cpu, rss_mb=measure.rss_mb, phases=phases)


def child_read(manifest: list[str]) -> None:
    """In a fresh process: each phase of build_plan, timed; prints JSON."""
    began = time.perf_counter()
    from lance_sync.drivers import connect_backends
    from lance_sync.manifest import load_manifest
    from lance_sync.plan.compare import compare
    from lance_sync.plan.observe import observe
    from lance_sync.plan.planner import inspect_datasets
    phases: dict[str, float] = {}
    mark = time.perf_counter()
    phases["import"] = mark - began

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = now - mark
        mark = now

    gc.disable()  # as lance-sync's commands run (lance_sync.cli.app._pause_collections)
    state = load_manifest(manifest)
    lap("load")
    drivers = connect_backends(state.backends)
    lap("connect")
    live = observe(state, drivers)
    lap("read")
    datasets = inspect_datasets(state, live, drivers)
    lap("inspect")
    comparison = compare(state, live, _Capabilities(drivers), datasets)
    lap("compare")
    if comparison.actions:
        raise SystemExit(f"the seeded state plans {len(comparison.actions)} changes: "
                         f"{comparison.actions[0].name} {comparison.actions[0].display_id}")
    print(json.dumps({**phases, "calls": sum(d.api_calls for d in drivers.values())}))


class _Capabilities(dict[str, Any]):
    """Asked for when the comparison needs them, as build_plan does (a Hive metastore's take a
    call, which an in-sync plan does without)."""

    def __init__(self, drivers: dict[str, Any]):
        super().__init__()
        self.drivers = drivers

    def __missing__(self, name: str) -> Any:
        self[name] = self.drivers[name].capabilities()
        return self[name]


def lance_sync_plan(manifest: list[Path], backend: Backend) -> Measure:
    """`api.plan` (read, inspect, compare, policy) in a fresh process, drivers built
    beforehand (as the raw read's clients are): wall and CPU of the call; calls counted by
    the server."""
    backend.reset_calls()
    output = backend.workdir / "api-plan.json"
    run_process([sys.executable, __file__, "--child-plan", *map(str, manifest)],
                {**backend.env(), **python_env()}, stdout=output)
    answer = json.loads(output.read_text())
    return Measure(answer["seconds"], calls=backend.calls() if backend.name != "dir" else answer["calls"],
                   cpu=answer["cpu"])


def child_plan(manifest: list[str]) -> None:
    """In a fresh process: api.plan of the manifest, timed; prints JSON."""
    from lance_sync import api
    gc.disable()  # as lance-sync's commands run
    state = api.load(manifest)
    drivers = api.connect(state)
    began, cpu = time.perf_counter(), time.process_time()
    plan = api.plan(state, drivers=drivers)
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    if plan.actions:
        raise SystemExit(f"api.plan of the seeded state plans {len(plan.actions)} changes")
    print(json.dumps({"seconds": seconds, "cpu": cpu, "calls": sum(d.api_calls for d in drivers.values())}))


def raw_read(backend: Backend, count: int) -> Measure:
    """The raw-protocol lower bound (bench_raw.py) in a fresh process: wall and CPU of the read."""
    backend.reset_calls()
    output = backend.workdir / "raw.json"
    process = run_process([sys.executable, str(PROJECT / "bench" / "bench_raw.py"), json.dumps(backend.raw_spec())],
                          {}, stdout=output)
    answer = json.loads(output.read_text())
    if answer["tables"] != count:
        raise SystemExit(f"{backend.name}: the raw read found {answer['tables']} tables, not {count}")
    return Measure(answer["seconds"], calls=backend.calls() if backend.name != "dir" else 1, cpu=answer["cpu"],
                   process_seconds=process.seconds)


def plan_process(manifest: list[Path], backend: Backend, parse_cache: Path | None = None) -> Measure:
    output = backend.workdir / "plan.json"
    measure = run_process([sys.executable, "-m", "lance_sync", "plan", *file_options(manifest), "--format", "json"],
                          {**backend.env(), **python_env(parse_cache)}, stdout=output)
    plan = json.loads(output.read_text())
    if plan["actions"]:
        raise SystemExit(f"{backend.name}: the plan process found {len(plan['actions'])} changes")
    return measure


def native_read(backend: Backend, count: int) -> Measure:
    backend.reset_calls()
    began = time.perf_counter()
    read = backend.native_read([f"ns{i}" for i in range(NAMESPACES)])
    seconds = time.perf_counter() - began
    if read != count:
        raise SystemExit(f"{backend.name}: the native read found {read} tables, not {count}")
    return Measure(seconds, calls=backend.calls())


def timed(action: Callable[[], Any]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


# --- the measurements ---------------------------------------------------------------------------------

#: (N, GET s, HEAD s) of Iceberg.conditional_floor, per run
CONDITIONAL: list[tuple[int, float, float]] = []


@dataclass
class Row:
    backend: str
    step: str
    tables: int
    calls: int | None
    minimum: int | None
    ours: float
    native: float
    process: Measure
    phases: dict[str, float] = field(default_factory=dict)
    #: api.plan and the raw lower bound (plan rows): seconds and CPU of each
    api_plan: Measure | None = None
    raw: Measure | None = None
    #: the plan process with the parse cache an earlier run of the same manifest left (plan rows)
    warm_process: Measure | None = None
    #: each run's (api.plan / raw, plan process / raw) (plan rows): whether a goal holds in every run
    run_ratios: list[tuple[float, float]] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.ours / self.native


def median_measure(measures: list[Measure]) -> Measure:
    phases = {k: statistics.median(m.phases[k] for m in measures) for k in measures[0].phases}
    return Measure(statistics.median(m.seconds for m in measures), calls=measures[-1].calls,
                   cpu=statistics.median(m.cpu for m in measures),
                   rss_mb=max(m.rss_mb for m in measures), phases=phases,
                   process_seconds=statistics.median(m.process_seconds for m in measures))


def bench_read(name: str, count: int, repeat: int, scratch: Path) -> Row:
    backend = BACKENDS[name](scratch / f"{name}-read-{count}")
    backend.start()
    try:
        namespaces = [f"ns{i}" for i in range(NAMESPACES)]
        tables = tables_for(backend, count)
        seconds = timed(lambda: (backend.create_namespaces(namespaces), backend.create_tables(tables)))
        print(f"  {name}: seeded {count:,} tables in {seconds:.0f} s", file=sys.stderr)
        manifest = write_manifest(backend, tables, backend.workdir / "lance-sync.yaml")
        natives, reads, processes, plans, raws, warm_processes = [], [], [], [], [], []
        parse_cache = backend.workdir / "parse-cache"
        plan_process(manifest, backend, parse_cache)  # what a user's earlier plan of the same files leaves
        for _ in range(repeat):
            natives.append(native_read(backend, count))
            raws.append(raw_read(backend, count))
            plans.append(lance_sync_plan(manifest, backend))
            reads.append(lance_sync_read(manifest, backend))
            processes.append(plan_process(manifest, backend))
            warm_processes.append(plan_process(manifest, backend, parse_cache))
        if isinstance(backend, Iceberg):
            floors = [backend.conditional_floor(tables) for _ in range(repeat)]
            CONDITIONAL.append((count, statistics.median(f[0] for f in floors),
                                statistics.median(f[1] for f in floors)))
        native, read, process, planned, raw = (median_measure(m) for m in (natives, reads, processes, plans, raws))
        minimum = native.calls + backend.plan_namespace_reads(NAMESPACES)
        if backend.name != "dir" and raw.calls != minimum:
            raise SystemExit(f"{name}: the raw read sent {raw.calls} requests, not the minimum {minimum}")
        return Row(name, "plan", count, planned.calls, minimum, read.seconds, native.seconds,
                   Measure(process.seconds, cpu=process.cpu, rss_mb=process.rss_mb), read.phases, planned, raw,
                   median_measure(warm_processes),
                   [(p.seconds / r.seconds, w.seconds / r.seconds) for p, w, r in zip(plans, processes, raws, strict=True)])
    finally:
        backend.stop()


#: tables a pull request changes in the changed-since rows
CHANGED = 5


def bench_changed(name: str, count: int, repeat: int, scratch: Path, seed_changed_only: bool = False,
                  as_json: bool = False) -> list[Row]:
    """A pull request changing CHANGED tables of a `count`-table estate: the manifest committed
    in a git repository, CHANGED tables' properties changed in the working tree, then
    `lance-sync plan --changed-since HEAD` as a whole process (wall, CPU, calls by the server):
    with an empty parse cache (every file parsed), and with the cache a run of the committed
    manifest left (as the Action keeps it: only the changed files are parsed). With
    `seed_changed_only`, the catalog holds only the changed tables (the plan reads no other;
    the calls show it): seeding 100,000 tables in the Hive Metastore takes over half an hour.
    With `as_json`, the manifest files are JSON (`write_manifest`)."""
    backend = BACKENDS[name](scratch / f"{name}-changed-{count}")
    backend.start()
    try:
        tables = tables_for(backend, count)
        changed = frozenset(t.name for t in tables[::max(1, count // CHANGED)][:CHANGED])
        seeded = [t for t in tables if t.name in changed] if seed_changed_only else tables
        seconds = timed(lambda: (backend.create_namespaces([f"ns{i}" for i in range(NAMESPACES)]),
                                 backend.create_tables(seeded)))
        print(f"  {name}: seeded {len(seeded):,} tables in {seconds:.0f} s", file=sys.stderr)
        repo = backend.workdir / "repo"
        repo.mkdir()
        manifest = write_manifest(backend, tables, repo / "lance-sync.yaml", as_json=as_json)
        git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
        for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "estate"]):
            subprocess.run([*git, *argv], cwd=repo, check=True)
        argv = [sys.executable, "-m", "lance_sync", "plan", *file_options([p.relative_to(repo) for p in manifest]),
                "--changed-since", "HEAD", "--format", "json"]
        warm = backend.workdir / "parse-cache"
        warm.mkdir()
        run_process(argv, {**backend.env(), **python_env(warm)}, cwd=repo)  # the committed files, parsed
        write_manifest(backend, tables, repo / "lance-sync.yaml", silver=changed, as_json=as_json)
        rows = []
        for cache in ("cold", "warm"):
            processes, calls, output = [], [], backend.workdir / "changed.json"
            for run in range(repeat):
                folder = backend.workdir / f"cache-{cache}-{run}"
                if cache == "warm":
                    shutil.copytree(warm, folder)  # each run as the first after the commit
                backend.reset_calls()
                processes.append(run_process(argv, {**backend.env(), **python_env(folder)}, output, cwd=repo))
                calls.append(backend.calls())
                actions = json.loads(output.read_text())["actions"]
                if len(actions) != CHANGED:
                    raise SystemExit(f"{name}: the changed-since plan has {len(actions)} actions, not {CHANGED}")
            process = median_measure(processes)
            seeding = (", only they in the catalog" if seed_changed_only else "") + (", JSON files" if as_json else "")
            rows.append(Row(name, f"plan --changed-since ({CHANGED} changed{seeding}), parse cache {cache}", count,
                            calls[-1], None, process.seconds, process.seconds, process))
        return rows
    finally:
        backend.stop()


# --- apply: N declares, a raw create loop beside lance-sync apply -----------------------------------

@dataclass
class ApplyRow:
    backend: str
    tables: int
    #: requests the apply process sent, counted by the server
    calls: int
    #: requests the apply phase sent (its drivers' count), and the minimum: a create per namespace and table
    phase_calls: int
    minimum: int
    #: the raw create loop (bench_raw.py): wall and CPU of the loop
    raw: Measure
    #: lance-sync's apply phase (`execute`, in the apply process): wall and the process's CPU during it
    phase: Measure
    #: the whole `lance-sync apply` process: wall, CPU, peak RSS
    process: Measure
    #: the native SDK create loop (pyiceberg, boto3, pymetastore, unitycatalog-client), wall, for
    #: reference; None: not run (--no-native)
    native: float | None
    #: each run's first loop, raw create loop wall and apply phase wall
    runs: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.phase.seconds / self.raw.seconds


APPLY: list[ApplyRow] = []
#: the create loops of an apply run: raw, native SDK, lance-sync (each its own namespaces)
APPLY_SETS = ("raw", "native", "sync")
#: tables the raw loop creates in namespaces "warm*" before a measured loop, unmeasured, so that
#: no loop pays a fresh server's warm-up (a JVM's first thousands of requests) alone
APPLY_WARM_UP = 2_000


def bench_apply(name: str, count: int, repeat: int, scratch: Path, parallelism: int | None,
                profile: Path | None = None, native: bool = True) -> ApplyRow:
    """The raw create loop, the native loop (unless `native` is False) and `lance-sync apply`,
    `repeat` times, the order rotated between runs; each loop on a fresh server after the
    same warm-up, so that none meets a server that an earlier loop filled."""
    runs = [_apply_once(name, count, scratch / f"{name}-apply-{count}-{run}", parallelism, run, profile, native)
            for run in range(repeat)]
    raws, phases, processes, natives, calls, firsts = zip(*runs, strict=True)
    return ApplyRow(name, count, calls[-1], phases[-1].calls, count + NAMESPACES,
                    median_measure(list(raws)), median_measure(list(phases)),
                    median_measure(list(processes)), statistics.median(natives) if native else None,
                    [(first, raw.seconds, phase.seconds) for first, raw, phase in zip(firsts, raws, phases, strict=True)])


def _apply_once(name: str, count: int, workdir: Path, parallelism: int | None, rotate: int,
                profile: Path | None, native: bool) -> tuple[Measure, Measure, Measure, float | None, int, str]:
    """(raw create loop, lance-sync apply phase, the apply process, native loop s, the apply's
    calls, the loop run first)."""
    measured: dict[str, Any] = {}
    declared: dict[str, Any] = {}

    def sync(backend: Backend) -> None:
        manifest = write_manifest(backend, tables_for(backend, count, "sync"), backend.workdir / "apply.yaml",
                                  namespaces=namespaces_of("sync"))
        backend.reset_calls()
        measured["sync"] = lance_sync_apply(backend, manifest, parallelism, profile)
        measured["calls"] = backend.calls()

    def native_loop(backend: Backend) -> None:
        backend.create_namespaces(namespaces_of("native"))
        backend.create_tables(tables_for(backend, count, "native"))

    steps: dict[str, Callable[[Backend], None]] = {
        "raw": lambda backend: measured.update(raw=raw_create(backend, tables_for(backend, count, "raw"),
                                                              namespaces_of("raw"))),
        "native": lambda backend: measured.update(native=timed(lambda: native_loop(backend))),
        "sync": sync}
    order = [step for step in APPLY_SETS if native or step != "native"]
    order = order[rotate % len(order):] + order[:rotate % len(order)]
    for step in order:
        backend = BACKENDS[name](workdir / step)
        backend.start()
        try:
            backend.create_namespaces(namespaces_of("warm"))
            raw_create(backend, tables_for(backend, min(count, APPLY_WARM_UP), "warm"))
            steps[step](backend)
            declared[step] = json.dumps(backend.declared(f"{step}0", "t0"))
            # as each loop ends: a loop of 100,000 creates can take an hour on a slow server
            done = measured.get(step)
            print(f"  {name}, {count:,} creates: {step} loop {done[0] if isinstance(done, tuple) else done}",
                  file=sys.stderr)
        finally:
            backend.stop()
    made = re.sub(r"\bsync", "raw", declared["sync"])  # its locations and names, not lance_sync's keys
    if made != declared["raw"]:
        raise SystemExit(f"{name}: the raw loop's table differs from lance-sync's:\n{declared['raw']}\n{made}")
    phase, process = measured["sync"]
    return measured["raw"], phase, process, measured.get("native"), measured["calls"], order[0]


def namespaces_of(prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(NAMESPACES)]


def raw_create(backend: Backend, tables: list[Table], namespaces: list[str] = ()) -> Measure:
    """The raw create loop (bench_raw.py, mode create) in a fresh process: wall and CPU of the
    loop, which creates `namespaces` (as a manifest declares them), then `tables`."""
    rows = backend.workdir / "raw-tables.json"
    rows.write_text(json.dumps([[t.namespace, t.name, backend.create_location(t)] for t in tables]))
    spec = {**backend.raw_spec(), "mode": "create", "tables": str(rows), "properties": STAMPED,
            "create_namespaces": [[n, namespace_properties(n)] for n in namespaces]}
    output = backend.workdir / "raw-create.json"
    run_process([sys.executable, str(PROJECT / "bench" / "bench_raw.py"), json.dumps(spec)], {}, stdout=output)
    answer = json.loads(output.read_text())
    if answer["tables"] != len(tables):
        raise SystemExit(f"{backend.name}: the raw loop created {answer['tables']} tables, not {len(tables)}")
    return Measure(answer["seconds"], cpu=answer["cpu"])


def lance_sync_apply(backend: Backend, manifest: list[Path], parallelism: int | None,
                     profile: Path | None) -> tuple[Measure, Measure]:
    """(the apply phase, the whole process) of `lance-sync apply --auto-approve`, run as the CLI
    runs it by `child_apply`, which times the phase inside the process."""
    state = backend.workdir / "state"
    argv = ["apply", *file_options(manifest), "--auto-approve", "--state-dir", str(state)]
    argv += ["--parallelism", str(parallelism)] if parallelism else []
    output = backend.workdir / "apply-phase.json"
    env = {**backend.env(), **python_env(), "BENCH_APPLY_OUT": str(output),
           **({"BENCH_APPLY_PROFILE": str(profile)} if profile else {})}
    process = run_process([sys.executable, __file__, "--child-apply", *argv], env)
    phase = json.loads(output.read_text())
    if phase["succeeded"] != phase["actions"]:
        raise SystemExit(f"{backend.name}: {phase['succeeded']} of {phase['actions']} declares succeeded")
    journal = _journal_seconds(state / "journal")
    return Measure(phase["seconds"], calls=phase["calls"], cpu=phase["cpu"], phases={"journal": journal}), process


def child_apply(argv: list[str]) -> None:
    """In a fresh process: `lance-sync apply ARGV` as `python -m lance_sync` runs it, its apply
    phase (`execute`) timed: wall and the CPU of the process (every thread) while it runs.
    BENCH_APPLY_PROFILE=FILE writes a cProfile of the phase (CPU time of each thread), every thread merged."""
    import lance_sync.apply.session as session
    from lance_sync.apply.runner import ActionRunner
    from lance_sync.cli.app import main as cli
    execute, measured = session.execute, {}
    profile_to = os.environ.get("BENCH_APPLY_PROFILE")
    profiles: list[Any] = []
    if profile_to:
        _profile_threads(ActionRunner, profiles)

    def timed_execute(plan: Any, drivers: Any, *args: Any, **kwargs: Any) -> Any:
        import cProfile
        main_profile = cProfile.Profile(time.thread_time) if profile_to else None
        calls = sum(driver.api_calls for driver in drivers.values())
        began, cpu = time.perf_counter(), time.process_time()
        if main_profile:
            main_profile.enable()
        report = execute(plan, drivers, *args, **kwargs)
        if main_profile:
            main_profile.disable()
            profiles.append(main_profile)
        measured.update(seconds=time.perf_counter() - began, cpu=time.process_time() - cpu,
                        actions=len(report.outcomes), succeeded=len(report.with_status("succeeded")),
                        calls=sum(driver.api_calls for driver in drivers.values()) - calls)
        return report

    session.execute = timed_execute
    try:
        cli(args=argv, prog_name="lance-sync")
    finally:
        Path(os.environ["BENCH_APPLY_OUT"]).write_text(json.dumps(measured))
        if profile_to and profiles:
            import pstats
            pstats.Stats(*profiles).dump_stats(profile_to)


def _profile_threads(runner: type, profiles: list[Any]) -> None:
    """Profile `runner.run_batch` in every worker thread, one cProfile per thread."""
    import cProfile
    local = threading.local()
    run_batch = runner.run_batch

    def profiled(self: Any, actions: Any) -> Any:
        if not hasattr(local, "profile"):
            local.profile = cProfile.Profile(time.thread_time)
            profiles.append(local.profile)
        local.profile.enable()
        try:
            return run_batch(self, actions)
        finally:
            local.profile.disable()

    runner.run_batch = profiled


def _journal_seconds(journal_dir: Path) -> float:
    """From the journal's start event to its end event."""
    from datetime import datetime
    events = [json.loads(line) for line in sorted(journal_dir.glob("*.jsonl"))[-1].read_text().splitlines()]
    start, end = (datetime.fromisoformat(events[i]["time"]) for i in (0, -1))
    return (end - start).total_seconds()


def print_apply_rows() -> None:
    if not APPLY:
        return
    print(f"\napply of {NAMESPACES} namespaces and N tables ({THREADS}-thread loops; lance-sync apply "
          "--auto-approve; wall / client CPU)\n")
    print("| backend | N | calls, whole process | calls, apply phase / minimum | raw create loop | "
          "lance-sync apply phase | apply / raw | whole process | process / raw | native SDK loop | peak RSS MB |")
    print("| --- |" + " ---: |" * 10)
    for r in APPLY:
        print(f"| {r.backend} | {r.tables:,} | {r.calls:,} | {r.phase_calls:,} / {r.minimum:,} | "
              f"{r.raw.seconds:.2f} s / {r.raw.cpu:.2f} s | "
              f"{r.phase.seconds:.2f} s / {r.phase.cpu:.2f} s | {r.ratio:.2f}x wall, "
              f"{r.phase.cpu / r.raw.cpu:.2f}x CPU | {r.process.seconds:.2f} s / {r.process.cpu:.2f} s | "
              f"{r.process.seconds / r.raw.seconds:.2f}x | {f'{r.native:.2f} s' if r.native is not None else '-'} | "
              f"{r.process.rss_mb:.0f} |")
    runs = [r for r in APPLY if len(r.runs) > 1]
    if runs:
        print("\neach run's apply phase against its raw create loop (the loop run first; raw, apply): " + "; ".join(
            f"{r.backend} {r.tables:,}: " + ", ".join(f"{phase / raw:.2f}x ({first} first; {raw:.2f} s, {phase:.2f} s)"
                                                      for first, raw, phase in r.runs) for r in runs))


# --- report -------------------------------------------------------------------------------------------

def print_rows(rows: list[Row]) -> None:
    load = os.getloadavg()
    print(f"\nlance-sync catalog bench: {os.cpu_count()} cores, load average at the end "
          f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}\n")
    print("| backend | step | N | calls | minimum | api.plan | raw | ratio | process | process / raw | "
          "raw process | process / raw process | process, parse cache warm | warm / raw | warm / raw process | "
          "client CPU, api.plan vs raw | SDK: read vs native | process CPU | peak RSS MB |")
    print("|" + " --- |" * 2 + " ---: |" * 17)
    for r in rows:
        calls = f"{r.calls:,}" if r.calls is not None else "-"
        minimum = f"{r.minimum:,}" if r.minimum is not None else "-"
        if r.api_plan is not None and r.raw is not None:
            planned = (f"{r.api_plan.seconds:.2f} s | {r.raw.seconds:.2f} s | {r.api_plan.seconds / r.raw.seconds:.2f}x | "
                       f"{r.process.seconds:.2f} s | {r.process.seconds / r.raw.seconds:.2f}x | "
                       f"{r.raw.process_seconds:.2f} s | {r.process.seconds / r.raw.process_seconds:.2f}x | "
                       f"{_warm(r)} | "
                       f"{r.api_plan.cpu:.2f} s vs {r.raw.cpu:.2f} s | {r.ours:.2f} s vs {r.native:.2f} s")
        else:
            planned = f"- | - | - | {r.process.seconds:.2f} s | - | - | - | - | - | - | - | -"
        print(f"| {r.backend} | {r.step} | {r.tables:,} | {calls} | {minimum} | {planned} | "
              f"{r.process.cpu:.2f} s | {r.process.rss_mb:.0f} |")
    for count, get, head in CONDITIONAL:
        print(f"\nunchanged re-plan on iceberg, {count:,} tables, plain urllib3, {THREADS} threads: "
              f"GET (load) {get:.2f} s, HEAD (the round trip of a 304) {head:.2f} s: ETags could save at "
              f"most {100 * (1 - head / get):.0f}% of the loads' time")
    print_apply_rows()
    phased = [r for r in rows if r.phases]
    if phased:
        print("\nplan phases in a fresh process (seconds): " + "; ".join(
            f"{r.backend} {r.tables:,}: " + ", ".join(f"{k} {v:.2f}" for k, v in r.phases.items())
            for r in phased))
    runs = [r for r in rows if len(r.run_ratios) > 1]
    if runs:
        print("\neach run against the raw read of the same run (api.plan / raw; plan process / raw): " + "; ".join(
            f"{r.backend} {r.tables:,}: " + ", ".join(f"{a:.2f}x / {p:.2f}x" for a, p in r.run_ratios)
            for r in runs))


def _warm(row: Row) -> str:
    """The columns of the plan process with the parse cache warm, beside the raw read's."""
    if row.warm_process is None or row.raw is None:
        return "- | - | -"
    seconds = row.warm_process.seconds
    return f"{seconds:.2f} s | {seconds / row.raw.seconds:.2f}x | {seconds / row.raw.process_seconds:.2f}x"


def _changed_estates(option: str) -> dict[str, int]:
    """--changed-tables: one N for iceberg, glue and hms, or name=N pairs."""
    if "=" not in option:
        return dict.fromkeys(("iceberg", "glue", "hms"), int(option))
    return {name: int(count) for name, count in (pair.split("=") for pair in option.split(","))}


def _apply_counts(args: argparse.Namespace) -> list[int]:
    if args.no_apply:
        return []
    return [int(n) for n in args.apply_tables.split(",")] if args.apply_tables else [args.tables]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="iceberg,glue,hms,dir,unity")
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is shown")
    parser.add_argument("--no-apply", action="store_true", help="skip the apply rows")
    parser.add_argument("--parallelism", type=int, help="lance-sync apply --parallelism (default: the CLI's)")
    parser.add_argument("--scale", action="store_true",
                        help="also plan 100,000 tables on glue and dir, and 500,000 on dir")
    parser.add_argument("--changed-tables", default="100000",
                        help="estate of the changed-since rows (iceberg, glue, hms): N, or per backend "
                             "as iceberg=N,glue=N,hms=N; 0 skips them")
    parser.add_argument("--seed-changed-only", action="store_true",
                        help="changed-since rows: seed the catalog with the changed tables only (the plan "
                             "reads no other), not the whole estate")
    parser.add_argument("--changed-json", action="store_true",
                        help="changed-since rows: the manifest as JSON files instead of YAML ones")
    parser.add_argument("--apply-tables", help="N of the apply rows, comma-separated (default: --tables)")
    parser.add_argument("--apply-only", action="store_true", help="only the apply rows")
    parser.add_argument("--no-native", action="store_true",
                        help="apply rows without the native SDK loop (pyiceberg takes minutes at 100,000)")
    parser.add_argument("--profile-apply", type=Path, metavar="FILE",
                        help="write a cProfile of lance-sync's apply phase (every thread) to FILE")
    parser.add_argument("--child-apply", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--child-read", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--child-plan", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_apply:
        child_apply(args.child_apply)
        return
    if args.child_read:
        child_read(args.child_read)
        return
    if args.child_plan:
        child_plan(args.child_plan)
        return
    from bench_cli import compile_sources
    compile_sources()
    names = [n for n in args.backends.split(",") if n]
    rows: list[Row] = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-catalogs-"))
    try:
        for name in names:
            if not args.apply_only:
                print(f"{name}: {args.tables:,} tables", file=sys.stderr)
                rows.append(bench_read(name, args.tables, args.repeat, scratch))
            for count in _apply_counts(args) if name != "dir" else []:
                print(f"{name}: apply of {count:,} declares", file=sys.stderr)
                APPLY.append(bench_apply(name, count, args.repeat, scratch, args.parallelism, args.profile_apply,
                                         native=not args.no_native))
        estates = {} if args.apply_only else _changed_estates(args.changed_tables)
        for name in names:
            if estates.get(name):
                print(f"{name}: --changed-since, {estates[name]:,} tables", file=sys.stderr)
                rows += bench_changed(name, estates[name], args.repeat, scratch, args.seed_changed_only,
                                      args.changed_json)
        if args.scale and not args.apply_only:
            for name, count in (("glue", 100_000), ("dir", 100_000), ("dir", 500_000)):
                if name in names:
                    print(f"{name}: {count:,} tables", file=sys.stderr)
                    rows.append(bench_read(name, count, 1, scratch))
    finally:
        print_rows(rows)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
