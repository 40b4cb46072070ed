"""Smoke tests of the project's Hive 3.x test server, driven by pymetastore."""

from __future__ import annotations

import pytest
from pymetastore.hive_metastore.ttypes import (
    Database,
    GetTableRequest,
    NoSuchObjectException,
)
from thrift.Thrift import TApplicationException

from tests.servers.hive3_server.names import parse_db_name, qualify_location
from tests.servers.hive_checks import (
    CATALOG_CHECKS,
    SHARED_CHECKS,
    Scratch,
    check_request_count,
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
