"""Smoke tests of the Glue endpoint, driven by boto3 only (never the project's drivers).

They also run against an external Glue-compatible endpoint
(LANCE_SYNC_TEST_GLUE_ENDPOINT, with LANCE_SYNC_TEST_GLUE_ACCOUNT_ID); checks that
need the test server's control paths, request counts or its documented choices
where real Glue is unverified are skipped there.
"""

from __future__ import annotations

import json
import os
import urllib.error
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.servers.base import RunningServer
from tests.servers.glue import (
    NO_RETRIES,
    GlueControl,
    Scratch,
    all_pages,
    glue_client,
    glue_error,
    start,
)

pytestmark = pytest.mark.servers


def lance_table(name: str, location: str, **parameters: str) -> dict:
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "lance", **parameters},
        "StorageDescriptor": {"Location": location},
    }


@pytest.fixture
def glue(glue_server: RunningServer) -> Any:
    return glue_client(glue_server, retries=NO_RETRIES)


@pytest.fixture
def scratch(glue: Any) -> Iterator[Scratch]:
    scratch = Scratch(glue)
    yield scratch
    scratch.clean_up()


@pytest.fixture
def account(glue_server: RunningServer) -> str:
    account_id = glue_server.extra.get("account_id") or os.environ.get(
        "LANCE_SYNC_TEST_GLUE_ACCOUNT_ID"
    )
    if not account_id:
        pytest.skip("set LANCE_SYNC_TEST_GLUE_ACCOUNT_ID for an external Glue endpoint")
    return account_id


@pytest.fixture
def local(glue_server: RunningServer) -> RunningServer:
    """The test server itself: for checks of its controls and of its documented choices."""
    if glue_server.external:
        pytest.skip("needs the Glue test server, not an external endpoint")
    return glue_server


@pytest.fixture
def control(local: RunningServer) -> Iterator[GlueControl]:
    control = GlueControl(local.endpoint)
    yield control
    control.clear_faults()


# Catalogs


def test_catalog_create_get_update(glue: Any, scratch: Scratch, account: str) -> None:
    name = scratch.catalog("sales", Description="sales data", Parameters={"team": "sales"})

    catalog = glue.get_catalog(CatalogId=name)["Catalog"]
    assert catalog["Name"] == name
    assert catalog["CatalogId"] == f"{account}:{name}"
    assert catalog["Description"] == "sales data"
    assert catalog["Parameters"] == {"team": "sales"}
    assert glue.get_catalog(CatalogId=f"{account}:{name}")["Catalog"]["Name"] == name

    glue.update_catalog(CatalogId=name, CatalogInput={"Parameters": {"team": "ops"}})
    assert glue.get_catalog(CatalogId=name)["Catalog"]["Parameters"] == {"team": "ops"}


def test_catalog_errors(glue: Any, scratch: Scratch) -> None:
    name = scratch.catalog("dup")
    with glue_error("AlreadyExistsException"):
        glue.create_catalog(Name=name, CatalogInput={})
    missing = scratch.name("missing")
    with glue_error("EntityNotFoundException"):
        glue.get_catalog(CatalogId=missing)
    with glue_error("EntityNotFoundException"):
        glue.update_catalog(CatalogId=missing, CatalogInput={})
    with glue_error("EntityNotFoundException"):
        glue.delete_catalog(CatalogId=missing)
    for bad_name in (f"{name}/child", f"{name}.x", "aws:x", "x" * 65):
        with glue_error("ValidationException"):
            glue.create_catalog(Name=bad_name, CatalogInput={})


def test_get_catalogs_children_recursive_and_root(
    glue: Any, scratch: Scratch, control: GlueControl, account: str
) -> None:
    top = scratch.catalog("lake")
    top_id = f"{account}:{top}"
    child = control.seed_catalog(top, "Bucket-1")
    grandchild = control.seed_catalog(child, "deep")
    assert child == f"{top_id}/bucket-1"

    def listed(**request: Any) -> set[str]:
        pages = all_pages(glue.get_catalogs, "CatalogList", **request)
        return {catalog["CatalogId"] for page in pages for catalog in page}

    assert listed(ParentCatalogId=top) == {child}
    assert listed(ParentCatalogId=top, Recursive=True) == {child, grandchild}
    assert listed(ParentCatalogId=f"{top}/bucket-1") == {grandchild}
    at_root = listed()
    assert top_id in at_root and child not in at_root and account not in at_root
    assert {account, top_id} <= listed(IncludeRoot=True)
    assert {top_id, child, grandchild} <= listed(Recursive=True)
    assert glue.get_catalog(CatalogId=child)["Catalog"]["Name"] == "bucket-1"
    with glue_error("InvalidInputException"):
        glue.get_catalogs(ParentCatalogId=top, IncludeRoot=True)


def test_get_catalogs_pages(glue: Any, scratch: Scratch) -> None:
    ours = {scratch.catalog(f"page{index}") for index in range(3)}
    pages = all_pages(glue.get_catalogs, "CatalogList", MaxResults=2)
    names = [catalog["Name"] for page in pages for catalog in page]
    assert all(len(page) <= 2 for page in pages)
    assert len(names) == len(set(names))
    assert ours <= set(names)


def test_delete_catalog_removes_its_databases_and_tables(glue: Any, scratch: Scratch) -> None:
    """Glue documents DeleteCatalog as removing everything in the catalog, like DeleteDatabase."""
    name = scratch.catalog("doomed")
    glue.create_database(CatalogId=name, DatabaseInput={"Name": "db"})
    glue.create_table(CatalogId=name, DatabaseName="db", TableInput=lance_table("t", "s3://b/t"))

    glue.delete_catalog(CatalogId=name)

    with glue_error("EntityNotFoundException"):
        glue.get_catalog(CatalogId=name)
    with glue_error("EntityNotFoundException"):
        glue.get_database(CatalogId=name, Name="db")


def test_delete_catalog_removes_child_catalogs(
    glue: Any, scratch: Scratch, control: GlueControl
) -> None:
    name = scratch.catalog("parent")
    child = control.seed_catalog(name, "child")
    glue.create_database(CatalogId=child, DatabaseInput={"Name": "db"})

    glue.delete_catalog(CatalogId=name)
    glue.create_catalog(Name=name, CatalogInput={})

    with glue_error("EntityNotFoundException"):
        glue.get_catalog(CatalogId=child)
    assert glue.get_catalogs(ParentCatalogId=name)["CatalogList"] == []


def test_default_catalog_is_listed_but_not_deletable(
    glue: Any, local: RunningServer, account: str
) -> None:
    assert glue.get_catalog(CatalogId=account)["Catalog"]["CatalogId"] == account
    with glue_error("InvalidInputException"):
        glue.delete_catalog(CatalogId=account)


# Databases and tables, scoped by CatalogId


def test_database_and_table_crud_is_scoped_to_its_catalog(
    glue: Any, scratch: Scratch, account: str
) -> None:
    home, other = scratch.catalog("home"), scratch.catalog("other")
    db = scratch.database("db", home, Description="d", Parameters={"k": "v"})
    in_home, in_other = (
        {"CatalogId": home, "DatabaseName": db},
        {"CatalogId": other, "DatabaseName": db},
    )

    database = glue.get_database(CatalogId=home, Name=db)["Database"]
    assert database["CatalogId"] == f"{account}:{home}"
    assert database["Parameters"] == {"k": "v"}
    with glue_error("EntityNotFoundException"):
        glue.get_database(CatalogId=other, Name=db)
    with glue_error("EntityNotFoundException"):
        glue.get_database(Name=db)
    assert db not in {d["Name"] for d in glue.get_databases(CatalogId=other)["DatabaseList"]}

    scratch.database("db", other, Parameters={"k": "other"})  # same name, separate catalog
    glue.update_database(
        CatalogId=home, Name=db, DatabaseInput={"Name": db, "Parameters": {"k": "v2"}}
    )
    assert glue.get_database(CatalogId=home, Name=db)["Database"]["Parameters"] == {"k": "v2"}
    assert glue.get_database(CatalogId=other, Name=db)["Database"]["Parameters"] == {"k": "other"}

    glue.create_table(**in_home, TableInput=lance_table("orders", "s3://lake/orders.lance"))
    table = glue.get_table(**in_home, Name="orders")["Table"]
    assert table["StorageDescriptor"]["Location"] == "s3://lake/orders.lance"
    assert (table["TableType"], table["Parameters"]) == ("EXTERNAL_TABLE", {"table_type": "lance"})
    assert (table["CatalogId"], table["DatabaseName"]) == (f"{account}:{home}", db)
    with glue_error("EntityNotFoundException"):
        glue.get_table(**in_other, Name="orders")
    assert glue.get_tables(**in_other)["TableList"] == []
    with glue_error("AlreadyExistsException"):
        glue.create_table(**in_home, TableInput=lance_table("orders", "s3://elsewhere"))

    glue.update_table(
        **in_home, TableInput=lance_table("orders", "s3://lake/orders.lance", tier="gold")
    )
    assert glue.get_table(**in_home, Name="orders")["Table"]["Parameters"]["tier"] == "gold"

    glue.create_table(**in_home, TableInput=lance_table("items", "s3://lake/items.lance"))
    glue.delete_table(**in_home, Name="items")
    with glue_error("EntityNotFoundException"):
        glue.delete_table(**in_home, Name="items")
    errors = glue.batch_delete_table(**in_home, TablesToDelete=["orders", "missing"])["Errors"]
    assert [(e["TableName"], e["ErrorDetail"]["ErrorCode"]) for e in errors] == [
        ("missing", "EntityNotFoundException")
    ]
    assert glue.get_tables(**in_home)["TableList"] == []

    glue.delete_database(CatalogId=home, Name=db)
    with glue_error("EntityNotFoundException"):
        glue.get_database(CatalogId=home, Name=db)
    assert glue.get_database(CatalogId=other, Name=db)["Database"]["Name"] == db


def test_databases_and_tables_in_a_missing_catalog(glue: Any, scratch: Scratch) -> None:
    missing = scratch.name("no_such_catalog")
    with glue_error("EntityNotFoundException"):
        glue.create_database(CatalogId=missing, DatabaseInput={"Name": "db"})
    with glue_error("EntityNotFoundException"):
        glue.get_databases(CatalogId=missing)
    with glue_error("EntityNotFoundException"):
        glue.get_tables(CatalogId=missing, DatabaseName="db")


def test_other_accounts_catalog_is_access_denied(glue: Any) -> None:
    with glue_error("AccessDeniedException"):
        glue.get_databases(CatalogId="999999999999")


def test_names_fold_to_lower_case_and_may_hold_unicode_and_spaces(
    glue: Any, scratch: Scratch
) -> None:
    db = scratch.database("Ünïcode DB ✓")
    assert glue.get_database(Name=db)["Database"]["Name"] == db.lower()

    table = "Tåble with Spaces 表"
    glue.create_table(DatabaseName=db, TableInput=lance_table(table, "s3://lake/t"))
    assert (
        glue.get_table(DatabaseName=db.lower(), Name=table.upper())["Table"]["Name"]
        == table.lower()
    )
    assert [t["Name"] for t in glue.get_tables(DatabaseName=db)["TableList"]] == [table.lower()]
    with glue_error("AlreadyExistsException"):
        glue.create_table(DatabaseName=db, TableInput=lance_table(table.lower(), "s3://lake/t"))

    for bad_name in ("line\nbreak", "x" * 256):
        with glue_error("ValidationException"):
            glue.create_table(DatabaseName=db, TableInput=lance_table(bad_name, "s3://lake/t"))


# Paging


def test_update_table_at_a_stale_version_id_is_refused(glue: Any, scratch: Scratch) -> None:
    """UpdateTable with VersionId is optimistic locking: only an update at the current version
    lands; SkipArchive replaces that version instead of archiving it."""
    database = scratch.database("versions")
    glue.create_table(DatabaseName=database, TableInput=lance_table("t", "file:///x", step="0"))
    read = glue.get_table(DatabaseName=database, Name="t")["Table"]["VersionId"]
    glue.update_table(DatabaseName=database, TableInput=lance_table("t", "file:///x", step="1"),
                      VersionId=read, SkipArchive=True)
    with glue_error("ConcurrentModificationException"):  # a second writer that read the same version
        glue.update_table(DatabaseName=database, TableInput=lance_table("t", "file:///x", step="2"),
                          VersionId=read)
    table = glue.get_table(DatabaseName=database, Name="t")["Table"]
    assert table["Parameters"]["step"] == "1" and table["VersionId"] != read
    glue.update_table(DatabaseName=database, TableInput=lance_table("t", "file:///x", step="3"),
                      VersionId=table["VersionId"])
    versions = glue.get_table_versions(DatabaseName=database, TableName="t")["TableVersions"]
    assert read not in {version["VersionId"] for version in versions}  # skipped from the archive


def test_fifty_simultaneous_updates_at_one_version_id_one_lands(glue_server: RunningServer,
                                                                scratch: Scratch) -> None:
    """50 boto3 clients update one table at the VersionId they all read: exactly one succeeds."""
    glue = glue_client(glue_server, retries=NO_RETRIES)
    database = scratch.database("race")
    glue.create_table(DatabaseName=database, TableInput=lance_table("t", "file:///x", writer="none"))
    read = glue.get_table(DatabaseName=database, Name="t")["Table"]["VersionId"]
    clients = [glue_client(glue_server, retries=NO_RETRIES) for _ in range(50)]

    def update(writer: int) -> str:
        try:
            clients[writer].update_table(DatabaseName=database, VersionId=read, SkipArchive=True,
                                         TableInput=lance_table("t", "file:///x", writer=str(writer)))
        except ClientError as error:
            return error.response["Error"]["Code"]
        return "updated"

    with ThreadPoolExecutor(50) as pool:
        outcomes = list(pool.map(update, range(50)))
    assert sorted(set(outcomes)) == ["ConcurrentModificationException", "updated"]
    assert outcomes.count("updated") == 1
    winner = str(outcomes.index("updated"))
    assert glue.get_table(DatabaseName=database, Name="t")["Table"]["Parameters"]["writer"] == winner


def test_get_tables_pages_of_at_most_100(
    glue_server: RunningServer, glue: Any, scratch: Scratch
) -> None:
    db = scratch.database("big")
    expected = {f"t{index:03d}" for index in range(250)}
    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda name: glue.create_table(
                    DatabaseName=db, TableInput=lance_table(name, f"s3://lake/{name}")
                ),
                expected,
            )
        )

    glue_server.reset_request_count()
    pages = all_pages(glue.get_tables, "TableList", DatabaseName=db, MaxResults=100)
    if not glue_server.external:
        assert glue_server.requests_served() == 3
    assert [len(page) for page in pages] == [100, 100, 50]
    assert {table["Name"] for page in pages for table in page} == expected

    first = glue.get_tables(DatabaseName=db)
    assert len(first["TableList"]) <= 100 and first.get("NextToken")
    with glue_error("ValidationException"):
        glue.get_tables(DatabaseName=db, MaxResults=101)


def test_get_databases_pages(glue: Any, scratch: Scratch) -> None:
    catalog = scratch.catalog("dbs")
    expected = {scratch.database(f"db{index}", catalog) for index in range(5)}
    pages = all_pages(glue.get_databases, "DatabaseList", CatalogId=catalog, MaxResults=2)
    assert [len(page) for page in pages] == [2, 2, 1]
    assert {database["Name"] for page in pages for database in page} == {
        n.lower() for n in expected
    }


def test_foreign_or_garbled_next_token_is_invalid_input(
    glue: Any, scratch: Scratch, local: RunningServer
) -> None:
    db = scratch.database("tokens")
    for index in range(3):
        glue.create_table(DatabaseName=db, TableInput=lance_table(f"t{index}", "s3://lake/t"))
    token = glue.get_tables(DatabaseName=db, MaxResults=1)["NextToken"]
    with glue_error("InvalidInputException"):
        glue.get_databases(NextToken=token)
    with glue_error("InvalidInputException"):
        glue.get_tables(DatabaseName=db, NextToken="garbage")


# Test-only controls


def test_request_counts_by_operation_exclude_control_calls(glue: Any, control: GlueControl) -> None:
    control.reset_request_count()
    glue.get_databases()
    glue.get_catalogs()
    control.request_counts()
    assert control.request_counts() == {
        "total": 2,
        "by_operation": {"GetDatabases": 1, "GetCatalogs": 1},
    }


def test_seeded_tables_read_back_as_created_ones(
    glue: Any, scratch: Scratch, control: GlueControl, account: str
) -> None:
    db = scratch.database("seeded")
    glue.create_table(DatabaseName=db, TableInput=lance_table("made", "s3://lake/t", tier="gold"))
    control.reset_request_count()
    inputs = [lance_table(name, "s3://lake/t", tier="gold") for name in ("Seeded", "other")]
    assert control.seed_tables(account, db, inputs) == 2
    assert control.request_counts()["total"] == 0
    made, seeded = (glue.get_table(DatabaseName=db, Name=name)["Table"] for name in ("made", "SEEDED"))
    ignored = ("Name", "CreateTime", "UpdateTime")
    assert seeded["Name"] == "seeded"
    assert {k: v for k, v in seeded.items() if k not in ignored} == {
        k: v for k, v in made.items() if k not in ignored
    }
    with pytest.raises(urllib.error.HTTPError) as refused:  # checked as CreateTable is
        control.seed_tables(account, db, [{"Name": ""}])
    assert refused.value.code == 400 and b"validation error" in refused.value.read()
    with pytest.raises(urllib.error.HTTPError) as refused:
        control.seed_tables(account, db, [lance_table("made", "s3://lake/t")])
    assert refused.value.code == 400 and b"already exists" in refused.value.read()


def test_injected_access_denied_for_a_named_database(
    glue: Any, scratch: Scratch, control: GlueControl
) -> None:
    secret, public = scratch.database("secret"), scratch.database("public")
    control.inject_fault("AccessDeniedException", times=None, names=[secret])

    for _ in range(2):
        with glue_error("AccessDeniedException"):
            glue.get_tables(DatabaseName=secret)
    glue.get_tables(DatabaseName=public)
    control.clear_faults()
    glue.get_tables(DatabaseName=secret)


def test_injected_throttling_and_server_errors(glue: Any, control: GlueControl) -> None:
    control.inject_fault("ThrottlingException", times=1, operations=["GetDatabases"])
    control.inject_fault("InternalServiceException", times=1, operations=["GetDatabases"])
    glue.get_catalogs()  # another operation is not affected

    with glue_error("ThrottlingException"):
        glue.get_databases()
    with pytest.raises(ClientError) as caught:
        glue.get_databases()
    assert caught.value.response["Error"]["Code"] == "InternalServiceException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    glue.get_databases()


def test_boto3_retries_an_injected_503(local: RunningServer, control: GlueControl) -> None:
    retrying = glue_client(local, retries={"mode": "standard", "total_max_attempts": 2})
    control.inject_fault("ServiceUnavailableException", times=1, operations=["GetCatalogs"])
    local.reset_request_count()

    response = retrying.get_catalogs()

    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert local.requests_served() == 2


# Signatures (signatures.py): refused as AWS refuses them


def signed_post(server: RunningServer, target: str, body: bytes, *, service: str = "glue",
                region: str = "us-east-1", key: str = "testing", secret: str = "testing",
                after_signing: Callable[[dict[str, str]], bytes] | None = None) -> tuple[int, dict]:
    """POST / with `X-Amz-Target`, signed with botocore's signer; `after_signing` may change the
    headers and return another body, as a faulty client would after signing."""
    request = AWSRequest("POST", server.endpoint + "/", data=body, headers={
        "X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"})
    SigV4Auth(Credentials(key, secret), service, region).add_auth(request)
    headers = dict(request.headers.items())
    sent = after_signing(headers) if after_signing else body
    answer = urllib3.PoolManager().request("POST", server.endpoint + "/", body=sent, headers=headers)
    return answer.status, json.loads(answer.data)


def test_signed_calls_are_answered(local: RunningServer) -> None:
    status, answer = signed_post(local, "AWSGlue.GetDatabases", b"{}")
    assert status == 200 and "DatabaseList" in answer


@pytest.mark.parametrize(("change", "code"), [
    (lambda headers: b'{"MaxResults": 1}', "InvalidSignatureException"),  # body changed after signing
    (lambda headers: headers.update({"Content-Type": "application/json"}) or b"{}", "InvalidSignatureException"),
    (lambda headers: headers.update({"X-Amz-Date": "20200101T000000Z"}) or b"{}", "InvalidSignatureException"),
    (lambda headers: headers.pop("Authorization") and b"{}", "MissingAuthenticationTokenException"),
    (lambda headers: headers.update({"Authorization": "AWS4-HMAC-SHA256 Signature=00"}) or b"{}",
     "IncompleteSignatureException"),
], ids=["body", "signed header", "stale date", "unsigned", "incomplete"])
def test_a_call_changed_after_signing_is_refused(local: RunningServer, change: Callable, code: str) -> None:
    status, answer = signed_post(local, "AWSGlue.GetDatabases", b"{}", after_signing=change)
    assert (status, answer["__type"]) == (403, code)


@pytest.mark.parametrize(("options", "code"), [
    ({"secret": "not-the-secret"}, "InvalidSignatureException"),
    ({"service": "lakeformation"}, "InvalidSignatureException"),
    ({"region": "eu-west-1"}, "InvalidSignatureException"),
], ids=["wrong secret", "wrong service", "wrong region"])
def test_a_call_signed_wrongly_is_refused(local: RunningServer, options: dict, code: str) -> None:
    status, answer = signed_post(local, "AWSGlue.GetDatabases", b"{}", **options)
    assert (status, answer["__type"]) == (403, code)


def test_a_key_the_server_does_not_know_is_not_checked(local: RunningServer) -> None:
    status, _ = signed_post(local, "AWSGlue.GetDatabases", b"{}", key="AKIAOTHER", secret="unknown")
    assert status == 200


def test_private_server_resets_and_stops(tmp_path: Path) -> None:
    """A server of its own: reset wipes state, and stop leaves no process behind."""
    server = start(tmp_path)
    try:
        glue = glue_client(server, retries=NO_RETRIES)
        glue.create_database(DatabaseInput={"Name": "kept_until_reset"})
        GlueControl(server.endpoint).reset()
        assert glue.get_databases()["DatabaseList"] == []
        assert server.requests_served() == 1
    finally:
        server.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(server.extra["pid"], 0)
