"""Defaults and callback types that every stage shares, so that each has one value."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

#: catalog calls (and location checks) one command has in flight at once, unless told otherwise
DEFAULT_PARALLELISM = 16
#: lance-sync's own files next to a manifest: apply journals, rollback plans, Spark's log
STATE_DIRECTORY = ".lance-sync"
#: where a long-running step reports what it is doing, one line at a time
Progress = Callable[[str], None]


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine only (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
