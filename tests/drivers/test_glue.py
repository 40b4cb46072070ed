"""The Glue driver against the Glue test server (tests/servers/docs/glue.md).

boto3 is the independent client that sets up and checks what the driver did. STS is a
moto server on loopback (`sts_server`), reached through AWS_ENDPOINT_URL_STS, that records
every request it answers.
"""

from __future__ import annotations

import contextlib
import io
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import lance_namespace
import pyarrow as pa
import pytest
from botocore.exceptions import ClientError
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
    ErrorCode,
    InvalidInputError,
    LanceNamespaceError,
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
from moto.server import DomainDispatcherApplication, create_backend_app
from moto.sts.models import sts_backends
from werkzeug.serving import make_server

from lance_sync.drivers import register
from lance_sync.drivers.base import TableInfo
from lance_sync.drivers.glue.config import GlueConfig
from lance_sync.drivers.glue.driver import GlueNamespace
from lance_sync.model.errors import ConfigError
from tests.servers.base import RunningServer, free_port
from tests.servers.glue import GlueControl, glue_client

pytestmark = pytest.mark.servers

ACCOUNT = "123456789012"
ROLE_ACCOUNT = "210987654321"
ROLE_ARN = f"arn:aws:iam::{ROLE_ACCOUNT}:role/lance-sync-test"
SECRET = "do-not-print-this-secret"


def unique(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _local_server(glue_server: RunningServer) -> None:
    if glue_server.external:
        pytest.skip("the driver tests seed catalogs, inject faults and count requests")


@pytest.fixture
def glue(glue_server: RunningServer) -> Any:
    return glue_client(glue_server)


@pytest.fixture
def control(glue_server: RunningServer) -> Iterator[GlueControl]:
    control = GlueControl(glue_server.endpoint)
    yield control
    control.clear_faults()


@pytest.fixture
def base_config(glue_server: RunningServer, tmp_path: Path) -> dict[str, Any]:
    extra = glue_server.extra
    return {"endpoint": glue_server.endpoint, "region": extra["region"], "catalog_id": ACCOUNT,
            "access_key_id": extra["access_key_id"], "secret_access_key": extra["secret_access_key"],
            "root": str(tmp_path / "root")}


@pytest.fixture
def make_driver(base_config: dict[str, Any]):
    def make(**overrides: Any) -> GlueNamespace:
        config = {**base_config, **overrides}
        return GlueNamespace(**{k: v for k, v in config.items() if v is not None})

    return make


@pytest.fixture
def driver(make_driver) -> GlueNamespace:
    return make_driver()


@pytest.fixture
def catalog(glue: Any) -> Iterator[str]:
    """A fresh child catalog of the default catalog (level-1 namespace)."""
    name = unique("cat")
    glue.create_catalog(Name=name, CatalogInput={"Description": "test catalog"})
    yield name
    with contextlib.suppress(ClientError):
        glue.delete_catalog(CatalogId=f"{ACCOUNT}:{name}")


@pytest.fixture
def namespace(glue: Any, catalog: str) -> tuple[str, str]:
    """A database in a fresh child catalog: (catalog, database)."""
    database = unique("db")
    glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}", DatabaseInput={"Name": database})
    return catalog, database


@pytest.fixture
def root_namespace(glue: Any) -> tuple[str, str]:
    """A database of the default catalog: (account id, database)."""
    database = unique("db")
    glue.create_database(DatabaseInput={"Name": database})
    return ACCOUNT, database


class Counted:
    """Glue requests the server answered, by operation, since the block began."""

    def __init__(self, control: GlueControl):
        self.control = control

    def __enter__(self) -> Counted:
        self.control.reset_request_count()
        return self

    def __exit__(self, *exc: Any) -> None:
        counts = self.control.request_counts()
        self.total = counts["total"]
        self.by_operation = counts["by_operation"]


def catalog_id(catalog: str) -> str:
    return ACCOUNT if catalog == ACCOUNT else f"{ACCOUNT}:{catalog}"


def get_table(glue: Any, table_id: tuple[str, ...]) -> dict:
    *catalogs, database, name = table_id
    return glue.get_table(CatalogId=catalog_id(catalogs[0]), DatabaseName=database, Name=name)["Table"]


def create_foreign_table(glue: Any, namespace: tuple[str, str], name: str) -> None:
    glue.create_table(CatalogId=catalog_id(namespace[0]), DatabaseName=namespace[1], TableInput={
        "Name": name, "TableType": "EXTERNAL_TABLE", "Parameters": {"classification": "parquet"},
        "StorageDescriptor": {"Location": f"s3://bucket/{name}"}})


def seed_lance_tables(glue: Any, namespace: tuple[str, str], names: list[str]) -> None:
    def create(name: str) -> None:
        glue.create_table(CatalogId=catalog_id(namespace[0]), DatabaseName=namespace[1], TableInput={
            "Name": name, "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "lance"},
            "StorageDescriptor": {"Location": f"s3://bucket/{name}.lance"}})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, names))


def sent_requests(driver: GlueNamespace) -> list[dict[str, Any]]:
    """Every Glue request the driver sends from now on, as it goes on the wire: its headers
    (signed) and body."""
    sent: list[dict[str, Any]] = []
    send = driver.client.glue.http.send

    def recording(method: str, target: str, **request: Any) -> Any:
        sent.append({"headers": request["headers"], "body": request["body"]})
        return send(method, target, **request)

    driver.client.glue.http.send = recording
    return sent


def declare(driver: GlueNamespace, table_id: tuple[str, ...], location: str | None = None,
            **properties: str) -> Any:
    return driver.declare_table(DeclareTableRequest(id=list(table_id), location=location,
                                                    properties=properties or None))


def all_pages(call: Any, request_type: Any, id: list[str], attribute: str, limit: int) -> list[list[str]]:
    pages, token = [], None
    while True:
        response = call(request_type(id=id, page_token=token, limit=limit))
        pages.append(getattr(response, attribute))
        token = response.page_token
        if not token:
            return pages


# --- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(("properties", "problem"), [
    ({"access_key_id": "a"}, "given together"),
    ({"session_token": "t"}, "session_token needs"),
    ({"assume_role_external_id": "x"}, "need(s) assume_role_arn"),
    ({"assume_role_arn": "not-an-arn"}, "assume_role_arn must look like"),
    ({"endpoint": "http://127.0.0.1:1"}, "catalog_id is required with endpoint"),
    ({"assume_role_timeout_sec": "899"}, "assume_role_timeout_sec"),
    ({"assume_role_timeout_sec": "43201"}, "assume_role_timeout_sec"),
    ({"endpoint": "127.0.0.1:1", "catalog_id": ACCOUNT}, "endpoint"),
    ({"catalog_id": ""}, "catalog_id"),
    ({"bogus": "1"}, "bogus"),
    ({"region": "us east 1"}, "region must be an AWS region name such as us-east-1, not 'us east 1'"),
    ({"assume_role_arn": "arn:aws:iam::123456789012:role/r", "assume_role_region": "eu_west_1"},
     "assume_role_region must be an AWS region name"),
])
def test_invalid_configuration_is_a_config_error(properties: dict, problem: str):
    with pytest.raises(ConfigError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        GlueNamespace(**{"region": "us-east-1", **properties})


@pytest.fixture
def no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """An environment in which botocore finds no credentials, region or endpoint of its own."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_GLUE",
                 "AWS_ENDPOINT_URL_LAKEFORMATION", "AWS_WEB_IDENTITY_TOKEN_FILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance metadata lookup
    return monkeypatch


def test_endpoints_left_open_are_aws_for_the_region(no_aws_environment: pytest.MonkeyPatch):
    """No `endpoint`: botocore resolves AWS's for the region (partition included), or the
    service's endpoint variable; no request is sent to find out."""
    keys = {"access_key_id": "AKIAEXAMPLEKEY", "secret_access_key": SECRET, "catalog_id": ACCOUNT}
    driver = GlueNamespace(region="eu-west-1", **keys)
    assert driver.client.glue.http.base_url == "https://glue.eu-west-1.amazonaws.com"
    assert driver.client.lakeformation().http.base_url == "https://lakeformation.eu-west-1.amazonaws.com"
    assert GlueNamespace(region="cn-north-1", **keys).client.glue.http.base_url == "https://glue.cn-north-1.amazonaws.com.cn"
    no_aws_environment.setenv("AWS_ENDPOINT_URL_GLUE", "http://127.0.0.1:9")
    assert GlueNamespace(region="eu-west-1", **keys).client.glue.http.base_url == "http://127.0.0.1:9"


def test_no_region_anywhere_is_a_config_error(no_aws_environment: pytest.MonkeyPatch):
    keys = {"catalog_id": ACCOUNT, "access_key_id": "AKIAEXAMPLEKEY", "secret_access_key": SECRET}
    with pytest.raises(ConfigError, match="glue: no region: set `region`, AWS_REGION or AWS_DEFAULT_REGION"):
        GlueNamespace(**keys)
    no_aws_environment.setenv("AWS_DEFAULT_REGION", "not a region")
    with pytest.raises(ConfigError, match="glue: the region 'not a region' from the environment"):
        GlueNamespace(**keys)
    no_aws_environment.setenv("AWS_REGION", "eu-west-3")  # as the AWS CLI reads it, before the others
    assert GlueNamespace(**keys).namespace_id().startswith("lance-sync glue { region: 'eu-west-3'")


def test_no_credentials_anywhere_is_unauthenticated_before_any_call(no_aws_environment: pytest.MonkeyPatch,
                                                                   glue_server: RunningServer,
                                                                   control: GlueControl):
    driver = GlueNamespace(endpoint=glue_server.endpoint, catalog_id=ACCOUNT, region="us-east-1")
    with Counted(control) as counted, pytest.raises(UnauthenticatedError, match="no usable AWS credentials"):
        driver.describe_namespace(DescribeNamespaceRequest(id=[ACCOUNT]))
    assert counted.total == 0


def test_credentials_that_cannot_be_refreshed_are_unauthenticated(make_driver, control: GlueControl):
    """A provider of botocore's chain that fails when asked (an expired SSO session, no
    instance metadata) is an error that names Glue, never botocore's exception."""
    from botocore.exceptions import CredentialRetrievalError

    class Failing:
        def get_frozen_credentials(self) -> Any:
            raise CredentialRetrievalError(provider="sso", error_msg="the SSO session has expired")

    driver = make_driver()
    driver.client.access.credentials = Failing()
    with Counted(control) as counted, pytest.raises(UnauthenticatedError) as caught:
        driver.describe_namespace(DescribeNamespaceRequest(id=[ACCOUNT]))
    assert str(caught.value) == ("glue: the AWS credentials could not be obtained: Error when retrieving "
                                 "credentials from sso: the SSO session has expired")
    assert counted.total == 0


def test_connect_properties_round_trip_and_secrets_stay_hidden(base_config: dict):
    config = GlueConfig.from_properties({**base_config, "secret_access_key": SECRET,
                                         "storage.region": "us-west-2"})
    assert config.storage == {"region": "us-west-2"}
    assert SECRET not in repr(config) and SECRET not in str(config)
    assert GlueConfig.from_properties(config.to_properties()) == config
    driver = GlueNamespace(**config.to_properties())
    assert SECRET not in driver.namespace_id()


def test_lance_namespace_connect_builds_this_driver(base_config: dict):
    register()
    driver = lance_namespace.connect("lance-sync-glue", {k: str(v) for k, v in base_config.items()})
    assert isinstance(driver, GlueNamespace)


def test_capabilities():
    assert GlueNamespace(region="us-east-1").capabilities().update_table_location
    assert GlueNamespace(region="us-east-1").capabilities().creatable_namespace_levels == (1, None)
    nested_root = GlueNamespace(region="us-east-1", catalog_id=f"{ACCOUNT}:cat")
    assert nested_root.capabilities().creatable_namespace_levels == (2, None)


@pytest.mark.parametrize(("parts", "problem"), [
    ((ACCOUNT, "sales"), None),
    (("cat", "child", "db"), None),
    ((ACCOUNT, "sales", "deeper"), "root catalog"),
    (("a/b", "db"), "cannot contain"),
    (("cat", "Sales"), "lower case"),
    (("cat", ""), "empty"),
])
def test_manifest_identifier_checks(parts: tuple[str, ...], problem: str | None):
    config = GlueConfig(catalog_id=ACCOUNT)
    found = GlueNamespace.check_namespace_id(parts, config)
    assert (found is None) if problem is None else (problem in found)


# --- namespaces ----------------------------------------------------------------------------------


def test_create_catalog_and_database_namespaces(driver: GlueNamespace, glue: Any):
    catalog = unique("cat")
    driver.create_namespace(CreateNamespaceRequest(id=[catalog], properties={"team": "a"}))
    driver.create_namespace(CreateNamespaceRequest(id=[catalog, "sales"], properties={"tier": "1"}))
    root_db = unique("db")
    driver.create_namespace(CreateNamespaceRequest(id=[ACCOUNT, root_db], properties={"x": "y"}))

    assert glue.get_catalog(CatalogId=f"{ACCOUNT}:{catalog}")["Catalog"]["Parameters"] == {"team": "a"}
    database = glue.get_database(CatalogId=f"{ACCOUNT}:{catalog}", Name="sales")["Database"]
    assert database["Parameters"] == {"tier": "1"}
    assert glue.get_database(Name=root_db)["Database"]["Parameters"] == {"x": "y"}
    with pytest.raises(ClientError):  # the database is in the child catalog only
        glue.get_database(Name="sales")


def test_create_modes(driver: GlueNamespace, glue: Any, catalog: str):
    database = unique("db")
    glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}", DatabaseInput={
        "Name": database, "Description": "kept", "LocationUri": "s3://bucket/db",
        "Parameters": {"old": "1"}})
    id = [catalog, database]
    with pytest.raises(NamespaceAlreadyExistsError) as caught:
        driver.create_namespace(CreateNamespaceRequest(id=id, properties={"new": "2"}))
    assert caught.value.code == ErrorCode.NAMESPACE_ALREADY_EXISTS
    exist_ok = driver.create_namespace(CreateNamespaceRequest(id=id, mode="ExistOk", properties={"new": "2"}))
    assert exist_ok.properties == {"old": "1"}
    driver.create_namespace(CreateNamespaceRequest(id=id, mode="Overwrite", properties={"new": "2"}))
    stored = glue.get_database(CatalogId=f"{ACCOUNT}:{catalog}", Name=database)["Database"]
    assert stored["Parameters"] == {"new": "2"}
    assert (stored["Description"], stored["LocationUri"]) == ("kept", "s3://bucket/db")

    with pytest.raises(NamespaceAlreadyExistsError):
        driver.create_namespace(CreateNamespaceRequest(id=[catalog]))
    driver.create_namespace(CreateNamespaceRequest(id=[catalog], mode="exist_ok"))
    driver.create_namespace(CreateNamespaceRequest(id=[catalog], mode="overwrite", properties={"c": "1"}))
    stored_catalog = glue.get_catalog(CatalogId=f"{ACCOUNT}:{catalog}")["Catalog"]
    assert stored_catalog["Parameters"] == {"c": "1"}
    assert stored_catalog["Description"] == "test catalog"
    with pytest.raises(NamespaceAlreadyExistsError):
        driver.create_namespace(CreateNamespaceRequest(id=[ACCOUNT]))
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[catalog, "x"], mode="Replace"))


def test_create_in_missing_parent_is_namespace_not_found(driver: GlueNamespace, namespace: tuple):
    with pytest.raises(NamespaceNotFoundError) as caught:
        driver.create_namespace(CreateNamespaceRequest(id=[unique("nocat"), "db"]))
    assert caught.value.code == ErrorCode.NAMESPACE_NOT_FOUND
    with pytest.raises(NamespaceNotFoundError):  # a database holds no namespaces
        driver.create_namespace(CreateNamespaceRequest(id=[*namespace, "deeper"]))
    with pytest.raises(NamespaceNotFoundError):
        driver.create_namespace(CreateNamespaceRequest(id=[ACCOUNT, unique("db"), "deeper"]))


def test_databases_of_one_child_catalog_check_the_catalog_once(driver: GlueNamespace,
                                                              control: GlueControl, catalog: str):
    with Counted(control) as counted:
        driver.create_namespace(CreateNamespaceRequest(id=[catalog, unique("a")]))
        driver.create_namespace(CreateNamespaceRequest(id=[catalog, unique("b")]))
    assert counted.by_operation == {"GetCatalog": 1, "CreateDatabase": 2}


def test_list_namespaces_at_each_level(driver: GlueNamespace, glue: Any, control: GlueControl,
                                       namespace: tuple):
    catalog, database = namespace
    root_level = driver.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert ACCOUNT in root_level and catalog in root_level
    assert root_level == sorted(root_level)

    nested = control.seed_catalog(f"{ACCOUNT}:{catalog}", "nested")
    assert nested == f"{ACCOUNT}:{catalog}/nested"
    assert driver.list_namespaces(ListNamespacesRequest(id=[catalog])).namespaces == sorted([database, "nested"])
    assert driver.list_namespaces(ListNamespacesRequest(id=[catalog, database])).namespaces == []
    assert driver.list_namespaces(ListNamespacesRequest(id=[catalog, "nested"])).namespaces == []

    root_db = unique("db")
    glue.create_database(DatabaseInput={"Name": root_db})
    # the root catalog lists its databases, never its child catalogs (those are level 1)
    root_children = driver.list_namespaces(ListNamespacesRequest(id=[ACCOUNT])).namespaces
    assert root_db in root_children and catalog not in root_children

    with pytest.raises(NamespaceNotFoundError):
        driver.list_namespaces(ListNamespacesRequest(id=[unique("nocat")]))
    with pytest.raises(NamespaceNotFoundError):
        driver.list_namespaces(ListNamespacesRequest(id=[catalog, unique("nodb")]))


def test_list_namespaces_pages_over_glue_pages(driver: GlueNamespace, glue: Any,
                                               control: GlueControl, catalog: str):
    names = sorted(unique(f"db{i:03}") for i in range(120))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}",
                                                     DatabaseInput={"Name": n, "Parameters": {"n": n}}),
                      names))
    with Counted(control) as counted:
        infos = list(driver.list_namespace_infos((catalog,)))
    assert [info.id for info in infos] == [(catalog, n) for n in names]
    assert all(info.properties == {"n": info.id[-1]} for info in infos)
    assert counted.by_operation == {"GetDatabases": 2, "GetCatalogs": 1}

    pages = all_pages(driver.list_namespaces, ListNamespacesRequest, [catalog], "namespaces", 50)
    assert [len(page) for page in pages] == [50, 50, 20]
    assert [name for page in pages for name in page] == names
    with pytest.raises(InvalidInputError):
        driver.list_namespaces(ListNamespacesRequest(id=[catalog], limit=0))


def test_many_namespaces_are_read_from_getdatabases_pages(driver: GlueNamespace, glue: Any,
                                                          control: GlueControl, catalog: str):
    """What a plan reads: the databases it names, one GetDatabases page for up to 100 of them
    instead of a GetDatabase each; a nested catalog and an absent name are still read alone."""
    names = sorted(unique(f"db{i:03}") for i in range(12))
    for name in names:
        glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}", DatabaseInput={"Name": name, "Parameters": {"n": name}})
    control.seed_catalog(f"{ACCOUNT}:{catalog}", "nested", {"Parameters": {"c": "1"}})
    ids = [(catalog, name) for name in names] + [(catalog, "nested"), (catalog, unique("absent"))]
    with Counted(control) as counted:
        infos = driver.get_namespace_infos(ids)
    assert [info.properties if info else None for info in infos] == \
        [{"n": name} for name in names] + [{"c": "1"}, None]
    assert counted.by_operation == {"GetDatabases": 1, "GetDatabase": 2, "GetCatalog": 2}
    with Counted(control) as single:
        assert driver.get_namespace_infos([(catalog, names[0])])[0].properties == {"n": names[0]}
    assert single.by_operation == {"GetDatabase": 1}


def test_describe_namespace_at_each_level(driver: GlueNamespace, glue: Any, control: GlueControl,
                                          catalog: str):
    database = unique("db")
    glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}",
                         DatabaseInput={"Name": database, "Parameters": {"k": "v"}})
    control.seed_catalog(f"{ACCOUNT}:{catalog}", "nested", {"Parameters": {"n": "1"}})

    with Counted(control) as database_calls:
        assert driver.describe_namespace(DescribeNamespaceRequest(id=[catalog, database])).properties == {"k": "v"}
    assert database_calls.by_operation == {"GetDatabase": 1}
    with Counted(control) as nested_calls:
        assert driver.describe_namespace(DescribeNamespaceRequest(id=[catalog, "nested"])).properties == {"n": "1"}
    assert nested_calls.by_operation == {"GetDatabase": 1, "GetCatalog": 1}
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[catalog])).properties == {}
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[ACCOUNT])).properties == {}
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[])).properties == {}
    driver.namespace_exists(NamespaceExistsRequest(id=[catalog, "nested"]))
    for missing in ([catalog, "nope"], [unique("nocat")], [unique("nocat"), "db"], [ACCOUNT, "x", "y"]):
        with pytest.raises(NamespaceNotFoundError):
            driver.describe_namespace(DescribeNamespaceRequest(id=missing))
        with pytest.raises(NamespaceNotFoundError):
            driver.namespace_exists(NamespaceExistsRequest(id=missing))
    assert driver.get_namespace_info((catalog, "nope")) is None
    assert driver.get_namespace_info((catalog, database)).properties == {"k": "v"}


def test_nested_catalog_chain(driver: GlueNamespace, glue: Any, control: GlueControl, catalog: str):
    control.seed_catalog(f"{ACCOUNT}:{catalog}", "child")
    driver.create_namespace(CreateNamespaceRequest(id=[catalog, "child", "db"], properties={"a": "b"}))
    assert glue.get_database(CatalogId=f"{ACCOUNT}:{catalog}/child", Name="db")["Database"]["Parameters"] == {"a": "b"}
    declare(driver, (catalog, "child", "db", "t"), "s3://bucket/t.lance")
    assert driver.list_tables(ListTablesRequest(id=[catalog, "child", "db"])).tables == ["t"]
    assert driver.list_tables(ListTablesRequest(id=[catalog, "child"])).tables == []
    with pytest.raises(NamespaceNotEmptyError):
        driver.drop_namespace(DropNamespaceRequest(id=[catalog, "child"]))


def test_non_default_root_catalog(make_driver, glue: Any, control: GlueControl, catalog: str):
    root = f"{ACCOUNT}:{catalog}"
    control.seed_catalog(root, "child")
    driver = make_driver(catalog_id=root)
    assert driver.list_namespaces(ListNamespacesRequest(id=[])).namespaces == sorted([root, "child"])
    driver.create_namespace(CreateNamespaceRequest(id=[root, "db"]))
    assert glue.get_database(CatalogId=root, Name="db")["Database"]["Name"] == "db"
    driver.create_namespace(CreateNamespaceRequest(id=["child", "db2"]))
    assert glue.get_database(CatalogId=f"{root}/child", Name="db2")
    with pytest.raises(UnsupportedOperationError):
        driver.create_namespace(CreateNamespaceRequest(id=["other"]))


def test_drop_namespace(driver: GlueNamespace, glue: Any, control: GlueControl, catalog: str):
    database = unique("db")
    driver.create_namespace(CreateNamespaceRequest(id=[catalog, database]))
    with pytest.raises(NamespaceNotEmptyError) as caught:
        driver.drop_namespace(DropNamespaceRequest(id=[catalog]))
    assert caught.value.code == ErrorCode.NAMESPACE_NOT_EMPTY

    create_foreign_table(glue, (catalog, database), "foreign")
    with pytest.raises(NamespaceNotEmptyError):  # any table counts, not only Lance tables
        driver.drop_namespace(DropNamespaceRequest(id=[catalog, database]))
    glue.delete_table(CatalogId=f"{ACCOUNT}:{catalog}", DatabaseName=database, Name="foreign")

    with pytest.raises(UnsupportedOperationError):
        driver.drop_namespace(DropNamespaceRequest(id=[catalog, database], behavior="Cascade"))
    with Counted(control) as counted:
        driver.drop_namespace(DropNamespaceRequest(id=[catalog, database]))
    assert counted.by_operation == {"GetDatabase": 1, "GetTables": 1, "DeleteDatabase": 1}
    with pytest.raises(NamespaceNotFoundError):
        driver.drop_namespace(DropNamespaceRequest(id=[catalog, database]))
    driver.drop_namespace(DropNamespaceRequest(id=[catalog, database], mode="Skip"))

    driver.drop_namespace(DropNamespaceRequest(id=[catalog]))
    with pytest.raises(ClientError):
        glue.get_catalog(CatalogId=f"{ACCOUNT}:{catalog}")
    driver.drop_namespace(DropNamespaceRequest(id=[catalog], mode="skip"))
    with pytest.raises(InvalidInputError):
        driver.drop_namespace(DropNamespaceRequest(id=[ACCOUNT]))


def test_update_namespace_properties_keeps_other_fields(driver: GlueNamespace, glue: Any, catalog: str):
    database = unique("db")
    glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}", DatabaseInput={
        "Name": database, "Description": "d", "LocationUri": "s3://b/db",
        "Parameters": {"keep": "1", "drop": "2", "change": "3"}})
    driver.update_namespace_properties((catalog, database), {"change": "4", "add": "5"}, ["drop"])
    stored = glue.get_database(CatalogId=f"{ACCOUNT}:{catalog}", Name=database)["Database"]
    assert stored["Parameters"] == {"keep": "1", "change": "4", "add": "5"}
    assert (stored["Description"], stored["LocationUri"]) == ("d", "s3://b/db")

    driver.update_namespace_properties((catalog,), {"owner": "me"}, [])
    stored_catalog = glue.get_catalog(CatalogId=f"{ACCOUNT}:{catalog}")["Catalog"]
    assert stored_catalog["Parameters"] == {"owner": "me"}
    assert stored_catalog["Description"] == "test catalog"
    with pytest.raises(NamespaceNotFoundError):
        driver.update_namespace_properties((catalog, "nope"), {"a": "b"}, [])


# --- tables --------------------------------------------------------------------------------------


def test_declare_table_as_the_spec_says(driver: GlueNamespace, glue: Any, control: GlueControl,
                                        namespace: tuple):
    table_id = (*namespace, "orders")
    with Counted(control) as counted:
        response = declare(driver, table_id, "s3://lake/orders.lance/", tier="gold")
    assert counted.by_operation == {"CreateTable": 1}
    assert response.location == "s3://lake/orders.lance"
    assert response.properties == {"tier": "gold", "table_type": "lance"}
    table = get_table(glue, table_id)
    assert table["TableType"] == "EXTERNAL_TABLE"
    assert table["Parameters"] == {"tier": "gold", "table_type": "lance"}
    assert table["StorageDescriptor"]["Location"] == "s3://lake/orders.lance"

    with pytest.raises(TableAlreadyExistsError) as caught:
        declare(driver, table_id, "s3://lake/other.lance")
    assert caught.value.code == ErrorCode.TABLE_ALREADY_EXISTS
    with pytest.raises(NamespaceNotFoundError):
        declare(driver, (namespace[0], "nodb", "t"), "s3://lake/t.lance")
    with pytest.raises(NamespaceNotFoundError):
        declare(driver, (unique("nocat"), "db", "t"), "s3://lake/t.lance")
    with pytest.raises(InvalidInputError):  # tables live in databases, not in catalogs
        declare(driver, (namespace[0], "t"), "s3://lake/t.lance")


def test_declare_without_location(make_driver, glue: Any, tmp_path: Path, namespace: tuple):
    catalog, database = namespace
    driver = make_driver(root=str(tmp_path / "root"))
    located = declare(driver, (catalog, database, "t1"))
    assert located.location == str(tmp_path / "root" / catalog / database / "t1.lance")

    glue.update_database(CatalogId=f"{ACCOUNT}:{catalog}", Name=database, DatabaseInput={
        "Name": database, "LocationUri": f"file://{tmp_path}/dbloc/"})
    assert declare(driver, (catalog, database, "t2")).location == str(tmp_path / "dbloc" / "t2.lance")

    no_root = make_driver(root=None)
    plain = unique("db")
    glue.create_database(CatalogId=f"{ACCOUNT}:{catalog}", DatabaseInput={"Name": plain})
    with pytest.raises(InvalidInputError, match="no `root`"):
        declare(no_root, (catalog, plain, "t"))


def test_list_tables_only_lance_sorted(driver: GlueNamespace, glue: Any, namespace: tuple):
    for name in ("b", "a", "c"):
        declare(driver, (*namespace, name), f"s3://lake/{name}")
    create_foreign_table(glue, namespace, "foreign")
    glue.create_table(CatalogId=f"{ACCOUNT}:{namespace[0]}", DatabaseName=namespace[1], TableInput={
        "Name": "upper", "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "LANCE"}})
    glue.create_table(CatalogId=f"{ACCOUNT}:{namespace[0]}", DatabaseName=namespace[1], TableInput={
        "Name": "managed", "TableType": "MANAGED_TABLE", "Parameters": {"table_type": "lance"}})
    assert driver.list_tables(ListTablesRequest(id=list(namespace))).tables == ["a", "b", "c", "upper"]
    with pytest.raises(NamespaceNotFoundError):
        driver.list_tables(ListTablesRequest(id=[namespace[0], "nodb"]))
    assert driver.list_tables(ListTablesRequest(id=[namespace[0]])).tables == []


@pytest.fixture(scope="module")
def big_database(glue_server: RunningServer) -> tuple[str, str]:
    """A database of the default catalog with 500 Lance tables."""
    glue = glue_client(glue_server)
    database = unique("big")
    glue.create_database(DatabaseInput={"Name": database})
    seed_lance_tables(glue, (ACCOUNT, database), [f"t{i:04}" for i in range(500)])
    return ACCOUNT, database


def test_reading_500_tables_costs_five_get_tables_pages(driver: GlueNamespace, control: GlueControl,
                                                        big_database: tuple):
    before = driver.api_calls
    with Counted(control) as counted:
        infos = list(driver.list_table_infos(big_database))
    assert len(infos) == 500
    assert infos[0] == TableInfo((*big_database, "t0000"), "s3://bucket/t0000.lance", {"table_type": "lance"})
    # ceil(500 / 100) GetTables pages; no GetDatabase, no per-table GetTable
    assert counted.by_operation == {"GetTables": 5}
    assert driver.api_calls - before == counted.total == 5


def test_list_tables_pages(driver: GlueNamespace, control: GlueControl, big_database: tuple):
    with Counted(control) as counted:
        pages = all_pages(driver.list_tables, ListTablesRequest, list(big_database), "tables", 200)
    assert [len(page) for page in pages] == [200, 200, 100]
    assert [name for page in pages for name in page] == [f"t{i:04}" for i in range(500)]
    # every page sorts the whole listing: 5 GetTables per page
    assert counted.by_operation == {"GetTables": 15}


def test_describe_table(make_driver, glue: Any, control: GlueControl, namespace: tuple):
    driver = make_driver(**{"storage.region": "us-west-2", "storage.aws_access_key_id": "k"})
    table_id = (*namespace, "t")
    declare(driver, table_id, "s3://lake/t.lance", owner="me")
    with Counted(control) as counted:
        response = driver.describe_table(DescribeTableRequest(id=list(table_id)))
    assert counted.by_operation == {"GetTable": 1}
    assert response.location == "s3://lake/t.lance"
    assert response.storage_options == {"region": "us-west-2", "aws_access_key_id": "k"}
    assert response.properties == {"owner": "me", "table_type": "lance"}
    assert response.version is None and response.var_schema is None
    driver.table_exists(TableExistsRequest(id=list(table_id)))

    create_foreign_table(glue, namespace, "foreign")
    with pytest.raises(InvalidInputError) as caught:
        driver.describe_table(DescribeTableRequest(id=[*namespace, "foreign"]))
    assert caught.value.code == ErrorCode.INVALID_INPUT
    with pytest.raises(InvalidInputError):
        driver.table_exists(TableExistsRequest(id=[*namespace, "foreign"]))
    for missing in ([*namespace, "nope"], [namespace[0], "nodb", "t"], [unique("nocat"), "db", "t"]):
        with pytest.raises(TableNotFoundError) as caught:
            driver.describe_table(DescribeTableRequest(id=missing))
        assert caught.value.code == ErrorCode.TABLE_NOT_FOUND
    with pytest.raises(UnsupportedOperationError):
        driver.describe_table(DescribeTableRequest(id=list(table_id), load_detailed_metadata=True))

    assert driver.get_table_info((*namespace, "nope")) is None
    foreign = driver.get_table_info((*namespace, "foreign"))
    assert foreign is not None and not foreign.is_lance
    assert driver.get_table_info(table_id) == TableInfo(
        table_id, "s3://lake/t.lance", {"owner": "me", "table_type": "lance"})


def test_deregister_table_keeps_data(driver: GlueNamespace, glue: Any, control: GlueControl,
                                     namespace: tuple, tmp_path: Path):
    location = tmp_path / "data.lance"
    lance.write_dataset(pa.table({"a": [1]}), str(location))
    table_id = (*namespace, "t")
    declare(driver, table_id, str(location), k="v")
    with Counted(control) as counted:
        response = driver.deregister_table(DeregisterTableRequest(id=list(table_id)))
    assert counted.by_operation == {"GetTable": 1, "DeleteTable": 1}
    assert (response.id, response.location) == (list(table_id), str(location))
    assert response.properties == {"k": "v", "table_type": "lance"}
    assert lance.dataset(str(location)).count_rows() == 1
    with pytest.raises(TableNotFoundError):
        driver.deregister_table(DeregisterTableRequest(id=list(table_id)))

    create_foreign_table(glue, namespace, "foreign")
    with pytest.raises(InvalidInputError):
        driver.deregister_table(DeregisterTableRequest(id=[*namespace, "foreign"]))
    assert get_table(glue, (*namespace, "foreign"))["Name"] == "foreign"


def test_register_table(driver: GlueNamespace, glue: Any, namespace: tuple):
    table_id = [*namespace, "t"]
    driver.register_table(RegisterTableRequest(id=table_id, location="s3://lake/a", properties={"p": "1"}))
    with pytest.raises(TableAlreadyExistsError):
        driver.register_table(RegisterTableRequest(id=table_id, location="s3://lake/b"))
    driver.register_table(RegisterTableRequest(id=table_id, location="s3://lake/b", mode="Overwrite",
                                               properties={"q": "2"}))
    table = get_table(glue, tuple(table_id))
    assert table["StorageDescriptor"]["Location"] == "s3://lake/b"
    assert table["Parameters"] == {"q": "2", "table_type": "lance"}


def test_update_table_properties_and_location_keep_the_rest(driver: GlueNamespace, glue: Any,
                                                            namespace: tuple):
    table_id = (*namespace, "t")
    declare(driver, table_id, "s3://lake/t", keep="1", drop="2", change="3")
    table_input = {k: v for k, v in get_table(glue, table_id).items()
                   if k in ("Name", "TableType", "Parameters", "StorageDescriptor")}
    table_input.update(Description="described", Owner="someone")
    table_input["StorageDescriptor"].update(
        Columns=[{"Name": "a", "Type": "bigint"}],
        SerdeInfo={"SerializationLibrary": "org.example.Serde"})
    glue.update_table(CatalogId=f"{ACCOUNT}:{namespace[0]}", DatabaseName=namespace[1], TableInput=table_input)

    sent = sent_requests(driver)
    driver.update_table_properties(table_id, {"change": "4", "add": "5"}, ["drop"])
    driver.update_table_location(table_id, "s3://lake/moved/")
    table = get_table(glue, table_id)
    assert table["Parameters"] == {"keep": "1", "change": "4", "add": "5", "table_type": "lance"}
    assert table["StorageDescriptor"]["Location"] == "s3://lake/moved"
    assert table["StorageDescriptor"]["Columns"] == [{"Name": "a", "Type": "bigint"}]
    assert table["StorageDescriptor"]["SerdeInfo"] == {"SerializationLibrary": "org.example.Serde"}
    assert (table["Description"], table["Owner"], table["TableType"]) == ("described", "someone", "EXTERNAL_TABLE")
    updates = [request["body"] for request in sent if request["headers"]["X-Amz-Target"] == "AWSGlue.UpdateTable"]
    assert len(updates) == 2 and all(b'"VersionId"' in body for body in updates)

    with pytest.raises(InvalidInputError):
        driver.update_table_properties(table_id, {}, ["table_type"])
    with pytest.raises(InvalidInputError):
        driver.update_table_properties(table_id, {"table_type": "iceberg"}, [])
    create_foreign_table(glue, namespace, "foreign")
    with pytest.raises(InvalidInputError):
        driver.update_table_properties((*namespace, "foreign"), {"a": "b"}, [])
    with pytest.raises(TableNotFoundError):
        driver.update_table_location((*namespace, "nope"), "s3://x")


def test_sixteen_threads_declare_and_describe(driver: GlueNamespace, control: GlueControl,
                                              namespace: tuple):
    names = [f"t{i:02}" for i in range(64)]
    before = driver.api_calls
    with Counted(control) as counted, ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: declare(driver, (*namespace, n), f"s3://lake/{n}", n=n), names))
        described = list(pool.map(
            lambda n: driver.describe_table(DescribeTableRequest(id=[*namespace, n])), names))
    assert [d.location for d in described] == [f"s3://lake/{n}" for n in names]
    assert [d.properties["n"] for d in described] == names
    assert driver.list_tables(ListTablesRequest(id=list(namespace))).tables == names
    assert counted.by_operation == {"CreateTable": 64, "GetTable": 64}
    assert driver.api_calls - before == 129  # and the GetTables of the listing


NAMES = ["with space", "ünïcødé_名前", "per%cent", "dot.ted", "dol$lar", "MixedCase"]


def test_names_round_trip(driver: GlueNamespace, glue: Any, catalog: str):
    for name in NAMES:
        namespace = (catalog, name)
        driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
        declare(driver, (*namespace, name), f"s3://lake/{uuid.uuid4().hex}")
        assert driver.describe_table(DescribeTableRequest(id=[*namespace, name])).location
        assert driver.list_tables(ListTablesRequest(id=list(namespace))).tables == [name.lower()]
    listed = driver.list_namespaces(ListNamespacesRequest(id=[catalog])).namespaces
    assert listed == sorted(name.lower() for name in NAMES)


@pytest.mark.parametrize("name", ["dot.ted", "a/b", "x:y", "line\nbreak", "n" * 256])
def test_names_glue_or_the_driver_reject(driver: GlueNamespace, name: str):
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[name]))  # a catalog name


@pytest.mark.parametrize("name", ["line\nbreak", "n" * 256, ""])
def test_database_and_table_names_glue_rejects(driver: GlueNamespace, namespace: tuple, name: str):
    with pytest.raises(InvalidInputError):
        driver.create_namespace(CreateNamespaceRequest(id=[namespace[0], name]))
    with pytest.raises(InvalidInputError):
        declare(driver, (*namespace, name), "s3://lake/x")


def test_pylance_writes_and_reads_through_the_driver(make_driver, root_namespace: tuple, tmp_path: Path):
    driver = make_driver(root=str(tmp_path / "lake"))
    table_id = [*root_namespace, "events"]
    written = lance.write_dataset(pa.table({"id": [1, 2, 3]}), namespace_client=driver, table_id=table_id)
    expected = tmp_path / "lake" / root_namespace[0] / root_namespace[1] / "events.lance"
    assert Path(written.uri) == expected
    lance.write_dataset(pa.table({"id": [4]}), namespace_client=driver, table_id=table_id, mode="append")
    read = lance.dataset(namespace_client=driver, table_id=table_id)
    assert sorted(read.to_table()["id"].to_pylist()) == [1, 2, 3, 4]
    assert driver.list_tables(ListTablesRequest(id=list(root_namespace))).tables == ["events"]


# --- errors --------------------------------------------------------------------------------------


def test_access_denied_is_permission_denied(driver: GlueNamespace, control: GlueControl,
                                            namespace: tuple, make_driver):
    control.inject_fault("AccessDeniedException", times=None, names=[namespace[1]])
    for call in (lambda: driver.describe_namespace(DescribeNamespaceRequest(id=list(namespace))),
                 lambda: driver.list_tables(ListTablesRequest(id=list(namespace))),
                 lambda: declare(driver, (*namespace, "t"), "s3://lake/t"),
                 lambda: driver.describe_table(DescribeTableRequest(id=[*namespace, "t"]))):
        with pytest.raises(PermissionDeniedError) as caught:
            call()
        assert caught.value.code == ErrorCode.PERMISSION_DENIED == 15
    control.clear_faults()
    other_account = make_driver(catalog_id="999999999999")
    with pytest.raises(PermissionDeniedError):
        other_account.list_namespaces(ListNamespacesRequest(id=["999999999999"]))


@pytest.mark.parametrize("code", ["UnrecognizedClientException", "ExpiredTokenException",
                                  "InvalidSignatureException"])
def test_bad_credentials_are_unauthenticated(make_driver, control: GlueControl, namespace: tuple, code: str):
    driver = make_driver(secret_access_key=SECRET)
    control.inject_fault(code, times=None, names=[namespace[1]], message=f"rejected {SECRET}")
    with pytest.raises(UnauthenticatedError) as caught:
        driver.describe_namespace(DescribeNamespaceRequest(id=list(namespace)))
    assert caught.value.code == ErrorCode.UNAUTHENTICATED == 16
    assert SECRET not in str(caught.value)


def test_throttling_is_retried_then_reported(driver: GlueNamespace, control: GlueControl, namespace: tuple):
    request = DescribeNamespaceRequest(id=list(namespace))
    control.inject_fault("ThrottlingException", times=2, operations=["GetDatabase"], names=[namespace[1]])
    before = driver.api_calls
    with Counted(control) as recovered:
        driver.describe_namespace(request)
    assert recovered.by_operation == {"GetDatabase": 3}
    assert driver.api_calls - before == 3  # retries are counted

    control.inject_fault("ThrottlingException", times=None, names=[namespace[1]])
    with Counted(control) as exhausted, pytest.raises(ThrottlingError) as caught:
        driver.describe_namespace(request)
    assert caught.value.code == ErrorCode.THROTTLING
    assert exhausted.total == 3  # 3 attempts, as botocore's standard mode


@pytest.mark.parametrize("code", ["InternalServiceException", "ServiceUnavailableException"])
def test_server_errors_are_retried_then_service_unavailable(driver: GlueNamespace, control: GlueControl,
                                                            namespace: tuple, code: str):
    control.inject_fault(code, times=1, names=[namespace[1]])
    assert driver.list_tables(ListTablesRequest(id=list(namespace))).tables == []
    control.inject_fault(code, times=None, names=[namespace[1]])
    with pytest.raises(ServiceUnavailableError) as caught:  # never an empty list
        driver.list_tables(ListTablesRequest(id=list(namespace)))
    assert caught.value.code == ErrorCode.SERVICE_UNAVAILABLE
    with pytest.raises(ServiceUnavailableError):
        list(driver.list_table_infos(namespace))


def test_failure_on_a_later_page_is_raised(driver: GlueNamespace, control: GlueControl,
                                           big_database: tuple):
    listing = driver.list_table_infos(big_database)
    first = [next(listing) for _ in range(100)]
    control.inject_fault("ServiceUnavailableException", times=None, operations=["GetTables"])
    with pytest.raises(ServiceUnavailableError):
        list(listing)
    assert len(first) == 100


def test_answers_with_every_kind_of_member_pass_the_answer_check(driver: GlueNamespace, glue: Any,
                                                                control: GlueControl, namespace: tuple):
    """The driver checks each answer against botocore's model (test_glue_answers.py); a rich
    table as moto stores and serialises it (nested structures, lists, maps, integers, booleans,
    timestamps) passes, in GetTable and GetTables alike."""
    column = {"Name": "a", "Type": "bigint", "Comment": "id", "Parameters": {"k": "v"}}
    glue.create_table(CatalogId=catalog_id(namespace[0]), DatabaseName=namespace[1], TableInput={
        "Name": "rich", "TableType": "EXTERNAL_TABLE", "Owner": "me", "Retention": 7,
        "Parameters": {"table_type": "lance"}, "PartitionKeys": [{"Name": "day", "Type": "date"}],
        "LastAccessTime": 1_700_000_000, "StorageDescriptor": {
            "Location": "s3://lake/rich.lance", "Columns": [column], "Compressed": False,
            "NumberOfBuckets": 4, "BucketColumns": ["a"], "SortColumns": [{"Column": "a", "SortOrder": 1}],
            "SerdeInfo": {"Name": "s", "SerializationLibrary": "x.Serde", "Parameters": {"p": "1"}},
            "SkewedInfo": {"SkewedColumnNames": ["a"], "SkewedColumnValues": ["1"],
                           "SkewedColumnValueLocationMaps": {"1": "s3://lake/skew"}},
            "StoredAsSubDirectories": True}})
    table_id = (*namespace, "rich")
    with Counted(control) as counted:
        assert driver.get_table_info(table_id).location == "s3://lake/rich.lance"
        assert [info.id for info in driver.list_table_infos(namespace)] == [table_id]
    assert counted.by_operation == {"GetTable": 1, "GetTables": 1}  # nothing sent again


def test_unreachable_endpoint_is_service_unavailable(make_driver):
    driver = make_driver(endpoint=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ServiceUnavailableError):
        driver.describe_namespace(DescribeNamespaceRequest(id=[ACCOUNT]))


def test_errors_are_lance_namespace_errors_with_codes(driver: GlueNamespace):
    with pytest.raises(LanceNamespaceError) as caught:
        driver.describe_namespace(DescribeNamespaceRequest(id=[unique("nocat")]))
    assert caught.value.code == ErrorCode.NAMESPACE_NOT_FOUND


# --- credentials ---------------------------------------------------------------------------------


class RecordingApp:
    """moto's server app that also keeps the form of every request (STS is a query protocol)."""

    def __init__(self) -> None:
        self.app = DomainDispatcherApplication(create_backend_app)
        self.requests: list[dict[str, str]] = []

    def __call__(self, environ: dict, start_response: Any) -> Any:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        self.requests.append(dict(urllib.parse.parse_qsl(body.decode())))
        return self.app(environ, start_response)

    def actions(self, action: str) -> list[dict[str, str]]:
        return [r for r in self.requests if r.get("Action") == action]


@pytest.fixture(scope="module")
def sts_server() -> Iterator[tuple[str, RecordingApp]]:
    app = RecordingApp()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", app
    server.shutdown()
    thread.join()


@pytest.fixture
def sts(sts_server: tuple[str, RecordingApp], monkeypatch: pytest.MonkeyPatch) -> RecordingApp:
    endpoint, app = sts_server
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", endpoint)
    app.requests.clear()
    sts_backends[ROLE_ACCOUNT]["aws"].assumed_roles.clear()
    return app


def signing_keys(driver: GlueNamespace) -> Callable[[], list[str]]:
    """The access key ids in the Authorization header of every Glue request from now on."""
    sent = sent_requests(driver)
    return lambda: [request["headers"]["Authorization"].split("Credential=")[1].split("/")[0] for request in sent]


def test_static_and_session_credentials(make_driver, root_namespace: tuple):
    driver = make_driver(access_key_id="AKIASTATIC", secret_access_key=SECRET, session_token="tok")
    keys = signing_keys(driver)
    driver.describe_namespace(DescribeNamespaceRequest(id=list(root_namespace)))
    credentials = driver.client.access.frozen_credentials()
    assert (credentials.access_key, credentials.secret_key, credentials.token) == ("AKIASTATIC", SECRET, "tok")
    assert keys() == ["AKIASTATIC"]


def test_default_credential_chain(make_driver, root_namespace: tuple, monkeypatch: pytest.MonkeyPatch,
                                  tmp_path: Path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFROMENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    driver = make_driver(access_key_id=None, secret_access_key=None, region=None)
    keys = signing_keys(driver)
    driver.describe_namespace(DescribeNamespaceRequest(id=list(root_namespace)))
    assert keys() == ["AKIAFROMENV"]


def test_assume_role_uses_the_role_and_refreshes_before_expiry(make_driver, sts: RecordingApp,
                                                               root_namespace: tuple):
    driver = make_driver(assume_role_arn=ROLE_ARN, assume_role_session_name="ls-test",
                         assume_role_external_id="ext-1", assume_role_region="us-west-2",
                         assume_role_timeout_sec="900")
    assert sts.requests == []  # nothing is fetched before the first Glue call
    keys = signing_keys(driver)
    request = DescribeNamespaceRequest(id=list(root_namespace))
    driver.describe_namespace(request)

    [assumed] = sts.actions("AssumeRole")
    assert assumed["RoleArn"] == ROLE_ARN
    assert (assumed["RoleSessionName"], assumed["ExternalId"], assumed["DurationSeconds"]) == (
        "ls-test", "ext-1", "900")
    [role] = sts_backends[ROLE_ACCOUNT]["aws"].assumed_roles
    assert keys() == [role.access_key_id] and role.access_key_id.startswith("ASIA")

    credentials = driver.client.access.credentials
    expiry = credentials._expiry_time
    margin = timedelta(seconds=900 // 4)
    credentials._time_fetcher = lambda: expiry - margin - timedelta(seconds=5)
    driver.describe_namespace(request)
    assert len(sts.actions("AssumeRole")) == 1 and keys()[-1] == role.access_key_id

    # inside the refresh margin, still before expiry: a new role session signs the next call
    credentials._time_fetcher = lambda: expiry - margin + timedelta(seconds=5)
    driver.describe_namespace(request)
    assert len(sts.actions("AssumeRole")) == 2
    renewed = sts_backends[ROLE_ACCOUNT]["aws"].assumed_roles[-1]
    assert keys()[-1] == renewed.access_key_id != role.access_key_id


def test_assume_role_refusal_is_reported(make_driver, sts: RecordingApp, root_namespace: tuple):
    driver = make_driver(assume_role_arn=ROLE_ARN, assume_role_session_name="s" * 65)
    with pytest.raises(InvalidInputError, match=r"^glue: AssumeRole on .* answered ValidationError"):
        driver.describe_namespace(DescribeNamespaceRequest(id=list(root_namespace)))


def test_root_catalog_resolved_once_through_sts(base_config: dict, glue_server: RunningServer,
                                                sts: RecordingApp, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", glue_server.endpoint)
    config = {k: v for k, v in base_config.items() if k not in ("endpoint", "catalog_id")}
    driver = GlueNamespace(**config)
    database = unique("db")
    driver.create_namespace(CreateNamespaceRequest(id=[ACCOUNT, database]))
    assert ACCOUNT in driver.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert driver.describe_namespace(DescribeNamespaceRequest(id=[ACCOUNT, database])).properties == {}
    assert len(sts.actions("GetCallerIdentity")) == 1
