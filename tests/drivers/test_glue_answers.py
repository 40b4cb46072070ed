"""Every Glue answer is checked where it enters the driver; failures are retried per call.

A fake Glue endpoint on loopback (`FakeGlue`: AWS JSON 1.1, `POST /` with
`X-Amz-Target: AWSGlue.<Operation>`) answers canned bodies per operation, so a garbled,
truncated or HTML answer can be served for exactly the call under test, and every request
is counted. The driver's waits between resends are recorded instead of slept. A plain boto3
client is the independent reference: what botocore would do with the same bodies.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.config import Config
from botocore.parsers import create_parser
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    ListNamespacesRequest,
    ListTablesRequest,
)
from lance_namespace.errors import (
    ErrorCode,
    InternalError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    ThrottlingError,
)
from urllib3.exceptions import NewConnectionError, ProtocolError, ReadTimeoutError

from lance_sync.drivers.glue.answers import (
    BAD_ANSWER_RETRIES,
    READ_OPERATIONS,
    REQUIRED_ANSWER_MEMBERS,
    answer_parser,
)
from lance_sync.drivers.glue.driver import GlueNamespace
from lance_sync.drivers.glue.transport import MAX_RETRIES, service_model
from lance_sync.drivers.support.retry import BadAnswerError, TransientError

ACCOUNT = "123456789012"
DATABASE = (ACCOUNT, "sales")
TABLE = (*DATABASE, "orders")
LOCATION = "s3://lake/sales/orders.lance"
ANALYSTS = f"arn:aws:iam::{ACCOUNT}:role/analysts"

LANCE_TABLE = {"Name": "orders", "DatabaseName": "sales", "CatalogId": ACCOUNT,
               "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "lance", "tier": "gold"},
               "StorageDescriptor": {"Location": LOCATION}, "CreateTime": 1.7e9, "VersionId": "1"}
SALES = {"Name": "sales", "CatalogId": ACCOUNT, "Parameters": {"team": "core"}}
CATALOG = {"Name": "cat", "CatalogId": f"{ACCOUNT}:cat", "Parameters": {"team": "core"}}

# Werkzeug's (moto's) error pages, as a proxy or a mis-routed endpoint sends them
MOTO_500_PAGE = (b"<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n"
                 b"<h1>Internal Server Error</h1>\n<p>The server encountered an internal error and "
                 b"was unable to complete your request.</p>\n")
MOTO_404_PAGE = (b"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n"
                 b"<p>The requested URL was not found on the server.</p>\n")


# --- the fake endpoint ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b"{}"
    #: announced Content-Length when it is not len(body) (a body cut short)
    content_length: int | None = None
    #: close the connection without answering
    hang_up: bool = False
    #: send the body chunked and stop in the middle of a chunk
    cut_chunk: bool = False


def ok(answer: dict[str, Any]) -> Answer:
    return Answer(body=json.dumps(answer).encode())


def glue_error(code: str, status: int = 400, message: str = "refused") -> Answer:
    return Answer(status=status, body=json.dumps({"__type": code, "message": message}).encode())


#: a well-formed answer for each read the driver sends
GOOD: dict[str, dict[str, Any]] = {
    "GetCatalogs": {"CatalogList": [{"Name": ACCOUNT, "CatalogId": ACCOUNT}, CATALOG]},
    "GetCatalog": {"Catalog": CATALOG},
    "GetDatabases": {"DatabaseList": [SALES]},
    "GetDatabase": {"Database": SALES},
    "GetTables": {"TableList": [LANCE_TABLE]},
    "GetTable": {"Table": LANCE_TABLE},
    "ListPermissions": {"PrincipalResourcePermissions": [
        {"Principal": {"DataLakePrincipalIdentifier": ANALYSTS},
         "Resource": {"Database": {"CatalogId": ACCOUNT, "Name": "sales"}},
         "Permissions": ["DESCRIBE"], "PermissionsWithGrantOption": []}]},
}


class FakeGlue:
    """Glue on 127.0.0.1: per operation a queue of answers (the last one repeats), a request count."""

    def __init__(self) -> None:
        self.answers: dict[str, list[Answer]] = {}
        self.requests: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, operation: str, *answers: Answer) -> None:
        with self.lock:
            self.answers[operation] = list(answers)

    def reset(self) -> None:
        with self.lock:
            self.answers = {op: [ok(good)] for op, good in GOOD.items()}
            self.requests.clear()

    def _next(self, operation: str) -> Answer:
        with self.lock:
            self.requests[operation] += 1
            queue = self.answers.get(operation) or [glue_error("InvalidInputException")]
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one answer per connection, closed after it (a short body ends there)
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                target = self.headers.get("X-Amz-Target")
                if target:  # Glue: AWS JSON 1.1
                    operation = target.split(".", 1)[1]
                elif self.path.startswith("/") and self.path[1:2].isupper():  # Lake Formation: REST-JSON
                    operation = self.path[1:]
                else:  # STS: AWS query protocol
                    operation = urllib.parse.parse_qs(body.decode())["Action"][0]
                answer = fake._next(operation)
                if answer.hang_up:
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/x-amz-json-1.1" if target else "text/xml")
                if answer.cut_chunk:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b"%x\r\n" % len(answer.body) + answer.body[: len(answer.body) // 2])
                    return
                self.send_header("Content-Length", str(answer.content_length or len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

        return Handler

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeGlue]:
    fake = FakeGlue()
    yield fake
    fake.stop()


@pytest.fixture
def fake(fake_server: FakeGlue) -> FakeGlue:
    fake_server.reset()
    return fake_server


@pytest.fixture
def sleeps() -> list[float]:
    return []


def new_driver(fake: FakeGlue, sleeps: list[float], **overrides: Any) -> GlueNamespace:
    config = {"endpoint": fake.endpoint, "catalog_id": ACCOUNT, "region": "us-east-1",
              "access_key_id": "testing", "secret_access_key": "testing", **overrides}
    driver = GlueNamespace(**{k: v for k, v in config.items() if v is not None})
    driver.client.sleep = sleeps.append  # the waits between resends, recorded, not slept
    return driver


@pytest.fixture
def make_driver(fake: FakeGlue, sleeps: list[float]) -> Callable[..., GlueNamespace]:
    """A driver of the test's own (for tests that change it)."""
    return lambda **overrides: new_driver(fake, sleeps, **overrides)


@pytest.fixture(scope="module")
def shared_driver(fake_server: FakeGlue) -> GlueNamespace:
    return new_driver(fake_server, [])


@pytest.fixture
def driver(shared_driver: GlueNamespace, fake: FakeGlue, sleeps: list[float]) -> GlueNamespace:
    shared_driver.client.sleep = sleeps.append
    return shared_driver


#: for each read, a driver call that sends it first, and what that call returns on a good answer
READS: dict[str, tuple[Callable[[GlueNamespace], Any], Any]] = {
    "GetCatalogs": (lambda d: d.list_namespaces(ListNamespacesRequest(id=[])).namespaces,
                    [ACCOUNT, "cat"]),
    "GetCatalog": (lambda d: d.describe_namespace(DescribeNamespaceRequest(id=["cat"])).properties,
                   {"team": "core"}),
    "GetDatabases": (lambda d: d.list_namespaces(ListNamespacesRequest(id=[ACCOUNT])).namespaces,
                     ["sales"]),
    "GetDatabase": (lambda d: d.describe_namespace(DescribeNamespaceRequest(id=list(DATABASE))).properties,
                    {"team": "core"}),
    "GetTables": (lambda d: d.list_tables(ListTablesRequest(id=list(DATABASE))).tables, ["orders"]),
    "GetTable": (lambda d: d.describe_table(DescribeTableRequest(id=list(TABLE))).location, LOCATION),
    "ListPermissions": (lambda d: d.list_grants("namespace", DATABASE), {ANALYSTS: frozenset({"DESCRIBE"})}),
}


def garbled(operation: str, kind: str) -> Answer:
    good = json.dumps(GOOD[operation]).encode()
    return {
        "wrong shape": Answer(body=b'{"hello": "world"}'),
        "html": Answer(body=b"<html><body><h1>Gateway</h1>Try again later</body></html>"),
        "not json": Answer(body=b"Service temporarily unavailable"),
        "truncated": Answer(body=good[: len(good) // 2], content_length=len(good)),
    }[kind]


GARBLED_KINDS = ["wrong shape", "html", "not json", "truncated"]
#: what each garbled kind is called in the error message
PROBLEM = {"wrong shape": "without ", "html": "a body that is not JSON (body: an HTML page",
           "not json": "a body that is not JSON", "truncated": "a body cut short ("}


def test_every_read_the_driver_sends_is_covered():
    assert set(READS) == set(GOOD) == set(REQUIRED_ANSWER_MEMBERS) == READ_OPERATIONS


# --- garbled answers to reads --------------------------------------------------------------------


@pytest.mark.parametrize("kind", GARBLED_KINDS)
@pytest.mark.parametrize("operation", list(READS))
def test_garbled_read_is_retried_then_a_bad_answer_error(driver: GlueNamespace, fake: FakeGlue,
                                                          sleeps: list[float], operation: str, kind: str):
    call, _ = READS[operation]
    fake.answer(operation, garbled(operation, kind))
    with pytest.raises(LanceNamespaceError) as caught:  # never a KeyError, never an empty result
        call(driver)
    error = caught.value
    assert isinstance(error, BadAnswerError) and error.code == ErrorCode.INTERNAL
    message = str(error)
    assert message.startswith(f"glue: {operation} on ")
    assert PROBLEM[kind] in message
    assert message.endswith(f"after {1 + MAX_RETRIES} attempts")
    assert "\n" not in message and len(message) < 400
    assert fake.requests[operation] == 1 + MAX_RETRIES
    assert len(sleeps) == MAX_RETRIES


@pytest.mark.parametrize("operation", list(READS))
def test_garbled_answer_then_a_good_one_succeeds(driver: GlueNamespace, fake: FakeGlue,
                                                 sleeps: list[float], operation: str):
    call, expected = READS[operation]
    fake.answer(operation, garbled(operation, "truncated"), ok(GOOD[operation]))
    assert call(driver) == expected
    assert fake.requests[operation] == 2
    assert len(sleeps) == 1


@pytest.mark.parametrize(("operation", "body", "problem"), [
    ("GetTables", b"[]", "answered a list in JSON, not an object"),
    ("GetTables", b"null", "answered null in JSON, not an object"),
    ("GetTables", b"", "answered without TableList (body: an empty body)"),
    ("GetTables", b'{"message": "Internal server error"}', "answered without TableList"),
    ("GetTables", b'{"Message": "Service Unavailable"}', "answered without TableList"),
    ("GetTables", b'{"TableList": "orders"}', "with TableList a string, not a list"),
    ("GetTables", b'{"TableList": {"Name": "orders"}}', "with TableList an object, not a list"),
    ("GetTables", b'{"TableList": [null]}', "with TableList[0] null"),
    ("GetTables", b'{"TableList": [{"TableType": "EXTERNAL_TABLE"}]}', "without TableList[0].Name"),
    ("GetTables", b'{"TableList": [{"Name": 7}]}', "with TableList[0].Name a number, not a string"),
    ("GetTables", b'{"TableList": [{"Name": "t", "Parameters": ["table_type"]}]}',
     "with TableList[0].Parameters a list, not an object"),
    ("GetTables", b'{"TableList": [{"Name": "t", "Parameters": {"table_type": null}}]}',
     "with TableList[0].Parameters['table_type'] null"),
    ("GetTables", b'{"TableList": [{"Name": "t", "Parameters": {"n": 1}}]}',
     "with TableList[0].Parameters['n'] a number, not a string"),
    ("GetTables", b'{"TableList": [{"Name": "t", "CreateTime": "yesterday"}]}',
     "with TableList[0].CreateTime a string, not a timestamp"),
    ("GetTables", b'{"TableList": [], "NextToken": 5}', "with NextToken a number, not a string"),
    ("GetTable", b'{"Table": []}', "with Table a list, not an object"),
    ("GetTable", b'{"Table": {"Name": "t", "StorageDescriptor": {"Location": ["s3://x"]}}}',
     "with Table.StorageDescriptor.Location a list, not a string"),
    ("GetTable", b'{"Table": {"Name": "t", "Retention": true}}',
     "with Table.Retention a boolean, not an integer"),
    ("GetTable", b'{"Table": {"Name": "t", "TableType": 5}}', "with Table.TableType a number, not a string"),
    ("GetTable", b'{"Table": {"Name": "t", "StorageDescriptor": {"BucketColumns": ["a", null]}}}',
     "with Table.StorageDescriptor.BucketColumns[1] null"),
    ("GetTable", b'{"Table": {"Name": "t", "StorageDescriptor": {"BucketColumns": [1]}}}',
     "with Table.StorageDescriptor.BucketColumns[0] a number, not a string"),
    ("GetTable", b'{"Table": {"Name": "t", "StorageDescriptor": {"Columns": [{"Type": "int"}]}}}',
     "without Table.StorageDescriptor.Columns[0].Name"),  # required by botocore's model
    ("GetDatabase", b'{"Database": "sales"}', "with Database a string, not an object"),
    ("GetDatabases", b'{"DatabaseList": [{"Name": "sales", "Parameters": "team=core"}]}',
     "with DatabaseList[0].Parameters a string, not an object"),
    ("GetCatalogs", b'{"CatalogList": [{"Name": "cat"}]}', "without CatalogList[0].CatalogId"),
    ("GetCatalog", b'{"Catalog": {"CatalogId": "x"}}', "without Catalog.Name"),
])
def test_answers_without_their_shape(driver: GlueNamespace, fake: FakeGlue, operation: str,
                                     body: bytes, problem: str):
    fake.answer(operation, Answer(body=body))
    with pytest.raises(BadAnswerError) as caught:
        READS[operation][0](driver)
    assert str(caught.value).startswith(f"glue: {operation} on ")
    assert problem in str(caught.value)
    assert fake.requests[operation] == 1 + MAX_RETRIES


def test_members_outside_the_model_and_null_members_are_accepted(driver: GlueNamespace, fake: FakeGlue):
    table = {**LANCE_TABLE, "SomethingNew": {"x": [1]}, "Description": None, "Owner": None}
    fake.answer("GetTable", ok({"Table": table, "Extra": 1}))
    assert READS["GetTable"][0](driver) == LOCATION
    fake.answer("GetTables", ok({"TableList": [], "NextToken": None}))
    assert READS["GetTables"][0](driver) == []
    assert fake.requests == {"GetTable": 1, "GetTables": 1}


def test_a_later_page_garbled_is_raised(driver: GlueNamespace, fake: FakeGlue):
    first = {"TableList": [LANCE_TABLE], "NextToken": "page-2"}
    fake.answer("GetTables", ok(first), Answer(body=b"<html><title>Bad Gateway</title></html>"))
    with pytest.raises(BadAnswerError, match="an HTML page titled 'Bad Gateway'"):
        list(driver.list_table_infos(DATABASE))
    assert fake.requests["GetTables"] == 2 + MAX_RETRIES


def test_botocore_reads_a_short_body_without_raising(fake: FakeGlue):
    """Why the driver checks: botocore ignores Content-Length and drops what its model lacks."""
    good = json.dumps(GOOD["GetTables"]).encode()
    fake.answer("GetTables", Answer(body=good[:20], content_length=len(good)))
    plain = boto3.client("glue", endpoint_url=fake.endpoint, region_name="us-east-1",
                         aws_access_key_id="testing", aws_secret_access_key="testing",
                         config=Config(retries={"mode": "standard"}))
    answer = plain.get_tables(DatabaseName="sales")
    assert "TableList" not in answer and set(answer) == {"ResponseMetadata"}


# --- writes --------------------------------------------------------------------------------------


def declare(driver: GlueNamespace) -> Any:
    return driver.declare_table(DeclareTableRequest(id=list(TABLE), location=LOCATION))


@pytest.mark.parametrize(("answer", "error", "because"), [
    (Answer(body=MOTO_500_PAGE), BadAnswerError, "the server carried the request out"),
    (Answer(body=b'{"ok": tru'), BadAnswerError, "the server carried the request out"),
    (Answer(body=b"{}", content_length=40), TransientError, "the server may have carried it out")])
def test_garbled_answer_to_a_write_is_not_sent_again(driver: GlueNamespace, fake: FakeGlue,
                                                     sleeps: list[float], answer: Answer, error: type,
                                                     because: str):
    fake.answer("CreateTable", answer)
    with pytest.raises(error, match=r"^glue: CreateTable on 123456789012\$sales\$orders answered") as caught:
        declare(driver)
    assert str(caught.value).endswith(f"{because}, so it was not sent again")
    assert fake.requests["CreateTable"] == 1 and sleeps == []


@pytest.mark.parametrize("body", [b"{}", b"", b'{"Unexpected": "member"}'])
def test_empty_answers_to_writes_are_fine(driver: GlueNamespace, fake: FakeGlue, body: bytes):
    fake.answer("CreateTable", Answer(body=body))
    assert declare(driver).location == LOCATION
    fake.answer("CreateDatabase", Answer(body=body))
    driver.create_namespace(CreateNamespaceRequest(id=[ACCOUNT, "new_db"]))


def test_a_write_answered_500_is_not_sent_again(driver: GlueNamespace, fake: FakeGlue, sleeps: list[float]):
    """A CreateTable answered 500 may have landed: it is not sent again (a resend would meet
    AlreadyExists, as botocore's standard mode does). The error is transient, so the apply
    layer runs the action again after reading the live table; the same for a table: the
    answer to the resend is AlreadyExists, which stays TableAlreadyExists."""
    fake.answer("CreateTable", glue_error("InternalServiceException", 500),
                glue_error("AlreadyExistsException", message="Table already exists."))
    with pytest.raises(ServiceUnavailableError) as caught:
        declare(driver)
    assert str(caught.value) == ("glue: CreateTable on 123456789012$sales$orders answered "
                                 "InternalServiceException: refused")
    assert fake.requests["CreateTable"] == 1 and sleeps == []
    with pytest.raises(TableAlreadyExistsError) as caught:
        declare(driver)
    assert str(caught.value) == ("glue: CreateTable on 123456789012$sales$orders answered "
                                 "AlreadyExistsException: Table already exists.")


def test_an_error_answer_cut_short_is_transient(driver: GlueNamespace, fake: FakeGlue, sleeps: list[float]):
    """botocore reads a cut error body as a code-less 400, so AlreadyExists would be lost and
    the create taken for a final failure; cut short, the answer is transient (the server may
    have acted), and the apply layer reads the live table before trying again."""
    whole = glue_error("AlreadyExistsException", message="Table already exists.").body
    fake.answer("CreateTable", Answer(status=400, body=whole[:12], content_length=len(whole)))
    with pytest.raises(TransientError, match=r"^glue: CreateTable on 123456789012\$sales\$orders answered "
                                             r"a body cut short \(12 of \d+ bytes\); the server may have"):
        declare(driver)
    assert fake.requests["CreateTable"] == 1 and sleeps == []


@pytest.mark.parametrize(("operation", "code", "call", "expected"), [
    ("CreateDatabase", "AlreadyExistsException",
     lambda d: d.create_namespace(CreateNamespaceRequest(id=[ACCOUNT, "sales"])), NamespaceAlreadyExistsError),
    ("CreateTable", "EntityNotFoundException", declare, NamespaceNotFoundError),
    ("GetTable", "EntityNotFoundException", READS["GetTable"][0], TableNotFoundError),
    ("GetDatabase", "EntityNotFoundException", READS["GetDatabase"][0], NamespaceNotFoundError),
    ("GetTables", "EntityNotFoundException", READS["GetTables"][0], NamespaceNotFoundError),
    ("DeleteTable", "EntityNotFoundException",
     lambda d: d.deregister_table(DeregisterTableRequest(id=list(TABLE))), TableNotFoundError),
])
def test_not_found_and_already_exists_are_translated(driver: GlueNamespace, fake: FakeGlue, operation: str,
                                                     code: str, call: Callable, expected: type):
    fake.answer(operation, glue_error(code))
    with pytest.raises(expected):
        call(driver)
    assert fake.requests[operation] == 1


# --- transport failures and error pages ----------------------------------------------------------


def test_moto_500_page_is_one_line_after_retries(driver: GlueNamespace, fake: FakeGlue):
    fake.answer("GetTables", Answer(status=500, body=MOTO_500_PAGE))
    with pytest.raises(ServiceUnavailableError) as caught:
        READS["GetTables"][0](driver)
    assert str(caught.value) == ("glue: GetTables on 123456789012$sales answered 500: "
                                 "an HTML page titled '500 Internal Server Error' after 3 attempts")
    assert fake.requests["GetTables"] == 1 + MAX_RETRIES


def test_404_page_is_one_line(driver: GlueNamespace, fake: FakeGlue):
    fake.answer("GetDatabase", Answer(status=404, body=MOTO_404_PAGE))
    with pytest.raises(InternalError) as caught:
        READS["GetDatabase"][0](driver)
    assert str(caught.value) == ("glue: GetDatabase on 123456789012$sales answered 404: "
                                 "an HTML page titled '404 Not Found'")


@pytest.mark.parametrize(("answer", "error", "problem"), [
    (Answer(hang_up=True), ServiceUnavailableError, "lost the connection before the answer"),
    (Answer(body=json.dumps(GOOD["GetTables"]).encode(), cut_chunk=True), BadAnswerError,
     "answered a body cut short (chunked")], ids=["hang up", "chunk cut short"])
def test_lost_connections_are_retried_then_raised(driver: GlueNamespace, fake: FakeGlue, answer: Answer,
                                                  error: type, problem: str):
    fake.answer("GetTables", answer)
    with pytest.raises(error) as caught:
        READS["GetTables"][0](driver)
    assert str(caught.value).startswith(f"glue: GetTables on 123456789012$sales {problem}")
    assert str(caught.value).endswith("after 3 attempts")
    assert fake.requests["GetTables"] == 1 + MAX_RETRIES


def test_lost_connection_then_a_good_answer(driver: GlueNamespace, fake: FakeGlue):
    fake.answer("GetTables", Answer(hang_up=True), ok(GOOD["GetTables"]))
    assert READS["GetTables"][0](driver) == ["orders"]
    assert fake.requests["GetTables"] == 2


def failing_sends(driver: GlueNamespace, error: Exception) -> list[str]:
    """Make every Glue request fail with `error` where urllib3 sends it; the targets tried."""
    tried: list[str] = []

    def fail(method: str, target: str, **request: Any) -> Any:
        tried.append(request["headers"]["X-Amz-Target"])
        raise error

    driver.client.glue.http.send = fail
    return tried


@pytest.mark.parametrize(("error", "resent", "problem"), [
    (ReadTimeoutError(None, "/", "read timed out"), False, "timed out waiting for the answer (60 s)"),
    (ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer")), False,
     "lost the connection before the answer (connection reset by peer)"),
    (NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused"), True,
     ": cannot reach the server at http://127.0.0.1:"),
], ids=["read timeout", "connection reset", "refused"])
def test_transport_failures_of_reads_and_writes(make_driver, fake: FakeGlue, sleeps: list[float],
                                                error: Exception, resent: bool, problem: str):
    """A read is sent again after any transport failure; a write only when it cannot have
    reached Glue (the connection was never made)."""
    driver = make_driver()
    tried = failing_sends(driver, error)
    with pytest.raises(ServiceUnavailableError) as caught:
        READS["GetTable"][0](driver)
    assert str(caught.value).startswith("glue: GetTable on 123456789012$sales$orders")
    assert problem in str(caught.value) and str(caught.value).endswith("after 3 attempts")
    assert tried == ["AWSGlue.GetTable"] * (1 + MAX_RETRIES)
    tried.clear()
    with pytest.raises(ServiceUnavailableError) as caught:
        declare(driver)
    assert problem in str(caught.value)
    assert tried == ["AWSGlue.CreateTable"] * (1 + MAX_RETRIES if resent else 1)
    if not resent:
        assert str(caught.value).endswith("the server may have carried it out, so it was not sent again")


def test_throttling_is_retried_then_raised(driver: GlueNamespace, fake: FakeGlue):
    fake.answer("GetDatabase", glue_error("ThrottlingException", message="Rate exceeded"))
    with pytest.raises(ThrottlingError) as caught:
        READS["GetDatabase"][0](driver)
    assert str(caught.value) == ("glue: GetDatabase on 123456789012$sales answered "
                                 "ThrottlingException: Rate exceeded after 3 attempts")
    assert fake.requests["GetDatabase"] == 1 + MAX_RETRIES


def test_a_throttled_write_is_sent_again(driver: GlueNamespace, fake: FakeGlue, sleeps: list[float]):
    """Glue refuses a throttled call before carrying it out, so a write is sent again too."""
    throttled = glue_error("ThrottlingException", message="Rate exceeded")
    fake.answer("CreateTable", throttled, throttled, Answer(body=b"{}"))
    assert declare(driver).location == LOCATION
    assert fake.requests["CreateTable"] == 3 and len(sleeps) == 2


# --- STS -----------------------------------------------------------------------------------------


def test_garbled_caller_identity_is_a_bad_answer(make_driver, fake: FakeGlue, sleeps: list[float],
                                                 monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", fake.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", fake.endpoint)
    driver = make_driver(endpoint=None, catalog_id=None)
    fake.answer("GetCallerIdentity", Answer(body=b"<html><title>Sign in</title></html>"))
    with pytest.raises(BadAnswerError, match=r"^glue: GetCallerIdentity on the caller's account"):
        driver.list_namespaces(ListNamespacesRequest(id=[]))
    assert fake.requests["GetCallerIdentity"] == 1 + BAD_ANSWER_RETRIES

    fake.answer("GetCallerIdentity", Answer(body=(
        b"<GetCallerIdentityResponse xmlns='https://sts.amazonaws.com/doc/2011-06-15/'>"
        b"<GetCallerIdentityResult><Account>123456789012</Account></GetCallerIdentityResult>"
        b"</GetCallerIdentityResponse>")))
    assert driver.list_namespaces(ListNamespacesRequest(id=[])).namespaces == [ACCOUNT, "cat"]


@pytest.mark.parametrize(("body", "problem"), [
    (b"<html><title>Sign in</title></html>", "without AssumeRoleResult (body: an HTML page titled 'Sign in')"),
    (b"Rate exceeded", "a body that is not XML"),
    (b"<AssumeRoleResponse><AssumeRoleResult></AssumeRoleResult></AssumeRoleResponse>",
     "without Credentials"),
])
def test_garbled_assume_role_is_a_bad_answer(make_driver, fake: FakeGlue, monkeypatch: pytest.MonkeyPatch,
                                             body: bytes, problem: str):
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", fake.endpoint)
    role = "arn:aws:iam::210987654321:role/lance-sync-test"
    driver = make_driver(assume_role_arn=role)
    fake.answer("AssumeRole", Answer(body=body))
    with pytest.raises(BadAnswerError) as caught:
        READS["GetDatabase"][0](driver)
    assert str(caught.value).startswith(f"glue: AssumeRole on role {role} answered ")
    assert problem in str(caught.value)
    assert fake.requests["AssumeRole"] == 1 + BAD_ANSWER_RETRIES  # a read: sent again
    assert fake.requests["GetDatabase"] == 0  # nothing was signed with garbage


@pytest.mark.parametrize("operation", sorted(READ_OPERATIONS))
def test_a_checked_answer_is_what_botocore_would_parse_but_its_timestamps(operation: str):
    """Answers are decoded and checked once (`answer_parser`), never parsed again: the same
    members as botocore's parse (those the model lacks and null ones left out), timestamps
    kept as epoch seconds."""
    service = "lakeformation" if operation == "ListPermissions" else "glue"
    model = botocore.session.get_session().get_service_model(service).operation_model(operation)
    answer = {**GOOD[operation], "NextToken": "t2", "Extra": 1}
    if operation == "GetTables":
        answer["TableList"] = [{**LANCE_TABLE, "SomethingNew": {"x": [1]}, "Description": None,
                                "CreateTime": 1795710305.5,
                                "StorageDescriptor": {"Location": LOCATION, "Unknown": 2, "Columns": None}}]
    answer = {key: value for key, value in answer.items() if key in model.output_shape.members or key == "Extra"}
    body = json.dumps(answer).encode()
    checked = answer_parser(service_model(service).operation_model(operation))(body)
    parsed = create_parser(model.metadata["protocol"]).parse(
        {"status_code": 200, "headers": {}, "body": body}, model.output_shape)
    parsed.pop("ResponseMetadata")
    for table in parsed.get("TableList", []) + ([parsed["Table"]] if "Table" in parsed else []):
        table["CreateTime"] = table["CreateTime"].timestamp()
    assert checked == parsed
