"""Work of a large load done in forked processes while this one goes on: the one way the
manifest package runs work in parallel (parsing files, building tables).

A load forks only where that is safe and pays: two CPUs or more, a platform that forks, and
no other thread in this process (a thread may hold a lock the child would wait for forever).
A forked child sees this process's data as it is, without pickling; each task answers bytes.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Sequence
from types import TracebackType

#: a task run in a child: its answer, bytes; None (or an exception) when it has none
Task = Callable[[], "bytes | None"]


def forking_pays() -> bool:
    """Whether this process may fork children to share the work of a load with."""
    return (os.cpu_count() or 1) >= 2 and threading.active_count() == 1 \
        and "fork" in multiprocessing.get_all_start_methods()


class Workers:
    """`tasks` run in `processes` forked children (task i in child i % processes, each child's
    tasks in order); `answer(i)` waits for task i's bytes. Used as a context manager: leaving
    the block ends the children whose answers were not all read."""

    def __init__(self, tasks: Sequence[Task], processes: int = 1):
        context = multiprocessing.get_context("fork")
        self._count = max(1, min(processes, len(tasks)))
        self._receivers: list[multiprocessing.connection.Connection] = []
        self._children: list[multiprocessing.process.BaseProcess] = []
        #: each child's answers read so far, by its task's place among that child's tasks
        self._received: list[list[bytes | None]] = []
        for child in range(self._count):
            receive, send = context.Pipe(duplex=False)
            mine = list(tasks[child::self._count])
            # the child closes every parent's end it inherits: a parent that is gone leaves no
            # child waiting to write
            process = context.Process(target=_run, args=(mine, send, [*self._receivers, receive]), daemon=True)
            process.start()
            send.close()
            self._receivers.append(receive)
            self._children.append(process)
            self._received.append([])

    def answer(self, index: int) -> bytes | None:
        """Task `index`'s bytes (read once); None when it answered None, failed, or its child died.
        While it waits, the answers other children have ready are read too: a child does not
        start its next task before its answer is read."""
        child, place = index % self._count, index // self._count
        received = self._received[child]
        while len(received) <= place:
            if self._receivers[child].closed:
                received.append(None)
                continue
            ready = multiprocessing.connection.wait([r for r in self._receivers if not r.closed])
            for other, receiver in enumerate(self._receivers):
                if receiver in ready:
                    self._received[other].append(self._next(other))
        answer, received[place] = received[place], None
        return answer

    def _next(self, child: int) -> bytes | None:
        receiver = self._receivers[child]
        try:
            return receiver.recv_bytes() or None
        except (EOFError, OSError):  # the child ended: its other tasks have no answer
            receiver.close()
            return None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End the children whose answers were not all read."""
        for receiver, process in zip(self._receivers, self._children, strict=True):
            receiver.close()
            if process.is_alive():
                process.terminate()
            process.join()


def _run(tasks: list[Task], send: multiprocessing.connection.Connection,
         parents_ends: list[multiprocessing.connection.Connection]) -> None:
    """A child: each task's bytes to the parent, in order; nothing (b"") for one that fails."""
    for end in parents_ends:
        end.close()
    gc.disable()  # a child makes its answers and ends: no garbage cycles to look for
    # Ctrl-C stops the parent, which ends this process: no traceback from here
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for task in tasks:
        try:
            answer = task() or b""
        except Exception:  # noqa: BLE001 - the parent works it out again, and says what is wrong
            answer = b""
        try:
            send.send_bytes(answer)
        except OSError:  # the parent is gone
            break
    with contextlib.suppress(OSError):
        send.close()
