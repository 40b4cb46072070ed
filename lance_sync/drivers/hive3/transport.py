"""The metastore's Thrift transport: connections, their pool, and the calls sent on them.

Every call goes out through `MetastoreClient.send`, on a pool of `client.pool-size` Thrift
connections with a socket timeout, one call per connection at a time. Every answer of a read
is checked before it is returned (`answers.ANSWER_CHECKS`).

After anything but an answer (a protocol or decoding error, garbage, a connection closed
mid-answer, a timeout) the connection is closed, never reused: a Java metastore's connection
is out of step after a protocol error. A read is then sent again on a new connection, up to
`client.max-retries` times with backoff; a write is not (it was sent, so the metastore may
have carried it out): it fails with a TransientError for the caller to reconcile. A call that
could not connect at all is retried whatever it is. The last failure is a
`lance_namespace.errors` error naming the call and the cause, never a Thrift exception.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Callable
from typing import Any

from lance_namespace.errors import InternalError, LanceNamespaceError, ServiceUnavailableError
from pymetastore.hive_metastore import ThriftHiveMetastore
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException, TException, TMessageType
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import TBufferedTransport, TTransportException

from lance_sync.drivers.hive3.answers import ANSWER_CHECKS, READ_CALLS
from lance_sync.drivers.hive3.errors import (
    APPLICATION_ERROR_NAMES,
    METASTORE_ERRORS,
    failure_text,
    message,
)
from lance_sync.drivers.support.retry import (
    BadAnswerError,
    TransientError,
    is_transient,
    with_retries,
)

logger = logging.getLogger(__name__)

#: most elements a list or map in an answer may claim (garbage claiming billions fails at once)
CONTAINER_LENGTH_LIMIT = 10_000_000
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


class MetastoreConnection:
    """One metastore connection: socket with a timeout, buffered transport, binary protocol."""

    def __init__(self, host: str, port: int, timeout_sec: float) -> None:
        socket = TSocket(host, port)
        socket.setTimeout(timeout_sec * 1000)
        self._transport = TBufferedTransport(socket)
        self._transport.open()
        self._protocol = _AnswerProtocol(self._transport)
        self.client = ThriftHiveMetastore.Client(self._protocol)

    def call(self, call: str, args: tuple[Any, ...]) -> Any:
        """Send `call` and read its answer. A failure while sending is a `SendError` (the
        request may or may not have gone out); an error while reading propagates as raised."""
        self._protocol.call = call
        try:
            getattr(self.client, f"send_{call}")(*args)
        except (TTransportException, OSError) as error:
            raise SendError(error, sent=True) from error
        except Exception as error:  # the generated encoder refused an argument: nothing went out
            raise SendError(error, sent=False) from error
        return getattr(self.client, f"recv_{call}")()

    def is_open(self) -> bool:
        """False once the server has closed the connection (a non-blocking peek)."""
        return self._transport.isOpen()

    def close(self) -> None:
        self._transport.close()


class SendError(Exception):
    """A failure while sending a call; `sent` is False when the request cannot have left."""

    def __init__(self, error: BaseException, sent: bool) -> None:
        super().__init__(message(error))
        self.error, self.sent = error, sent


class MetastorePool:
    """At most `size` connections, opened when needed; each serves one call at a time."""

    def __init__(self, host: str, port: int, size: int, timeout_sec: float) -> None:
        self._host, self._port, self._timeout_sec = host, port, timeout_sec
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[MetastoreConnection] = []
        self._lock = threading.Lock()

    def acquire(self, fresh: bool = False) -> MetastoreConnection:
        """A connection for one call; blocks while `size` calls are in flight. `fresh` closes
        the idle connections and opens a new one (a retry after a broken connection: the idle
        ones were opened before the failure and may share its cause, e.g. a restarted server)."""
        self._slots.acquire()
        try:
            if fresh:
                self.close()
            return self._reused() or MetastoreConnection(self._host, self._port, self._timeout_sec)
        except BaseException:
            self._slots.release()
            raise

    def release(self, connection: MetastoreConnection, reusable: bool) -> None:
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

    def _reused(self) -> MetastoreConnection | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                connection = self._idle.pop()
            if connection.is_open():
                return connection
            connection.close()


class MetastoreInternalError(InternalError):
    """The metastore failed a call with an exception its IDL does not declare (TApplicationException
    INTERNAL_ERROR: "Internal error processing <call>"); what failed is only in its own log."""


class MetastoreUnreachableError(TransientError):
    """The metastore could not be connected to: the call was never sent, so any call, a write
    too, can be sent again."""


def garbled(error: BaseException) -> bool:
    """True when reading the answer failed on its content rather than on the connection."""
    if isinstance(error, TTransportException):
        return error.type in GARBLED_TRANSPORT
    if isinstance(error, TApplicationException):
        return error.type in GARBLED_APPLICATION
    return isinstance(error, DECODING_ERRORS)


def timed_out(error: BaseException) -> bool:
    inner = getattr(error, "inner", None)
    return isinstance(error, TimeoutError) or isinstance(inner, TimeoutError) or (
        isinstance(error, TTransportException) and error.type == TTransportException.TIMED_OUT)


class MetastoreClient:
    """The calls of one driver to one metastore, on its pool: the single place where calls go out."""

    def __init__(self, pool: MetastorePool, address: str, socket_timeout: float, max_retries: int,
                 on_call: Callable[[], None]) -> None:
        self._pool, self._address = pool, address
        self._socket_timeout, self._max_retries = socket_timeout, max_retries
        #: counts each call sent (the driver's `count_call`)
        self._on_call = on_call

    def send(self, call: str, args: tuple[Any, ...], sleep: Callable[[float], None]) -> Any:
        """One metastore call, waiting with `sleep` between attempts.

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
            return with_retries(attempt, self._max_retries, retryable=retryable, sleep=sleep,
                                backend="hive3", label=call)
        except (BadAnswerError, ServiceUnavailableError) as error:
            if attempts == 1:
                raise
            raise type(error)(f"{error} (gave up after {attempts} attempts)") from error.__cause__

    def _send_once(self, call: str, args: tuple[Any, ...], read: bool, fresh: bool) -> Any:
        """One attempt of `send` on a pooled connection (a new one when `fresh`).

        The connection goes back to the pool only after an answer: a result that passed its
        check, an error the Hive IDL declares, or "Invalid method name". After anything else
        it may be out of step, so it is closed.
        """
        try:
            connection = self._pool.acquire(fresh=fresh)
        except (TTransportException, OSError) as error:
            inner = getattr(error, "inner", None)
            raise MetastoreUnreachableError(
                f"hive3: {call}: cannot connect to the metastore at {self._address}: {message(error)}"
                + (f" ({inner})" if inner else "")) from error
        reusable = False
        try:
            self._on_call()
            logger.debug("hive3: %s to the metastore at %s", call, self._address)
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
        except SendError as error:
            if not error.sent:
                raise InternalError(f"hive3: {call} could not be encoded: {failure_text(error.error)}") from error.error
            raise self._broken(call, read, error.error) from error.error
        except TApplicationException as error:
            if error.type == TApplicationException.UNKNOWN_METHOD:
                reusable = True
                raise
            if garbled(error):
                raise self._broken(call, read, error) from error
            failed = MetastoreInternalError if error.type == TApplicationException.INTERNAL_ERROR else InternalError
            raise failed(
                f"hive3: {call} to the metastore at {self._address} failed: the metastore answered "
                f"TApplicationException {APPLICATION_ERROR_NAMES.get(error.type, error.type)}: "
                f"{message(error)}") from error
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
        if garbled(error):
            cause = f"the answer could not be decoded ({failure_text(error)})"
        elif timed_out(error):
            cause = f"no answer within {self._socket_timeout:g}s"
        elif isinstance(error, TTransportException) and error.type == TTransportException.END_OF_FILE:
            cause = "the metastore closed the connection before the answer was complete"
        else:
            cause = f"the connection failed ({failure_text(error)})"
        text = f"hive3: {call} to the metastore at {self._address} failed: {cause}"
        if not read:
            return TransientError(f"{text}; the metastore may have received the request and carried it "
                                  "out (not retried: read the object before trying again)")
        if garbled(error):
            return BadAnswerError(text)
        return TransientError(text)

