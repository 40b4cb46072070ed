"""Every backend, one suite: each Lance Namespace operation, its errors, names, paging, threads.

The suite talks only to the driver; `harness.check_lance_table` looks through the
backend's independent client (pyiceberg, boto3, pymetastore, unitycatalog-client).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import lance
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
    RegisterTableRequest,
)
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness, new_namespace, write_dataset

pytestmark = pytest.mark.servers


def all_names(call, request_type, id, attribute: str, limit: int | None = None) -> list[str]:
    names, token = [], None
    while True:
        response = call(request_type(id=list(id), page_token=token, limit=limit))
        names.extend(getattr(response, attribute))
        token = response.page_token
        if not token:
            return names


# --- namespaces -------------------------------------------------------------------------------

def test_namespace_lifecycle(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver, team="sales")
    described = driver.describe_namespace(DescribeNamespaceRequest(id=list(namespace)))
    assert described.properties.get("team") == "sales"
    assert namespace[-1] in all_names(driver.list_namespaces, ListNamespacesRequest, namespace[:-1], "namespaces")
    with pytest.raises(NamespaceAlreadyExistsError):
        driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    driver.drop_namespace(DropNamespaceRequest(id=list(namespace)))
    with pytest.raises(NamespaceNotFoundError):
        driver.describe_namespace(DescribeNamespaceRequest(id=list(namespace)))
    assert driver.get_namespace_info(namespace) is None


def test_drop_missing_namespace(harness: Harness):
    driver = harness.driver()
    missing = harness.new_namespace_id()
    if harness.behaviour.drop_missing_namespace_succeeds:
        driver.drop_namespace(DropNamespaceRequest(id=list(missing)))
    else:
        with pytest.raises(NamespaceNotFoundError):
            driver.drop_namespace(DropNamespaceRequest(id=list(missing)))
    driver.drop_namespace(DropNamespaceRequest(id=list(missing), mode="Skip"))


def test_create_modes_keep_or_overwrite_an_existing_namespace(harness: Harness):
    """ExistOk keeps the namespace as it is; Overwrite replaces its properties, never the namespace."""
    driver = harness.driver()
    namespace = new_namespace(harness, driver, team="a", keep="1")
    name = harness.unique()
    driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=harness.location(name)))
    kept = driver.create_namespace(CreateNamespaceRequest(id=list(namespace), mode="ExistOk",
                                                          properties={"team": "b"}))
    assert {k: kept.properties.get(k) for k in ("team", "keep")} == {"team": "a", "keep": "1"}
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace), mode="Overwrite", properties={"team": "c"}))
    properties = driver.get_namespace_info(namespace).properties
    assert {k: properties.get(k) for k in ("team", "keep")} == {"team": "c", "keep": None}
    assert driver.get_table_info((*namespace, name)) is not None


def test_cascade_drop_keeps_table_data(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    location = harness.location(name)
    write_dataset(location)
    driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=location))
    cascade = DropNamespaceRequest(id=list(namespace), behavior="Cascade")
    if harness.behaviour.drop_cascade:
        driver.drop_namespace(cascade)
        assert driver.get_namespace_info(namespace) is None
    else:
        with pytest.raises(UnsupportedOperationError):
            driver.drop_namespace(cascade)
        assert driver.get_table_info((*namespace, name)) is not None
    assert lance.dataset(location).count_rows() == 3


def test_describe_missing_namespace(harness: Harness):
    with pytest.raises(NamespaceNotFoundError):
        harness.driver().describe_namespace(DescribeNamespaceRequest(id=list(harness.new_namespace_id())))


def test_drop_non_empty_namespace_is_refused(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=harness.location(name)))
    with pytest.raises(NamespaceNotEmptyError):
        driver.drop_namespace(DropNamespaceRequest(id=list(namespace)))
    assert driver.get_namespace_info(namespace) is not None


def test_namespace_properties_update(harness: Harness):
    driver = harness.driver()
    if not driver.capabilities().update_namespace_properties:
        pytest.skip("the backend cannot update namespace properties")
    namespace = new_namespace(harness, driver, keep="1", change="old", drop="x")
    driver.update_namespace_properties(namespace, {"change": "new", "add": "2"}, ["drop"])
    properties = driver.get_namespace_info(namespace).properties
    assert {k: properties.get(k) for k in ("keep", "change", "add", "drop")} == \
        {"keep": "1", "change": "new", "add": "2", "drop": None}


def test_list_namespace_infos_carries_properties(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver, marker="here")
    infos = {info.id: info for info in driver.list_namespace_infos(namespace[:-1])}
    assert infos[namespace].properties.get("marker") == "here"


# --- tables -----------------------------------------------------------------------------------

def test_table_lifecycle_keeps_data(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    location = harness.location(name)
    write_dataset(location)
    table_id = [*namespace, name]
    driver.declare_table(DeclareTableRequest(id=table_id, location=location, properties={"tier": "gold"}))
    described = driver.describe_table(DescribeTableRequest(id=table_id))
    assert normalize_location(described.location) == normalize_location(location)
    assert described.properties.get("tier") == "gold"
    harness.check_lance_table(tuple(table_id), location, {"tier": "gold"})
    assert name in all_names(driver.list_tables, ListTablesRequest, namespace, "tables")
    with pytest.raises(TableAlreadyExistsError):
        driver.declare_table(DeclareTableRequest(id=table_id, location=location))
    driver.deregister_table(DeregisterTableRequest(id=table_id))
    with pytest.raises(TableNotFoundError):
        driver.describe_table(DescribeTableRequest(id=table_id))
    assert driver.get_table_info(tuple(table_id)) is None
    assert lance.dataset(location).count_rows() == 3


def test_register_modes(harness: Harness):
    """Create refuses a name that is taken; Overwrite points the table at the new location."""
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    table_id = [*namespace, name]
    first, second = harness.location(f"{name}_a"), harness.location(f"{name}_b")
    driver.register_table(RegisterTableRequest(id=table_id, location=first, properties={"v": "1"}))
    with pytest.raises(TableAlreadyExistsError):
        driver.register_table(RegisterTableRequest(id=table_id, location=second))
    driver.register_table(RegisterTableRequest(id=table_id, location=second, mode="Overwrite",
                                               properties={"v": "2"}))
    info = driver.get_table_info(tuple(table_id))
    assert normalize_location(info.location) == normalize_location(second)
    assert info.properties.get("v") == "2"


def test_table_errors(harness: Harness):
    driver = harness.driver()
    missing_namespace = harness.new_namespace_id()
    with pytest.raises(NamespaceNotFoundError):
        driver.declare_table(DeclareTableRequest(id=[*missing_namespace, "t"], location=harness.location("t")))
    namespace = new_namespace(harness, driver)
    with pytest.raises(TableNotFoundError):
        driver.describe_table(DescribeTableRequest(id=[*namespace, "absent"]))
    with pytest.raises(TableNotFoundError):
        driver.deregister_table(DeregisterTableRequest(id=[*namespace, "absent"]))


def test_foreign_table_is_not_a_lance_table(harness: Harness):
    if not harness.behaviour.foreign_table_is_invalid_input:
        pytest.skip("the backend has no non-Lance tables")
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique("foreign")
    harness.create_foreign_table(namespace, name)
    with pytest.raises(InvalidInputError):
        driver.describe_table(DescribeTableRequest(id=[*namespace, name]))
    with pytest.raises(InvalidInputError):
        driver.deregister_table(DeregisterTableRequest(id=[*namespace, name]))
    with pytest.raises(InvalidInputError):  # Overwrite replaces Lance tables only
        driver.register_table(RegisterTableRequest(id=[*namespace, name], location=harness.location(name),
                                                   mode="Overwrite"))
    assert name not in all_names(driver.list_tables, ListTablesRequest, namespace, "tables")
    info = driver.get_table_info((*namespace, name))
    assert info is not None and not info.is_lance


def test_table_properties_update(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    table_id = (*namespace, name)
    driver.declare_table(DeclareTableRequest(id=list(table_id), location=harness.location(name),
                                             properties={"keep": "1", "change": "old", "drop": "x"}))
    if not driver.capabilities().update_table_properties:
        pytest.skip("the backend cannot update table properties (the planner replaces instead)")
    driver.update_table_properties(table_id, {"change": "new", "add": "2"}, ["drop"])
    properties = driver.get_table_info(table_id).properties
    assert {k: properties.get(k) for k in ("keep", "change", "add", "drop")} == \
        {"keep": "1", "change": "new", "add": "2", "drop": None}


def test_list_table_infos_carries_location_and_properties(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=harness.location(name),
                                             properties={"tier": "gold"}))
    infos = {info.id: info for info in driver.list_table_infos(namespace)}
    info = infos[(*namespace, name)]
    assert normalize_location(info.location) == normalize_location(harness.location(name))
    assert info.properties.get("tier") == "gold" and info.is_lance


def test_pagination_follows_every_page(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    names = sorted(harness.unique(f"p{i}") for i in range(7))
    for name in names:
        driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=harness.location(name)))
    listed = all_names(driver.list_tables, ListTablesRequest, namespace, "tables", limit=3)
    assert sorted(listed) == names and len(listed) == len(set(listed))
    assert sorted(i.id[-1] for i in driver.list_table_infos(namespace)) == names


@pytest.mark.parametrize("character", [" ", "%", ".", "$", "é"], ids=["space", "percent", "dot", "dollar", "unicode"])
def test_names_round_trip(harness: Harness, character: str):
    if character not in harness.behaviour.name_characters:
        pytest.skip(f"the backend does not accept {character!r} in names")
    driver = harness.driver()
    namespace_name = f"ns{character}{harness.unique('x')}"
    namespace = new_namespace(harness, driver, namespace_name)
    table_name = f"t{character}{harness.unique('y')}"
    table_id = [*namespace, table_name]
    location = harness.location(harness.unique())
    driver.declare_table(DeclareTableRequest(id=table_id, location=location))
    assert namespace[-1] in all_names(driver.list_namespaces, ListNamespacesRequest, namespace[:-1], "namespaces")
    assert table_name in all_names(driver.list_tables, ListTablesRequest, namespace, "tables")
    described = driver.describe_table(DescribeTableRequest(id=table_id))
    assert normalize_location(described.location) == normalize_location(location)
    driver.deregister_table(DeregisterTableRequest(id=table_id))
    driver.drop_namespace(DropNamespaceRequest(id=list(namespace)))


def test_sixteen_threads_declare_and_describe_at_once(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    names = [harness.unique(f"c{i}") for i in range(48)]

    def declare_then_describe(name: str) -> str:
        driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=harness.location(name),
                                                 properties={"name": name}))
        return driver.describe_table(DescribeTableRequest(id=[*namespace, name])).properties["name"]

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(declare_then_describe, names)) == names
    assert sorted(all_names(driver.list_tables, ListTablesRequest, namespace, "tables")) == sorted(names)


def test_pylance_writes_and_reads_through_the_driver(harness: Harness):
    driver = harness.driver()
    namespace = new_namespace(harness, driver)
    table_id = [*namespace, harness.unique("w")]
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array(["a", "b"])})
    lance.write_dataset(data, namespace_client=driver, table_id=table_id)
    assert lance.dataset(namespace_client=driver, table_id=table_id).to_table().equals(data)
