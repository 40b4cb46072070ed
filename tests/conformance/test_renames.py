"""Every backend, one suite: RenameTable and in-place location changes, as `capabilities()` says.

A backend with `rename_table` renames a Lance table keeping it (location, properties, data,
and what the independent client shows as its identity: `Harness.table_identity`), and moves it
to another namespace where `move_table` says so; one without refuses with UnsupportedOperation
(the planner replaces there). The same for `update_table_location`. The errors come before any
change, and a rename sent again after it was carried out meets TableNotFound.
"""

from __future__ import annotations

import lance
import pytest
from lance_namespace import DeclareTableRequest, RenameTableRequest
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness, new_namespace, write_dataset

pytestmark = pytest.mark.servers

PROPERTIES = {"tier": "gold"}


def declared_table(harness: Harness, driver: SyncNamespace) -> tuple[Identifier, str]:
    """A Lance dataset of 3 rows, registered with PROPERTIES in a new namespace; then the wait
    that makes an identity made anew differ (`Harness.identity_resolution_seconds`)."""
    namespace = new_namespace(harness, driver)
    name = harness.unique()
    location = harness.location(name)
    write_dataset(location)
    driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=location, properties=PROPERTIES))
    harness.wait_out_identity_resolution()
    return (*namespace, name), location


def rename(driver: SyncNamespace, source: Identifier, name: str, namespace: Identifier | None = None) -> None:
    driver.rename_table(RenameTableRequest(id=list(source), new_table_name=name,
                                           new_namespace_id=list(namespace) if namespace is not None else None))


def check_kept(harness: Harness, driver: SyncNamespace, table_id: Identifier, location: str,
               identity: object, dataset_version: int) -> None:
    """The table under `table_id` is the one that was: location, properties, identity, data."""
    harness.check_lance_table(table_id, location, PROPERTIES)
    info = driver.get_table_info(table_id)
    assert info is not None and normalize_location(info.location) == normalize_location(location)
    assert harness.table_identity(table_id) == identity
    assert (lance.dataset(location).version, lance.dataset(location).count_rows()) == (dataset_version, 3)


def test_rename_keeps_the_table(harness: Harness):
    driver = harness.driver()
    table_id, location = declared_table(harness, driver)
    new_name = harness.unique("renamed")
    if not driver.capabilities().rename_table:
        with pytest.raises(UnsupportedOperationError):
            rename(driver, table_id, new_name)
        assert driver.get_table_info(table_id) is not None
        return
    identity, version = harness.table_identity(table_id), lance.dataset(location).version
    rename(driver, table_id, new_name)
    check_kept(harness, driver, (*table_id[:-1], new_name), location, identity, version)
    assert driver.get_table_info(table_id) is None


def test_move_keeps_the_table(harness: Harness):
    driver = harness.driver()
    capabilities = driver.capabilities()
    if not capabilities.rename_table:
        pytest.skip("the backend has no rename (test_rename_keeps_the_table checks the refusal)")
    table_id, location = declared_table(harness, driver)
    other = new_namespace(harness, driver)
    assert other[:capabilities.move_fixed_levels] == table_id[:capabilities.move_fixed_levels]
    if not capabilities.move_table:
        with pytest.raises(UnsupportedOperationError):
            rename(driver, table_id, table_id[-1], other)
        return
    identity, version = harness.table_identity(table_id), lance.dataset(location).version
    rename(driver, table_id, table_id[-1], other)
    check_kept(harness, driver, (*other, table_id[-1]), location, identity, version)
    assert driver.get_table_info(table_id) is None
    assert [info.id for info in driver.list_table_infos(other)] == [(*other, table_id[-1])]


def test_rename_errors_come_before_any_change(harness: Harness):
    driver = harness.driver()
    capabilities = driver.capabilities()
    if not capabilities.rename_table:
        pytest.skip("the backend has no rename")
    table_id, location = declared_table(harness, driver)
    namespace = table_id[:-1]
    taken = harness.unique("taken")
    driver.declare_table(DeclareTableRequest(id=[*namespace, taken], location=harness.location(taken)))
    with pytest.raises(TableNotFoundError):
        rename(driver, (*namespace, "absent"), harness.unique())
    with pytest.raises(TableAlreadyExistsError):
        rename(driver, table_id, taken)
    if capabilities.move_table:
        with pytest.raises(NamespaceNotFoundError):
            rename(driver, table_id, harness.unique(), harness.new_namespace_id())
    with pytest.raises(InvalidInputError):
        rename(driver, table_id, table_id[-1])
    if harness.behaviour.foreign_table_is_invalid_input:
        foreign = harness.unique("foreign")
        harness.create_foreign_table(namespace, foreign)
        with pytest.raises(InvalidInputError):
            rename(driver, (*namespace, foreign), harness.unique())
        with pytest.raises(TableAlreadyExistsError):
            rename(driver, table_id, foreign)
    harness.check_lance_table(table_id, location, PROPERTIES)
    assert driver.get_table_info((*namespace, taken)) is not None


def test_a_repeated_rename_meets_table_not_found(harness: Harness):
    """What apply's runner meets when it sends a rename again after losing the first answer:
    the source is gone and the destination holds the table at the source's location."""
    driver = harness.driver()
    if not driver.capabilities().rename_table:
        pytest.skip("the backend has no rename")
    table_id, location = declared_table(harness, driver)
    new_name = harness.unique("renamed")
    rename(driver, table_id, new_name)
    with pytest.raises(TableNotFoundError):
        rename(driver, table_id, new_name)
    info = driver.get_table_info((*table_id[:-1], new_name))
    assert info is not None and normalize_location(info.location) == normalize_location(location)


@pytest.mark.parametrize("character", [" ", "%", ".", "$", "é"], ids=["space", "percent", "dot", "dollar", "unicode"])
def test_rename_to_names_with_special_characters(harness: Harness, character: str):
    driver = harness.driver()
    if not driver.capabilities().rename_table:
        pytest.skip("the backend has no rename")
    if character not in harness.behaviour.name_characters:
        pytest.skip(f"the backend does not accept {character!r} in names")
    table_id, location = declared_table(harness, driver)
    new_name = f"t{character}{harness.unique('y')}"
    rename(driver, table_id, new_name)
    info = driver.get_table_info((*table_id[:-1], new_name))
    assert info is not None and normalize_location(info.location) == normalize_location(location)


def test_location_change_in_place_keeps_the_table(harness: Harness):
    driver = harness.driver()
    table_id, location = declared_table(harness, driver)
    moved = harness.location(harness.unique("moved"))
    if not driver.capabilities().update_table_location:
        with pytest.raises(UnsupportedOperationError):
            driver.update_table_location(table_id, moved)
        harness.check_lance_table(table_id, location, PROPERTIES)
        return
    identity = harness.table_identity(table_id)
    driver.update_table_location(table_id, moved)
    harness.check_lance_table(table_id, moved, PROPERTIES)
    assert harness.table_identity(table_id) == identity
    with pytest.raises(TableNotFoundError):
        driver.update_table_location((*table_id[:-1], "absent"), moved)
