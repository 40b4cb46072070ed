"""The raw-protocol lower bound of a plan's reads, for bench_catalogs.py.

The requests a plan needs at least (the "minimum" calls of bench_catalogs.py: the same
listings, loads and namespace reads), sent with nothing but the protocol's own plumbing, 16
threads, no SDK objects built; each answer is decoded (JSON, Thrift, Arrow) and each table's
location and properties picked out, as any client must:

- iceberg: plain urllib3 (GET /v1/config, a namespace GET and a table listing per namespace,
  a loadTable GET per table), `json.loads` of each body;
- glue: urllib3 POSTs signed with botocore's SigV4 signer (no botocore client: no model,
  no parser), GetDatabases and GetTables pages of 100, `json.loads` of each body;
- hms: the generated Thrift client over one connection per thread (the protocol's own
  decoder builds the Thrift structs): get_database and get_all_tables per database, then
  get_table_objects_by_name_req per 300 names;
- unity: plain urllib3, a schema listing page of 100, then table listing pages of 50 (the
  OpenAPI maximum) per schema, `json.loads` of each body;
- dir: one pylance scan of the `__manifest` table (namespaces and tables), `json.loads` of each
  row's metadata.

The raw create loop (`"mode": "create"` in SPEC) is the lower bound of an apply of N
declares and their namespaces: the requests lance-sync's driver sends for each, with the same
bodies, 16 threads, no SDK objects; the namespaces first (SPEC's "create_namespaces": [name,
properties] pairs, 16 threads), then the tables; each answer decoded as any client must:

- iceberg: GET /v1/config, a POST .../namespaces of {namespace, properties} per namespace,
  then per table a POST .../namespaces/{ns}/tables of {name, location, the one-column dummy
  schema, properties, stage-create: false} (the driver's `declare_table`), the answer's JSON
  decoded and its location and properties picked out;
- glue: a SigV4-signed CreateDatabase of {CatalogId, DatabaseInput: {Name, Parameters}} per
  namespace, then per table a CreateTable of {CatalogId, DatabaseName, TableInput: {Name,
  TableType: EXTERNAL_TABLE, Parameters, StorageDescriptor: {Location}}}, its JSON decoded;
- hms: the generated Thrift client, one connection per thread: create_database of the
  Database the driver builds, then create_table of the driver's Table struct (EXTERNAL_TABLE,
  EXTERNAL=TRUE, an empty storage descriptor at the file:// location);
- unity: plain urllib3, a POST /schemas of {name, catalog_name, properties} per schema, then a
  POST /tables of {name, catalog_name, schema_name, table_type: EXTERNAL, data_source_format:
  TEXT, storage_location, columns: [], properties} per table, each answer's JSON decoded.

The tables to create are a JSON file of [namespace, name, location] rows (SPEC's "tables"; the
location as the driver sends it), each declared with SPEC's "properties" (what lance-sync
stamps: the manifest's properties, the owner, table_type=lance).

Run by bench_catalogs.py in a fresh process (`python bench/bench_raw.py SPEC`, SPEC a JSON
object from `Backend.raw_spec`), so that its client CPU (user+sys of the process while it reads
or creates, every thread) is its own; prints {"seconds", "cpu", "tables"} as JSON.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

THREADS = 16
GLUE_PAGE = 100
HMS_BATCH = 300
#: Unity Catalog OSS serves at most 100 schemas a page
UNITY_SCHEMA_PAGE = 100


def _parallel(call: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(call, items))


def _fail(what: str, status: int, body: bytes) -> None:
    raise SystemExit(f"raw: {what} answered {status}: {body[:300]!r}")


# --- readers: each returns a callable that reads everything and returns the tables read -------

def _answer(what: str, answer: Any) -> Any:
    """The decoded JSON body of a 200 answer."""
    if answer.status != 200:
        _fail(what, answer.status, answer.data)
    return json.loads(answer.data)


def _iceberg_client(spec: dict[str, Any]) -> tuple[Any, str]:
    """(a urllib3 pool of THREADS connections, the base URL of the warehouse's API)."""
    import urllib3
    endpoint, prefix = spec["endpoint"], spec["prefix"]
    return urllib3.PoolManager(maxsize=THREADS), f"{endpoint}/v1/{prefix}" if prefix else f"{endpoint}/v1"


def _iceberg_config(pool: Any, spec: dict[str, Any]) -> None:
    url = f"{spec['endpoint']}/v1/config?warehouse={spec['warehouse']}"
    _answer(url, pool.request("GET", url))


def _glue_client(spec: dict[str, Any]) -> Callable[[str, dict[str, Any]], Any]:
    """call(operation, body): one SigV4-signed POST (botocore's signer, no client), its JSON decoded."""
    import urllib3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    pool = urllib3.PoolManager(maxsize=THREADS)
    signer = SigV4Auth(Credentials(spec["access_key_id"], spec["secret_access_key"]), "glue", spec["region"])
    url = spec["endpoint"].rstrip("/") + "/"

    def call(operation: str, body: dict[str, Any]) -> Any:
        request = AWSRequest("POST", url, data=json.dumps(body).encode(),
                             headers={"X-Amz-Target": f"AWSGlue.{operation}",
                                      "Content-Type": "application/x-amz-json-1.1"})
        signer.add_auth(request)
        return _answer(operation, pool.request("POST", url, body=request.body,
                                               headers=dict(request.headers.items())))

    return call


def iceberg(spec: dict[str, Any]) -> Callable[[], int]:
    pool, base = _iceberg_client(spec)

    def get(url: str) -> Any:
        return _answer(url, pool.request("GET", url))

    def namespace(ns: str) -> list[str]:
        get(f"{base}/namespaces/{ns}")
        names, token = [], None
        while True:
            page = get(f"{base}/namespaces/{ns}/tables" + (f"?pageToken={token}" if token else ""))
            names += [f"{ns}/tables/{identifier['name']}" for identifier in page["identifiers"]]
            token = page.get("next-page-token")
            if not token:
                return names

    def load(path: str) -> tuple[str, dict[str, str]]:
        metadata = get(f"{base}/namespaces/{path}")["metadata"]
        return metadata["location"], metadata.get("properties", {})

    def read() -> int:
        _iceberg_config(pool, spec)
        paths = [path for listed in _parallel(namespace, spec["namespaces"]) for path in listed]
        return len(_parallel(load, paths))

    return read


def glue(spec: dict[str, Any]) -> Callable[[], int]:
    call = _glue_client(spec)

    def pages(operation: str, key: str, **body: Any) -> list[dict[str, Any]]:
        items, token = [], None
        while True:
            page = call(operation, {**body, "MaxResults": GLUE_PAGE, **({"NextToken": token} if token else {})})
            items += page[key]
            token = page.get("NextToken")
            if not token:
                return items

    def tables(database: str) -> list[tuple[str, dict[str, str]]]:
        return [(t["StorageDescriptor"]["Location"], t.get("Parameters", {}))
                for t in pages("GetTables", "TableList", CatalogId=spec["account_id"], DatabaseName=database)]

    def read() -> int:
        pages("GetDatabases", "DatabaseList", CatalogId=spec["account_id"])
        return sum(map(len, _parallel(tables, spec["namespaces"])))

    return read


def _hms_client(spec: dict[str, Any]) -> Callable[[], Any]:
    """client(): this thread's generated Thrift client, its connection opened on first use."""
    from urllib.parse import urlsplit

    from pymetastore.hive_metastore import ThriftHiveMetastore
    from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
    from thrift.transport.TSocket import TSocket
    from thrift.transport.TTransport import TBufferedTransport
    address = urlsplit(spec["endpoint"])
    local = threading.local()

    def client() -> Any:
        if not hasattr(local, "client"):
            transport = TBufferedTransport(TSocket(address.hostname, address.port))
            transport.open()
            local.client = ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(transport))
        return local.client

    return client


def hms(spec: dict[str, Any]) -> Callable[[], int]:
    from pymetastore.hive_metastore.ttypes import GetTablesRequest
    client = _hms_client(spec)

    def names(database: str) -> list[tuple[str, list[str]]]:
        client().get_database(database)
        listed = client().get_all_tables(database)
        return [(database, listed[i:i + HMS_BATCH]) for i in range(0, len(listed), HMS_BATCH)]

    def batch(item: tuple[str, list[str]]) -> list[tuple[str, dict[str, str]]]:
        return [(t.sd.location, t.parameters) for t in client().get_table_objects_by_name_req(
            GetTablesRequest(dbName=item[0], tblNames=item[1])).tables]

    def read() -> int:
        batches = [b for listed in _parallel(names, spec["namespaces"]) for b in listed]
        return sum(map(len, _parallel(batch, batches)))

    return read


def dir_(spec: dict[str, Any]) -> Callable[[], int]:
    import lance

    def read() -> int:
        columns = lance.dataset(spec["manifest"]).to_table(
            columns=["object_id", "object_type", "location", "metadata"]).to_pydict()
        read = [(location, json.loads(metadata) if metadata else {})
                for location, metadata in zip(columns["location"], columns["metadata"], strict=True)]
        return sum(kind == "table" for kind in columns["object_type"]) if read else 0

    return read


def unity(spec: dict[str, Any]) -> Callable[[], int]:
    import urllib3
    pool = urllib3.PoolManager(maxsize=THREADS)
    base, catalog = spec["api_url"], spec["catalog"]

    def pages(path: str, key: str, **fields: Any) -> list[dict[str, Any]]:
        items, token = [], None
        while True:
            answer = pool.request("GET", f"{base}{path}", fields={**fields, **({"page_token": token} if token else {})})
            if answer.status != 200:
                _fail(path, answer.status, answer.data)
            page = json.loads(answer.data)
            items += page[key]
            token = page.get("next_page_token")
            if not token:
                return items

    def tables(schema: str) -> list[tuple[str, dict[str, str]]]:
        return [(t["storage_location"], t.get("properties", {})) for t in pages(
            "/tables", "tables", catalog_name=catalog, schema_name=schema, max_results=spec["page"])]

    def read() -> int:
        pages("/schemas", "schemas", catalog_name=catalog, max_results=UNITY_SCHEMA_PAGE)
        return sum(map(len, _parallel(tables, spec["namespaces"])))

    return read


READERS: dict[str, Callable[[dict[str, Any]], Callable[[], int]]] = {
    "iceberg": iceberg, "glue": glue, "hms": hms, "dir": dir_, "unity": unity}


# --- create loops: each returns a callable that declares every table and returns the count -------

#: the Iceberg schema of a Lance table's companion table, as lance-sync's driver sends it
ICEBERG_DUMMY_SCHEMA = {"type": "struct", "schema-id": 0,
                        "fields": [{"id": 1, "name": "dummy", "type": "string", "required": False}]}


def _tables(spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """[namespace, name, location] of every table to create (read before the clock starts)."""
    with open(spec["tables"], encoding="utf-8") as rows:
        return [tuple(row) for row in json.load(rows)]


def _creates(spec: dict[str, Any], namespace: Callable[[tuple[str, dict[str, str]]], Any],
             table: Callable[[tuple[str, str, str]], Any]) -> Callable[[], int]:
    """run(): SPEC's namespaces created, then its tables, THREADS at a time; returns the tables."""
    namespaces = [(name, properties) for name, properties in spec.get("create_namespaces", [])]
    tables = _tables(spec)

    def run() -> int:
        _parallel(namespace, namespaces)
        return len(_parallel(table, tables))

    return run


def iceberg_create(spec: dict[str, Any]) -> Callable[[], int]:
    pool, base = _iceberg_client(spec)
    properties = spec["properties"]

    def post(url: str, body: dict[str, Any]) -> Any:
        return _answer(url, pool.request("POST", url, body=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}))

    def namespace(item: tuple[str, dict[str, str]]) -> dict[str, str]:
        return post(f"{base}/namespaces", {"namespace": [item[0]], "properties": item[1]}).get("properties", {})

    def create(table: tuple[str, str, str]) -> tuple[str, dict[str, str]]:
        namespace, name, location = table
        body = {"name": name, "location": location, "schema": ICEBERG_DUMMY_SCHEMA, "properties": properties,
                "stage-create": False}
        metadata = post(f"{base}/namespaces/{namespace}/tables", body)["metadata"]
        return metadata["location"], metadata.get("properties", {})

    creates = _creates(spec, namespace, create)

    def run() -> int:
        _iceberg_config(pool, spec)
        return creates()

    return run


def glue_create(spec: dict[str, Any]) -> Callable[[], int]:
    call = _glue_client(spec)
    properties, account = spec["properties"], spec["account_id"]

    def namespace(item: tuple[str, dict[str, str]]) -> Any:
        return call("CreateDatabase", {"CatalogId": account, "DatabaseInput": {"Name": item[0], "Parameters": item[1]}})

    def create(table: tuple[str, str, str]) -> Any:
        namespace, name, location = table
        return call("CreateTable", {"CatalogId": account, "DatabaseName": namespace,
                                    "TableInput": {"Name": name, "TableType": "EXTERNAL_TABLE",
                                                   "Parameters": properties,
                                                   "StorageDescriptor": {"Location": location}}})

    return _creates(spec, namespace, create)


def hms_create(spec: dict[str, Any]) -> Callable[[], int]:
    from pymetastore.hive_metastore.ttypes import Database, SerDeInfo, StorageDescriptor, Table
    client = _hms_client(spec)
    parameters = {**spec["properties"], "EXTERNAL": "TRUE"}

    def namespace(item: tuple[str, dict[str, str]]) -> None:
        client().create_database(Database(name=item[0], catalogName="hive", parameters=item[1]))

    def create(table: tuple[str, str, str]) -> None:
        namespace, name, location = table
        client().create_table(Table(
            tableName=name, dbName=namespace, catName="hive", tableType="EXTERNAL_TABLE", partitionKeys=[],
            parameters=parameters,
            sd=StorageDescriptor(cols=[], location=location, compressed=False, numBuckets=-1,
                                 serdeInfo=SerDeInfo(name=name, parameters={}), bucketCols=[], sortCols=[],
                                 parameters={})))

    return _creates(spec, namespace, create)


def unity_create(spec: dict[str, Any]) -> Callable[[], int]:
    import urllib3
    pool = urllib3.PoolManager(maxsize=THREADS)
    base, catalog, properties = spec["api_url"], spec["catalog"], spec["properties"]

    def post(path: str, body: dict[str, Any]) -> Any:
        return _answer(path, pool.request("POST", f"{base}{path}", body=json.dumps(body).encode(),
                                          headers={"Content-Type": "application/json"}))

    def namespace(item: tuple[str, dict[str, str]]) -> Any:
        return post("/schemas", {"name": item[0], "catalog_name": catalog, "properties": item[1]})

    def create(table: tuple[str, str, str]) -> tuple[str, dict[str, str]]:
        namespace, name, location = table
        created = post("/tables", {"name": name, "catalog_name": catalog, "schema_name": namespace,
                                   "table_type": "EXTERNAL", "data_source_format": "TEXT",
                                   "storage_location": location, "columns": [], "properties": properties})
        return created["storage_location"], created.get("properties", {})

    return _creates(spec, namespace, create)


CREATORS: dict[str, Callable[[dict[str, Any]], Callable[[], int]]] = {
    "iceberg": iceberg_create, "glue": glue_create, "hms": hms_create, "unity": unity_create}


def main() -> None:
    spec = json.loads(sys.argv[1])
    work = (CREATORS if spec.get("mode") == "create" else READERS)[spec["backend"]](spec)
    began, cpu = time.perf_counter(), time.process_time()
    tables = work()
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "tables": tables}))


if __name__ == "__main__":
    main()
