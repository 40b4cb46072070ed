"""Smoke tests of the project's Hive 3.x test server, driven by pymetastore."""

from __future__ import annotations

import pytest
from pymetastore.hive_metastore.ttypes import (
    Database,
    DropCatalogRequest,
    GetTableRequest,
    HiveObjectRef,
    HiveObjectType,
    MetaException,
    NoSuchObjectException,
    PrincipalType,
    PrivilegeBag,
)
from thrift.Thrift import TApplicationException

from tests.servers.hive3_server.names import parse_db_name, qualify_location
from tests.servers.hive_checks import (
    CATALOG_CHECKS,
    SHARED_CHECKS,
    Scratch,
    check_request_count,
    external_table,
    grant,
    held,
    privilege,
    revoke,
    scratch_catalog,
    scratch_database,
    unique_name,
)

pytestmark = pytest.mark.servers


@pytest.fixture
def scratch(hive3_server, tmp_path) -> Scratch:
    return Scratch.for_server(hive3_server, tmp_path)


@pytest.mark.parametrize("check", SHARED_CHECKS + CATALOG_CHECKS,
                         ids=lambda check: check.__name__)
def test_behaviour(scratch, check):
    check(scratch)


def test_counts_requests(hive3_server, scratch):
    check_request_count(hive3_server, scratch)


def test_dropping_a_missing_database(scratch):
    with scratch.client() as client, pytest.raises(NoSuchObjectException):
        client.drop_database(unique_name(), False, False)


def test_altering_a_database_takes_description_and_location(scratch):
    with scratch.client() as client, scratch_database(client, scratch) as name:
        client.alter_database(name, Database(name=name, description="new", parameters={"a": "1"},
                                             locationUri=scratch.uri("elsewhere")))
        after = client.get_database(name)
        assert (after.description, after.locationUri, after.parameters) \
            == ("new", scratch.stored("elsewhere"), {"a": "1"})


def test_calls_it_does_not_implement_are_unknown_methods(hive3_server, scratch):
    """Answered like a Java Thrift server answers a method it lacks."""
    if hive3_server.external:
        pytest.skip("a real Hive 3 metastore implements every call")
    with scratch.client() as client:
        with pytest.raises(TApplicationException) as raised:
            client.get_table_meta("*", "*", [])
        assert raised.value.type == TApplicationException.UNKNOWN_METHOD
        assert raised.value.message == "Invalid method name: 'get_table_meta'"
        with pytest.raises(NoSuchObjectException):  # the connection is still usable
            client.get_table_req(GetTableRequest(dbName="default", tblName=unique_name()))


@pytest.mark.parametrize(("name", "parsed"), [
    ("sales", ("hive", "sales")),
    ("@lake#sales", ("lake", "sales")),
    ("@lake#", ("lake", None)),
    ("@lake#!", ("lake", "")),
    ("@lake", ("hive", "@lake")),  # no separator: an ordinary (invalid) name
    ("@lake#a#b", ("lake", "a#b")),
    (None, ("hive", None)),
])
def test_database_names_carry_catalogs_like_hms3(name, parsed):
    assert parse_db_name(name) == parsed


@pytest.mark.parametrize(("location", "stored"), [
    ("file:///data/t.lance/", "file:/data/t.lance"),
    ("file:/data//t.lance", "file:/data/t.lance"),
    ("/data/t.lance", "file:/data/t.lance"),
    ("s3://bucket/a//t.lance/", "s3://bucket/a/t.lance"),
    ("file:/", "file:/"),
])
def test_locations_are_normalised_like_hadoop_paths(location, stored):
    assert qualify_location(location) == stored


GOT = "Got exception: org.apache.hadoop.hive.metastore.api."


def test_privilege_refusals_are_meta_exceptions(scratch):
    """HMS 3.1's HMSHandler.grant_privileges and revoke_privileges turn ObjectStore's
    InvalidObjectException and NoSuchObjectException into MetaException("Got exception: <class>
    <message>") (MetaStoreUtils.logAndThrowMetaException); 2.3 answers an internal error."""
    alice, role = unique_name("alice"), unique_name("role")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        client.create_table(external_table(database, "t", scratch.uri(f"{database}_t")))
        assert grant(client, privilege(database, "t", alice, "SELECT"))
        refusals = [
            (lambda: grant(client, privilege(database, "t", alice, "SELECT")),
             f"InvalidObjectException SELECT is already granted on table [{database},t] by lance-sync"),
            (lambda: client.grant_privileges(PrivilegeBag([privilege(database, "t", alice, "SELECT")])),
             f"InvalidObjectException SELECT is already granted on table [{database},t] by lance-sync"),
            (lambda: revoke(client, privilege(database, "t", alice, "UPDATE")),
             f"InvalidObjectException No grant (UPDATE) found  on table t, database is {database}"),
            (lambda: revoke(client, privilege(database, None, alice, "UPDATE")),
             f"InvalidObjectException No database grant found for privileges UPDATE on database {database}"),
            (lambda: grant(client, privilege(database, "t", role, "SELECT", PrincipalType.ROLE)),
             f"NoSuchObjectException Role {role} does not exist"),
            (lambda: grant(client, privilege("missing_db", None, alice, "SELECT")),
             "NoSuchObjectException There is no database hive.missing_db"),
        ]
        for refusal, message in refusals:
            with pytest.raises(MetaException) as raised:
                refusal()
            assert raised.value.message == GOT + message
        assert held(client, database, "t") == {(alice, PrincipalType.USER, "SELECT", "lance-sync", False)}


def test_privileges_are_per_catalog(scratch):
    """catName picks the catalog (unset: "hive"), and answers carry it."""
    alice = unique_name("alice")
    with scratch.client() as client, scratch_catalog(client, scratch) as catalog:
        client.create_table(external_table("default", "t", scratch.uri(f"{catalog}_t"), catalog=catalog))
        in_catalog = privilege("default", "t", alice, "SELECT")
        in_catalog.hiveObject.catName = catalog
        assert grant(client, in_catalog)
        assert held(client, "default", "t") == set()  # hive.default.t: no such table
        ref = HiveObjectRef(objectType=HiveObjectType.TABLE, dbName="default", objectName="t",
                            catName=catalog.upper())
        [listed] = client.list_privileges(None, None, ref)
        assert (listed.hiveObject.catName, listed.hiveObject.dbName, listed.hiveObject.objectName) \
            == (catalog, "default", "t")
        client.drop_table(f"@{catalog}#default", "t", False)
        assert client.list_privileges(None, None, ref) == []
        client.drop_catalog(DropCatalogRequest(name=catalog))
    with scratch.client() as client, scratch_database(client, scratch) as database:
        assert grant(client, privilege(database, None, alice, "SELECT"))
        [listed] = client.list_privileges(alice, PrincipalType.USER, HiveObjectRef(
            objectType=HiveObjectType.DATABASE, dbName=database))
        assert listed.hiveObject.catName == "hive"
        everything = client.list_privileges(alice, PrincipalType.USER, HiveObjectRef())
        assert [found.hiveObject.dbName for found in everything] == [database]


def test_privileges_on_other_objects_are_not_kept(hive3_server, scratch):
    """Only DATABASE and TABLE objects: GLOBAL lists nothing, PARTITION and COLUMN are refused."""
    if hive3_server.external:
        pytest.skip("a real Hive 3 metastore keeps them")
    with scratch.client() as client, scratch_database(client, scratch) as database:
        assert client.list_privileges(None, None, HiveObjectRef(objectType=HiveObjectType.GLOBAL)) == []
        column = privilege(database, "t", unique_name("alice"), "SELECT")
        column.hiveObject.objectType = HiveObjectType.COLUMN
        with pytest.raises(MetaException):
            grant(client, column)
