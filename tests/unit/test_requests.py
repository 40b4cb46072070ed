"""Requests as models or mappings, on every operation of every driver, read once in SyncNamespace."""

from __future__ import annotations

from pathlib import Path

import pytest
from lance_namespace import CreateNamespaceRequest, DeclareTableRequest, LanceNamespace
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers import BUILTIN_DRIVERS, driver_class
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.drivers.support.requests import OPERATIONS, as_request, implemented_operations


class DictWithModelDump(dict):
    """What lancedb's core passes for a request (a dict subclass with a model_dump)."""

    def model_dump(self) -> dict:
        return dict(self)


def test_the_operations_are_read_from_the_interface():
    assert OPERATIONS["declare_table"] is DeclareTableRequest
    assert {"create_namespace", "describe_table", "drop_table", "create_table", "list_tables"} <= set(OPERATIONS)
    assert "namespace_id" not in OPERATIONS


@pytest.mark.parametrize("backend_type", sorted(BUILTIN_DRIVERS))
def test_every_operation_of_every_driver_takes_mappings(backend_type: str):
    cls = driver_class(backend_type)
    for name in OPERATIONS:
        assert getattr(getattr(cls, name), "__lance_sync_adapted__", False), f"{backend_type}.{name}"
    # what each implements beyond the interface's refusals: the specs' eight operations at least
    assert {"create_namespace", "list_namespaces", "describe_namespace", "drop_namespace", "declare_table",
            "list_tables", "describe_table", "deregister_table"} <= set(implemented_operations(cls))


def test_as_request_takes_a_model_a_mapping_or_another_model():
    model = DeclareTableRequest(id=["a", "t"], location="/x")
    assert as_request(model, DeclareTableRequest) is model
    assert as_request(DictWithModelDump(id=["a", "t"], location="/x"), DeclareTableRequest) == model
    assert as_request({"id": ["a", "t"], "location": "/x", "unknown": 1}, DeclareTableRequest) == model
    converted = as_request(CreateNamespaceRequest(id=["a", "t"]), DeclareTableRequest)
    assert isinstance(converted, DeclareTableRequest) and converted.id == ["a", "t"]


def test_a_request_that_is_not_one_is_invalid_input():
    with pytest.raises(InvalidInputError, match="expected a DeclareTableRequest or a mapping"):
        as_request(["a", "t"], DeclareTableRequest)
    with pytest.raises(InvalidInputError, match=r"invalid DeclareTableRequest: id\.0"):
        as_request({"id": [1]}, DeclareTableRequest)


def test_the_dir_driver_runs_on_dict_requests(tmp_path: Path):
    driver = DirNamespace(root=str(tmp_path))
    driver.create_namespace(DictWithModelDump(id=["sales"], properties={"team": "a"}))
    driver.create_namespace(DictWithModelDump(id=["sales"], mode="ExistOk"))
    assert driver.describe_namespace({"id": ["sales"]}).properties == {"team": "a"}
    driver.declare_table({"id": ["sales", "orders"], "location": str(tmp_path / "orders.lance")})
    assert driver.list_tables({"id": ["sales"]}).tables == ["orders"]
    with pytest.raises(NamespaceNotFoundError):
        driver.declare_table({"id": ["missing", "t"]})
    driver.deregister_table({"id": ["sales", "orders"]})
    driver.drop_namespace({"id": ["sales"]})


def test_an_operation_the_driver_lacks_names_what_it_has(tmp_path: Path):
    driver = DirNamespace(root=str(tmp_path))
    with pytest.raises(UnsupportedOperationError) as refused:
        driver.create_table({"id": ["t"]}, b"")
    message = str(refused.value)
    assert message.startswith("dir: CreateTable is not supported by lance-sync's dir driver")
    assert "DeclareTable" in message and "DropTable" in message  # what it does implement
    assert LanceNamespace.create_table is not type(driver).create_table
