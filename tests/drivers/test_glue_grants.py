"""The Glue driver's grants (Lake Formation permissions) against the Glue test server, beyond
the shared suite (tests/conformance/test_grants.py): paging, the grant option, garbled and
failed answers, a revoke whose answer was lost, catalogs, and `lakeformation_endpoint`.

boto3's `lakeformation` client is the independent client that sets up and checks grants.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    TableNotFoundError,
)

from lance_sync.drivers.glue import grants as glue_grants
from lance_sync.drivers.glue.driver import GlueNamespace
from lance_sync.drivers.support.retry import BadAnswerError
from tests.servers.base import RunningServer
from tests.servers.faults import FaultProxy, proxy_fixture
from tests.servers.glue import GlueControl, glue_client, lakeformation_client

pytestmark = pytest.mark.servers

ACCOUNT = "123456789012"
ANALYSTS = f"arn:aws:iam::{ACCOUNT}:role/analysts"
AUDITOR = f"arn:aws:iam::{ACCOUNT}:user/auditor"

glue_proxy = proxy_fixture("glue_server")


def unique(prefix: str = "g") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def settings(server: RunningServer, **extra: Any) -> dict[str, Any]:
    return {"endpoint": server.endpoint, "catalog_id": ACCOUNT, "region": server.extra["region"],
            "access_key_id": server.extra["access_key_id"],
            "secret_access_key": server.extra["secret_access_key"], **extra}


@pytest.fixture
def control(glue_server: RunningServer) -> Iterator[GlueControl]:
    control = GlueControl(glue_server.endpoint)
    yield control
    control.clear_faults()


@pytest.fixture
def database(glue_server: RunningServer) -> Iterator[str]:
    glue = glue_client(glue_server)
    name = unique("db")
    glue.create_database(DatabaseInput={"Name": name})
    yield name
    glue.delete_database(Name=name)


@pytest.fixture
def table(glue_server: RunningServer, database: str) -> str:
    name = unique("t")
    glue_client(glue_server).create_table(DatabaseName=database, TableInput={
        "Name": name, "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "lance"},
        "StorageDescriptor": {"Location": f"file:///tmp/{name}.lance"}})
    return name


def driver_for(server: RunningServer, **extra: Any) -> GlueNamespace:
    driver = GlueNamespace(**settings(server, **extra))
    driver.client.sleep = lambda _: None
    return driver


def database_resource(database: str) -> dict[str, Any]:
    return {"Database": {"CatalogId": ACCOUNT, "Name": database}}


def read_back(server: RunningServer, resource: dict[str, Any]) -> list[dict[str, Any]]:
    answer = lakeformation_client(server).list_permissions(Resource=resource, MaxResults=1000)
    assert "NextToken" not in answer
    return answer["PrincipalResourcePermissions"]


def test_every_page_of_a_listing_is_read(glue_server, control, database, monkeypatch):
    monkeypatch.setattr(glue_grants, "PERMISSIONS_PAGE_SIZE", 2)
    lakeformation = lakeformation_client(glue_server)
    principals = [f"arn:aws:iam::{ACCOUNT}:role/reader{i}" for i in range(5)]
    for principal in principals:
        lakeformation.grant_permissions(Principal={"DataLakePrincipalIdentifier": principal},
                                        Resource=database_resource(database), Permissions=["DESCRIBE"])
    driver = driver_for(glue_server)
    control.reset_request_count()
    assert driver.list_grants("namespace", (ACCOUNT, database)) == dict.fromkeys(principals, frozenset({"DESCRIBE"}))
    assert control.request_counts()["by_operation"]["ListPermissions"] == 3


def test_privileges_with_grant_option_are_held_and_revoked_with_it(glue_server, database, table):
    lakeformation_client(glue_server).grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYSTS},
        Resource={"Table": {"CatalogId": ACCOUNT, "DatabaseName": database, "Name": table}},
        Permissions=["SELECT", "DESCRIBE"], PermissionsWithGrantOption=["SELECT"])
    driver = driver_for(glue_server)
    id = (ACCOUNT, database, table)
    assert driver.list_grants("table", id) == {ANALYSTS: frozenset({"SELECT", "DESCRIBE"})}
    driver.change_grants("table", id, ANALYSTS, frozenset(), frozenset({"SELECT"}))
    entries = read_back(glue_server, {"Table": {"CatalogId": ACCOUNT, "DatabaseName": database, "Name": table}})
    assert [(e["Permissions"], e["PermissionsWithGrantOption"]) for e in entries] == [(["DESCRIBE"], [])]


def test_only_the_difference_is_sent(glue_server, control, database):
    driver = driver_for(glue_server)
    id = (ACCOUNT, database)
    driver.change_grants("namespace", id, ANALYSTS, frozenset({"DESCRIBE"}), frozenset())
    control.reset_request_count()
    driver.change_grants("namespace", id, ANALYSTS, frozenset({"DESCRIBE", "ALTER"}), frozenset({"DROP"}))
    by_operation = control.request_counts()["by_operation"]
    assert by_operation.get("RevokePermissions", 0) == 0  # DROP was not held
    assert by_operation["GrantPermissions"] == 1
    assert [e["Permissions"] for e in read_back(glue_server, database_resource(database))] == [["ALTER", "DESCRIBE"]]


def test_lake_formation_calls_are_counted(glue_server, database):
    driver = driver_for(glue_server)
    before = driver.api_calls
    driver.list_grants("namespace", (ACCOUNT, database))
    assert driver.api_calls - before == 2  # GetDatabase, ListPermissions


def test_bad_principals_and_privileges_are_refused_before_any_call(glue_server, control, database):
    driver = driver_for(glue_server)
    id = (ACCOUNT, database)
    control.reset_request_count()
    with pytest.raises(InvalidInputError, match="not a Lake Formation principal"):
        driver.change_grants("namespace", id, "analysts", frozenset({"DESCRIBE"}), frozenset())
    with pytest.raises(InvalidInputError, match="SELECT cannot be granted on a database"):
        driver.change_grants("namespace", id, ANALYSTS, frozenset({"SELECT"}), frozenset())
    with pytest.raises(InvalidInputError, match="grant and revoke"):
        driver.change_grants("namespace", id, ANALYSTS, frozenset({"ALTER"}), frozenset({"ALTER"}))
    assert control.request_count() == 0


def test_missing_objects_are_not_found(glue_server, database):
    driver = driver_for(glue_server)
    with pytest.raises(NamespaceNotFoundError):
        driver.change_grants("namespace", (ACCOUNT, unique("nodb")), ANALYSTS, frozenset({"DESCRIBE"}), frozenset())
    with pytest.raises(TableNotFoundError):
        driver.list_grants("table", (ACCOUNT, unique("nodb"), "t"))
    with pytest.raises(TableNotFoundError):
        driver.change_grants("table", (ACCOUNT, database, "nothere"), ANALYSTS, frozenset(), frozenset({"SELECT"}))


def test_a_table_not_lance_is_invalid_input(glue_server, database):
    glue_client(glue_server).create_table(DatabaseName=database, TableInput={
        "Name": "parquet", "TableType": "EXTERNAL_TABLE", "Parameters": {"classification": "parquet"}})
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        driver_for(glue_server).list_grants("table", (ACCOUNT, database, "parquet"))


def test_a_catalog_has_no_grants(glue_server, control):
    driver = driver_for(glue_server)
    assert driver.list_grants("namespace", (ACCOUNT,)) == {}
    with pytest.raises(InvalidInputError, match="catalog"):
        driver.change_grants("namespace", (ACCOUNT,), ANALYSTS, frozenset({"DESCRIBE"}), frozenset())
    with pytest.raises(NamespaceNotFoundError):
        driver.list_grants("namespace", (unique("nocat"),))


def test_access_denied_is_permission_denied(glue_server, control, database):
    control.inject_fault("AccessDeniedException", times=1, operations=["GrantPermissions"])
    with pytest.raises(PermissionDeniedError, match="GrantPermissions"):
        driver_for(glue_server).change_grants("namespace", (ACCOUNT, database), ANALYSTS,
                                              frozenset({"DESCRIBE"}), frozenset())


def test_a_server_refusal_is_invalid_input(glue_server, control, database):
    control.inject_fault("InvalidInputException", times=1, operations=["GrantPermissions"],
                         message="Grantee is not valid")
    with pytest.raises(InvalidInputError, match="GrantPermissions.*Grantee is not valid"):
        driver_for(glue_server).change_grants("namespace", (ACCOUNT, database), ANALYSTS,
                                              frozenset({"DESCRIBE"}), frozenset())


def test_a_garbled_listing_is_a_bad_answer_after_resends(glue_proxy: FaultProxy, database):
    assert glue_proxy.server is not None
    glue_proxy.override("POST", "^ListPermissions$", body={"PrincipalResourcePermissions": [
        {"Resource": database_resource(database), "Permissions": ["DESCRIBE"]}]})
    with pytest.raises(BadAnswerError, match="ListPermissions.*Principal.*after 3 attempts"):
        driver_for(glue_proxy.server).list_grants("namespace", (ACCOUNT, database))


def test_a_listing_of_another_object_is_a_bad_answer(glue_proxy: FaultProxy, database):
    assert glue_proxy.server is not None
    glue_proxy.override("POST", "^ListPermissions$", body={"PrincipalResourcePermissions": [
        {"Principal": {"DataLakePrincipalIdentifier": ANALYSTS}, "Resource": database_resource("other"),
         "Permissions": ["DESCRIBE"]}]})
    with pytest.raises(BadAnswerError, match="another database"):
        driver_for(glue_proxy.server).list_grants("namespace", (ACCOUNT, database))


def test_grants_on_other_resource_forms_are_left_out(glue_proxy: FaultProxy, database, table):
    """A column subset and a TableWildcard are not grants on the whole table; a ColumnWildcard
    without exclusions is."""
    assert glue_proxy.server is not None
    columns = {"CatalogId": ACCOUNT, "DatabaseName": database, "Name": table}
    glue_proxy.override("POST", "^ListPermissions$", body={"PrincipalResourcePermissions": [
        {"Principal": {"DataLakePrincipalIdentifier": ANALYSTS},
         "Resource": {"TableWithColumns": {**columns, "ColumnNames": ["a"]}}, "Permissions": ["SELECT"]},
        {"Principal": {"DataLakePrincipalIdentifier": ANALYSTS},
         "Resource": {"Table": {"CatalogId": ACCOUNT, "DatabaseName": database, "TableWildcard": {}}},
         "Permissions": ["INSERT"]},
        {"Principal": {"DataLakePrincipalIdentifier": AUDITOR},
         "Resource": {"TableWithColumns": {**columns, "ColumnWildcard": {}}}, "Permissions": ["SELECT"]},
        {"Principal": {"DataLakePrincipalIdentifier": AUDITOR},
         "Resource": {"Table": columns}, "Permissions": ["DESCRIBE"]}]})
    assert driver_for(glue_proxy.server).list_grants("table", (ACCOUNT, database, table)) == {
        AUDITOR: frozenset({"SELECT", "DESCRIBE"})}


def test_a_revoke_whose_answer_was_lost_converges(glue_proxy: FaultProxy, glue_server, database):
    """The revoke landed but its answer was lost: it may have been carried out, so it is not
    sent again; the driver reads again and finds the change made."""
    assert glue_proxy.server is not None
    lakeformation_client(glue_server).grant_permissions(
        Principal={"DataLakePrincipalIdentifier": ANALYSTS}, Resource=database_resource(database),
        Permissions=["DESCRIBE", "ALTER"])
    glue_proxy.configure(rate=1.0, kinds=["dropped"], only="^RevokePermissions$", max_faults_per_request=1)
    driver_for(glue_proxy.server).change_grants("namespace", (ACCOUNT, database), ANALYSTS,
                                                frozenset(), frozenset({"ALTER"}))
    revokes = [event.outcome for event in glue_proxy.events() if event.operation == "RevokePermissions"]
    assert revokes == ["dropped"]
    assert [e["Permissions"] for e in read_back(glue_server, database_resource(database))] == [["DESCRIBE"]]


def test_lakeformation_endpoint_routes_lake_formation_calls_only(glue_proxy: FaultProxy, glue_server, database):
    """Glue calls go to `endpoint`, Lake Formation calls to `lakeformation_endpoint`."""
    driver = driver_for(glue_server, lakeformation_endpoint=glue_proxy.endpoint)
    driver.change_grants("namespace", (ACCOUNT, database), ANALYSTS, frozenset({"DESCRIBE"}), frozenset())
    assert {event.operation for event in glue_proxy.events()} == {"ListPermissions", "GrantPermissions"}


def test_the_record_of_managed_principals_is_a_glue_parameter_and_no_permission(glue_server, database, table):
    """Lake Formation keeps the permissions; the record of the principals lance-sync manages is
    a parameter of the Glue table (database), read back with boto3, every other parameter kept
    and no permission changed. Fails on the code before records (602d6a3)."""
    driver = driver_for(glue_server)
    id = (ACCOUNT, database, table)
    driver.write_grants_record("table", id, frozenset({ANALYSTS, AUDITOR}))
    driver.write_grants_record("namespace", id[:2], frozenset({ANALYSTS}))
    glue = glue_client(glue_server)
    assert glue.get_table(DatabaseName=database, Name=table)["Table"]["Parameters"] == {
        "table_type": "lance", "lance_sync.grants": json.dumps(sorted([ANALYSTS, AUDITOR]), separators=(",", ":"))}
    assert glue.get_database(Name=database)["Database"]["Parameters"] == {
        "lance_sync.grants": json.dumps([ANALYSTS], separators=(",", ":"))}
    resource = {"Table": {"CatalogId": ACCOUNT, "DatabaseName": database, "Name": table}}
    assert read_back(glue_server, resource) == [] and read_back(glue_server, database_resource(database)) == []
    assert driver.grants_record("table", id) == {ANALYSTS, AUDITOR}
