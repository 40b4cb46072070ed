"""Hive Metastore 3.x backend (spec: hive3.md), which also serves Hive Metastore 2.x.

Identifiers (tuples of names; manifests write them `$`-joined):

- `()` is the metastore itself; `(catalog,)` a Hive 3 catalog; `(catalog, database)` a
  database; `(catalog, database, table)` a table. Manifests declare databases only: a Hive
  catalog has no property map, so it cannot carry lance-sync's ownership marks (catalogs
  are created with the driver's `create_namespace` or the metastore's own tools).
- The default catalog `hive` is addressed with unprefixed database names, so its
  databases and tables work on a metastore without catalogs (HMS 2.x) too; other
  catalogs are addressed as HMS 3 expects: `@catalog#database` in database-name
  arguments, `catName`/`catalogName` in request structs.
- Against a metastore without the catalog API (`get_catalogs` answers "Invalid method
  name"), catalog operations raise UnsupportedOperationError. This is detected once per
  driver, lazily, and cached.

Storage layout: a table declared without a location goes to
`{root}/{catalog}/{database}/{table}.lance`; a catalog created without
`catalog.location-uri` gets `{root}/_catalogs/{catalog}`; a database created without
`database.location-uri` gets HMS's own default (`<catalog location>/<database>.db`). So
Lance data never lies inside a directory that HMS deletes recursively when a catalog (or,
from other tools, a database) is dropped.

Every call goes out through `_send`, on a pool of `client.pool-size` Thrift connections with
a socket timeout, one call per connection at a time. Every answer of a read is checked where
it enters the driver (`ANSWER_CHECKS`): the fields the driver relies on, and those the Hive
IDL marks required, must be present with the types the IDL gives them, and the object must be
the one asked for; otherwise it is a BadAnswerError naming the call and what was wrong.

After anything but an answer (a protocol or decoding error, garbage, a connection closed
mid-answer, a timeout) the connection is closed, never reused: a Java metastore's connection
is out of step after a protocol error. A read is then sent again on a new connection, up to
`client.max-retries` times with backoff; a write is not (it was sent, so the metastore may
have carried it out): it fails with a TransientError for the caller to reconcile. A call that
could not connect at all is retried whatever it is. The last failure is a
`lance_namespace.errors` error naming the call and the cause, never a Thrift exception.
Metastore errors (the exceptions the Hive IDL declares) are translated to
`lance_namespace.errors` in each operation, with `_translate` as the fallback at the boundary.

Apply leases (`HiveLockLeaseRegister`) are locks of the metastore's own lock API: an EXCLUSIVE
lock that the metastore grants to one requester at a time.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import inspect
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Protocol, TypeVar
from urllib.parse import urlsplit

from lance_namespace import (
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    TableExistsRequest,
    TableExistsResponse,
)
from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
from pymetastore.hive_metastore.ttypes import (
    AlreadyExistsException,
    AlterCatalogRequest,
    Catalog,
    CheckLockRequest,
    CreateCatalogRequest,
    Database,
    DataOperationType,
    DropCatalogRequest,
    GetCatalogRequest,
    GetCatalogResponse,
    GetCatalogsResponse,
    GetTableRequest,
    GetTableResult,
    GetTablesRequest,
    GetTablesResult,
    HeartbeatRequest,
    InvalidObjectException,
    InvalidOperationException,
    LockComponent,
    LockLevel,
    LockRequest,
    LockResponse,
    LockState,
    LockType,
    MetaException,
    NoSuchLockException,
    NoSuchObjectException,
    PrincipalType,
    SerDeInfo,
    ShowLocksRequest,
    ShowLocksResponse,
    ShowLocksResponseElement,
    StorageDescriptor,
    Table,
    UnknownDBException,
    UnlockRequest,
)
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import TBufferedTransport, TTransportException

from lance_sync.drivers.base import (
    Capabilities,
    Identifier,
    NamespaceInfo,
    SyncNamespace,
    TableInfo,
    patched_properties,
)
from lance_sync.drivers.hive3.config import Hive3Config, Hive3Rules
from lance_sync.drivers.leases import LeaseRecord, LeaseRegister, StoredLease, iso_time
from lance_sync.drivers.support.paging import check_page_limit, names_after, page_of_names
from lance_sync.drivers.support.retry import (
    BadAnswerError,
    TransientError,
    is_transient,
    with_retries,
)
from lance_sync.model import secrets
from lance_sync.model.locations import is_local, join_location, normalize_location
from lance_sync.model.marks import LANCE_TABLE_TYPE, TABLE_TYPE_KEY, is_lance_table

DEFAULT_CATALOG = "hive"
DEFAULT_DATABASE = "default"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
#: without EXTERNAL=TRUE, HMS stores an EXTERNAL_TABLE as MANAGED_TABLE (whose drop deletes data)
EXTERNAL_KEY = "EXTERNAL"
LANCE_TABLE_PARAMETERS = {EXTERNAL_KEY: "TRUE", TABLE_TYPE_KEY: LANCE_TABLE_TYPE}
#: table parameters HMS maintains itself; kept on the table, hidden from Lance properties
METASTORE_TABLE_PARAMETERS = frozenset({
    EXTERNAL_KEY, "transient_lastDdlTime", "numFiles", "numFilesErasureCoded", "totalSize",
    "numRows", "rawDataSize", "COLUMN_STATS_ACCURATE", "last_modified_by", "last_modified_time",
})

# Namespace properties that map to fields of the Database and Catalog objects (the spec's
# names for databases; lance-sync's, in the same style, for catalogs).
DATABASE_DESCRIPTION = "database.description"
DATABASE_LOCATION = "database.location-uri"
DATABASE_OWNER = "database.owner"
DATABASE_OWNER_TYPE = "database.owner-type"
DATABASE_FIELDS: tuple[str, ...] = (DATABASE_DESCRIPTION, DATABASE_LOCATION, DATABASE_OWNER, DATABASE_OWNER_TYPE)
CATALOG_DESCRIPTION = "catalog.description"
CATALOG_LOCATION = "catalog.location-uri"
CATALOG_FIELDS: tuple[str, ...] = (CATALOG_DESCRIPTION, CATALOG_LOCATION)

#: where catalogs created without a location go, below `root`
CATALOGS_DIRECTORY = "_catalogs"
#: how a lease lock names its holder in `agentInfo` (the metastore keeps 128 characters)
LEASE_AGENT = re.compile(r"lance-sync lease (?P<id>\w+) pid (?P<pid>\d+) since (?P<started>\S+) "
                         r"for (?P<term>\d+)s")
#: the metastore keeps 128 characters of a lock's user, host and agentInfo
LOCK_TEXT_LIMIT = 128
#: how often a queued lease lock looks whether the lock ahead of it has settled, and how many
#: times before it gives up its place (see HiveLockLeaseRegister._settled)
LOCK_POLL_SECONDS = 0.05
LOCK_POLLS = 200
#: tables per get_table_objects_by_name_req: HMS's own metastore.batch.retrieve.max default
TABLE_BATCH_SIZE = 300
#: most elements a list or map in an answer may claim (garbage claiming billions fails at once)
CONTAINER_LENGTH_LIMIT = 10_000_000
#: exceptions declared in the Hive IDL: answers, after which the connection stays in step
METASTORE_ERRORS: tuple[type[Exception], ...] = tuple(value for value in vars(ttypes).values()
                         if isinstance(value, type) and issubclass(value, TException)
                         and value.__module__ == ttypes.__name__)

T = TypeVar("T")


# --- connections -----------------------------------------------------------------------------

class _AnswerProtocol(TBinaryProtocolAccelerated):
    """The binary protocol, refusing an answer whose header does not belong to the call sent:
    the generated client reads any message as the answer (it checks neither name nor seqid)."""

    def __init__(self, transport: TBufferedTransport) -> None:
        super().__init__(transport, container_length_limit=CONTAINER_LENGTH_LIMIT)
        #: the call whose answer is awaited; set before each call
        self.call = ""

    def readMessageBegin(self) -> tuple[str, int, int]:  # noqa: N802 - Thrift's name
        name, kind, seqid = super().readMessageBegin()
        if name != self.call or kind not in (TMessageType.REPLY, TMessageType.EXCEPTION) or seqid != 0:
            raise TProtocolException(TProtocolException.INVALID_DATA, (
                f"the answer's header (message {name[:60]!r}, type {kind}, seqid {seqid}) does not "
                f"belong to the call sent ({self.call}, type {TMessageType.REPLY} or "
                f"{TMessageType.EXCEPTION}, seqid 0)"))
        return name, kind, seqid


class _Connection:
    """One metastore connection: socket with a timeout, buffered transport, binary protocol."""

    def __init__(self, host: str, port: int, timeout_sec: float) -> None:
        socket = TSocket(host, port)
        socket.setTimeout(timeout_sec * 1000)
        self._transport = TBufferedTransport(socket)
        self._transport.open()
        self._protocol = _AnswerProtocol(self._transport)
        self.client = ThriftHiveMetastore.Client(self._protocol)

    def call(self, call: str, args: tuple[Any, ...]) -> Any:
        """Send `call` and read its answer. A failure while sending is a `_SendError` (the
        request may or may not have gone out); an error while reading propagates as raised."""
        self._protocol.call = call
        try:
            getattr(self.client, f"send_{call}")(*args)
        except (TTransportException, OSError) as error:
            raise _SendError(error, sent=True) from error
        except Exception as error:  # the generated encoder refused an argument: nothing went out
            raise _SendError(error, sent=False) from error
        return getattr(self.client, f"recv_{call}")()

    def is_open(self) -> bool:
        """False once the server has closed the connection (a non-blocking peek)."""
        return self._transport.isOpen()

    def close(self) -> None:
        self._transport.close()


class _SendError(Exception):
    """A failure while sending a call; `sent` is False when the request cannot have left."""

    def __init__(self, error: BaseException, sent: bool) -> None:
        super().__init__(_message(error))
        self.error, self.sent = error, sent


class MetastorePool:
    """At most `size` connections, opened when needed; each serves one call at a time."""

    def __init__(self, host: str, port: int, size: int, timeout_sec: float) -> None:
        self._host, self._port, self._timeout_sec = host, port, timeout_sec
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def acquire(self, fresh: bool = False) -> _Connection:
        """A connection for one call; blocks while `size` calls are in flight. `fresh` closes
        the idle connections and opens a new one (a retry after a broken connection: the idle
        ones were opened before the failure and may share its cause, e.g. a restarted server)."""
        self._slots.acquire()
        try:
            if fresh:
                self.close()
            return self._reused() or _Connection(self._host, self._port, self._timeout_sec)
        except BaseException:
            self._slots.release()
            raise

    def release(self, connection: _Connection, reusable: bool) -> None:
        """Back to the pool after an answer; closed (never reused) after anything else."""
        if reusable:
            with self._lock:
                self._idle.append(connection)
        else:
            connection.close()
        self._slots.release()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def idle(self) -> int:
        """How many connections wait in the pool."""
        with self._lock:
            return len(self._idle)

    def _reused(self) -> _Connection | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                connection = self._idle.pop()
            if connection.is_open():
                return connection
            connection.close()


class MetastoreUnreachableError(TransientError):
    """The metastore could not be connected to: the call was never sent, so any call, a write
    too, can be sent again."""


# --- errors ----------------------------------------------------------------------------------

def _message(error: BaseException) -> str:
    """A metastore error's text, with any secret it echoes masked (`lance_sync.model.secrets`)."""
    return secrets.mask(getattr(error, "message", None) or str(error) or type(error).__name__)


def _translate(error: TException) -> LanceNamespaceError:
    """The fallback mapping of metastore errors that an operation did not handle itself."""
    text = f"hive3: the metastore answered {type(error).__name__}: {_message(error)}"
    if isinstance(error, UnknownDBException):
        return NamespaceNotFoundError(text)
    if isinstance(error, InvalidObjectException | InvalidOperationException | ttypes.InvalidInputException):
        return InvalidInputError(text)
    return InternalError(text)


def _translated(method: Callable[..., T]) -> Callable[..., T]:
    """Translate any metastore error that escapes an operation (generators included)."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generate(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from method(*args, **kwargs)
            except TException as error:
                raise _translate(error) from error

        return generate

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except TException as error:
            raise _translate(error) from error

    return call


def _timed_out(error: BaseException) -> bool:
    inner = getattr(error, "inner", None)
    return isinstance(error, TimeoutError) or isinstance(inner, TimeoutError) or (
        isinstance(error, TTransportException) and error.type == TTransportException.TIMED_OUT)


#: what reading a garbled answer raises: the protocol's own errors, and what the C decoder
#: raises for impossible lengths, unknown types, bad UTF-8 or a buffer that ran out
DECODING_ERRORS = (TProtocolException, TypeError, ValueError, OverflowError, EOFError,
                   struct.error, RecursionError)
#: transport errors that mean impossible lengths in the answer, not a broken connection
GARBLED_TRANSPORT = frozenset({TTransportException.NEGATIVE_SIZE, TTransportException.SIZE_LIMIT})
#: TApplicationException types the generated client raises itself when an answer holds
#: neither a result nor a declared error: the answer was garbled, not refused
GARBLED_APPLICATION = frozenset({TApplicationException.MISSING_RESULT, TApplicationException.BAD_SEQUENCE_ID,
                                 TApplicationException.WRONG_METHOD_NAME,
                                 TApplicationException.INVALID_MESSAGE_TYPE})
APPLICATION_ERROR_NAMES = {value: name for name, value in vars(TApplicationException).items()
                           if name.isupper() and isinstance(value, int)}


def _garbled(error: BaseException) -> bool:
    """True when reading the answer failed on its content rather than on the connection."""
    if isinstance(error, TTransportException):
        return error.type in GARBLED_TRANSPORT
    if isinstance(error, TApplicationException):
        return error.type in GARBLED_APPLICATION
    return isinstance(error, DECODING_ERRORS)


def _cause(error: BaseException) -> str:
    """A failure's type and message, with the socket error under a transport error."""
    text = f"{type(error).__name__}: {_message(error)}"
    inner = getattr(error, "inner", None)
    return f"{text} ({type(inner).__name__}: {inner})" if inner is not None else text


# --- the driver ------------------------------------------------------------------------------

class Hive3Namespace(Hive3Rules, SyncNamespace):
    config: Hive3Config
    drops_cascade = True

    def __init__(self, config: Hive3Config | None = None, /, **properties: Any) -> None:
        super().__init__(config, **properties)
        address = urlsplit(self.config.uri)
        assert address.hostname and address.port, "ThriftUri checks both"
        self._address = f"{address.hostname}:{address.port}"
        self._pool = MetastorePool(address.hostname, address.port, self.config.client_pool_size,
                                   self.config.client_socket_timeout)
        self._root = normalize_location(self.config.root)
        #: None until known: does the metastore have the Hive 3 catalog API?
        self._catalog_api: bool | None = None
        #: waits between retries (tests replace it)
        self._sleep: Callable[[float], None] = time.sleep
        self._catalog_api_lock = threading.Lock()

    def namespace_id(self) -> str:
        return f"lance-sync hive3 {{ uri: 'thrift://{self._address}' }}"

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        (catalog,) = _names(list(parent), "lease parent", 1, 1)
        return HiveLockLeaseRegister(self, catalog, name, owner)

    def close(self) -> None:
        """Close the idle connections (calls after this open new ones)."""
        self._pool.close()

    @_translated
    def capabilities(self) -> Capabilities:
        levels = (1, 2) if self._has_catalog_api() else (2, 2)
        return Capabilities(update_namespace_properties=True, update_table_properties=True,
                            update_table_location=False, creatable_namespace_levels=levels)

    # --- namespaces ----------------------------------------------------------------------------

    @_translated
    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        parts = _names(id, "namespace", 1, 2)
        if len(parts) == 1:
            self._create_catalog(parts[0], properties)
        else:
            catalog, database = parts
            self._create_database(catalog, database, properties)
        return properties

    @_translated
    def _replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        """Catalogs: their fields; databases: parameters replaced, the fields named set, the
        others kept (HMS keeps a field sent blank)."""
        parts = _names(id, "namespace", 1, 2)
        if len(parts) == 1:
            self._alter_catalog(parts[0], properties)
        else:
            self._alter_database(self._get_database(*parts), properties)

    @_translated
    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = _names(request.id, "namespace", 0, 2)
        if not parts:
            names = self._catalog_call("get_catalogs").names
        elif len(parts) == 1:
            names = self._database_names(parts[0])
        else:
            self._get_database(*parts)
            names = []
        page, token = page_of_names(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    @_translated
    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return DescribeNamespaceResponse(properties=self._namespace_properties(
            _names(request.id, "namespace", 0, 2)))

    @_translated
    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self._namespace_properties(_names(request.id, "namespace", 0, 2))
        return NamespaceExistsResponse()

    @_translated
    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> None:
        parts = _names(id, "namespace", 1, 2)
        if len(parts) == 1:
            self._drop_catalog(parts[0], cascade)
        else:
            catalog, database = parts
            self._drop_database(catalog, database, cascade)

    # --- tables --------------------------------------------------------------------------------

    @_translated
    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        catalog, database, name = _names(request.id, "table", 3, 3)
        self._require_catalog(catalog)
        if request.location:
            location = join_location(self._root, request.location)
        else:
            location = join_location(self._root, f"{catalog}/{database}/{name}.lance".lower())
        table = _lance_table(catalog, database, name, location, request.properties or {})
        try:
            self._send("create_table", table)
        except AlreadyExistsException as error:
            raise TableAlreadyExistsError(f"hive3: table {_display(request.id)} already exists") from error
        except (InvalidObjectException, NoSuchObjectException) as error:
            self._get_database(catalog, database)  # NamespaceNotFound when that is the cause
            raise InvalidInputError(f"hive3: the metastore refused table {_display(request.id)}: "
                                    f"{_message(error)}") from error
        return DeclareTableResponse(location=location, properties=_lance_properties(table),
                                    storage_options=self.storage_options() or None)

    @_translated
    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Lance tables by name, a page at a time; only the names a page needs are fetched."""
        catalog, database = _names(request.id, "namespace", 2, 2)
        limit = check_page_limit(request.limit)
        remaining = names_after(self._table_names(catalog, database), request.page_token)
        found: list[str] = []
        for batch in _batches(remaining, min(limit or TABLE_BATCH_SIZE, TABLE_BATCH_SIZE)):
            tables = self._table_objects(catalog, database, batch)
            found += sorted(t.tableName for t in tables if _is_lance(t))
            if limit and len(found) >= limit:
                found = found[:limit]
                more = found[-1] < remaining[-1]
                return ListTablesResponse(tables=found, page_token=found[-1] if more else None)
        return ListTablesResponse(tables=found, page_token=None)

    @_translated
    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        id = _names(request.id, "table", 3, 3)
        table = self._lance_table(*id)
        return DescribeTableResponse(
            table=id[-1], namespace=list(id[:-1]), location=_location(table),
            properties=_lance_properties(table), storage_options=self.storage_options() or None)

    @_translated
    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        catalog, database, name = _names(request.id, "table", 3, 3)
        self._lance_table(catalog, database, name)
        return TableExistsResponse()

    @_translated
    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        catalog, database, name = _names(request.id, "table", 3, 3)
        table = self._lance_table(catalog, database, name)
        try:
            self._send("drop_table", _database_ref(catalog, database), name, False)
        except NoSuchObjectException as error:
            raise TableNotFoundError(f"hive3: table {_display(request.id)} not found") from error
        return DeregisterTableResponse(id=[catalog, database, name], location=_location(table),
                                       properties=_lance_properties(table))

    # --- reconciler extensions -----------------------------------------------------------------

    @_translated
    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        """Catalogs: only catalog.description and catalog.location-uri. The object fields of
        either level can be set but not removed (HMS keeps a field sent blank)."""
        parts = _names(list(id), "namespace", 1, 2)
        if not updates and not removals:
            return
        if len(parts) == 1:
            current, fields = _catalog_properties(self._get_catalog(parts[0])), CATALOG_FIELDS
        else:
            database = self._get_database(*parts)
            current, fields = _database_properties(database), DATABASE_FIELDS
        fixed = sorted(k for k in removals if k in fields and k in current)
        if fixed:
            raise InvalidInputError(f"hive3: {', '.join(fixed)} cannot be removed (HMS keeps the "
                                    "field); set another value instead")
        wanted = patched_properties(current, updates, removals)
        if wanted == current:
            return
        if len(parts) == 1:
            self._alter_catalog(parts[0], wanted)
        else:
            self._alter_database(database, wanted)

    @_translated
    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        catalog, database, name = _names(list(id), "table", 3, 3)
        table = self._lance_table(catalog, database, name)
        parameters = {**patched_properties(table.parameters or {}, updates, removals), **LANCE_TABLE_PARAMETERS}
        if parameters == table.parameters:
            return
        table.parameters = parameters
        try:
            self._send("alter_table", _database_ref(catalog, database), name, table)
        except InvalidOperationException as error:
            self._lance_table(catalog, database, name)  # TableNotFound if it was dropped meanwhile
            raise InvalidInputError(f"hive3: the metastore refused to alter {_display(id)}: "
                                    f"{_message(error)}") from error

    @_translated
    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """Catalogs or databases with their properties: one listing call, then one get per child
        (HMS has no bulk read of catalogs or databases)."""
        parts = _names(list(parent), "namespace", 0, 2)
        if len(parts) == 2:
            self._get_database(*parts)
            return
        if parts:
            names = self._database_names(parts[0])
        else:
            names = self._catalog_call("get_catalogs").names
        for name in sorted(names):
            try:
                properties = self._namespace_properties((*parts, name))
            except NamespaceNotFoundError:  # dropped since the listing
                continue
            yield NamespaceInfo((*parent, name), properties)

    @_translated
    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Every table (non-Lance ones with is_lance=False): get_all_tables, then
        get_table_objects_by_name_req per TABLE_BATCH_SIZE names; an empty database costs a
        get_database to tell it from a missing one."""
        catalog, database = _names(list(namespace), "namespace", 2, 2)
        for batch in _batches(self._table_names(catalog, database), TABLE_BATCH_SIZE):
            for table in sorted(self._table_objects(catalog, database, batch), key=lambda t: t.tableName):
                yield _table_info((*namespace, table.tableName), table)

    @_translated
    def get_table_info(self, id: Identifier) -> TableInfo | None:
        catalog, database, name = _names(list(id), "table", 3, 3)
        try:
            table = self._get_table(catalog, database, name)
        except TableNotFoundError:
            return None
        return _table_info(id, table)

    # --- catalogs ------------------------------------------------------------------------------

    def _create_catalog(self, name: str, properties: dict[str, str]) -> None:
        _check_catalog_properties(properties)
        location = join_location(self._root, properties.get(CATALOG_LOCATION)
                                 or f"{CATALOGS_DIRECTORY}/{name.lower()}")
        catalog = Catalog(name=name, description=properties.get(CATALOG_DESCRIPTION),
                          locationUri=_metastore_location(location))
        try:
            self._catalog_call("create_catalog", CreateCatalogRequest(catalog=catalog))
        except AlreadyExistsException as error:
            raise NamespaceAlreadyExistsError(f"hive3: catalog {name} already exists") from error

    def _alter_catalog(self, name: str, properties: dict[str, str]) -> None:
        """Set a catalog's description and location (HMS keeps a field sent blank)."""
        _check_catalog_properties(properties)
        location = properties.get(CATALOG_LOCATION)
        catalog = Catalog(name=name.lower(), description=properties.get(CATALOG_DESCRIPTION),
                          locationUri=_metastore_location(join_location(self._root, location))
                          if location else None)
        try:
            self._catalog_call("alter_catalog", AlterCatalogRequest(name=name.lower(), newCat=catalog))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error

    def _get_catalog(self, name: str) -> Catalog | None:
        """The Catalog; None for `hive` on a metastore without catalogs (it exists implicitly)."""
        try:
            return self._catalog_call("get_catalog", GetCatalogRequest(name=name)).catalog
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error
        except UnsupportedOperationError:
            if _is_default(name):
                return None
            raise

    def _drop_catalog(self, name: str, cascade: bool) -> None:
        """Drop a catalog (HMS then deletes the catalog location's directory tree, with the
        `default` database it drops). Cascade first drops every database and every table of
        `default`, keeping table data."""
        if _is_default(name):
            raise InvalidInputError(f"hive3: the default catalog '{DEFAULT_CATALOG}' cannot be dropped")
        if cascade:
            for database in self._database_names(name):
                if database == DEFAULT_DATABASE:
                    for table in self._table_names(name, database):
                        self._drop_table_keeping_data(name, database, table)
                else:
                    self._drop_database(name, database, cascade=True)
        try:
            self._catalog_call("drop_catalog", DropCatalogRequest(name=name))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: catalog {name} not found") from error
        except InvalidOperationException as error:
            raise NamespaceNotEmptyError(f"hive3: catalog {name} is not empty: {_message(error)}") from error

    def _catalog_call(self, call: str, *args: Any) -> Any:
        """A call of the Hive 3 catalog API; UnsupportedOperation on a metastore without it."""
        if self._catalog_api is False:
            raise self._no_catalog_api()
        try:
            result = self._send(call, *args)
        except TApplicationException as error:
            if error.type != TApplicationException.UNKNOWN_METHOD:
                raise
            self._catalog_api = False
            raise self._no_catalog_api() from error
        except METASTORE_ERRORS:
            self._catalog_api = True
            raise
        self._catalog_api = True
        return result

    def _has_catalog_api(self) -> bool:
        """Detected once (get_catalogs), then cached."""
        with self._catalog_api_lock:
            if self._catalog_api is None:
                with contextlib.suppress(UnsupportedOperationError):
                    self._catalog_call("get_catalogs")
        return bool(self._catalog_api)

    def _require_catalog(self, catalog: str) -> None:
        """Databases and tables outside `hive` need the catalog API."""
        if not _is_default(catalog) and not self._has_catalog_api():
            raise self._no_catalog_api()

    def _no_catalog_api(self) -> UnsupportedOperationError:
        return UnsupportedOperationError(
            f"hive3: the metastore at {self._address} has no catalog API (a Hive Metastore before "
            f"3.0): only the default catalog '{DEFAULT_CATALOG}', its databases and their tables "
            "are available; catalogs cannot be listed, created, dropped or used")

    # --- databases -----------------------------------------------------------------------------

    def _create_database(self, catalog: str, name: str, properties: dict[str, str]) -> None:
        self._require_catalog(catalog)
        database = self._database_object(catalog, name, properties)
        try:
            self._send("create_database", database)
        except AlreadyExistsException as error:
            raise NamespaceAlreadyExistsError(
                f"hive3: database {_display((catalog, name))} already exists") from error
        except (InvalidObjectException, NoSuchObjectException) as error:
            if not _is_default(catalog):
                self._get_catalog(catalog)  # NamespaceNotFound when the parent is missing
            raise InvalidInputError(f"hive3: the metastore refused database {_display((catalog, name))}: "
                                    f"{_message(error)}") from error

    def _database_object(self, catalog: str, name: str, properties: dict[str, str]) -> Database:
        location = properties.get(DATABASE_LOCATION)
        return Database(
            name=name, catalogName=catalog, description=properties.get(DATABASE_DESCRIPTION),
            locationUri=_metastore_location(join_location(self._root, location)) if location else None,
            ownerName=properties.get(DATABASE_OWNER),
            ownerType=_owner_type(properties.get(DATABASE_OWNER_TYPE)),
            parameters={k: v for k, v in properties.items() if k not in DATABASE_FIELDS})

    def _alter_database(self, current: Database, properties: dict[str, str]) -> None:
        """Replace a database's parameters and set the fields named in `properties`; fields
        not named keep their value (HMS ignores blank ones)."""
        catalog = current.catalogName or DEFAULT_CATALOG
        wanted = self._database_object(catalog, current.name, properties)
        altered = Database(
            name=current.name, catalogName=current.catalogName, parameters=wanted.parameters,
            description=wanted.description or current.description,
            locationUri=wanted.locationUri or current.locationUri,
            ownerName=wanted.ownerName or current.ownerName,
            ownerType=wanted.ownerType if wanted.ownerType is not None else current.ownerType)
        before, after = _database_properties(current), _database_properties(altered)
        moved = [k for k in (DATABASE_DESCRIPTION, DATABASE_LOCATION) if before.get(k) != after.get(k)]
        if moved and not self._has_catalog_api():
            raise UnsupportedOperationError(
                f"hive3: a Hive Metastore before 3.0 keeps a database's description and location "
                f"on alter_database, so {', '.join(moved)} cannot be changed here; nothing was changed")
        self._send("alter_database", _database_ref(catalog, current.name), altered)

    def _get_database(self, catalog: str, name: str) -> Database:
        self._require_catalog(catalog)
        try:
            return self._send("get_database", _database_ref(catalog, name))
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: database {_display((catalog, name))} not found") from error

    def _database_names(self, catalog: str) -> list[str]:
        if _is_default(catalog):
            return self._send("get_all_databases")
        self._require_catalog(catalog)
        names = self._send("get_databases", f"@{catalog}#")
        if not names:  # every catalog has `default`: empty means missing
            self._get_catalog(catalog)
        return names

    def _drop_database(self, catalog: str, name: str, cascade: bool) -> None:
        """One drop_database with deleteData=false: HMS itself refuses a database with tables
        (or functions) without cascade, and with cascade drops them keeping their data."""
        if _is_default(catalog) and name.lower() == DEFAULT_DATABASE:
            raise InvalidInputError(f"hive3: database {DEFAULT_CATALOG}${DEFAULT_DATABASE} cannot be dropped")
        self._require_catalog(catalog)
        try:
            self._send("drop_database", _database_ref(catalog, name), False, cascade)
        except NoSuchObjectException as error:
            raise NamespaceNotFoundError(f"hive3: database {_display((catalog, name))} not found") from error
        except InvalidOperationException as error:
            raise NamespaceNotEmptyError(f"hive3: database {_display((catalog, name))} is not empty: "
                                         f"{_message(error)}") from error
        except MetaException:
            self._get_database(catalog, name)  # HMS 2.x answers a missing database this way
            raise

    def _namespace_properties(self, parts: tuple[str, ...]) -> dict[str, str]:
        if not parts:
            return {}
        if len(parts) == 1:
            return _catalog_properties(self._get_catalog(parts[0]))
        return _database_properties(self._get_database(*parts))

    # --- tables --------------------------------------------------------------------------------

    def _get_table(self, catalog: str, database: str, name: str) -> Table:
        self._require_catalog(catalog)
        request = GetTableRequest(dbName=database, tblName=name, catName=catalog)
        try:
            return self._send("get_table_req", request).table
        except NoSuchObjectException as error:
            raise TableNotFoundError(f"hive3: table {_display((catalog, database, name))} not found") from error

    def _lance_table(self, catalog: str, database: str, name: str) -> Table:
        """The table, which must be a Lance table (InvalidInput otherwise, as the spec says)."""
        table = self._get_table(catalog, database, name)
        if not _is_lance(table):
            raise InvalidInputError(f"hive3: table {_display((catalog, database, name))} is not a Lance "
                                    f"table (tableType {table.tableType}, {TABLE_TYPE_KEY}="
                                    f"{(table.parameters or {}).get(TABLE_TYPE_KEY)})")
        return table

    def _table_names(self, catalog: str, database: str) -> list[str]:
        """Sorted names of every table; HMS answers [] for a missing database, so an empty
        answer is checked with get_database."""
        self._require_catalog(catalog)
        names = self._send("get_all_tables", _database_ref(catalog, database))
        if not names:
            self._get_database(catalog, database)
        return sorted(names)

    def _table_objects(self, catalog: str, database: str, names: list[str]) -> list[Table]:
        """The tables of `names` that still exist, in one call."""
        request = GetTablesRequest(dbName=database, tblNames=names, catName=catalog)
        try:
            return self._send("get_table_objects_by_name_req", request).tables
        except UnknownDBException as error:
            raise NamespaceNotFoundError(f"hive3: database {_display((catalog, database))} not found") from error

    def _drop_table_keeping_data(self, catalog: str, database: str, name: str) -> None:
        with contextlib.suppress(NoSuchObjectException):  # already gone
            self._send("drop_table", _database_ref(catalog, database), name, False)

    # --- calls ---------------------------------------------------------------------------------

    def _send(self, call: str, *args: Any) -> Any:
        """One metastore call: the single place where calls go out.

        Returns the answer (checked, for a read) or raises an exception the Hive IDL declares,
        TApplicationException UNKNOWN_METHOD ("Invalid method name"), or a
        `lance_namespace.errors` error naming the call and the cause. A read is retried on a new
        connection after a broken or garbled answer, and any call after a failed connect, up
        to `client.max-retries` times with backoff.
        """
        read = call in READ_CALLS
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return self._send_once(call, args, read, fresh=attempts > 1)

        def retryable(error: BaseException) -> bool:
            return isinstance(error, MetastoreUnreachableError) or (read and is_transient(error))

        try:
            return with_retries(attempt, self.config.client_max_retries, retryable=retryable,
                                sleep=self._sleep)
        except (BadAnswerError, ServiceUnavailableError) as error:
            if attempts == 1:
                raise
            raise type(error)(f"{error} (gave up after {attempts} attempts)") from error.__cause__

    def _send_once(self, call: str, args: tuple[Any, ...], read: bool, fresh: bool) -> Any:
        """One attempt of `_send` on a pooled connection (a new one when `fresh`).

        The connection goes back to the pool only after an answer: a result that passed its
        check, an error the Hive IDL declares, or "Invalid method name". After anything else
        it may be out of step, so it is closed.
        """
        try:
            connection = self._pool.acquire(fresh=fresh)
        except (TTransportException, OSError) as error:
            inner = getattr(error, "inner", None)
            raise MetastoreUnreachableError(
                f"hive3: {call}: cannot connect to the metastore at {self._address}: {_message(error)}"
                + (f" ({inner})" if inner else "")) from error
        reusable = False
        try:
            self.count_call()
            answer = connection.call(call, args)
            if read:
                problem = ANSWER_CHECKS[call](answer, *args)
                if problem:
                    raise BadAnswerError(f"hive3: {call} to the metastore at {self._address} answered "
                                         f"an unexpected shape: {problem}")
            reusable = True
            return answer
        except METASTORE_ERRORS:
            reusable = True
            raise
        except _SendError as error:
            if not error.sent:
                raise InternalError(f"hive3: {call} could not be encoded: {_cause(error.error)}") from error.error
            raise self._broken(call, read, error.error) from error.error
        except TApplicationException as error:
            if error.type == TApplicationException.UNKNOWN_METHOD:
                reusable = True
                raise
            if _garbled(error):
                raise self._broken(call, read, error) from error
            raise InternalError(
                f"hive3: {call} to the metastore at {self._address} failed: the metastore answered "
                f"TApplicationException {APPLICATION_ERROR_NAMES.get(error.type, error.type)}: "
                f"{_message(error)}") from error
        except (TException, OSError, *DECODING_ERRORS) as error:
            raise self._broken(call, read, error) from error
        finally:
            self._pool.release(connection, reusable)

    def _broken(self, call: str, read: bool, error: BaseException) -> LanceNamespaceError:
        """The error for a call whose answer did not arrive whole and readable.

        A read's is BadAnswerError for a garbled answer and TransientError for a broken
        connection or a timeout (both retried). A write's is always a TransientError saying
        that the metastore may have carried it out: the caller re-reads before trying again.
        """
        if _garbled(error):
            cause = f"the answer could not be decoded ({_cause(error)})"
        elif _timed_out(error):
            cause = f"no answer within {self.config.client_socket_timeout:g}s"
        elif isinstance(error, TTransportException) and error.type == TTransportException.END_OF_FILE:
            cause = "the metastore closed the connection before the answer was complete"
        else:
            cause = f"the connection failed ({_cause(error)})"
        text = f"hive3: {call} to the metastore at {self._address} failed: {cause}"
        if not read:
            return TransientError(f"{text}; the metastore may have received the request and carried it "
                                  "out (not retried: read the object before trying again)")
        if _garbled(error):
            return BadAnswerError(text)
        return TransientError(text)


# --- apply leases ----------------------------------------------------------------------------


class HiveLockLeaseRegister(LeaseRegister):
    """An apply lease as an EXCLUSIVE lock of the metastore's lock API on the lease's name
    (`lock`, `check_lock`, `heartbeat`, `unlock`, `show_locks`; no database of that name
    needs to exist). The metastore grants a lock to one requester at a time, so creating and
    taking over are atomic: a new lock is ACQUIRED, or WAITING behind the holder and then
    given up. The version is the lock id.

    The record is the lock's own fields: user (the holder), hostname, and `agentInfo` with the
    lease id, pid, start and term. A lock cannot change them, so a renewal is a heartbeat and
    the lease runs until the last heartbeat plus its term; a swap to another apply's record
    unlocks the dead holder's lock (by its id: a lock that is gone already stays gone) and
    locks again. Locks carry no catalog, so a catalog other than `hive` has its own lock name.

    A database of the lease's name whose parameters hold a record is a lease of lance-sync
    before this register: it is read as the lease when no lock is held, and taken over by
    dropping it.
    """

    def __init__(self, driver: Hive3Namespace, catalog: str, name: str, owner: str):
        self.driver = driver
        self.owner = owner
        self.database = (catalog, name)
        suffix = "" if _is_default(catalog) else f"_{hashlib.sha256(catalog.lower().encode()).hexdigest()[:8]}"
        self.lock_name = f"{name}{suffix}"
        super().__init__(f"{driver.namespace_id()} lock {self.lock_name}",
                         f"the lock {self.lock_name} of thrift://{driver._address}")

    @_translated
    def create(self, record: LeaseRecord) -> StoredLease | None:
        answer = self._send("lock", LockRequest(
            component=[LockComponent(type=LockType.EXCLUSIVE, level=LockLevel.DB, dbname=self.lock_name,
                                     operationType=DataOperationType.NO_TXN, isTransactional=False)],
            user=record.holder[:LOCK_TEXT_LIMIT], hostname=record.host[:LOCK_TEXT_LIMIT],
            agentInfo=_lease_agent(record)))
        if not isinstance(answer, LockResponse) or not isinstance(answer.lockid, int):
            raise BadAnswerError(f"hive3: lock to the metastore at {self.driver._address} answered "
                                 f"{_shown(answer)}, not a LockResponse with a lockid")
        acquired = answer.state == LockState.ACQUIRED or (
            answer.state == LockState.WAITING and self._settled(answer.lockid))
        if acquired and self._previous_format() is not None:  # a live lease of the older format?
            self._unlock(answer.lockid)  # let the protocol judge it (read() answers it)
            return None
        return StoredLease(record, str(answer.lockid)) if acquired else None

    @_translated
    def read(self) -> StoredLease | None:
        locks = self._locks()
        holding = [lock for lock in locks if lock.state == LockState.ACQUIRED] or locks
        if holding:
            return StoredLease(self._record(holding[0]), str(holding[0].lockid))
        return self._previous_format()

    @_translated
    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        if expected.version == PREVIOUS_FORMAT:
            with contextlib.suppress(NamespaceNotFoundError):
                self.driver._drop_database(*self.database, cascade=False)
            return self.create(record)
        lockid = int(expected.version)
        if record.id == expected.record.id:  # a renewal: the holder keeps its lock alive
            try:
                self._send("heartbeat", HeartbeatRequest(lockid=lockid))
            except NoSuchLockException:
                return None
            return StoredLease(record, expected.version)
        self._unlock(lockid)
        return self.create(record)

    @_translated
    def remove(self, expected: StoredLease) -> bool:
        """Unlocking by lock id is conditional by nature: a lock another apply took over is gone."""
        if expected.version == PREVIOUS_FORMAT:
            self.driver._drop_database(*self.database, cascade=False)
        else:
            self._unlock(int(expected.version))
        return True

    def _settled(self, lockid: int) -> bool:
        """A WAITING lock of ours until it is ACQUIRED (True), or given up (False) once another
        lock holds the name. Locks ahead of it are other applies taking the lease at the same
        moment: the first of them is granted the lock when it asks again, which its owner does
        at once (this loop); one whose owner is dead is unlocked. After LOCK_POLLS looks without
        progress, ours is given up too (the caller then names the lock ahead)."""
        for _ in range(LOCK_POLLS):
            locks = self._locks()
            if not any(lock.lockid == lockid for lock in locks):
                return False  # unlocked by another apply that took ours for dead
            if any(lock.state == LockState.ACQUIRED and lock.lockid != lockid for lock in locks):
                break
            ahead = [lock for lock in locks if lock.lockid < lockid]
            dead = [lock for lock in ahead if self._record(lock).is_dead()]
            for lock in dead:
                self._unlock(lock.lockid)
            if len(dead) == len(ahead):
                try:
                    state = self._send("check_lock", CheckLockRequest(lockid=lockid)).state
                except NoSuchLockException:
                    return False  # unlocked meanwhile by another apply that took ours for dead
                if state == LockState.ACQUIRED:
                    return True
                if state != LockState.WAITING:
                    return False
            else:
                self.driver._sleep(LOCK_POLL_SECONDS)
        self._unlock(lockid)
        return False

    def _locks(self) -> list[ShowLocksResponseElement]:
        """The locks of the lease's name, oldest first."""
        answer = self._send("show_locks", ShowLocksRequest(dbname=self.lock_name))
        return sorted((lock for lock in answer.locks if _same(lock.dbname, self.lock_name)),
                      key=lambda lock: lock.lockid)

    def _record(self, lock: ShowLocksResponseElement) -> LeaseRecord:
        agent = LEASE_AGENT.fullmatch(lock.agentInfo or "")
        if agent is None:
            raise InvalidInputError(f"hive3: {self.label} is held by {lock.user}@{lock.hostname} "
                                    f"({lock.agentInfo!r}), not by lance-sync; unlock it by hand")
        heartbeat = datetime.datetime.fromtimestamp(lock.lastheartbeat / 1000, datetime.timezone.utc)
        expires = heartbeat + datetime.timedelta(seconds=int(agent["term"]))
        return LeaseRecord(id=agent["id"], owner=self.owner, holder=lock.user, host=lock.hostname,
                           pid=int(agent["pid"]), started=agent["started"], expires=iso_time(expires))

    def _previous_format(self) -> StoredLease | None:
        try:
            database = self.driver._get_database(*self.database)
        except NamespaceNotFoundError:
            return None
        record = LeaseRecord.from_properties(_database_properties(database))
        return StoredLease(record, PREVIOUS_FORMAT) if record is not None else None

    def _unlock(self, lockid: int) -> None:
        with contextlib.suppress(NoSuchLockException):  # gone already
            self._send("unlock", UnlockRequest(lockid=lockid))

    def _send(self, call: str, *args: Any) -> Any:
        return self.driver._send(call, *args)


#: the version of a lease of the format before lease locks (a record in database parameters)
PREVIOUS_FORMAT = "database-parameters"


def _lease_agent(record: LeaseRecord) -> str:
    started = datetime.datetime.fromisoformat(record.started)
    term = round((datetime.datetime.fromisoformat(record.expires) - started).total_seconds())
    return f"lance-sync lease {record.id} pid {record.pid} since {record.started} for {term}s"


# --- request builders and readers ---------------------------------------------------------------

def _names(id: list[str] | tuple[str, ...] | None, what: str, low: int, high: int) -> tuple[str, ...]:
    parts = tuple(id or ())
    if not low <= len(parts) <= high:
        expected = str(low) if low == high else f"{low} to {high}"
        raise InvalidInputError(f"hive3: a {what} id has {expected} level(s) (catalog$database$table); "
                                f"got {_display(parts) or '(root)'}")
    for name in parts:
        # HMS 3 reads a database name '@cat#db' as database db of catalog cat
        if not name or name.startswith("@"):
            raise InvalidInputError(f"hive3: invalid name {name!r} in {_display(parts)}")
    return parts


def _display(parts: Sequence[str] | None) -> str:
    return Hive3Namespace.format_identifier(tuple(parts or ()))


def _is_default(catalog: str) -> bool:
    return catalog.lower() == DEFAULT_CATALOG


def _database_ref(catalog: str, database: str) -> str:
    """A database-name argument: unprefixed in the default catalog (also understood by HMS 2.x)."""
    return database if _is_default(catalog) else f"@{catalog}#{database}"


def _metastore_location(location: str) -> str:
    """A normalized location as sent to HMS: a local path as a file: URI, since HMS would
    otherwise place a bare path on its default file system."""
    return f"file://{location}" if is_local(location) else location


def _location(table: Table) -> str | None:
    return normalize_location(table.sd.location) if table.sd and table.sd.location else None


def _owner_type(value: str | None) -> int | None:
    if value is None:
        return None
    owner_type = PrincipalType._NAMES_TO_VALUES.get(value.upper())
    if owner_type is None:
        raise InvalidInputError(f"hive3: {DATABASE_OWNER_TYPE} must be one of "
                                f"{', '.join(PrincipalType._NAMES_TO_VALUES)} (got {value!r})")
    return owner_type


def _database_properties(database: Database) -> dict[str, str]:
    properties = dict(database.parameters or {})
    fields = {
        DATABASE_DESCRIPTION: database.description,
        DATABASE_LOCATION: normalize_location(database.locationUri) if database.locationUri else None,
        DATABASE_OWNER: database.ownerName,
        DATABASE_OWNER_TYPE: PrincipalType._VALUES_TO_NAMES.get(database.ownerType)
        if database.ownerName else None,
    }
    properties.update({k: v for k, v in fields.items() if v})
    return properties


def _catalog_properties(catalog: Catalog | None) -> dict[str, str]:
    if catalog is None:
        return {}
    fields = {CATALOG_DESCRIPTION: catalog.description,
              CATALOG_LOCATION: normalize_location(catalog.locationUri) if catalog.locationUri else None}
    return {k: v for k, v in fields.items() if v}


def _check_catalog_properties(properties: dict[str, str]) -> None:
    unknown = sorted(set(properties) - set(CATALOG_FIELDS))
    if unknown:
        raise InvalidInputError(f"hive3: a Hive catalog has no property map, only "
                                f"{' and '.join(CATALOG_FIELDS)}; cannot store {', '.join(unknown)}")


def _lance_table(catalog: str, database: str, name: str, location: str,
                 properties: dict[str, str]) -> Table:
    """An EXTERNAL_TABLE marked as Lance, with a minimal storage descriptor (no columns)."""
    return Table(
        tableName=name, dbName=database, catName=catalog, tableType=EXTERNAL_TABLE,
        partitionKeys=[], parameters={**properties, **LANCE_TABLE_PARAMETERS},
        sd=StorageDescriptor(cols=[], location=_metastore_location(location), compressed=False,
                             numBuckets=-1, serdeInfo=SerDeInfo(name=name, parameters={}),
                             bucketCols=[], sortCols=[], parameters={}))


def _is_lance(table: Table) -> bool:
    """The spec's test: EXTERNAL_TABLE with parameter table_type=lance (any case)."""
    return (table.tableType == EXTERNAL_TABLE
            and is_lance_table(table.parameters or {}))


def _lance_properties(table: Table) -> dict[str, str]:
    return {k: v for k, v in (table.parameters or {}).items() if k not in METASTORE_TABLE_PARAMETERS}


def _table_info(id: Identifier, table: Table) -> TableInfo:
    return TableInfo(tuple(id), _location(table), _lance_properties(table), is_lance=_is_lance(table))


def _batches(names: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(names), size):
        yield names[start:start + size]


# --- answer checks -------------------------------------------------------------------------------
#
# Every read's answer is checked before the driver uses it: the fields listed below must be
# present, and every field listed (present or optional) must have the Python type its Thrift
# type gives (taken from the generated `thrift_spec`); fields the IDL marks required are
# checked by the generated `validate()`. The object must also be the one asked for.

class _ThriftStruct(Protocol):
    """A struct class the Thrift compiler generated (pymetastore ships no type information)."""

    thrift_spec: ClassVar[tuple[Any, ...]]

    def validate(self) -> None: ...


#: struct -> (fields the driver needs, fields it reads when present)
STRUCT_FIELDS: dict[type[_ThriftStruct], tuple[tuple[str, ...], tuple[str, ...]]] = {
    GetCatalogsResponse: (("names",), ()),
    GetCatalogResponse: (("catalog",), ()),
    Catalog: (("name",), ("description", "locationUri")),
    Database: (("name", "parameters"), ("description", "locationUri", "ownerName", "ownerType", "catalogName")),
    # GetTableResult.table and GetTablesResult.tables are IDL-required (validate()); each table
    # is checked by _table_problem, against what was asked for. HMS fills tableType and adds
    # transient_lastDdlTime to every table; a view's sd has no location; sd.location is needed
    # for Lance tables only (_table_problem)
    Table: (("tableName", "dbName", "tableType", "parameters"), ("sd", "catName")),
    StorageDescriptor: ((), ("location",)),
    ShowLocksResponse: (("locks",), ()),
    ShowLocksResponseElement: (("lockid", "dbname", "state", "lastheartbeat"), ("user", "hostname", "agentInfo")),
}
PYTHON_TYPES = {TType.STRING: str, TType.BOOL: bool, TType.BYTE: int, TType.I16: int,
                TType.I32: int, TType.I64: int, TType.DOUBLE: float}
LIST_OF_STRINGS = (TType.STRING, "UTF8", False)


@functools.cache
def _field_types(struct_type: type[_ThriftStruct]) -> dict[str, tuple[int, Any]]:
    """Field name -> (Thrift type, type arguments), from the generated `thrift_spec`."""
    return {field[2]: (field[1], field[3]) for field in struct_type.thrift_spec if field}


def _value_problem(value: Any, ttype: int, args: Any, where: str) -> str | None:
    """What is wrong with `value` as a value of Thrift type `ttype`, or None. Structs are
    checked by their STRUCT_FIELDS; containers element by element."""
    if value is None:
        return f"{where} is missing"
    if ttype == TType.STRUCT:
        return _struct_problem(value, args[0], where)
    if ttype in (TType.LIST, TType.SET):
        if not isinstance(value, list | set | frozenset):
            return f"{where} is {_shown(value)}, not a list"
        for index, item in enumerate(value):
            if problem := _value_problem(item, args[0], args[1], f"{where}[{index}]"):
                return problem
        return None
    if ttype == TType.MAP:
        if not isinstance(value, dict):
            return f"{where} is {_shown(value)}, not a map"
        for key, item in value.items():
            if problem := (_value_problem(key, args[0], args[1], f"{where} key {key!r}")
                           or _value_problem(item, args[2], args[3], f"{where}[{key!r}]")):
                return problem
        return None
    expected = PYTHON_TYPES[ttype]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return f"{where} is {_shown(value)}, not {'a string' if expected is str else expected.__name__}"
    return None


def _shown(value: Any, limit: int = 60) -> str:
    """A value's type and a short repr, for a message."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= limit else text[:limit] + '...'}"


def _struct_problem(value: Any, struct_type: type[_ThriftStruct], where: str) -> str | None:
    """What is wrong with `value` as a `struct_type` (see STRUCT_FIELDS), or None."""
    if value is None:
        return f"{where} is missing"
    if not isinstance(value, struct_type):
        return f"{where} is {_shown(value)}, not a {struct_type.__name__}"
    try:
        value.validate()  # the fields the IDL marks required
    except TProtocolException as error:
        return f"{where}: {_message(error)}"
    needed, optional = STRUCT_FIELDS.get(struct_type, ((), ()))
    types = _field_types(struct_type)
    for name in (*needed, *optional):
        field = getattr(value, name, None)
        if field is None:
            if name in needed:
                return f"{where}.{name} is missing"
            continue
        if problem := _value_problem(field, *types[name], f"{where}.{name}"):
            return problem
    return None


def _same(answered: str, asked: Any) -> bool:
    """HMS folds names to lower case; an unknown (None) asked name matches anything."""
    return not isinstance(asked, str) or answered.lower() == asked.lower()


def _check_names(answer: Any, *_args: Any) -> str | None:
    """A list of names (get_all_databases, get_databases, get_all_tables)."""
    problem = _value_problem(answer, TType.LIST, LIST_OF_STRINGS, "names")
    if problem is None and "" in answer:
        problem = f"names[{answer.index('')}] is empty"
    return problem


def _check_catalogs(answer: Any) -> str | None:
    problem = _struct_problem(answer, GetCatalogsResponse, "GetCatalogsResponse")
    if problem is None and "" in answer.names:
        problem = f"GetCatalogsResponse.names[{answer.names.index('')}] is empty"
    return problem


def _check_catalog(answer: Any, request: GetCatalogRequest) -> str | None:
    problem = _struct_problem(answer, GetCatalogResponse, "GetCatalogResponse")
    if problem is None and not _same(answer.catalog.name, request.name):
        problem = f"catalog {answer.catalog.name!r} answered for catalog {request.name!r}"
    return problem


def _check_database(answer: Any, ref: str) -> str | None:
    """An unprefixed `ref` names a database of the server's default catalog, whatever its name;
    HMS 2.x sends no catalogName."""
    catalog, _, database = ref[1:].partition("#") if ref.startswith("@") else (None, "", ref)
    problem = _struct_problem(answer, Database, "Database")
    if problem is None and not (_same(answer.name, database)
                                and (answer.catalogName is None or _same(answer.catalogName, catalog))):
        asked = f"{catalog}${database}" if catalog else database
        problem = f"database {answer.name!r} (catalog {answer.catalogName!r}) answered for {asked!r}"
    return problem


def _check_table_result(answer: Any, request: GetTableRequest) -> str | None:
    return (_struct_problem(answer, GetTableResult, "GetTableResult")
            or _table_problem(answer.table, "GetTableResult.table", request.catName, request.dbName,
                              {request.tblName.lower()} if isinstance(request.tblName, str) else None))


def _check_tables_result(answer: Any, request: GetTablesRequest) -> str | None:
    problem = _struct_problem(answer, GetTablesResult, "GetTablesResult")
    if problem:
        return problem
    if not isinstance(answer.tables, list):
        return f"GetTablesResult.tables is {_shown(answer.tables)}, not a list"
    asked = {name.lower() for name in request.tblNames or ()}
    seen: set[str] = set()
    for index, table in enumerate(answer.tables):
        where = f"GetTablesResult.tables[{index}]"
        if problem := _table_problem(table, where, request.catName, request.dbName, asked):
            return problem
        if table.tableName.lower() in seen:
            return f"{where}: table {table.tableName!r} is answered twice"
        seen.add(table.tableName.lower())
    return None


def _check_locks(answer: Any, request: ShowLocksRequest) -> str | None:
    problem = _struct_problem(answer, ShowLocksResponse, "ShowLocksResponse")
    if problem is None and not isinstance(answer.locks, list):
        problem = f"ShowLocksResponse.locks is {_shown(answer.locks)}, not a list"
    for index, lock in enumerate(answer.locks if problem is None else []):
        problem = _struct_problem(lock, ShowLocksResponseElement, f"ShowLocksResponse.locks[{index}]")
        if problem:
            break
    return problem


def _table_problem(table: Table, where: str, catalog: str | None, database: str | None,
                   names: set[str] | None) -> str | None:
    """A table's needed fields; that it is one asked for; that a Lance table has a location."""
    if problem := _struct_problem(table, Table, where):
        return problem
    if names is not None and table.tableName.lower() not in names:
        return f"{where}: table {table.tableName!r} was not asked for"
    if not (_same(table.dbName, database) and (table.catName is None or _same(table.catName, catalog))):
        return (f"{where}: table {table.tableName!r} of database {table.dbName!r} (catalog "
                f"{table.catName!r}) answered for database {database!r} (catalog {catalog!r})")
    if _is_lance(table) and not (table.sd and table.sd.location):
        return f"{where}: Lance table {table.tableName!r} has no sd.location"
    return None


#: the read calls, each with the check of its answer: a read is any call listed here
ANSWER_CHECKS: dict[str, Callable[..., str | None]] = {
    "get_catalogs": _check_catalogs,
    "get_catalog": _check_catalog,
    "get_database": _check_database,
    "get_databases": _check_names,
    "get_all_databases": _check_names,
    "get_all_tables": _check_names,
    "get_table_req": _check_table_result,
    "get_table_objects_by_name_req": _check_tables_result,
    "show_locks": _check_locks,
}
#: calls that change nothing, so sending them again is safe
READ_CALLS = frozenset(ANSWER_CHECKS)
