"""Work of a large load done in a forked process while this one goes on.

A load forks only where that is safe and pays: two CPUs or more, a platform that forks, and
no other thread in this process (a thread may hold a lock the child would wait for forever).
A forked child sees this process's data as it is, without pickling; it answers bytes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable
from types import TracebackType


def forking_pays() -> bool:
    """Whether this process may fork a child to share the work of a load with."""
    return (os.cpu_count() or 1) >= 2 and threading.active_count() == 1 \
        and "fork" in multiprocessing.get_all_start_methods()


class Forked:
    """`work` run in a forked child process; `answer` waits for its bytes. Used as a context
    manager: leaving the block ends a child whose answer was not read."""

    def __init__(self, work: Callable[[], bytes | None]):
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._child = context.Process(target=_answer, args=(work, send, self._receive), daemon=True)
        self._child.start()
        send.close()

    def answer(self) -> bytes | None:
        """The child's bytes; None when it answered None, failed or died."""
        try:
            answer = self._receive.recv_bytes()
        except (EOFError, OSError):
            answer = b""
        self._receive.close()
        self._child.join()  # it has answered, or is gone
        return answer or None

    def __enter__(self) -> Forked:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if not self._receive.closed:
            self._receive.close()
            self._child.terminate()
            self._child.join()


def _answer(work: Callable[[], bytes | None], send: multiprocessing.connection.Connection,
            parents_end: multiprocessing.connection.Connection) -> None:
    """The child: `work`'s bytes to the parent; nothing (b"") when it fails. The parent's end of
    the pipe is closed here, so that a parent that is gone leaves no child waiting to write."""
    parents_end.close()
    # Ctrl-C stops the parent, which ends this process: no traceback from here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        answer = work() or b""
    except Exception:  # noqa: BLE001 - the parent works it out again, and says what is wrong
        answer = b""
    with contextlib.suppress(OSError):  # the parent is gone
        send.send_bytes(answer)
    send.close()
