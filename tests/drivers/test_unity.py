"""The Unity driver against the project's UC OSS test server, checked with unitycatalog-client.

Every spec operation and error code, UC's error answers of several versions, auth, retries,
paging and call counts, concurrency, columns from real Lance datasets, and pylance writing and
reading through the driver. Tests of test-only server features (request counting, fault
injection, a second server with a token) skip against an external server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import lance
import lance_namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceExistsRequest,
    RegisterTableRequest,
    TableExistsRequest,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    ThrottlingError,
    UnauthenticatedError,
    UnsupportedOperationError,
)
from unitycatalog.client import ColumnTypeName, TablesApi

from lance_sync.drivers import register
from lance_sync.drivers.support.http import HttpFailure
from lance_sync.drivers.support.retry import ServerError
from lance_sync.drivers.unity.driver import UnityNamespace
from lance_sync.model.errors import ConfigError
from lance_sync.model.locations import normalize_location
from tests.conformance.harness_unity import UnityHarness, ensure_catalog, run_sdk
from tests.servers import unity
from tests.servers.base import RunningServer, free_port
from tests.support.unity_driver import declare, make_driver, unique

register()  # lance_namespace.connect("lance-sync-<type>", ...) builds lance-sync's drivers

pytestmark = pytest.mark.servers

TOKEN = "uc-test-token-7f3a9c"


def sdk_table(server: RunningServer, full_name: str, token: str | None = None):
    return run_sdk(server, lambda client: TablesApi(client).get_table(full_name), token)


def write_dataset(location: str | Path, rows: int = 3) -> None:
    lance.write_dataset(pa.table({"id": pa.array(range(rows), pa.int64())}), str(location))


@pytest.fixture(scope="module")
def catalog(unity_server: RunningServer) -> str:
    name = unique("drv")
    ensure_catalog(unity_server, name)
    return name


@pytest.fixture
def driver(unity_server: RunningServer, catalog: str, tmp_path: Path) -> UnityNamespace:
    return make_driver(unity_server, catalog, tmp_path)


@pytest.fixture
def schema(driver: UnityNamespace, catalog: str) -> tuple[str, str]:
    namespace = (catalog, unique("s"))
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    return namespace


@pytest.fixture
def own_server(unity_server: RunningServer) -> Iterator[RunningServer]:
    """The session's server for tests that count requests or inject faults; faults cleared after."""
    if unity_server.external:
        pytest.skip("request counting and fault injection are features of the project's server")
    unity_server.reset_request_count()
    yield unity_server
    unity.clear_faults(unity_server)


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = unity.start(tmp_path_factory.mktemp("unity_token"), token=TOKEN)
    try:
        ensure_catalog(server, "secured", token=TOKEN)
        yield server
    finally:
        server.stop()


# --- configuration ----------------------------------------------------------------------------

def test_config_defaults_and_storage_properties():
    driver = UnityNamespace(**{"endpoint": "http://localhost:8080/", "catalog": "main",
                               "storage.region": "us-west-2", "auth_token": TOKEN})
    config = driver.config
    assert (config.api_path, config.connect_timeout, config.read_timeout, config.max_retries) == \
        ("/api/2.1/unity-catalog", 10, 60, 3)
    assert driver.root == normalize_location(".")
    assert driver.storage_options() == {"region": "us-west-2"}
    assert driver.client.http.base_url == "http://localhost:8080/api/2.1/unity-catalog"
    assert driver.client.http.timeout == (10, 60)
    assert TOKEN not in repr(config) + str(config) + driver.namespace_id()
    assert not driver.capabilities().update_table_properties


def test_connect_builds_this_driver():
    driver = lance_namespace.connect("lance-sync-unity", {"endpoint": "http://localhost:8080", "catalog": "main"})
    assert isinstance(driver, UnityNamespace)


@pytest.mark.parametrize("properties", [{"catalog": "main"}, {"endpoint": "localhost:8080", "catalog": "main"},
                                        {"endpoint": "http://x", "catalog": "main", "max_retries": "-1"}])
def test_bad_config_is_a_config_error(properties: dict[str, str]):
    with pytest.raises(ConfigError):
        UnityNamespace(**properties)


# --- namespaces -------------------------------------------------------------------------------

def test_create_namespace_modes(driver: UnityNamespace, catalog: str):
    namespace = [catalog, unique("s")]
    created = driver.create_namespace(CreateNamespaceRequest(id=namespace, properties={"team": "a"}))
    assert created.properties == {"team": "a"}
    with pytest.raises(NamespaceAlreadyExistsError):
        driver.create_namespace(CreateNamespaceRequest(id=namespace, properties={"team": "b"}))
    kept = driver.create_namespace(CreateNamespaceRequest(id=namespace, mode="ExistOk", properties={"team": "b"}))
    assert kept.properties == {"team": "a"}
    replaced = driver.create_namespace(CreateNamespaceRequest(id=namespace, mode="overwrite",
                                                              properties={"team": "c"}))
    assert replaced.properties == {"team": "c"}
    assert driver.describe_namespace(DescribeNamespaceRequest(id=namespace)).properties == {"team": "c"}


def test_overwrite_replaces_the_properties_of_a_schema_and_keeps_its_tables(driver: UnityNamespace,
                                                                           schema: tuple[str, str]):
    declare(driver, (*schema, "t"))
    driver.create_namespace(CreateNamespaceRequest(id=list(schema), mode="Overwrite", properties={"a": "1"}))
    driver.create_namespace(CreateNamespaceRequest(id=list(schema), mode="Overwrite", properties={"b": "2"}))
    assert driver.describe_namespace(DescribeNamespaceRequest(id=list(schema))).properties == {"b": "2"}
    assert driver.get_table_info((*schema, "t")) is not None
    with pytest.raises(UnsupportedOperationError, match="empty properties map"):  # UC ignores an empty map
        driver.create_namespace(CreateNamespaceRequest(id=list(schema), mode="Overwrite"))


@pytest.mark.parametrize("namespace, error", [
    (["other_catalog", "s"], InvalidInputError),
    (["s"], InvalidInputError),
    (["{catalog}", "a.b"], InvalidInputError),
    (["{catalog}", "has space"], InvalidInputError),
])
def test_create_namespace_refuses_bad_ids(driver: UnityNamespace, catalog: str, namespace, error):
    with pytest.raises(error):
        driver.create_namespace(CreateNamespaceRequest(id=[p.format(catalog=catalog) for p in namespace]))


def test_create_namespace_unknown_mode(driver: UnityNamespace, catalog: str):
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[catalog, unique("s")], mode="replace"))


def test_create_namespace_in_a_missing_catalog(unity_server: RunningServer, tmp_path: Path):
    driver = make_driver(unity_server, unique("absent"), tmp_path)
    with pytest.raises(NamespaceNotFoundError):
        driver.create_namespace(CreateNamespaceRequest(id=[driver.catalog, "s"]))


def test_list_namespaces(driver: UnityNamespace, catalog: str):
    assert driver.list_namespaces(ListNamespacesRequest(id=[])).namespaces == [catalog]
    names = sorted(unique(f"n{i}") for i in range(5))
    for name in reversed(names):
        driver.create_namespace(CreateNamespaceRequest(id=[catalog, name]))
    pages, token = [], None
    while True:
        page = driver.list_namespaces(ListNamespacesRequest(id=[catalog], limit=2, page_token=token))
        pages.append(page.namespaces)
        token = page.page_token
        if not token:
            break
    listed = [name for page in pages for name in page]
    assert all(page == sorted(page) for page in pages) and all(len(page) <= 2 for page in pages)
    assert [name for name in listed if name in names] == names
    assert driver.list_namespaces(ListNamespacesRequest(id=[catalog, names[0]])).namespaces == []
    with pytest.raises(NamespaceNotFoundError):
        driver.list_namespaces(ListNamespacesRequest(id=["other_catalog"]))
    with pytest.raises(NamespaceNotFoundError):
        driver.list_namespaces(ListNamespacesRequest(id=[catalog, unique("absent")]))


def test_describe_and_exists(driver: UnityNamespace, catalog: str, schema: tuple[str, str]):
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[catalog])).properties == {}
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[])).properties == {}
    driver.namespace_exists(NamespaceExistsRequest(id=list(schema)))
    for missing in ([catalog, unique("absent")], ["other_catalog", "s"]):
        with pytest.raises(NamespaceNotFoundError):
            driver.describe_namespace(DescribeNamespaceRequest(id=missing))
        with pytest.raises(NamespaceNotFoundError):
            driver.namespace_exists(NamespaceExistsRequest(id=missing))
        assert driver.get_namespace_info(tuple(missing)) is None


def test_drop_namespace(driver: UnityNamespace, catalog: str, schema: tuple[str, str], tmp_path: Path):
    missing = [catalog, unique("absent")]
    with pytest.raises(NamespaceNotFoundError):
        driver.drop_namespace(DropNamespaceRequest(id=missing))
    driver.drop_namespace(DropNamespaceRequest(id=missing, mode="Skip"))
    driver.drop_namespace(DropNamespaceRequest(id=["other_catalog", "s"], mode="SKIP"))
    location = tmp_path / "kept.lance"
    write_dataset(location)
    declare(driver, (*schema, "kept"), location)
    with pytest.raises(NamespaceNotEmptyError):
        driver.drop_namespace(DropNamespaceRequest(id=list(schema), behavior="Restrict"))
    driver.drop_namespace(DropNamespaceRequest(id=list(schema), behavior="Cascade"))
    assert driver.get_namespace_info(schema) is None
    assert lance.dataset(str(location)).count_rows() == 3


def test_update_namespace_properties(driver: UnityNamespace, catalog: str, own_server: RunningServer):
    namespace = (catalog, unique("s"))
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace),
                                                   properties={"keep": "1", "change": "old", "drop": "x"}))
    driver.update_namespace_properties(namespace, {"change": "new", "add": "2"}, ["drop"])
    assert driver.get_namespace_info(namespace).properties == {"keep": "1", "change": "new", "add": "2"}
    own_server.reset_request_count()
    driver.update_namespace_properties(namespace, {"keep": "1"}, ["absent"])
    assert own_server.requests_served() == 1  # the GET; nothing to PATCH
    with pytest.raises(UnsupportedOperationError):
        driver.update_namespace_properties(namespace, {}, ["keep", "change", "add"])
    assert driver.get_namespace_info(namespace).properties == {"keep": "1", "change": "new", "add": "2"}
    with pytest.raises(NamespaceNotFoundError):
        driver.update_namespace_properties((catalog, unique("absent")), {"a": "1"}, [])


def test_list_namespace_infos_carry_properties(driver: UnityNamespace, catalog: str):
    namespace = (catalog, unique("s"))
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace), properties={"marker": "m"}))
    infos = {info.id: info.properties for info in driver.list_namespace_infos((catalog,))}
    assert infos[namespace] == {"marker": "m"}
    assert [info.id for info in driver.list_namespace_infos(())] == [(catalog,)]
    assert list(driver.list_namespace_infos(namespace)) == []


def test_get_namespace_infos_reads_schemas_from_one_listing_page(own_server: RunningServer, tmp_path: Path):
    """A plan's namespace reads: one page of schemas for many, a GET for one not listed."""
    catalog = unique("bulk")
    ensure_catalog(own_server, catalog)
    driver = make_driver(own_server, catalog, tmp_path)
    schemas = [(catalog, unique("s")) for _ in range(3)]
    for index, namespace in enumerate(schemas):
        driver.create_namespace(CreateNamespaceRequest(id=list(namespace), properties={"n": str(index)}))
    absent, elsewhere = (catalog, unique("absent")), ("another_catalog", "s")
    own_server.reset_request_count()
    infos = driver.get_namespace_infos([*schemas, absent, elsewhere])
    assert [info.properties if info else None for info in infos] == [{"n": "0"}, {"n": "1"}, {"n": "2"}, None, None]
    assert own_server.requests_served() == 2  # the listing page, then a GET of the schema it lacked
    own_server.reset_request_count()
    assert driver.get_namespace_infos([schemas[0]])[0].properties == {"n": "0"}
    assert own_server.requests_served() == 1  # one schema: its GET, no listing

# --- tables -----------------------------------------------------------------------------------

def test_declare_table_at_a_location(driver: UnityNamespace, schema: tuple[str, str], tmp_path: Path,
                                     unity_server: RunningServer):
    table_id = (*schema, "orders")
    location = tmp_path / "orders.lance"
    response = declare(driver, table_id, location, tier="gold", table_type="delta")
    assert normalize_location(response.location) == str(location)
    assert response.properties == {"tier": "gold", "table_type": "lance"}
    table = sdk_table(unity_server, ".".join(table_id))
    assert (table.table_type.value, table.data_source_format.value) == ("EXTERNAL", "TEXT")
    assert table.properties == {"tier": "gold", "table_type": "lance"}
    assert table.columns == []  # no dataset at the location yet
    with pytest.raises(TableAlreadyExistsError):
        declare(driver, table_id, location)


def test_declare_at_a_missing_local_location_opens_no_dataset(driver: UnityNamespace, schema: tuple[str, str],
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A local location that does not exist holds no dataset, which a stat tells: opening one
    there cost as much client CPU as the create (fails on the code before: it opened each)."""
    opened: list[str] = []

    def dataset(uri: str, **_: object) -> SimpleNamespace:
        opened.append(uri)
        return SimpleNamespace(schema=pa.schema([("id", pa.int64())]))

    monkeypatch.setattr(lance, "dataset", dataset)
    declare(driver, (*schema, "missing"), tmp_path / "missing.lance")
    assert opened == []
    (tmp_path / "present.lance").mkdir()
    declare(driver, (*schema, "present"), tmp_path / "present.lance")
    assert opened == [str(tmp_path / "present.lance")]


def test_declare_table_default_and_relative_locations(driver: UnityNamespace, schema: tuple[str, str],
                                                      tmp_path: Path):
    response = declare(driver, (*schema, "t"))
    assert normalize_location(response.location) == f"{tmp_path}/{schema[0]}/{schema[1]}/t.lance"
    response = declare(driver, (*schema, "r"), "lake/r.lance")
    assert normalize_location(response.location) == f"{tmp_path}/lake/r.lance"


@pytest.mark.parametrize("table_id, error", [
    (["{catalog}", "{absent}", "t"], NamespaceNotFoundError),
    (["other_catalog", "s", "t"], InvalidInputError),
    (["{catalog}", "t"], InvalidInputError),
    (["{catalog}", "s", "bad name"], InvalidInputError),
])
def test_declare_table_errors(driver: UnityNamespace, catalog: str, table_id, error, tmp_path: Path):
    names = {"catalog": catalog, "absent": unique("absent")}
    location = str(tmp_path / "absent.lance")  # not a shared path: what another run left there is read
    with pytest.raises(error):
        driver.declare_table(DeclareTableRequest(id=[p.format(**names) for p in table_id], location=location))


def test_list_tables_only_lance_sorted_and_paged(driver: UnityNamespace, schema: tuple[str, str],
                                                 unity_server: RunningServer, tmp_path: Path):
    names = sorted(unique(f"t{i}") for i in range(5))
    for name in reversed(names):
        declare(driver, (*schema, name))
    UnityHarness(unity_server, tmp_path).create_foreign_table(schema, "a_foreign")
    assert driver.list_tables(ListTablesRequest(id=list(schema))).tables == names
    listed, token, calls = [], None, 0
    while True:
        page = driver.list_tables(ListTablesRequest(id=list(schema), limit=2, page_token=token))
        listed += page.tables
        token, calls = page.page_token, calls + 1
        if not token:
            break
    assert listed == names and calls == 4  # 6 tables in 2-name pages, then the empty page UC adds
    infos = {info.id[-1]: info for info in driver.list_table_infos(schema)}
    assert not infos["a_foreign"].is_lance and all(infos[name].is_lance for name in names)
    with pytest.raises(NamespaceNotFoundError):
        driver.list_tables(ListTablesRequest(id=[schema[0], unique("absent")]))


def test_describe_table(unity_server: RunningServer, catalog: str, schema: tuple[str, str], tmp_path: Path):
    driver = make_driver(unity_server, catalog, tmp_path, **{"storage.region": "us-west-2"})
    location = tmp_path / "d.lance"
    declare(driver, (*schema, "d"), location, tier="gold")
    described = driver.describe_table(DescribeTableRequest(id=[*schema, "d"]))
    assert normalize_location(described.location) == str(location)
    assert described.properties == {"tier": "gold", "table_type": "lance"}
    assert described.storage_options == {"region": "us-west-2"}
    assert (described.table, described.namespace) == ("d", list(schema))
    driver.table_exists(TableExistsRequest(id=[*schema, "d"]))
    for missing in ([*schema, "absent"], [schema[0], unique("absent"), "d"], ["other_catalog", schema[1], "d"]):
        with pytest.raises(TableNotFoundError):
            driver.describe_table(DescribeTableRequest(id=missing))
        with pytest.raises(TableNotFoundError):
            driver.table_exists(TableExistsRequest(id=missing))
        assert driver.get_table_info(tuple(missing)) is None


def test_foreign_table_is_invalid_input_and_kept(driver: UnityNamespace, schema: tuple[str, str],
                                                 unity_server: RunningServer, tmp_path: Path):
    UnityHarness(unity_server, tmp_path).create_foreign_table(schema, "delta_t")
    table_id = [*schema, "delta_t"]
    for call, request in ((driver.describe_table, DescribeTableRequest), (driver.table_exists, TableExistsRequest),
                          (driver.deregister_table, DeregisterTableRequest)):
        with pytest.raises(InvalidInputError):
            call(request(id=table_id))
    assert sdk_table(unity_server, ".".join(table_id)).name == "delta_t"
    assert not driver.get_table_info(tuple(table_id)).is_lance


def test_deregister_keeps_data(driver: UnityNamespace, schema: tuple[str, str], tmp_path: Path):
    location = tmp_path / "r.lance"
    write_dataset(location)
    declare(driver, (*schema, "r"), location, tier="gold")
    response = driver.deregister_table(DeregisterTableRequest(id=[*schema, "r"]))
    assert normalize_location(response.location) == str(location)
    assert response.properties["tier"] == "gold"
    assert driver.get_table_info((*schema, "r")) is None
    assert lance.dataset(str(location)).count_rows() == 3
    with pytest.raises(TableNotFoundError):
        driver.deregister_table(DeregisterTableRequest(id=[*schema, "r"]))


def test_register_table_modes(driver: UnityNamespace, schema: tuple[str, str], tmp_path: Path):
    table_id = [*schema, "reg"]
    driver.register_table(RegisterTableRequest(id=table_id, location=str(tmp_path / "a.lance")))
    with pytest.raises(TableAlreadyExistsError):
        driver.register_table(RegisterTableRequest(id=table_id, location=str(tmp_path / "b.lance")))
    driver.register_table(RegisterTableRequest(id=table_id, location=str(tmp_path / "b.lance"),
                                               mode="Overwrite", properties={"v": "2"}))
    info = driver.get_table_info(tuple(table_id))
    assert normalize_location(info.location) == str(tmp_path / "b.lance") and info.properties["v"] == "2"


def test_declare_fills_columns_from_the_lance_dataset(driver: UnityNamespace, schema: tuple[str, str],
                                                      tmp_path: Path, unity_server: RunningServer):
    arrow_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("vector", pa.list_(pa.field("item", pa.float32(), nullable=False), 4)),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("local_ts", pa.timestamp("ns")),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("big", pa.uint64()),
        pa.field("tags", pa.map_(pa.string(), pa.int64())),
        pa.field("info", pa.struct([pa.field("name", pa.string()), pa.field("scores", pa.list_(pa.float64())),
                                    pa.field("odd name", pa.int32())])),
        pa.field("day", pa.date32()),
        pa.field("payload", pa.large_binary()),
        pa.field("at", pa.time64("us")),
    ])
    row = {"id": 1, "vector": [0.1, 0.2, 0.3, 0.4], "ts": None, "local_ts": None, "amount": Decimal("1.50"),
           "big": 2**63, "tags": [("a", 1)], "info": {"name": "x", "scores": [1.0], "odd name": 3},
           "day": None, "payload": b"\x00", "at": None}
    location = tmp_path / "typed.lance"
    lance.write_dataset(pa.Table.from_pylist([row], schema=arrow_schema), str(location))
    declare(driver, (*schema, "typed"), location)

    columns = sdk_table(unity_server, ".".join((*schema, "typed"))).columns
    expected = {
        "id": (ColumnTypeName.LONG, "bigint"),
        "vector": (ColumnTypeName.ARRAY, "array<float>"),
        "ts": (ColumnTypeName.TIMESTAMP, "timestamp"),
        "local_ts": (ColumnTypeName.TIMESTAMP_NTZ, "timestamp_ntz"),
        "amount": (ColumnTypeName.DECIMAL, "decimal(10,2)"),
        "big": (ColumnTypeName.DECIMAL, "decimal(20,0)"),
        "tags": (ColumnTypeName.MAP, "map<string,bigint>"),
        "info": (ColumnTypeName.STRUCT, "struct<name:string,scores:array<double>,`odd name`:int>"),
        "day": (ColumnTypeName.DATE, "date"),
        "payload": (ColumnTypeName.BINARY, "binary"),
        "at": (ColumnTypeName.USER_DEFINED_TYPE, "time64[us]"),
    }
    assert {c.name: (c.type_name, c.type_text) for c in columns} == expected
    assert [c.position for c in columns] == list(range(len(expected)))
    assert [c.nullable for c in columns] == [f.nullable for f in arrow_schema]
    amount = next(c for c in columns if c.name == "amount")
    assert (amount.type_precision, amount.type_scale) == (10, 2)
    vector_json = json.loads(next(c for c in columns if c.name == "vector").type_json)
    stored_item = lance.dataset(str(location)).schema.field("vector").type.value_field
    assert vector_json == {"name": "vector", "nullable": True, "metadata": {},
                           "type": {"type": "array", "elementType": "float", "containsNull": stored_item.nullable}}


def test_type_json_is_what_spark_reads():
    """Spark's own type classes parse every type_json into the type named by type_text."""
    types = pytest.importorskip("pyspark.sql.types")
    from lance_sync.drivers.unity.driver import unity_columns

    arrow_schema = pa.schema([
        pa.field("i8", pa.int8()), pa.field("u16", pa.uint16()), pa.field("f16", pa.float16()),
        pa.field("s", pa.large_string(), nullable=False), pa.field("fsb", pa.binary(16)),
        pa.field("d", pa.date64()), pa.field("n", pa.null()), pa.field("ts", pa.timestamp("s", tz="+02:00")),
        pa.field("dict", pa.dictionary(pa.int32(), pa.string())),
        pa.field("ree", pa.run_end_encoded(pa.int32(), pa.float64())),
        pa.field("nested", pa.large_list(pa.struct([pa.field("k", pa.map_(pa.string(), pa.list_(pa.bool_())))]))),
        pa.field("dec", pa.decimal256(38, 10)),
    ])
    for column in unity_columns(arrow_schema):
        field = types.StructField.fromJson(json.loads(column["type_json"]))
        assert (field.name, field.nullable) == (column["name"], column["nullable"])
        assert field.dataType.simpleString() == column["type_text"]


def test_sixteen_threads_declare_and_describe(driver: UnityNamespace, schema: tuple[str, str]):
    names = [unique(f"c{i}") for i in range(64)]

    def declare_then_describe(name: str) -> str:
        declare(driver, (*schema, name), None, name=name)
        return driver.describe_table(DescribeTableRequest(id=[*schema, name])).properties["name"]

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(declare_then_describe, names)) == names
    assert sorted(info.id[-1] for info in driver.list_table_infos(schema)) == sorted(names)


def test_reading_500_tables_costs_11_calls(driver: UnityNamespace, schema: tuple[str, str],
                                           own_server: RunningServer):
    """The driver asks for pages of 50 tables (the OpenAPI document's maximum) and a full last
    page is followed by an empty one: 10 full pages + 1 = 11 list calls, and no call per table."""
    names = [f"t{i:03d}" for i in range(500)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: declare(driver, (*schema, name), None, tier="x"), names))
    own_server.reset_request_count()
    calls_before = driver.api_calls
    infos = list(driver.list_table_infos(schema))
    assert (own_server.requests_served(), driver.api_calls - calls_before) == (11, 11)
    assert [info.id[-1] for info in infos] == names
    assert all(info.is_lance and info.properties["tier"] == "x" and info.location for info in infos)


def test_pylance_writes_and_reads_through_the_driver(driver: UnityNamespace, schema: tuple[str, str],
                                                     tmp_path: Path, unity_server: RunningServer):
    table_id = [*schema, "written"]
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array(["a", "b"])})
    lance.write_dataset(data, namespace_client=driver, table_id=table_id)
    assert lance.dataset(namespace_client=driver, table_id=table_id).to_table().equals(data)
    expected = f"{tmp_path}/{schema[0]}/{schema[1]}/written.lance"
    assert lance.dataset(expected).count_rows() == 2
    table = sdk_table(unity_server, ".".join(table_id))
    assert normalize_location(table.storage_location) == expected


# --- errors: retries, faults, auth ------------------------------------------------------------

def test_get_is_retried_after_500(driver: UnityNamespace, schema: tuple[str, str], own_server: RunningServer):
    sleeps: list[float] = []
    driver.client.http.sleep = sleeps.append
    own_server.reset_request_count()
    unity.inject_faults(own_server, 500, method="GET")
    assert driver.get_namespace_info(schema) is not None
    assert own_server.requests_served() == 2 and len(sleeps) == 1


def test_post_is_not_retried_after_500(driver: UnityNamespace, schema: tuple[str, str], own_server: RunningServer):
    own_server.reset_request_count()
    unity.inject_faults(own_server, 500, method="POST")
    with pytest.raises(InternalError):
        declare(driver, (*schema, "once"))
    assert own_server.requests_served() == 1
    assert driver.get_table_info((*schema, "once")) is None


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(driver: UnityNamespace, schema: tuple[str, str], own_server: RunningServer,
                                 status: int):
    sleeps: list[float] = []
    driver.client.http.sleep = sleeps.append
    own_server.reset_request_count()
    unity.inject_faults(own_server, status, count=2, retry_after=3, method="POST")
    declare(driver, (*schema, f"after_{status}"))
    assert sleeps == [3.0, 3.0] and own_server.requests_served() == 3


@pytest.mark.parametrize("status, error", [(429, ThrottlingError), (503, ServiceUnavailableError)])
def test_retries_end_after_max_retries(unity_server: RunningServer, catalog: str, schema: tuple[str, str],
                                       tmp_path: Path, own_server: RunningServer, status: int, error):
    driver = make_driver(unity_server, catalog, tmp_path, max_retries="2")
    driver.client.http.sleep = lambda seconds: None
    own_server.reset_request_count()
    unity.inject_faults(own_server, status, count=10)
    with pytest.raises(error):
        driver.describe_namespace(DescribeNamespaceRequest(id=list(schema)))
    assert own_server.requests_served() == 3 and driver.api_calls == 3


def test_unreachable_server_is_service_unavailable(tmp_path: Path):
    driver = UnityNamespace(endpoint=f"http://127.0.0.1:{free_port()}", catalog="main", root=str(tmp_path),
                            max_retries="2", connect_timeout="2")
    driver.client.http.sleep = lambda seconds: None
    with pytest.raises(ServiceUnavailableError):
        driver.list_namespaces(ListNamespacesRequest(id=["main"]))
    assert driver.api_calls == 3


def test_a_failed_page_is_an_error_not_a_short_list(driver: UnityNamespace, schema: tuple[str, str],
                                                    own_server: RunningServer):
    for i in range(101):
        declare(driver, (*schema, f"t{i:03d}"))
    driver.client.http.sleep = lambda seconds: None
    tables = driver.list_table_infos(schema)
    first_page = [next(tables) for _ in range(100)]
    unity.inject_faults(own_server, 503, count=10, path_prefix="/tables")
    with pytest.raises(ServiceUnavailableError):
        list(tables)
    assert len(first_page) == 100


@pytest.mark.parametrize("status, method, path, call, error", [
    (403, "GET", "/schemas", "describe_namespace", PermissionDeniedError),
    (401, "GET", "/schemas", "describe_namespace", UnauthenticatedError),
    (409, "GET", "/schemas", "describe_namespace", ConcurrentModificationError),
    (400, "GET", "/tables", "describe_table", InvalidInputError),
    # UC 0.2-0.4 answer a bare NOT_FOUND: the request tells which object was missing
    (404, "GET", "/tables", "describe_table", TableNotFoundError),
    (404, "POST", "/tables", "declare_table", NamespaceNotFoundError),
    (404, "GET", "/schemas", "describe_namespace", NamespaceNotFoundError),
])
def test_injected_errors_are_translated(driver: UnityNamespace, schema: tuple[str, str],
                                        own_server: RunningServer, status, method, path, call, error):
    requests = {
        "describe_namespace": lambda: driver.describe_namespace(DescribeNamespaceRequest(id=list(schema))),
        "describe_table": lambda: driver.describe_table(DescribeTableRequest(id=[*schema, "t"])),
        "declare_table": lambda: declare(driver, (*schema, "t")),
    }
    unity.inject_faults(own_server, status, method=method, path_prefix=path)
    with pytest.raises(error):
        requests[call]()


@pytest.mark.parametrize("method, path, status, code, error", [
    ("POST", "/schemas", 409, "ALREADY_EXISTS", NamespaceAlreadyExistsError),
    ("POST", "/tables", 409, "ALREADY_EXISTS", TableAlreadyExistsError),
    ("POST", "/tables", 400, "TABLE_ALREADY_EXISTS", TableAlreadyExistsError),
    ("DELETE", "/schemas/c.s", 400, "FAILED_PRECONDITION", NamespaceNotEmptyError),
    ("GET", "/tables/c.s.t", 404, "TABLE_NOT_FOUND", TableNotFoundError),
    ("GET", "/schemas/c.s", 404, "SCHEMA_NOT_FOUND", NamespaceNotFoundError),
    ("GET", "/schemas/c.s", 400, "SOMETHING_NEW", InvalidInputError),
    ("GET", "/schemas/c.s", 500, "SOMETHING_NEW", ServerError),  # Internal (18), worth running again
    ("GET", "/schemas/c.s", 502, None, ServerError),
])
def test_error_codes_of_every_uc_version(method: str, path: str, status: int, code: str | None, error):
    """UC 0.2-0.3 answered 409 ALREADY_EXISTS; an unknown code falls back on the status,
    and an unexpected server error is InternalError (spec: 18)."""
    driver = UnityNamespace(endpoint="http://uc:8080", catalog="c")
    body = {"error_code": code, "message": "m"} if code else "Bad Gateway"
    failure = HttpFailure(method, driver.client.http.base_url + path, status, body)
    assert type(driver.client.translate(failure)) is error


def test_wrong_api_path_is_not_a_missing_namespace(unity_server: RunningServer, catalog: str,
                                                   schema: tuple[str, str], tmp_path: Path):
    driver = make_driver(unity_server, catalog, tmp_path, api_path="/api/2.0/wrong")
    with pytest.raises(InternalError, match="api_path"):
        driver.get_namespace_info(schema)


def test_bearer_token(token_server: RunningServer, tmp_path: Path):
    driver = make_driver(token_server, "secured", tmp_path, auth_token=TOKEN)
    namespace = ("secured", unique("s"))
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    declare(driver, (*namespace, "t"))
    assert sdk_table(token_server, f"{namespace[0]}.{namespace[1]}.t", token=TOKEN).name == "t"
    for bad in ({"auth_token": TOKEN + "-wrong"}, {}):
        stranger = make_driver(token_server, "secured", tmp_path, **bad)
        with pytest.raises(UnauthenticatedError) as raised:
            stranger.describe_namespace(DescribeNamespaceRequest(id=list(namespace)))
        assert TOKEN not in f"{raised.value} {raised.value!r}"
    with pytest.raises(NamespaceNotFoundError) as raised:
        driver.describe_namespace(DescribeNamespaceRequest(id=["secured", "absent"]))
    assert TOKEN not in f"{raised.value} {raised.value!r}"
