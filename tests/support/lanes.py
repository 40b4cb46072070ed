"""The two test lanes, decided by rule at collection.

A test is `slow` when it needs something that takes seconds to start or to run:
- a catalog server, S3 or a Spark cluster (a fixture of tests/servers/fixtures.py), marked `servers`;
- a Spark session (the `spark` fixture, a JVM), marked `spark`;
- processes of its own (the `subprocesses` fixture): the CLI as a process, kill points, signals,
  a second interpreter, forked writers racing on one catalog; or a browser (the `browser` fixture
  of tests/support/browser.py, headless Chromium).
`pytest -m "not slow"` is the quick lane: no Java, no server, no process start-up.

A test that asks for a server or Spark at run time (`request.getfixturevalue`) says so with the
mark `servers` or `spark`; `slow` follows from the rule and is never written by hand. The rule holds
by itself: a test outside the slow lane that starts a Python or Java process, or asks for a server
or Spark at run time, fails, naming what to declare.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.servers.fixtures import SERVERS

SERVER_FIXTURES = frozenset({*SERVERS, "spark_cluster"})
SPARK_FIXTURES = frozenset({"spark", "spark_cluster"})
PROCESS_FIXTURE = "subprocesses"
#: the fixtures whose tests start processes: `subprocesses`, and `browser` (Chromium)
PROCESS_FIXTURES = frozenset({PROCESS_FIXTURE, "browser"})
#: programs whose start-up alone costs a second or more
COSTLY_PROGRAMS = ("python", "java", "bash", "sh", "chromium", "chrome")


@pytest.fixture
def subprocesses() -> None:
    """This test starts Python or Java processes (a second or more each): it runs in the slow lane.
    Take it where the process boundary is what the test proves (exit codes, signals, a crash,
    start-up); anything else runs the CLI in-process (click's runner, or `lance_sync.api`)."""


def lane_marks(item: pytest.Item) -> list[str]:
    """The marks the rule gives `item`: `servers`, `spark` and `slow` as they apply."""
    needs = set(getattr(item, "fixturenames", ()))
    marks = {mark.name for mark in item.iter_markers()}
    if needs & SERVER_FIXTURES:
        marks.add("servers")
    if needs & SPARK_FIXTURES:
        marks.add("spark")
    if marks & {"servers", "spark"} or needs & PROCESS_FIXTURES:
        marks.add("slow")
    return sorted(marks & {"servers", "spark", "slow"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in lane_marks(item):
            item.add_marker(name)


def _costly(argv: Any) -> str | None:
    """The program `argv` starts when its start-up is costly (Python, Java, or a shell, which can
    start anything), else None."""
    first = argv if isinstance(argv, (str, bytes, os.PathLike)) else next(iter(argv), "")
    words = os.fsdecode(first).split()
    if not words:
        return None
    program = os.path.basename(words[0])
    if words[0] == sys.executable or program.startswith(COSTLY_PROGRAMS):
        return program
    found = shutil.which(words[0])
    if found:
        with open(found, "rb") as script:
            shebang = script.readline(200)
        if shebang.startswith(b"#!") and any(name.encode() in shebang for name in COSTLY_PROGRAMS):
            return program
    return None


@pytest.fixture(autouse=True)
def _processes_only_in_the_slow_lane(request: pytest.FixtureRequest,
                                     monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if request.node.get_closest_marker("slow"):
        yield
        return
    start = subprocess.Popen.__init__

    def refuse(self: subprocess.Popen, args: Any, *rest: Any, **options: Any) -> None:
        program = _costly(args)
        if program:
            raise RuntimeError(f"{request.node.nodeid} starts {program}: take the `{PROCESS_FIXTURE}` "
                               "fixture (tests/support/lanes.py), which puts it in the slow lane, or run "
                               "it in-process")
        start(self, args, *rest, **options)

    def refuse_fixture(self: pytest.FixtureRequest, name: str) -> Any:
        if name in SERVER_FIXTURES | SPARK_FIXTURES:
            raise RuntimeError(f"{request.node.nodeid} asks for `{name}` at run time: mark it "
                               "`servers` or `spark` (tests/support/lanes.py), which puts it in the slow lane")
        return get_fixture(self, name)

    get_fixture = pytest.FixtureRequest.getfixturevalue
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(pytest.FixtureRequest, "getfixturevalue", refuse_fixture)
    yield
