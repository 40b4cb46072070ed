"""Every backend, one suite: grants, as `capabilities().grants` says (lance_sync.drivers.base).

A backend with grants lists every principal's privileges on a namespace and a table in
canonical spelling, grants and revokes one principal's privileges without touching anyone
else's or the object, does so idempotently (a change sent again after its answer was lost
converges), and the independent client reads back what the driver wrote (and the driver what
the client wrote). One without grants refuses with UnsupportedOperation and its rules allow
no privilege anywhere, so `validate` refuses `grants:` there.
"""

from __future__ import annotations

import pytest
from lance_namespace import DeclareTableRequest
from lance_namespace.errors import (
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.base import Identifier, SyncNamespace
from lance_sync.model.grants import GrantMap, Securable
from tests.conformance.harness import Harness, new_namespace, write_dataset

pytestmark = pytest.mark.servers

KINDS: tuple[Securable, ...] = ("namespace", "table")


def securable(harness: Harness, driver: SyncNamespace, kind: Securable, **properties: str) -> Identifier:
    """A new namespace (with `properties`), or a new Lance table in a new namespace."""
    namespace = new_namespace(harness, driver, **properties)
    if kind == "namespace":
        return namespace
    name = harness.unique()
    location = harness.location(name)
    write_dataset(location)
    driver.declare_table(DeclareTableRequest(id=[*namespace, name], location=location))
    return (*namespace, name)


def ours(grants: GrantMap, principals: list[str]) -> GrantMap:
    """The grants of the test's principals (a backend may list others: owners, defaults)."""
    return {p: frozenset(privileges) for p, privileges in grants.items() if p in principals and privileges}


def with_grants(harness: Harness) -> SyncNamespace:
    driver = harness.driver()
    if not driver.capabilities().grants:
        pytest.skip(f"{harness.backend_type} has no grants")
    return driver


def test_a_backend_without_grants_refuses_them(harness: Harness):
    driver = harness.driver()
    if driver.capabilities().grants:
        pytest.skip(f"{harness.backend_type} has grants")
    namespace = new_namespace(harness, driver)
    with pytest.raises(UnsupportedOperationError):
        driver.list_grants("namespace", namespace)
    with pytest.raises(UnsupportedOperationError):
        driver.change_grants("namespace", namespace, "someone", frozenset({"SELECT"}), frozenset())
    assert driver.grant_privileges("namespace", namespace, driver.config) == frozenset()
    assert driver.grant_privileges("table", (*namespace, "t"), driver.config) == frozenset()


@pytest.mark.parametrize("kind", KINDS)
def test_grants_round_trip_through_the_independent_client(harness: Harness, kind: Securable):
    driver = with_grants(harness)
    id = securable(harness, driver, kind)
    principals = harness.grant_principals()
    first, second, third = harness.grant_examples(kind)
    assert {first, second, third} <= driver.grant_privileges(kind, id, driver.config)
    assert ours(driver.list_grants(kind, id), principals) == {}

    driver.change_grants(kind, id, principals[0], frozenset({first, second}), frozenset())
    driver.change_grants(kind, id, principals[1], frozenset({first}), frozenset())
    expected = {principals[0]: frozenset({first, second}), principals[1]: frozenset({first})}
    assert ours(driver.list_grants(kind, id), principals) == expected
    assert ours(harness.read_grants(kind, id), principals) == expected

    # revoke one privilege of one principal: nobody else's changes
    driver.change_grants(kind, id, principals[0], frozenset(), frozenset({second}))
    expected[principals[0]] = frozenset({first})
    assert ours(driver.list_grants(kind, id), principals) == expected
    assert ours(harness.read_grants(kind, id), principals) == expected


@pytest.mark.parametrize("kind", KINDS)
def test_changes_sent_again_converge(harness: Harness, kind: Securable):
    """A grant of what is held and a revoke of what is not are no-ops, not errors (a retry
    after a lost answer sends exactly that)."""
    driver = with_grants(harness)
    id = securable(harness, driver, kind)
    principals = harness.grant_principals()
    first, second, _ = harness.grant_examples(kind)
    for _ in range(2):
        driver.change_grants(kind, id, principals[0], frozenset({first, second}), frozenset())
    assert ours(driver.list_grants(kind, id), principals) == {principals[0]: frozenset({first, second})}
    for _ in range(2):
        driver.change_grants(kind, id, principals[0], frozenset(), frozenset({first, second}))
    assert ours(driver.list_grants(kind, id), principals) == {}
    assert ours(harness.read_grants(kind, id), principals) == {}


@pytest.mark.parametrize("kind", KINDS)
def test_grant_and_revoke_in_one_change(harness: Harness, kind: Securable):
    driver = with_grants(harness)
    id = securable(harness, driver, kind)
    principal = harness.grant_principals()[2]
    first, second, _ = harness.grant_examples(kind)  # two: a Unity table has only SELECT and MODIFY
    driver.change_grants(kind, id, principal, frozenset({first}), frozenset())
    driver.change_grants(kind, id, principal, frozenset({second}), frozenset({first}))
    assert ours(driver.list_grants(kind, id), [principal]) == {principal: frozenset({second})}
    assert ours(harness.read_grants(kind, id), [principal]) == {principal: frozenset({second})}


@pytest.mark.parametrize("kind", KINDS)
def test_grants_made_out_of_band_are_listed(harness: Harness, kind: Securable):
    driver = with_grants(harness)
    id = securable(harness, driver, kind)
    principal = harness.grant_principals()[1]
    first, second, _ = harness.grant_examples(kind)
    harness.grant_out_of_band(kind, id, principal, [first, second])
    assert ours(driver.list_grants(kind, id), [principal]) == {principal: frozenset({first, second})}
    driver.change_grants(kind, id, principal, frozenset(), frozenset({second}))
    assert ours(harness.read_grants(kind, id), [principal]) == {principal: frozenset({first})}


def test_grants_on_a_missing_object_are_not_found(harness: Harness):
    driver = with_grants(harness)
    namespace = new_namespace(harness, driver)
    principal = harness.grant_principals()[0]
    privilege = harness.grant_examples("table")[0]
    missing_table = (*namespace, harness.unique("missing"))
    with pytest.raises(TableNotFoundError):
        driver.list_grants("table", missing_table)
    with pytest.raises(TableNotFoundError):
        driver.change_grants("table", missing_table, principal, frozenset({privilege}), frozenset())
    missing_namespace = harness.new_namespace_id()
    with pytest.raises(NamespaceNotFoundError):
        driver.list_grants("namespace", missing_namespace)


def test_privilege_spelling_is_canonical(harness: Harness):
    """A manifest may write a privilege in lower case; the driver lists it canonically."""
    driver = with_grants(harness)
    first = harness.grant_examples("table")[0]
    assert driver.canonical_privilege(first.lower()) == first
    assert driver.canonical_privilege(f" {first} ") == first


def test_grants_follow_a_rename(harness: Harness):
    """A rename in place keeps the table, and so its grants (where the backend renames)."""
    driver = with_grants(harness)
    if not driver.capabilities().rename_table:
        pytest.skip(f"{harness.backend_type} renames by replacing")
    from lance_namespace import RenameTableRequest

    id = securable(harness, driver, "table")
    principal = harness.grant_principals()[0]
    first = harness.grant_examples("table")[0]
    driver.change_grants("table", id, principal, frozenset({first}), frozenset())
    new_name = harness.unique("renamed")
    driver.rename_table(RenameTableRequest(id=list(id), new_table_name=new_name))
    renamed = (*id[:-1], new_name)
    assert ours(driver.list_grants("table", renamed), [principal]) == {principal: frozenset({first})}
    assert ours(harness.read_grants("table", renamed), [principal]) == {principal: frozenset({first})}


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_of_managed_principals_round_trips_and_leaves_the_rest_alone(harness: Harness, kind: Securable):
    """The record of the principals lance-sync manages (`grants_record`, `write_grants_record`):
    none at first, written, changed and removed, with every other property of its place and of
    the object kept; a table's record is its own (two tables of one namespace do not share one).
    Fails on the code before records (602d6a3): drivers had no record."""
    driver = with_grants(harness)
    # a property besides the record, as lance-sync's owner mark is (Unity cannot remove a
    # schema's last property)
    id = securable(harness, driver, kind, team="sales")
    neighbour = securable(harness, driver, "table") if kind == "table" else None
    place = driver.grants_record_place(kind, id)
    read = driver.get_namespace_info if place.kind == "namespace" else driver.get_table_info
    before = read(place.id)
    assert before is not None
    alice, bob, _ = harness.grant_principals()
    assert driver.grants_record(kind, id) is None

    driver.write_grants_record(kind, id, frozenset({alice, bob}))
    assert driver.grants_record(kind, id) == {alice, bob}
    driver.write_grants_record(kind, id, frozenset({alice}))
    assert driver.grants_record(kind, id) == {alice}
    if neighbour is not None:
        assert driver.grants_record("table", neighbour) is None
    driver.write_grants_record(kind, id, None)
    assert driver.grants_record(kind, id) is None
    after = read(place.id)
    assert after is not None and after.properties == before.properties
    missing = harness.new_namespace_id()  # the record's place is missing
    with pytest.raises((NamespaceNotFoundError, TableNotFoundError)):
        driver.grants_record(kind, missing if kind == "namespace" else (*missing, "t"))
