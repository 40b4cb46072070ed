"""The `lance-sync` program ends without the interpreter's teardown (`lance_sync.cli.app.run`):
what it wrote is all there, its exit codes are the commands' own, and exit handlers still run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import exit_status, main

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")


def program(*args: str, **options: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "lance_sync", *args], capture_output=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120, **options)  # type: ignore[call-overload]


def test_everything_written_reaches_a_file(tmp_path: Path):
    """Output far larger than any buffer, written to a file, is whole when the process ends."""
    written = tmp_path / "schema.json"
    with written.open("wb") as out:
        done = subprocess.run([sys.executable, "-m", "lance_sync", "schema"], stdout=out, stderr=subprocess.PIPE,
                              timeout=120)
    assert done.returncode == 0, done.stderr
    assert written.read_text() == CliRunner().invoke(main, ["schema"]).output


def test_exit_codes_are_the_commands_own(tmp_path: Path):
    assert program("--version").returncode == 0
    failed = program("validate", "-f", str(tmp_path / "missing.yaml"))
    assert failed.returncode == 1 and b"no such file" in failed.stderr
    unknown = program("no-such-command")
    assert unknown.returncode == 1 and b"No such command" in unknown.stderr


def test_exit_handlers_still_run(tmp_path: Path):
    """A handler registered with atexit (a library's own cleanup) runs before the process ends."""
    marker = tmp_path / "ran"
    script = ("import atexit, pathlib, sys\n"
              f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
              "sys.argv = ['lance-sync', '--version']\n"
              "from lance_sync.cli.app import run\n"
              "run()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == 0 and b"lance-sync" in done.stdout
    assert marker.read_text() == "yes"


def test_a_thread_still_running_gets_the_usual_exit(tmp_path: Path):
    """A non-daemon thread still at work is waited for, as at any exit, not cut off: `run`
    leaves by SystemExit (so the `finally` releases the thread), never by os._exit."""
    marker = tmp_path / "finished"
    script = ("import pathlib, sys, threading\n"
              "go = threading.Event()\n"
              f"def work(): go.wait(); pathlib.Path({str(marker)!r}).write_text('yes')\n"
              "threading.Thread(target=work).start()\n"
              "sys.argv = ['lance-sync', '--version']\n"
              "from lance_sync.cli.app import run\n"
              "try:\n    run()\nfinally:\n    go.set()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "yes"


@pytest.mark.parametrize(("code", "status", "message"), [(None, 0, ""), (0, 0, ""), (4, 4, ""), ("bad", 1, "bad\n")])
def test_exit_status_of_system_exit(code: object, status: int, message: str, capsys: pytest.CaptureFixture[str]):
    assert exit_status(SystemExit(code)) == status
    assert capsys.readouterr().err == message


def test_a_profiler_gets_its_results_written(tmp_path: Path):
    """`python -m cProfile -m lance_sync` writes its statistics after the program returns."""
    stats = tmp_path / "plan.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "lance_sync", "--version"],
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert stats.stat().st_size > 0
