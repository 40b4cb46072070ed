"""The Hive driver checks every Thrift answer and survives protocol errors.

A scripted metastore on 127.0.0.1 answers each call with pymetastore's own Processor (the
Hive 3.1 IDL's generated server code) over a canned handler, then hands the encoded answer to
a `respond` function that may pass it on, garble it, cut it short or hang up instead. So
wrong shapes are real Thrift answers on a real socket, and broken ones are exactly the bytes
chosen. Connections are counted on the server; the driver's backoff waits are recorded, not
slept.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    ListNamespacesRequest,
    ListTablesRequest,
)
from lance_namespace.errors import (
    InternalError,
    LanceNamespaceError,
    ServiceUnavailableError,
)
from pymetastore.hive_metastore import ThriftHiveMetastore
from pymetastore.hive_metastore.ttypes import (
    Catalog,
    Database,
    GetCatalogRequest,
    GetCatalogResponse,
    GetCatalogsResponse,
    GetTableRequest,
    GetTableResult,
    GetTablesRequest,
    GetTablesResult,
    NoSuchObjectException,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.Thrift import TException, TMessageType, TType
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import TBufferedTransport, TMemoryBuffer, TTransportException

from lance_sync.drivers.hive3 import transport
from lance_sync.drivers.hive3.answers import ANSWER_CHECKS, READ_CALLS
from lance_sync.drivers.hive3.driver import Hive3Namespace
from lance_sync.drivers.hive3.transport import MetastoreUnreachableError
from lance_sync.drivers.support.retry import BadAnswerError, TransientError

RETRIES = 3  # the driver's default client.max-retries


# --- a scripted metastore ------------------------------------------------------------------------

def lance_table(name: str, database: str = "sales", **fields: Any) -> Table:
    values = dict(tableName=name, dbName=database, catName="hive", tableType="EXTERNAL_TABLE",
                  parameters={"EXTERNAL": "TRUE", "table_type": "lance", "transient_lastDdlTime": "1"},
                  sd=StorageDescriptor(cols=[], location=f"file:/lake/{name}.lance",
                                       serdeInfo=SerDeInfo(name=name, parameters={})))
    return Table(**{**values, **fields})


class Handler:
    """Canned answers of a small metastore: catalog `hive`, databases `default` and `sales`,
    Lance table `sales.t`. Tests replace methods to answer wrong shapes."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def get_catalogs(self) -> GetCatalogsResponse:
        return GetCatalogsResponse(names=["hive"])

    def get_catalog(self, request: Any) -> GetCatalogResponse:
        return GetCatalogResponse(catalog=Catalog(name=request.name, locationUri="file:/warehouse"))

    def get_all_databases(self) -> list[str]:
        return ["default", "sales"]

    def get_database(self, name: str) -> Database:
        if name not in ("default", "sales"):
            raise NoSuchObjectException(f"{name} not found")
        return Database(name=name, parameters={"team": "sales"}, catalogName="hive",
                        locationUri=f"file:/warehouse/{name}.db")

    def get_all_tables(self, database: str) -> list[str]:
        return ["t"]

    def get_table_req(self, request: GetTableRequest) -> GetTableResult:
        return GetTableResult(table=lance_table(request.tblName))

    def get_table_objects_by_name_req(self, request: GetTablesRequest) -> GetTablesResult:
        return GetTablesResult(tables=[lance_table(name) for name in request.tblNames])

    def create_database(self, database: Database) -> None:
        self.created.append(database.name)

    def drop_table(self, database: str, name: str, delete_data: bool) -> None:
        pass


#: respond(connection index, call, the valid answer) -> bytes to send, or None to hang up
Respond = Callable[[int, str, bytes], "bytes | None"]


def whole(index: int, call: str, answer: bytes) -> bytes:
    return answer


class ScriptedMetastore:
    """Serves each connection in a thread: reads a request, encodes the handler's answer with
    the generated Processor, sends what `respond` makes of it. After anything but the valid
    answer it hangs up, so a client waiting for more bytes sees the end, not a timeout."""

    def __init__(self, handler: Handler, respond: Respond) -> None:
        self.handler, self.respond = handler, respond
        self.processor = ThriftHiveMetastore.Processor(handler)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"thrift://127.0.0.1:{self._listener.getsockname()[1]}"
        self.connections = 0
        self.calls: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                index, self.connections = self.connections, self.connections + 1
            threading.Thread(target=self._serve, args=(index, connection), daemon=True).start()

    def _serve(self, index: int, connection: socket.socket) -> None:
        handle = TSocket()
        handle.setHandle(connection)
        iprot = TBinaryProtocol(TBufferedTransport(handle))
        try:
            while True:
                out = TMemoryBuffer()
                self.processor.process(iprot, TBinaryProtocol(out))
                answer = out.getvalue()
                call = TBinaryProtocol(TMemoryBuffer(answer)).readMessageBegin()[0]
                with self._lock:
                    self.calls.append(call)
                sent = self.respond(index, call, answer)
                if sent is not None:
                    connection.sendall(sent)
                if sent != answer:
                    return
        except (TTransportException, OSError):
            return
        finally:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def close(self) -> None:
        with suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()


@contextmanager
def metastore(respond: Respond = whole, handler: Handler | None = None) -> Iterator[ScriptedMetastore]:
    server = ScriptedMetastore(handler or Handler(), respond)
    try:
        yield server
    finally:
        server.close()


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "condition not met in 30 s"
        time.sleep(0.01)


@pytest.fixture
def sleeps() -> list[float]:
    return []


def driver_for(server: ScriptedMetastore, tmp_path: Path, sleeps: list[float], **properties: str) -> Hive3Namespace:
    driver = Hive3Namespace(uri=server.endpoint, root=str(tmp_path),
                            **{"client.socket-timeout-sec": "10", **properties})
    driver.client.sleep = sleeps.append
    return driver


def encoded_answer(call: str, result: Any) -> bytes:
    out = TMemoryBuffer()
    protocol = TBinaryProtocol(out)
    protocol.writeMessageBegin(call, TMessageType.REPLY, 0)
    result.write(protocol)
    protocol.writeMessageEnd()
    return out.getvalue()


# --- broken answers: garbage, a hang-up, half an answer -------------------------------------------

GARBAGE = {
    "bad version": b"\xff" * 64,
    "http page": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
    "random bytes": random.Random(7).randbytes(256),
    "zeros": b"\x00" * 64,  # decodes as an empty message with no result
}


def garbage(data: bytes, only: str | None = None) -> Respond:
    return lambda index, call, answer: data if only in (None, call) else answer


def hang_up(index: int, call: str, answer: bytes) -> None:
    return None


def half(index: int, call: str, answer: bytes) -> bytes:
    return answer[:len(answer) // 2]


OPERATIONS: dict[str, tuple[Callable[[Hive3Namespace], Any], str]] = {
    "list catalogs": (lambda d: d.list_namespaces(ListNamespacesRequest(id=[])), "get_catalogs"),
    "list namespaces": (lambda d: d.list_namespaces(ListNamespacesRequest(id=["hive"])), "get_all_databases"),
    "describe namespace": (lambda d: d.describe_namespace(DescribeNamespaceRequest(id=["hive", "sales"])),
                           "get_database"),
    "list tables": (lambda d: d.list_tables(ListTablesRequest(id=["hive", "sales"])), "get_all_tables"),
    "describe table": (lambda d: d.describe_table(DescribeTableRequest(id=["hive", "sales", "t"])),
                       "get_table_req"),
}


def test_the_scripted_metastore_answers_every_operation(tmp_path: Path, sleeps: list[float]):
    with metastore() as server:
        driver = driver_for(server, tmp_path, sleeps)
        assert driver.list_namespaces(ListNamespacesRequest(id=[])).namespaces == ["hive"]
        assert driver.list_namespaces(ListNamespacesRequest(id=["hive"])).namespaces == ["default", "sales"]
        assert driver.describe_namespace(DescribeNamespaceRequest(id=["hive", "sales"])).properties["team"] == "sales"
        assert driver.list_tables(ListTablesRequest(id=["hive", "sales"])).tables == ["t"]
        assert driver.describe_table(DescribeTableRequest(id=["hive", "sales", "t"])).location == "/lake/t.lance"
        assert server.connections == 1 and driver.client.pool.idle() == 1 and sleeps == []


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("kind", GARBAGE)
def test_garbage_is_a_bad_answer_after_bounded_retries(tmp_path: Path, sleeps: list[float], operation: str, kind: str):
    run, call = OPERATIONS[operation]
    with metastore(garbage(GARBAGE[kind], only=call)) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(BadAnswerError) as raised:
            run(driver)
        message = str(raised.value)
        assert message.startswith(f"hive3: {call} to the metastore at ")
        assert "could not be decoded" in message and f"gave up after {RETRIES + 1} attempts" in message
        assert server.calls.count(call) == RETRIES + 1
        assert server.connections == RETRIES + 1  # each attempt on a new connection
        assert len(sleeps) == RETRIES
        assert driver.client.pool.idle() == 0  # no broken connection kept


@pytest.mark.parametrize("operation", OPERATIONS)
@pytest.mark.parametrize("respond", [hang_up, half], ids=["hang-up", "half-answer"])
def test_a_broken_connection_is_service_unavailable_after_bounded_retries(
        tmp_path: Path, sleeps: list[float], operation: str, respond: Respond):
    run, call = OPERATIONS[operation]
    with metastore(lambda index, c, answer: respond(index, c, answer) if c == call else answer) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(ServiceUnavailableError) as raised:
            run(driver)
        message = str(raised.value)
        assert message.startswith(f"hive3: {call} to the metastore at ")
        assert "closed the connection before the answer was complete" in message
        assert f"gave up after {RETRIES + 1} attempts" in message
        assert isinstance(raised.value, TransientError)
        assert server.calls.count(call) == RETRIES + 1
        assert len(sleeps) == RETRIES
        assert driver.client.pool.idle() == 0


def test_a_garbled_batch_in_the_middle_of_list_tables_is_retried(tmp_path: Path, sleeps: list[float]):
    call = "get_table_objects_by_name_req"
    with metastore(garbage(GARBAGE["bad version"], only=call)) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(BadAnswerError, match=call):
            driver.list_tables(ListTablesRequest(id=["hive", "sales"]))
        assert server.calls == ["get_all_tables"] + [call] * (RETRIES + 1)


def test_a_flaky_answer_is_retried_on_a_fresh_connection(tmp_path: Path, sleeps: list[float]):
    def garbled_first(index: int, call: str, answer: bytes) -> bytes:
        return GARBAGE["bad version"] if index == 0 else answer

    with metastore(garbled_first) as server:
        driver = driver_for(server, tmp_path, sleeps)
        assert driver.describe_table(DescribeTableRequest(id=["hive", "sales", "t"])).location == "/lake/t.lance"
        assert server.connections == 2 and len(sleeps) == 1
        assert driver.client.pool.idle() == 1  # the fresh connection, kept
        assert driver.list_tables(ListTablesRequest(id=["hive", "sales"])).tables == ["t"]
        assert server.connections == 2  # and reused


def test_a_fresh_connection_replaces_the_idle_ones(tmp_path: Path, sleeps: list[float]):
    """A retry opens a new connection; the idle ones, opened before the failure, are closed, so
    no more than client.pool-size are ever open."""
    with metastore() as server:
        pool = driver_for(server, tmp_path, sleeps, **{"client.pool-size": "2"}).client.pool
        first, second = pool.acquire(), pool.acquire()
        pool.release(first, reusable=True)
        pool.release(second, reusable=True)
        assert pool.idle() == 2
        fresh = pool.acquire(fresh=True)
        assert fresh not in (first, second) and pool.idle() == 0
        wait_for(lambda: server.connections == 3)
        assert not first.is_open() and not second.is_open()
        pool.release(fresh, reusable=True)


def test_retries_follow_client_max_retries(tmp_path: Path, sleeps: list[float]):
    with metastore(hang_up) as server:
        driver = driver_for(server, tmp_path, sleeps, **{"client.max-retries": "0"})
        with pytest.raises(ServiceUnavailableError) as raised:
            driver.describe_namespace(DescribeNamespaceRequest(id=["hive", "sales"]))
        assert "gave up" not in str(raised.value)
        assert server.connections == 1 and sleeps == []


def test_an_answer_to_another_call_is_refused(tmp_path: Path, sleeps: list[float]):
    """The generated client reads any message as the answer; an out-of-step connection would
    hand one call's answer to the next."""
    stale = encoded_answer("get_all_databases", ThriftHiveMetastore.get_all_databases_result(success=["x"]))
    with metastore(lambda index, call, answer: stale if call == "get_all_tables" else answer) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(BadAnswerError, match="get_all_tables .*does not belong to the call sent"):
            driver.list_tables(ListTablesRequest(id=["hive", "sales"]))
        assert server.calls.count("get_all_tables") == RETRIES + 1


def test_a_map_of_the_wrong_type_on_the_wire_is_a_bad_answer(tmp_path: Path, sleeps: list[float]):
    """Database.parameters sent as map<string, i32>: Thrift cannot decode it into the IDL's
    map<string, string>."""
    out = TMemoryBuffer()
    protocol = TBinaryProtocol(out)
    protocol.writeMessageBegin("get_database", TMessageType.REPLY, 0)
    protocol.writeFieldBegin("success", TType.STRUCT, 0)
    protocol.writeFieldBegin("name", TType.STRING, 1)
    protocol.writeString("sales")
    protocol.writeFieldBegin("parameters", TType.MAP, 4)
    protocol.writeMapBegin(TType.STRING, TType.I32, 1)
    protocol.writeString("team")
    protocol.writeI32(5)
    protocol.writeFieldStop()
    protocol.writeFieldStop()
    wrong = out.getvalue()
    with metastore(lambda index, call, answer: wrong if call == "get_database" else answer) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(BadAnswerError, match="get_database .*could not be decoded"):
            driver.describe_namespace(DescribeNamespaceRequest(id=["hive", "sales"]))


# --- wrong shapes: decoded answers without the fields the driver needs -----------------------------

def shaped(method: str, answer: Callable[..., Any]) -> Handler:
    handler = Handler()
    setattr(handler, method, answer)
    return handler


WRONG_SHAPES: dict[str, tuple[Handler, str, str, str]] = {
    # id: (handler, operation, call, what the message says)
    "lance table without sd": (
        shaped("get_table_req", lambda r: GetTableResult(table=lance_table(r.tblName, sd=None))),
        "describe table", "get_table_req", "Lance table 't' has no sd.location"),
    "lance table without location": (
        shaped("get_table_req", lambda r: GetTableResult(table=lance_table(r.tblName, sd=StorageDescriptor()))),
        "describe table", "get_table_req", "Lance table 't' has no sd.location"),
    "table without parameters": (
        shaped("get_table_req", lambda r: GetTableResult(table=lance_table(r.tblName, parameters=None))),
        "describe table", "get_table_req", "GetTableResult.table.parameters is missing"),
    "table without tableType": (
        shaped("get_table_req", lambda r: GetTableResult(table=lance_table(r.tblName, tableType=None))),
        "describe table", "get_table_req", "GetTableResult.table.tableType is missing"),
    "another table": (
        shaped("get_table_req", lambda r: GetTableResult(table=lance_table("other"))),
        "describe table", "get_table_req", "table 'other' was not asked for"),
    "a table of another database": (
        shaped("get_table_req", lambda r: GetTableResult(table=lance_table(r.tblName, database="hr"))),
        "describe table", "get_table_req", "of database 'hr' (catalog 'hive') answered for database 'sales'"),
    "no table": (
        shaped("get_table_req", lambda r: GetTableResult(table=None)),
        "describe table", "get_table_req", "Required field table is unset"),
    "database without name": (
        shaped("get_database", lambda name: Database(parameters={})),
        "describe namespace", "get_database", "Database.name is missing"),
    "database without parameters": (
        shaped("get_database", lambda name: Database(name=name)),
        "describe namespace", "get_database", "Database.parameters is missing"),
    "another database": (
        shaped("get_database", lambda name: Database(name="hr", parameters={})),
        "describe namespace", "get_database", "database 'hr' (catalog None) answered for 'sales'"),
    "catalogs without names": (
        shaped("get_catalogs", lambda: GetCatalogsResponse()),
        "list catalogs", "get_catalogs", "GetCatalogsResponse.names is missing"),
    "an empty database name": (
        shaped("get_all_databases", lambda: ["default", ""]),
        "list namespaces", "get_all_databases", "names[1] is empty"),
    "tables without the list": (
        shaped("get_table_objects_by_name_req", lambda r: GetTablesResult()),
        "list tables", "get_table_objects_by_name_req", "Required field tables is unset"),
    "a table twice": (
        shaped("get_table_objects_by_name_req", lambda r: GetTablesResult(tables=[lance_table("t")] * 2)),
        "list tables", "get_table_objects_by_name_req", "table 't' is answered twice"),
    "a table not asked for": (
        shaped("get_table_objects_by_name_req", lambda r: GetTablesResult(tables=[lance_table("x")])),
        "list tables", "get_table_objects_by_name_req", "tables[0]: table 'x' was not asked for"),
}


@pytest.mark.parametrize("case", WRONG_SHAPES)
def test_a_wrong_shape_is_a_bad_answer_naming_the_call(tmp_path: Path, sleeps: list[float], case: str):
    handler, operation, call, what = WRONG_SHAPES[case]
    run = OPERATIONS[operation][0]
    with metastore(handler=handler) as server:
        driver = driver_for(server, tmp_path, sleeps, **{"client.max-retries": "1"})
        with pytest.raises(BadAnswerError) as raised:
            run(driver)
        message = str(raised.value)
        assert message.startswith(f"hive3: {call} to the metastore at ")
        assert "answered an unexpected shape: " in message and what in message, message
        assert server.calls.count(call) == 2  # retried like any bad answer, then given up
        assert driver.client.pool.idle() == 0


def test_an_empty_catalog_list_is_not_taken_for_a_missing_answer(tmp_path: Path, sleeps: list[float]):
    with metastore(handler=shaped("get_catalogs", lambda: GetCatalogsResponse(names=[]))) as server:
        assert driver_for(server, tmp_path, sleeps).list_namespaces(ListNamespacesRequest(id=[])).namespaces == []


def test_tables_that_are_not_lance_may_lack_what_lance_tables_need(tmp_path: Path, sleeps: list[float]):
    """A view has a storage descriptor without a location; HMS 2.3 sends no catName; another
    engine's table may have no sd at all. None of them is a wrong shape."""
    view = lance_table("v", tableType="VIRTUAL_VIEW", parameters={"transient_lastDdlTime": "1"},
                       sd=StorageDescriptor(cols=[]), catName=None)
    bare = lance_table("b", tableType="MANAGED_TABLE", parameters={}, sd=None)
    handler = Handler()
    handler.get_all_tables = lambda database: ["b", "t", "v"]
    handler.get_table_objects_by_name_req = lambda r: GetTablesResult(tables=[view, lance_table("t"), bare])
    with metastore(handler=handler) as server:
        driver = driver_for(server, tmp_path, sleeps)
        infos = {info.id[-1]: info for info in driver.list_table_infos(("hive", "sales"))}
        assert {name: (info.is_lance, info.location) for name, info in infos.items()} == {
            "b": (False, None), "t": (True, "/lake/t.lance"), "v": (False, None)}
        assert driver.list_tables(ListTablesRequest(id=["hive", "sales"])).tables == ["t"]


# --- the checks themselves, on Python objects (types the wire cannot carry) -----------------------

def database_ok(**fields: Any) -> Database:
    return Database(**{"name": "sales", "parameters": {"a": "b"}, **fields})


TYPE_CASES = {
    "table parameter value": ("get_table_req", GetTableResult(table=lance_table("t", parameters={
        "table_type": "lance", "n": 1})), "GetTableResult.table.parameters['n'] is int 1, not a string"),
    "table parameter key": ("get_table_req", GetTableResult(table=lance_table("t", parameters={
        "table_type": "lance", 2: "x"})), "GetTableResult.table.parameters key 2 is int 2, not a string"),
    "sd as a string": ("get_table_req", GetTableResult(table=lance_table("t", sd="file:/x")),
                       "GetTableResult.table.sd is str 'file:/x', not a StorageDescriptor"),
    "location as bytes": ("get_table_req", GetTableResult(table=lance_table(
        "t", sd=StorageDescriptor(location=b"file:/x"))), "GetTableResult.table.sd.location is bytes b'file:/x', not a string"),
    "table name as a number": ("get_table_req", GetTableResult(table=lance_table(5)),
                               "GetTableResult.table.tableName is int 5, not a string"),
    "a dict for a table": ("get_table_req", GetTableResult(table={"tableName": "t"}),
                           "GetTableResult.table is dict {'tableName': 't'}, not a Table"),
    "database parameters as a list": ("get_database", database_ok(parameters=[("a", "b")]),
                                      "Database.parameters is list [('a', 'b')], not a map"),
    "database parameter value None": ("get_database", database_ok(parameters={"a": None}),
                                      "Database.parameters['a'] is missing"),
    "owner type as a string": ("get_database", database_ok(ownerType="USER"),
                               "Database.ownerType is str 'USER', not int"),
    "owner type as a bool": ("get_database", database_ok(ownerType=True), "Database.ownerType is bool True, not int"),
    "description as a number": ("get_database", database_ok(description=3), "Database.description is int 3, not a string"),
    "names holding a number": ("get_all_tables", ["a", 1], "names[1] is int 1, not a string"),
    "names as a string": ("get_all_databases", "default", "names is str 'default', not a list"),
    "names as None": ("get_all_databases", None, "names is missing"),
    "catalog location as a number": ("get_catalog", GetCatalogResponse(catalog=Catalog(name="lake", locationUri=7)),
                                     "GetCatalogResponse.catalog.locationUri is int 7, not a string"),
    "catalog of another name": ("get_catalog", GetCatalogResponse(catalog=Catalog(name="other")),
                                "catalog 'other' answered for catalog 'lake'"),
    "catalog names holding None": ("get_catalogs", GetCatalogsResponse(names=["hive", None]),
                                   "GetCatalogsResponse.names[1] is missing"),
}
CALL_ARGS = {
    "get_table_req": (GetTableRequest(dbName="sales", tblName="t", catName="hive"),),
    "get_database": ("sales",),
    "get_all_tables": ("sales",),
    "get_all_databases": (),
    "get_catalog": (GetCatalogRequest(name="lake"),),
    "get_catalogs": (),
}


@pytest.mark.parametrize("case", TYPE_CASES)
def test_checks_name_the_field_and_the_type(case: str):
    call, answer, what = TYPE_CASES[case]
    problem = ANSWER_CHECKS[call](answer, *CALL_ARGS[call])
    assert problem is not None and what in problem, problem


@pytest.mark.parametrize("call", sorted(CALL_ARGS))
def test_checks_pass_good_answers(call: str):
    good = {
        "get_table_req": GetTableResult(table=lance_table("T")),  # HMS folds case
        "get_database": database_ok(name="SALES", ownerType=1, description="d", catalogName="hive"),
        "get_all_tables": [],
        "get_all_databases": ["default"],
        "get_catalog": GetCatalogResponse(catalog=Catalog(name="lake", locationUri="file:/l")),
        "get_catalogs": GetCatalogsResponse(names=["hive"]),
    }
    assert ANSWER_CHECKS[call](good[call], *CALL_ARGS[call]) is None


def test_every_read_call_has_a_check():
    assert set(ANSWER_CHECKS) == READ_CALLS
    assert {"get_database", "get_table_req", "get_table_objects_by_name_req", "get_all_tables",
            "get_all_databases", "get_databases", "get_catalog", "get_catalogs"} <= READ_CALLS
    assert not READ_CALLS & {"create_database", "alter_database", "drop_database", "create_table",
                             "alter_table", "drop_table", "create_catalog", "alter_catalog", "drop_catalog"}


# --- writes, refusals, connects --------------------------------------------------------------------

@pytest.mark.parametrize("respond", [garbage(GARBAGE["bad version"]), hang_up, half],
                         ids=["garbage", "hang-up", "half-answer"])
def test_a_write_whose_answer_broke_is_transient_and_not_retried(tmp_path: Path, sleeps: list[float],
                                                                 respond: Respond):
    with metastore(respond) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(TransientError) as raised:
            driver.create_namespace(CreateNamespaceRequest(id=["hive", "new_db"]))
        message = str(raised.value)
        assert message.startswith("hive3: create_database to the metastore at ")
        assert "may have received the request and carried it out" in message and "gave up" not in message
        assert server.calls == ["create_database"] and server.handler.created == ["new_db"]
        assert sleeps == [] and driver.client.pool.idle() == 0


def test_a_drop_whose_answer_broke_names_the_drop(tmp_path: Path, sleeps: list[float]):
    with metastore(lambda index, call, answer: None if call == "drop_table" else answer) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(ServiceUnavailableError, match="drop_table .*may have received the request and carried it out"):
            driver.deregister_table(DeregisterTableRequest(id=["hive", "sales", "t"]))
        assert server.calls == ["get_table_req", "drop_table"]


def test_a_write_that_could_not_connect_is_retried(tmp_path: Path, sleeps: list[float],
                                                   monkeypatch: pytest.MonkeyPatch):
    refused = []

    class RefusedOnce(transport.MetastoreConnection):
        def __init__(self, *args: Any) -> None:
            if not refused:
                refused.append(True)
                raise TTransportException(TTransportException.NOT_OPEN, "Could not connect (refused)")
            super().__init__(*args)

    monkeypatch.setattr(transport, "MetastoreConnection", RefusedOnce)
    with metastore() as server:
        driver = driver_for(server, tmp_path, sleeps)
        driver.create_namespace(CreateNamespaceRequest(id=["hive", "new_db"]))
        assert server.handler.created == ["new_db"] and len(sleeps) == 1 and driver.api_calls == 1


def test_an_unreachable_metastore_gives_up_naming_the_call(tmp_path: Path, sleeps: list[float]):
    with metastore() as server:
        server.close()  # nothing listens on the port any more
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(MetastoreUnreachableError) as raised:
            driver.create_namespace(CreateNamespaceRequest(id=["hive", "new_db"]))
        assert str(raised.value).startswith("hive3: create_database: cannot connect to the metastore at ")
        assert f"gave up after {RETRIES + 1} attempts" in str(raised.value)
        assert isinstance(raised.value, ServiceUnavailableError)
        assert len(sleeps) == RETRIES and driver.api_calls == 0


def test_an_internal_error_of_the_metastore_is_not_retried(tmp_path: Path, sleeps: list[float]):
    def fails(name: str) -> Database:
        raise RuntimeError("boom")  # the Processor answers TApplicationException INTERNAL_ERROR

    with metastore(handler=shaped("get_database", fails)) as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(InternalError, match="get_database .*TApplicationException INTERNAL_ERROR") as raised:
            driver.describe_namespace(DescribeNamespaceRequest(id=["hive", "sales"]))
        assert not isinstance(raised.value, BadAnswerError)
        assert server.calls == ["get_database"] and sleeps == [] and driver.client.pool.idle() == 0


def test_declared_errors_keep_the_connection(tmp_path: Path, sleeps: list[float]):
    with metastore() as server:
        driver = driver_for(server, tmp_path, sleeps)
        assert driver.get_namespace_info(("hive", "missing")) is None
        assert driver.client.pool.idle() == 1 and server.connections == 1 and sleeps == []


def test_an_argument_that_cannot_be_encoded_is_an_internal_error(tmp_path: Path, sleeps: list[float]):
    with metastore() as server:
        driver = driver_for(server, tmp_path, sleeps)
        with pytest.raises(InternalError, match="hive3: get_database could not be encoded"):
            driver.client.send("get_database", 5)
        assert sleeps == [] and driver.client.pool.idle() == 0 and server.calls == []


@pytest.mark.parametrize("respond", [garbage(GARBAGE["random bytes"]), hang_up, half],
                         ids=["garbage", "hang-up", "half-answer"])
def test_no_thrift_exception_reaches_the_caller(tmp_path: Path, sleeps: list[float], respond: Respond):
    with metastore(respond) as server:
        driver = driver_for(server, tmp_path, sleeps, **{"client.max-retries": "1"})
        calls = [*(run for run, _ in OPERATIONS.values()),
                 lambda d: list(d.list_table_infos(("hive", "sales"))),
                 lambda d: list(d.list_namespace_infos(("hive",))),
                 lambda d: d.capabilities(),
                 lambda d: d.update_table_properties(("hive", "sales", "t"), {"a": "b"}, []),
                 lambda d: d.drop_namespace(DropNamespaceRequest(id=["hive", "sales"]))]
        for call in calls:
            with pytest.raises(LanceNamespaceError) as raised:
                call(driver)
            assert not isinstance(raised.value, TException)
            assert str(raised.value).startswith("hive3: ")
        assert driver.client.pool.idle() == 0
