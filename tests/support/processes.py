"""Processes and threads the lease tests need: the pid of one that has ended, work run in
threads at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any


def dead_pid() -> int:
    """The pid of a process of this host that has ended."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    return int(finished.stdout)


def run_together(work: Callable[[Any], None], items: list[Any]) -> None:
    """`work(item)` for every item, each in a thread of its own, all at once; the first error
    any raised is raised here once all are done."""
    errors: list[BaseException] = []

    def run(item: Any) -> None:
        try:
            work(item)
        except BaseException as error:  # noqa: BLE001 - raised in the test thread below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
