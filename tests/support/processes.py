"""Processes the lease tests need: the pid of one that has ended."""

from __future__ import annotations

import subprocess
import sys


def dead_pid() -> int:
    """The pid of a process of this host that has ended."""
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
    return int(finished.stdout)
