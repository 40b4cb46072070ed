"""Read deadlines for the REST drivers' connections, kept by a watchdog instead of socket timeouts.

A Python socket with a timeout polls before every send and receive; from 16 threads at
thousands of requests a second that cost about 50 µs of client CPU a request, 5 to 10% of an
Iceberg create's (docs/benchmarks.md). So a connection of these pools connects with its
connect timeout, then sends and reads on a blocking socket, and one watchdog thread per
process ends an answer that has not arrived whole within the read timeout of the request's
sending: it shuts the socket down, which wakes the blocked thread at once with a lost
connection, and marks the attempt `expired` so that the caller reports a timeout.

The watchdog only shuts down a connection while the attempt that started it still holds it:
a connection is forgotten as it goes back to its pool or is closed, under the same lock.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection

if TYPE_CHECKING:
    from urllib3._base_connection import BaseHTTPConnection

#: how often the watchdog looks at the connections it watches while any is in use: a read
#: ends at most this long after its deadline
TICK_SECONDS = 0.05


class Attempt:
    """One attempt of a request in this thread: its read timeout, and whether it was ended for it."""

    __slots__ = ("seconds", "expired")

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False


_current = threading.local()


def begin(seconds: float) -> Attempt:
    """Start an attempt in this thread: the next request a pool of this module's sends from it
    is ended if its answer has not arrived whole `seconds` after it was sent."""
    attempt = Attempt(seconds)
    _current.attempt = attempt
    return attempt


class _Watchdog:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Watch nothing, no thread started (also in a child forked from this process: one
        forked while another thread held the lock would wait for it forever)."""
        # re-entrant: the garbage collector can run a discarded pool's finalizer in the watchdog's
        # own thread while it holds the lock, and the finalizer closes (forgets) its connections
        self._changed = threading.Condition(threading.RLock())
        #: connection -> (deadline on the monotonic clock, the attempt using it)
        self._watched: dict[HTTPConnection, tuple[float, Attempt]] = {}
        self._thread: threading.Thread | None = None

    def watch(self, connection: HTTPConnection) -> None:
        """Watch `connection` for the attempt this thread began, from now."""
        attempt: Attempt | None = getattr(_current, "attempt", None)
        if attempt is None:
            return
        with self._changed:
            if not self._watched:
                self._wake()
            self._watched[connection] = (time.monotonic() + attempt.seconds, attempt)

    def forget(self, connection: HTTPConnection) -> None:
        with self._changed:
            self._watched.pop(connection, None)

    def _wake(self) -> None:
        """Called with the lock held, as the first connection is watched."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="lance-sync-read-deadlines", daemon=True)
            self._thread.start()
        self._changed.notify()

    def _run(self) -> None:
        with self._changed:
            while True:
                self._changed.wait(TICK_SECONDS if self._watched else None)
                now = time.monotonic()
                # a copy made without running Python code: a forget from a finalizer run in this
                # thread may change `_watched` while the loop looks through it
                for connection, (deadline, attempt) in self._watched.copy().items():
                    sock = connection.sock
                    if deadline <= now and sock is not None:  # still connecting: its own timeout
                        self._watched.pop(connection, None)
                        attempt.expired = True
                        _shut_down(sock)


def _shut_down(sock: socket.socket) -> None:
    """Wake whatever blocks on the socket; TLS too (the socket's own shutdown, not the TLS
    layer's, which another thread may be inside)."""
    with contextlib.suppress(OSError):  # closed meanwhile
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


WATCHDOG = _Watchdog()
os.register_at_fork(after_in_child=WATCHDOG.reset)


class _WatchedConnection:
    """Mixin for a urllib3 connection: blocking once connected, watched while it sends and reads."""

    sock: socket.socket | None
    timeout: float | None

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:
            self.timeout = None  # connected: urllib3 would send with the connect timeout
        WATCHDOG.watch(self)  # type: ignore[arg-type]
        super().request(*args, **kwargs)  # type: ignore[misc]

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        if self.sock is not None:
            self.sock.settimeout(None)
        WATCHDOG.watch(self)  # type: ignore[arg-type]  # the read deadline counts from here

    def close(self) -> None:
        WATCHDOG.forget(self)  # type: ignore[arg-type]
        super().close()  # type: ignore[misc]


class _Connection(_WatchedConnection, HTTPConnection):
    pass


class _TLSConnection(_WatchedConnection, HTTPSConnection):
    pass


class _ReturnedUnwatched:
    """Mixin for a urllib3 pool: a connection back in the pool is no longer watched."""

    def _put_conn(self, conn: BaseHTTPConnection | None) -> None:
        if isinstance(conn, HTTPConnection):
            WATCHDOG.forget(conn)
        super()._put_conn(conn)  # type: ignore[misc]


class WatchedPool(_ReturnedUnwatched, urllib3.HTTPConnectionPool):
    ConnectionCls = _Connection


class WatchedTLSPool(_ReturnedUnwatched, urllib3.HTTPSConnectionPool):
    ConnectionCls = _TLSConnection
