"""Unity's grant rules, offline: privileges per securable, their spelling, principals, parent needs."""

from __future__ import annotations

import pytest

from lance_sync.drivers.unity.config import UnityConfig, UnityRules
from lance_sync.model.grants import ParentNeed

CONFIG = UnityConfig(endpoint="http://uc:8080", catalog="main")


def test_a_table_takes_select_and_modify():
    assert UnityRules.grant_privileges("table", ("main", "s", "t"), CONFIG) == {"SELECT", "MODIFY"}


def test_a_schema_takes_its_own_privileges_and_those_its_objects_inherit():
    privileges = UnityRules.grant_privileges("namespace", ("main", "s"), CONFIG)
    assert {"USE SCHEMA", "CREATE TABLE", "SELECT", "MODIFY"} <= privileges
    assert not privileges & {"USE CATALOG", "CREATE SCHEMA", "OWNER", "CREATE CATALOG"}


def test_a_catalog_takes_its_own_privileges_and_a_schema_s():
    privileges = UnityRules.grant_privileges("namespace", ("main",), CONFIG)
    assert {"USE CATALOG", "CREATE SCHEMA"} <= privileges
    assert UnityRules.grant_privileges("namespace", ("main", "s"), CONFIG) < privileges
    assert "OWNER" not in privileges and "CREATE CATALOG" not in privileges


@pytest.mark.parametrize("kind, id", [
    ("namespace", ()), ("namespace", ("main", "s", "t")), ("table", ("main", "s")), ("table", ("main",)),
])
def test_other_levels_take_nothing(kind, id):
    assert UnityRules.grant_privileges(kind, id, CONFIG) == frozenset()


@pytest.mark.parametrize("written", ["use_schema", "USE SCHEMA", "use schema", " Use  Schema ", "USE_SCHEMA"])
def test_privileges_are_spelled_as_uc_sends_them(written):
    assert UnityRules.canonical_privilege(written) == "USE SCHEMA"


def test_every_grantable_privilege_is_canonical():
    for id in (("main",), ("main", "s")):
        for privilege in UnityRules.grant_privileges("namespace", id, CONFIG):
            assert UnityRules.canonical_privilege(privilege.lower()) == privilege
    assert UnityRules.canonical_privilege("select") == "SELECT"


@pytest.mark.parametrize("principal, problem", [
    ("alice@example.com", None),
    ("", "empty"),
    ("   ", "empty"),
    (" alice@example.com", "spaces"),
])
def test_principals(principal, problem):
    found = UnityRules.check_principal(principal, CONFIG)
    assert (found is None) if problem is None else (problem in found)


def test_a_table_needs_use_schema_and_use_catalog():
    assert UnityRules.parent_needs("table", ("main", "s", "t"), CONFIG) == [
        ParentNeed(("main", "s"), frozenset({"USE SCHEMA"})), ParentNeed(("main",), frozenset({"USE CATALOG"}))]


def test_a_schema_needs_use_catalog_and_a_catalog_nothing():
    assert UnityRules.parent_needs("namespace", ("main", "s"), CONFIG) == [
        ParentNeed(("main",), frozenset({"USE CATALOG"}))]
    assert UnityRules.parent_needs("namespace", ("main",), CONFIG) == []


def test_parent_needs_are_grantable_where_they_are_needed():
    for need in UnityRules.parent_needs("table", ("main", "s", "t"), CONFIG):
        assert need.any_of <= UnityRules.grant_privileges("namespace", need.id, CONFIG)
