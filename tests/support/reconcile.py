"""`lance-sync reconcile` as a process: its JSON lines read as they come, and its metrics
endpoint scraped."""

from __future__ import annotations

import http.client
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.cli import LANCE_SYNC, cli_env

#: how long a wait for one expected line may last before the loop is taken for hung
LINE_DEADLINE_SECONDS = 180


Line = dict[str, Any]


class Loop:
    """A running `lance-sync reconcile`, its JSON lines read as they come."""

    def __init__(self, manifest: Path, *args: str):
        self.process = subprocess.Popen([LANCE_SYNC, "reconcile", "-f", str(manifest), *args], cwd=manifest.parent,
                                        env=cli_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[Line | None] = queue.Queue()
        self.seen: list[Line] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr or []), daemon=True).start()

    def _read(self) -> None:
        for text in self.process.stdout or []:
            self.lines.put(json.loads(text))
        self.lines.put(None)

    def wait_for(self, what: str, matches: Callable[[Line], bool]) -> Line:
        """The next line that `matches`; the lines before it are kept in `seen`."""
        deadline = time.monotonic() + LINE_DEADLINE_SECONDS
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {what} line from the loop; so far:\n{self.describe()}")
            if line is None:
                pytest.fail(f"the loop ended before a {what} line (exit {self.process.wait()}):\n{self.describe()}")
            self.seen.append(line)
            if matches(line):
                return line

    def cycle(self, outcome: str) -> Line:
        return self.wait_for(f"'{outcome}' cycle", lambda line: line.get("outcome") == outcome)

    def describe(self) -> str:
        lines = "\n".join(json.dumps(line) for line in self.seen[-15:])
        return f"{lines}\n--- stderr\n{''.join(self.stderr)[-3000:]}"

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


def scrape(url: str) -> dict[str, float]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    connection.request("GET", parts.path)
    answer = connection.getresponse()
    assert answer.status == 200
    values = {}
    for line in answer.read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values
