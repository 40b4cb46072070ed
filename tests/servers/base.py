"""What every test server fixture hands to tests, and the helpers to start one.

A fixture yields a `RunningServer`. Tests only use `endpoint` (an http:// or
thrift:// URL on 127.0.0.1), `requests_served()` / `reset_request_count()` to
assert how many calls a driver made, and `log_path` to read a failing server's
log. Any server can be replaced by an external one through an environment
variable (see `external_endpoint`); request counting is then unavailable.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CACHE_DIR = Path(os.environ.get("LANCE_SYNC_TEST_CACHE", Path.home() / ".cache" / "lance-sync-tests"))


@dataclass
class RunningServer:
    name: str
    endpoint: str
    startup_seconds: float
    log_path: Path | None = None
    external: bool = False
    count_requests: Callable[[], int] | None = None
    reset_requests: Callable[[], None] | None = None
    stop: Callable[[], None] = field(default=lambda: None)
    extra: dict = field(default_factory=dict)

    def requests_served(self) -> int:
        if self.count_requests is None:
            raise RuntimeError(f"{self.name}: request counting is not available (external server?)")
        return self.count_requests()

    def reset_request_count(self) -> None:
        if self.reset_requests is not None:
            self.reset_requests()


def external_endpoint(variable: str) -> str | None:
    """The endpoint of a user's own server that replaces a test server, if set."""
    value = os.environ.get(variable, "").strip()
    return value or None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(check: Callable[[], bool], timeout: float, what: str, log_path: Path | None = None,
               process: subprocess.Popen | None = None) -> None:
    """Poll `check` until it returns True; fail with the server log's tail otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with code {process.returncode}\n{log_tail(log_path)}")
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} not ready after {timeout:.0f}s\n{log_tail(log_path)}")


def is_running(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def log_tail(log_path: Path | None, lines: int = 40) -> str:
    if log_path is None or not log_path.exists():
        return ""
    return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])


def tcp_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def stop_process(process: subprocess.Popen, timeout: float = 10) -> None:
    """Stop a server we started, by its PID: TERM, then KILL."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


#: Every server started in this test session, for the start-up time summary.
STARTED: list[RunningServer] = []
