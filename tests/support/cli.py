"""The CLI as the e2e tests run it: in this process (click's runner) unless the process boundary
is what a test proves (exit by signal, a kill, concurrent processes): `run_cli_process` then, in
a test that takes the `subprocesses` fixture (tests/support/lanes.py)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model import secrets

#: the lance-sync console script of the interpreter running the tests (.venv/bin/lance-sync)
LANCE_SYNC = str(Path(sys.executable).with_name("lance-sync"))
CLI_TIMEOUT_SECONDS = 300


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a lance-sync subprocess: no colour, no HTTP proxy for loopback."""
    env = {k: v for k, v in os.environ.items() if k != "LANCE_SYNC_DEBUG"}
    env.update(NO_COLOR="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.update(extra)
    return env


def run_cli(manifest: Path, command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`lance-sync COMMAND -f MANIFEST ARGS...` in this process, as a process started in the
    manifest's folder with `env` as its whole environment would run it (a masking registry of
    its own included); never a traceback."""
    argv = [command, "-f", str(manifest), *args]
    environment: dict[str, str | None] = {name: None for name in os.environ if name not in env}
    environment.update(env)
    with _working_directory(manifest.parent), mock.patch.object(secrets, "_registry", secrets._Registry()):
        outcome = CliRunner(env=environment).invoke(main, argv, prog_name="lance-sync")
    if outcome.exception is not None and not isinstance(outcome.exception, SystemExit):
        raise outcome.exception
    result = subprocess.CompletedProcess(["lance-sync", *argv], outcome.exit_code, outcome.stdout, outcome.stderr)
    assert "Traceback" not in result.stdout + result.stderr, describe(result)
    return result


def run_cli_process(manifest: Path, command: str, *args: str, env: dict[str, str],
                    timeout: float = CLI_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """The same as a process of its own; never a traceback."""
    result = subprocess.run([LANCE_SYNC, command, "-f", str(manifest), *args], capture_output=True,
                            text=True, env=env, timeout=timeout, cwd=manifest.parent)
    assert "Traceback" not in result.stdout + result.stderr, describe(result)
    return result


@contextlib.contextmanager
def _working_directory(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def describe(result: subprocess.CompletedProcess[str], limit: int = 6000) -> str:
    """A failed command for an assertion message: its arguments, exit code and output tails."""
    return (f"$ {' '.join(result.args)}\nexit {result.returncode}\n--- stdout (tail)\n"
            f"{result.stdout[-limit:]}\n--- stderr (tail)\n{result.stderr[-limit:]}")


def failures(document: dict[str, Any], result: subprocess.CompletedProcess[str]) -> str:
    """An apply's stderr without its `ok` lines, then its failed outcomes: last, so that a log
    that keeps only the ends of a long message still shows them."""
    failed = [f"{o['verb']} {o['kind']} {o['backend']}: {o['display_id']}: transient={o['transient']}: "
              f"{o['error']}" for o in document.get("outcomes") or [] if o["status"] != "succeeded"]
    noteworthy = "\n".join(line for line in result.stderr.splitlines() if not line.lstrip().startswith("ok "))
    return (f"$ {' '.join(result.args)}\n--- stderr without ok lines (tail)\n{noteworthy[-2000:]}\n"
            f"exit {result.returncode}, status {document.get('status')}, "
            f"rerun_converges {document.get('rerun_converges')}, failed:\n" + "\n".join(failed))
