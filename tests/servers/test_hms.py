"""Smoke tests of the real Hive Metastore 2.3 test server, driven by pymetastore."""

from __future__ import annotations

import pytest
from pymetastore.hive_metastore.ttypes import (
    Catalog,
    CreateCatalogRequest,
    Database,
    DropCatalogRequest,
    GetCatalogRequest,
    HiveObjectRef,
    HiveObjectType,
    MetaException,
    NoSuchObjectException,
    PrincipalType,
    PrivilegeBag,
)
from thrift.Thrift import TApplicationException

from tests.servers.hive_checks import (
    SHARED_CHECKS,
    Scratch,
    check_request_count,
    external_table,
    grant,
    privilege,
    revoke,
    scratch_database,
    unique_name,
)

pytestmark = pytest.mark.servers


@pytest.fixture
def scratch(hms_server, tmp_path) -> Scratch:
    return Scratch.for_server(hms_server, tmp_path)


@pytest.mark.parametrize("check", SHARED_CHECKS, ids=lambda check: check.__name__)
def test_shared_behaviour(scratch, check):
    check(scratch)


def test_counts_requests(hms_server, scratch):
    check_request_count(hms_server, scratch)


def test_catalog_calls_are_unknown_methods(scratch):
    """HMS 2.3 has no catalogs: a Hive 3 driver sees "Invalid method name" for each call."""
    calls = [
        lambda client: client.get_catalogs(),
        lambda client: client.get_catalog(GetCatalogRequest(name="hive")),
        lambda client: client.create_catalog(CreateCatalogRequest(Catalog(
            name=unique_name("c"), locationUri=scratch.uri("c")))),
        lambda client: client.drop_catalog(DropCatalogRequest(name="hive")),
    ]
    with scratch.client() as client:
        for call in calls:
            with pytest.raises(TApplicationException) as raised:
                call(client)
            assert raised.value.type == TApplicationException.UNKNOWN_METHOD
            assert "Invalid method name" in str(raised.value.message)
        assert "default" in client.get_all_databases()  # the connection is still usable


def test_catalog_prefix_is_just_a_name(scratch):
    """2.3 does not parse "@catalog#database": it looks for a database of that name."""
    with scratch.client() as client, scratch_database(client, scratch) as database, \
            pytest.raises(NoSuchObjectException):
        client.get_database(f"@hive#{database}")


def test_dropping_a_missing_database(scratch):
    """HMS 3 answers NoSuchObjectException; 2.3 fails inside with a NullPointerException
    and answers MetaException. A driver must accept both (or look first)."""
    with scratch.client() as client, pytest.raises((MetaException, NoSuchObjectException)):
        client.drop_database(unique_name(), False, False)


def test_database_description_and_location_are_not_altered(scratch):
    """2.3's alter_database changes parameters and owner only; HMS 3 also takes a
    non-blank description and location."""
    with scratch.client() as client, scratch_database(client, scratch) as name:
        before = client.get_database(name)
        client.alter_database(name, Database(name=name, description="new", parameters={"a": "1"},
                                             locationUri=scratch.uri("elsewhere")))
        after = client.get_database(name)
        assert (after.description, after.locationUri, after.parameters) \
            == (before.description, before.locationUri, {"a": "1"})


def test_privilege_refusals_are_internal_errors(scratch):
    """2.3's HMSHandler wraps what ObjectStore throws in a RuntimeException: the client gets
    only "Internal error processing <call>" (HMS 3.1 answers a MetaException instead)."""
    alice = unique_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "SELECT"))
        refusals = [
            ("grant_revoke_privileges", lambda: grant(client, privilege(database, "t", alice, "SELECT"))),
            ("grant_privileges", lambda: client.grant_privileges(
                PrivilegeBag([privilege(database, "t", alice, "SELECT")]))),
            ("grant_revoke_privileges", lambda: revoke(client, privilege(database, "t", alice, "UPDATE"))),
            ("revoke_privileges", lambda: client.revoke_privileges(
                PrivilegeBag([privilege(database, "t", alice, "UPDATE")]))),
            ("grant_revoke_privileges", lambda: grant(client, privilege(
                database, "t", unique_name("role"), "SELECT", PrincipalType.ROLE))),
        ]
        for call, refusal in refusals:
            with pytest.raises(TApplicationException) as raised:
                refusal()
            assert raised.value.type == TApplicationException.INTERNAL_ERROR
            assert raised.value.message == f"Internal error processing {call}"


def test_privilege_answers_carry_no_catalog(scratch):
    """2.3 has no catalogs: catName is not read from a request nor set in an answer."""
    alice = unique_name("alice")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        with_catalog = privilege(database, None, alice, "SELECT")
        with_catalog.hiveObject.catName = unique_name("no_such_catalog")
        assert grant(client, with_catalog)
        [listed] = client.list_privileges(None, None, HiveObjectRef(
            objectType=HiveObjectType.DATABASE, dbName=database))
        assert listed.hiveObject.catName is None
        assert listed.authorizer is None
