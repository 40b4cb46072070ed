"""The Hive backend's grant rules, offline: privileges per securable, canonical spelling,
principal forms, parent needs (lance_sync.drivers.hive3.config)."""

from __future__ import annotations

import pytest

from lance_sync.drivers.hive3.config import Hive3Config, Hive3Rules, split_principal

CONFIG = Hive3Config.model_validate({"uri": "thrift://127.0.0.1:9083", "root": "/tmp/lance"})


def test_databases_take_the_legacy_authorizers_database_privileges():
    assert Hive3Rules.grant_privileges("namespace", ("hive", "sales"), CONFIG) == {
        "ALL", "ALTER", "CREATE", "DROP", "LOCK", "SELECT", "SHOW_DATABASE", "UPDATE"}


def test_tables_take_the_sql_standard_privileges():
    assert Hive3Rules.grant_privileges("table", ("hive", "sales", "orders"), CONFIG) == {
        "SELECT", "INSERT", "UPDATE", "DELETE", "ALL"}


@pytest.mark.parametrize(("kind", "id"), [
    ("namespace", ()), ("namespace", ("hive",)), ("namespace", ("hive", "sales", "x")),
    ("table", ("hive", "orders")),
])
def test_other_levels_have_no_grants(kind, id):
    assert Hive3Rules.grant_privileges(kind, id, CONFIG) == frozenset()


@pytest.mark.parametrize(("written", "canonical"), [
    ("select", "SELECT"), (" Insert ", "INSERT"), ("show_database", "SHOW_DATABASE"), ("ALL", "ALL"),
])
def test_privileges_are_spelled_upper_case(written, canonical):
    assert Hive3Rules.canonical_privilege(written) == canonical


@pytest.mark.parametrize(("principal", "parts"), [
    ("user:alice", ("user", "alice")),
    ("group:Data Analysts", ("group", "Data Analysts")),  # HMS keeps a name's case and spaces
    ("role:readers", ("role", "readers")),
    ("user:a:b", ("user", "a:b")),
])
def test_the_three_principal_forms(principal, parts):
    assert split_principal(principal) == parts
    assert Hive3Rules.check_principal(principal, CONFIG) is None


@pytest.mark.parametrize("principal", [
    "alice", "", "user:", "user: alice", "user:alice ", "User:alice", "service:alice", "users:alice", ":alice",
])
def test_other_principals_are_refused_naming_the_forms(principal):
    problem = Hive3Rules.check_principal(principal, CONFIG)
    assert problem is not None and "user:NAME, group:NAME or role:NAME" in problem, problem


@pytest.mark.parametrize(("kind", "id"), [("namespace", ("hive", "sales")), ("table", ("hive", "sales", "t"))])
def test_no_parent_needs(kind, id):
    assert Hive3Rules.parent_needs(kind, id, CONFIG) == []
