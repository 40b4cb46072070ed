"""Lake Formation permissions on the Glue test server, driven by boto3's `lakeformation` client only.

The server answers Lake Formation on the Glue port (tests/servers/glue_server/lakeformation.py).
Every test uses its own uniquely named databases and catalogs, and lists grants by resource,
so tests do not see each other's grants on the shared session server. They run on the test
server only: an external Glue endpoint (LANCE_SYNC_TEST_GLUE_ENDPOINT) does not answer Lake
Formation, and several checked behaviours are the server's documented choices where real Lake
Formation is unverified (docs/glue.md).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.servers.base import RunningServer
from tests.servers.glue import (
    ACCESS_KEY_ID,
    NO_RETRIES,
    SECRET_ACCESS_KEY,
    GlueControl,
    Scratch,
    all_pages,
    glue_client,
    glue_error,
    lakeformation_client,
    start,
)

pytestmark = pytest.mark.servers

ACCOUNT = "123456789012"
ANALYST = {"DataLakePrincipalIdentifier": f"arn:aws:iam::{ACCOUNT}:role/analyst"}
BOB = {"DataLakePrincipalIdentifier": f"arn:aws:iam::{ACCOUNT}:user/bob"}


@pytest.fixture
def local(glue_server: RunningServer) -> RunningServer:
    if glue_server.external:
        pytest.skip("an external Glue endpoint does not answer Lake Formation")
    return glue_server


@pytest.fixture
def account(local: RunningServer) -> str:
    return local.extra["account_id"]


@pytest.fixture
def glue(local: RunningServer) -> Any:
    return glue_client(local, retries=NO_RETRIES)


@pytest.fixture
def lf(local: RunningServer) -> Any:
    return lakeformation_client(local, retries=NO_RETRIES)


@pytest.fixture
def scratch(glue: Any) -> Iterator[Scratch]:
    scratch = Scratch(glue)
    yield scratch
    scratch.clean_up()


@pytest.fixture
def control(local: RunningServer) -> Iterator[GlueControl]:
    control = GlueControl(local.endpoint)
    yield control
    control.clear_faults()


@pytest.fixture
def sales(glue: Any, scratch: Scratch) -> tuple[str, str]:
    """A database with one table, `orders`: (database name, table name)."""
    database = scratch.database("sales")
    glue.create_table(DatabaseName=database, TableInput={"Name": "orders"})
    return database.lower(), "orders"


def table(database: str, name: str, catalog_id: str | None = ACCOUNT) -> dict:
    spec = {"DatabaseName": database, "Name": name}
    return {"Table": {**({"CatalogId": catalog_id} if catalog_id else {}), **spec}}


def database_resource(name: str, catalog_id: str | None = ACCOUNT) -> dict:
    return {"Database": {**({"CatalogId": catalog_id} if catalog_id else {}), "Name": name}}


def grants(lf: Any, resource: dict, **request: Any) -> list[tuple[str, list[str], list[str]]]:
    """(principal, permissions, grantable) on `resource`, every page."""
    pages = all_pages(lf.list_permissions, "PrincipalResourcePermissions", Resource=resource, **request)
    return sorted(
        (
            entry["Principal"]["DataLakePrincipalIdentifier"],
            sorted(entry["Permissions"]),
            sorted(entry["PermissionsWithGrantOption"]),
        )
        for page in pages
        for entry in page
    )


@contextmanager
def lf_error(code: str, message_part: str = "") -> Iterator[None]:
    with pytest.raises(ClientError) as caught:
        yield
    error = caught.value.response["Error"]
    assert error["Code"] == code, caught.value
    assert message_part in error["Message"], error


# Grant, list, revoke


def test_grant_with_and_without_catalog_id_is_one_entry(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    lf.grant_permissions(Principal=ANALYST, Resource=table(database, name, None), Permissions=["SELECT"])
    lf.grant_permissions(Principal=ANALYST, Resource=table(database.upper(), "ORDERS"), Permissions=["DESCRIBE"])
    answer = lf.list_permissions(Resource=table(database, name, None))["PrincipalResourcePermissions"]
    assert len(answer) == 1
    assert answer[0]["Resource"] == table(database, name)  # CatalogId filled in, names folded
    assert sorted(answer[0]["Permissions"]) == ["DESCRIBE", "SELECT"]
    assert answer[0]["LastUpdated"]
    assert grants(lf, table(database, name)) == grants(lf, table(database, name, None))


def test_duplicate_grant_succeeds_and_changes_nothing(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    for _ in range(2):
        lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["SELECT"])
    assert grants(lf, table(database, name)) == [(ANALYST["DataLakePrincipalIdentifier"], ["SELECT"], [])]


def test_revoke_after_several_grants_and_revoke_of_what_is_not_held(lf: Any, sales: tuple[str, str]) -> None:
    """moto 5.2.5 answers 500 to this revoke; AWS refuses a revoke of permissions not held."""
    database, name = sales
    resource = table(database, name)
    lf.grant_permissions(Principal=ANALYST, Resource=resource, Permissions=["SELECT"])
    lf.grant_permissions(Principal=ANALYST, Resource=resource, Permissions=["DESCRIBE", "INSERT"],
                         PermissionsWithGrantOption=["DESCRIBE"])
    lf.revoke_permissions(Principal=ANALYST, Resource=table(database, name, None), Permissions=["SELECT"])
    who = ANALYST["DataLakePrincipalIdentifier"]
    assert grants(lf, resource) == [(who, ["DESCRIBE", "INSERT"], ["DESCRIBE"])]
    with lf_error("InvalidInputException", "Grantee does not have:[SELECT]"):
        lf.revoke_permissions(Principal=ANALYST, Resource=resource, Permissions=["SELECT", "INSERT"])
    assert grants(lf, resource) == [(who, ["DESCRIBE", "INSERT"], ["DESCRIBE"])]  # nothing revoked
    lf.revoke_permissions(Principal=ANALYST, Resource=resource, Permissions=[],
                          PermissionsWithGrantOption=["DESCRIBE"])
    assert grants(lf, resource) == [(who, ["DESCRIBE", "INSERT"], [])]
    lf.revoke_permissions(Principal=ANALYST, Resource=resource, Permissions=["DESCRIBE", "INSERT"])
    assert grants(lf, resource) == []
    with lf_error("InvalidInputException"):
        lf.revoke_permissions(Principal=BOB, Resource=resource, Permissions=["SELECT"])


def test_revoking_a_permission_takes_its_grant_option(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    resource = table(database, name)
    lf.grant_permissions(Principal=BOB, Resource=resource, Permissions=["SELECT", "ALTER"],
                         PermissionsWithGrantOption=["SELECT"])
    lf.revoke_permissions(Principal=BOB, Resource=resource, Permissions=["SELECT"])
    assert grants(lf, resource) == [(BOB["DataLakePrincipalIdentifier"], ["ALTER"], [])]


def test_database_catalog_and_wildcard_grants(lf: Any, sales: tuple[str, str], account: str) -> None:
    database, name = sales
    lf.grant_permissions(Principal=ANALYST, Resource=database_resource(database, None),
                         Permissions=["DESCRIBE", "CREATE_TABLE"])
    wildcard = {"Table": {"DatabaseName": database, "TableWildcard": {}}}
    lf.grant_permissions(Principal=BOB, Resource=wildcard, Permissions=["SELECT"])
    who = ANALYST["DataLakePrincipalIdentifier"]
    assert grants(lf, database_resource(database)) == [(who, ["CREATE_TABLE", "DESCRIBE"], [])]
    assert grants(lf, table(database, name)) == []  # a filter matches its own resource only
    assert grants(lf, table(database, name, None)) == []  # moto 5.2.5 answers 500 here
    listed = lf.list_permissions(Resource=wildcard)["PrincipalResourcePermissions"]
    assert [entry["Resource"] for entry in listed] == [
        {"Table": {"CatalogId": account, "DatabaseName": database, "TableWildcard": {}}}
    ]
    catalog = {"Catalog": {"Id": account}}
    lf.grant_permissions(Principal=BOB, Resource=catalog, Permissions=["CREATE_DATABASE"])
    try:
        assert (BOB["DataLakePrincipalIdentifier"], ["CREATE_DATABASE"], []) in grants(lf, catalog)
        assert grants(lf, catalog) == grants(lf, {"Catalog": {}})
    finally:
        lf.revoke_permissions(Principal=BOB, Resource={"Catalog": {}}, Permissions=["CREATE_DATABASE"])


# Validation


@pytest.mark.parametrize(
    "principal",
    [
        f"arn:aws:iam::{ACCOUNT}:user/alice",
        f"arn:aws:iam::{ACCOUNT}:role/service-role/etl.job",
        f"arn:aws:iam::{ACCOUNT}:saml-provider/corp-idp:user/alice@example.com",
        f"arn:aws:iam::{ACCOUNT}:saml-provider/corp-idp:group/analysts",
        f"arn:aws:quicksight:us-east-1:{ACCOUNT}:group/default/analysts",
        "arn:aws:identitystore:::group/a1b2c3d4-5678-90ab-cdef-EXAMPLE11111",
        f"arn:aws:organizations::{ACCOUNT}:organization/o-abcdefghij",
        f"arn:aws:organizations::{ACCOUNT}:ou/o-abcdefghij/ou-ab12-abcdefgh",
        "210987654321",
        f"{ACCOUNT}:IAMPrincipals",
        "IAM_ALLOWED_PRINCIPALS",
    ],
)
def test_documented_principal_forms_are_accepted(lf: Any, sales: tuple[str, str], principal: str) -> None:
    database, _ = sales
    holder = {"DataLakePrincipalIdentifier": principal}
    lf.grant_permissions(Principal=holder, Resource=database_resource(database), Permissions=["DESCRIBE"])
    assert grants(lf, database_resource(database), Principal=holder) == [(principal, ["DESCRIBE"], [])]


@pytest.mark.parametrize(
    "principal",
    ["alice", "arn:aws:iam::123:role/short-account", f"arn:aws:iam::{ACCOUNT}:group/devs",
     "arn:aws:s3:::bucket", "iam_allowed_principals", f"arn:aws:iam::{ACCOUNT}:role/"],
)
def test_other_principals_are_invalid_input(lf: Any, sales: tuple[str, str], principal: str) -> None:
    database, _ = sales
    with lf_error("InvalidInputException", "principal"):
        lf.grant_permissions(Principal={"DataLakePrincipalIdentifier": principal},
                             Resource=database_resource(database), Permissions=["DESCRIBE"])


def test_permissions_are_checked_per_resource_kind(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    with lf_error("InvalidInputException", "SELECT"):
        lf.grant_permissions(Principal=ANALYST, Resource=database_resource(database), Permissions=["SELECT"])
    with lf_error("InvalidInputException", "CREATE_TABLE"):
        lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["CREATE_TABLE"])
    with lf_error("InvalidInputException", "DATA_LOCATION_ACCESS"):
        lf.grant_permissions(Principal=ANALYST, Resource={"Catalog": {}}, Permissions=["DATA_LOCATION_ACCESS"])
    with lf_error("InvalidInputException", "subset"):
        lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["SELECT"],
                             PermissionsWithGrantOption=["INSERT"])
    with lf_error("InvalidInputException"):
        lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=[])
    with lf_error("InvalidInputException"):
        lf.grant_permissions(Principal=ANALYST, Resource={"Table": {"DatabaseName": database}},
                             Permissions=["SELECT"])
    with lf_error("InvalidInputException", "not supported"):
        lf.grant_permissions(Principal=ANALYST, Resource={"DataLocation": {"ResourceArn": "arn:aws:s3:::b/p"}},
                             Permissions=["DATA_LOCATION_ACCESS"])
    assert grants(lf, table(database, name)) == []


def test_resource_must_exist_in_the_glue_catalog(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    cases = [table(database, "nope"), table("nope_db", name), database_resource("nope_db"),
             {"Table": {"DatabaseName": "nope_db", "TableWildcard": {}}},
             table(database, name, f"{ACCOUNT}:no_such_catalog"), {"Catalog": {"Id": f"{ACCOUNT}:no_such_catalog"}}]
    for resource in cases:
        with lf_error("EntityNotFoundException"):
            lf.grant_permissions(Principal=ANALYST, Resource=resource, Permissions=["DESCRIBE"])
        with lf_error("EntityNotFoundException"):
            lf.revoke_permissions(Principal=ANALYST, Resource=resource, Permissions=["DESCRIBE"])
    with lf_error("AccessDeniedException"):
        lf.grant_permissions(Principal=ANALYST, Resource=table(database, name, "999999999999"),
                             Permissions=["SELECT"])


def test_request_constraints_of_the_model_are_validation_errors(lf: Any) -> None:
    with lf_error("ValidationException", "maxResults"):
        lf.list_permissions(MaxResults=1001)


# ListPermissions


def test_list_filters_by_principal_and_resource_type(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["SELECT"])
    lf.grant_permissions(Principal=BOB, Resource=table(database, name), Permissions=["INSERT"])
    lf.grant_permissions(Principal=BOB, Resource=database_resource(database), Permissions=["DESCRIBE"])
    bob = BOB["DataLakePrincipalIdentifier"]
    assert grants(lf, table(database, name), Principal=BOB) == [(bob, ["INSERT"], [])]
    assert len(grants(lf, table(database, name))) == 2
    with lf_error("InvalidInputException", "Resource is mandatory"):
        lf.list_permissions(Principal=BOB)
    tables = all_pages(lf.list_permissions, "PrincipalResourcePermissions", ResourceType="TABLE")
    listed = [entry["Resource"] for page in tables for entry in page]
    assert table(database, name) in listed
    assert database_resource(database) not in listed


def test_list_pages_with_max_results_and_next_token(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    principals = [f"arn:aws:iam::{ACCOUNT}:role/reader{index:02d}" for index in range(25)]
    lf.batch_grant_permissions(Entries=[
        {"Id": str(index), "Principal": {"DataLakePrincipalIdentifier": principal},
         "Resource": table(database, name), "Permissions": ["SELECT"]}
        for index, principal in enumerate(principals)
    ])
    pages = all_pages(lf.list_permissions, "PrincipalResourcePermissions", Resource=table(database, name),
                      MaxResults=10)
    assert [len(page) for page in pages] == [10, 10, 5]
    listed = [entry["Principal"]["DataLakePrincipalIdentifier"] for page in pages for entry in page]
    assert sorted(listed) == principals
    with lf_error("InvalidInputException"):
        lf.list_permissions(Resource=table(database, name), NextToken="garbled")
    token = lf.list_permissions(Resource=table(database, name), MaxResults=10)["NextToken"]
    with lf_error("InvalidInputException"):
        lf.list_permissions(Resource=database_resource(database), NextToken=token)


def test_list_with_catalog_id_only_lists_that_catalogs_grants(
    glue: Any, lf: Any, scratch: Scratch, account: str
) -> None:
    catalog = scratch.catalog("lfcat")
    catalog_id = f"{account}:{catalog}"
    database = scratch.database("db", catalog_id=catalog_id).lower()
    glue.create_table(CatalogId=catalog_id, DatabaseName=database, TableInput={"Name": "t"})
    same_name_default = scratch.database("db").lower()  # same name in the default catalog
    lf.grant_permissions(Principal=ANALYST, Resource=table(database, "t", catalog_id), Permissions=["SELECT"])
    lf.grant_permissions(CatalogId=catalog_id, Principal=BOB, Resource=database_resource(database, None),
                         Permissions=["DESCRIBE"])
    lf.grant_permissions(Principal=BOB, Resource=database_resource(same_name_default), Permissions=["ALTER"])
    pages = all_pages(lf.list_permissions, "PrincipalResourcePermissions", CatalogId=catalog)
    listed = sorted(json.dumps(entry["Resource"], sort_keys=True) for page in pages for entry in page)
    assert listed == sorted(json.dumps(resource, sort_keys=True) for resource in
                            [table(database, "t", catalog_id), database_resource(database, catalog_id)])
    assert grants(lf, database_resource(same_name_default)) == [(BOB["DataLakePrincipalIdentifier"], ["ALTER"], [])]


# Batch calls


def test_batch_grant_and_revoke_report_failures_per_entry(lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    answer = lf.batch_grant_permissions(Entries=[
        {"Id": "ok", "Principal": BOB, "Resource": table(database, name), "Permissions": ["SELECT", "INSERT"],
         "PermissionsWithGrantOption": ["SELECT"]},
        {"Id": "missing", "Principal": BOB, "Resource": table(database, "nope"), "Permissions": ["SELECT"]},
        {"Id": "bad", "Principal": {"DataLakePrincipalIdentifier": "bob"}, "Resource": table(database, name),
         "Permissions": ["SELECT"]},
    ])
    failures = {failure["RequestEntry"]["Id"]: failure["Error"]["ErrorCode"] for failure in answer["Failures"]}
    assert failures == {"missing": "EntityNotFoundException", "bad": "InvalidInputException"}
    bob = BOB["DataLakePrincipalIdentifier"]
    assert grants(lf, table(database, name)) == [(bob, ["INSERT", "SELECT"], ["SELECT"])]
    answer = lf.batch_revoke_permissions(Entries=[
        {"Id": "1", "Principal": BOB, "Resource": table(database, name), "Permissions": ["SELECT"]},
        {"Id": "2", "Principal": BOB, "Resource": table(database, name), "Permissions": ["DROP"]},
    ])
    assert [failure["RequestEntry"]["Id"] for failure in answer["Failures"]] == ["2"]
    assert grants(lf, table(database, name)) == [(bob, ["INSERT"], [])]


# Grants go with their resource


def test_grants_go_with_a_deleted_table_and_database(glue: Any, lf: Any, sales: tuple[str, str]) -> None:
    database, name = sales
    glue.create_table(DatabaseName=database, TableInput={"Name": "other"})
    lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["SELECT"])
    lf.grant_permissions(Principal=ANALYST, Resource=table(database, "other"), Permissions=["SELECT"])
    lf.grant_permissions(Principal=ANALYST, Resource=database_resource(database), Permissions=["DESCRIBE"])
    glue.delete_table(DatabaseName=database, Name=name)
    glue.create_table(DatabaseName=database, TableInput={"Name": name})  # same name, new table
    assert grants(lf, table(database, name)) == []
    assert len(grants(lf, table(database, "other"))) == 1
    glue.batch_delete_table(DatabaseName=database, TablesToDelete=["other"])
    assert grants(lf, table(database, "other")) == []
    glue.delete_database(Name=database)
    glue.create_database(DatabaseInput={"Name": database})
    assert grants(lf, database_resource(database)) == []


def test_grants_go_with_a_deleted_catalog(glue: Any, lf: Any, scratch: Scratch, account: str) -> None:
    catalog = scratch.catalog("gone")
    catalog_id = f"{account}:{catalog}"
    database = scratch.database("db", catalog_id=catalog_id).lower()
    lf.grant_permissions(Principal=ANALYST, Resource=database_resource(database, catalog_id),
                         Permissions=["DESCRIBE"])
    lf.grant_permissions(Principal=ANALYST, Resource={"Catalog": {"Id": catalog_id}}, Permissions=["DESCRIBE"])
    glue.delete_catalog(CatalogId=catalog_id)
    glue.create_catalog(Name=catalog, CatalogInput={})
    glue.create_database(CatalogId=catalog_id, DatabaseInput={"Name": database})
    assert grants(lf, database_resource(database, catalog_id)) == []
    assert grants(lf, {"Catalog": {"Id": catalog_id}}) == []


# The test server's protocol and controls


def test_json_target_form_is_answered_too(local: RunningServer, sales: tuple[str, str]) -> None:
    database, _ = sales
    signed = AWSRequest("POST", local.endpoint + "/",
                        data=json.dumps({"Resource": database_resource(database)}).encode(),
                        headers={"Content-Type": "application/x-amz-json-1.1",
                                 "X-Amz-Target": "AWSLakeFormation.ListPermissions"})
    SigV4Auth(Credentials(ACCESS_KEY_ID, SECRET_ACCESS_KEY), "lakeformation", "us-east-1").add_auth(signed)
    request = urllib.request.Request(local.endpoint + "/", data=signed.body, method="POST",
                                     headers=dict(signed.headers.items()))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        assert json.loads(response.read()) == {"PrincipalResourcePermissions": []}


def test_unimplemented_lake_formation_operation_is_refused(lf: Any) -> None:
    with lf_error("UnknownOperationException", "GetDataLakeSettings"):
        lf.get_data_lake_settings()


def test_lake_formation_calls_are_counted_and_faulted(
    lf: Any, control: GlueControl, sales: tuple[str, str]
) -> None:
    database, name = sales
    control.reset_request_count()
    lf.list_permissions(Resource=table(database, name))
    control.inject_fault("ThrottlingException", times=1, operations=["GrantPermissions"])
    with glue_error("ThrottlingException"):
        lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["SELECT"])
    lf.grant_permissions(Principal=ANALYST, Resource=table(database, name), Permissions=["SELECT"])
    assert control.request_counts()["by_operation"] == {"ListPermissions": 1, "GrantPermissions": 2}
    control.inject_fault("AccessDeniedException", times=None, names=[database],
                         operations=["ListPermissions", "BatchGrantPermissions"])
    with glue_error("AccessDeniedException"):
        lf.list_permissions(Resource=table(database, name))
    with glue_error("AccessDeniedException"):
        lf.batch_grant_permissions(Entries=[{"Id": "1", "Principal": BOB, "Resource": table(database, name),
                                             "Permissions": ["SELECT"]}])
    lf.list_permissions(Resource=database_resource("some_other_db"))  # not named: not faulted


def test_reset_forgets_grants(local: RunningServer, tmp_path: Path) -> None:
    server = start(tmp_path)
    try:
        glue, lf = glue_client(server), lakeformation_client(server)
        glue.create_database(DatabaseInput={"Name": "d"})
        lf.grant_permissions(Principal=ANALYST, Resource=database_resource("d"), Permissions=["DESCRIBE"])
        assert lf.list_permissions()["PrincipalResourcePermissions"]
        GlueControl(server.endpoint).reset()
        assert lf.list_permissions()["PrincipalResourcePermissions"] == []
    finally:
        server.stop()
