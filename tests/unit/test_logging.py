"""Logging: silent unless the CLI is asked (`--log-level`, LANCE_SYNC_LOG), and masked.

The library only names its loggers (under "lance_sync") and gives "lance_sync" a NullHandler;
the CLI, in its own process, sends every logger's records to stderr through
`secrets.MaskingFilter` for the length of a command.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from lance_namespace.errors import InternalError, ServiceUnavailableError

from lance_sync.cli.app import main
from lance_sync.drivers.support.http import HttpClient
from lance_sync.drivers.support.retry import with_retries
from lance_sync.model import secrets
from lance_sync.model.errors import ManifestError

ROOT = Path(__file__).resolve().parents[2]
SECRET = "log-secret-never-shown-4c1f"
RETRY_LINE = "lake: list_tables(sales): attempt 1 of 3 failed (ServiceUnavailableError: busy)"


@pytest.fixture
def a_command_that_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """`plan` whose manifest load goes through one transient failure of a read, logs a
    secret at DEBUG as a library would, then stops."""
    failures = iter([ServiceUnavailableError("busy")])

    def read() -> str:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return "read"

    def load(*args: object, **kwargs: object) -> None:
        with_retries(read, 2, sleep=lambda seconds: None, backend="lake", label="list_tables(sales)")
        logging.getLogger("urllib3.connectionpool").debug("sent Authorization: Bearer %s", SECRET)
        raise ManifestError("stop here")

    secrets.register(SECRET)
    monkeypatch.setattr("lance_sync.cli.plan.load_changed", load)  # where plan looks its loader up


def plan(tmp_path: Path, *options: str, env: dict[str, str] | None = None):
    environ = {"LANCE_SYNC_LOG": None, **(env or {})}
    return CliRunner().invoke(main, [*options, "plan", "-f", str(tmp_path / "m.yaml")], env=environ)


def test_no_log_without_the_option(a_command_that_retries, tmp_path):
    result = plan(tmp_path)
    assert result.exit_code == 1 and "stop here" in result.stderr
    assert "attempt 1" not in result.stderr and "Authorization" not in result.stderr


def test_debug_shows_a_retry_on_stderr_and_masks_what_a_library_logs(a_command_that_retries, tmp_path):
    result = plan(tmp_path, "--log-level", "DEBUG")
    assert result.exit_code == 1 and "stop here" in result.stderr
    assert f"INFO lance_sync.drivers.support.retry: {RETRY_LINE}" in result.stderr
    assert "DEBUG urllib3.connectionpool: sent Authorization: Bearer ***" in result.stderr
    assert SECRET not in result.output


def test_the_environment_variable_sets_the_level(a_command_that_retries, tmp_path):
    result = plan(tmp_path, env={"LANCE_SYNC_LOG": "info"})
    assert RETRY_LINE in result.stderr
    assert "Authorization" not in result.stderr  # a DEBUG record, below INFO


def test_the_option_wins_over_the_environment_variable(a_command_that_retries, tmp_path):
    result = plan(tmp_path, "--log-level", "WARNING", env={"LANCE_SYNC_LOG": "DEBUG"})
    assert result.exit_code == 1 and "attempt 1" not in result.stderr


@pytest.mark.parametrize(("options", "env"), [(["--log-level", "LOUD"], {}), ([], {"LANCE_SYNC_LOG": "LOUD"})])
def test_an_unknown_level_is_a_usage_error(tmp_path, options, env):
    """A usage error, which exits 1 as every usage error does (2 means "changes present")."""
    result = plan(tmp_path, *options, env=env)
    assert result.exit_code == 1
    assert "Invalid value for '--log-level'" in result.stderr and "'LOUD' is not one of" in result.stderr
    assert "Traceback" not in result.output


def test_a_command_leaves_logging_as_it_found_it(a_command_that_retries, tmp_path):
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    plan(tmp_path, "--log-level", "DEBUG")
    assert root.handlers == handlers and root.level == level


# --- the filter ----------------------------------------------------------------------------------


def test_the_filter_masks_a_record_s_message_arguments_and_traceback():
    secrets.register(SECRET)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(secrets.MaskingFilter())
    logger = logging.getLogger("lance_sync.tests.masking")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug("token %s in %r", SECRET, {"token": SECRET})
        try:
            raise RuntimeError(f"refused {SECRET}")
        except RuntimeError:
            logger.debug("failed", exc_info=True)
        logger.debug("quoted %s", json.dumps({"key": SECRET}), stack_info=True)
        logger.debug("arguments that do not fit %d", SECRET)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    text = stream.getvalue()
    assert SECRET not in text
    assert "token *** in {'token': '***'}" in text and "RuntimeError: refused ***" in text
    assert "arguments that do not fit %d ('***',)" in text


# --- the library ---------------------------------------------------------------------------------


def test_the_library_configures_no_logging(subprocesses):
    """A fresh interpreter: importing lance_sync adds one NullHandler to "lance_sync", nothing
    to the root logger, and a record of lance-sync's prints nothing."""
    script = ("import logging, lance_sync, lance_sync.api, lance_sync.drivers.support.http\n"
              "logging.getLogger('lance_sync.drivers.support.retry').warning('not shown')\n"
              "handlers = logging.getLogger('lance_sync').handlers\n"
              "assert [type(h).__name__ for h in handlers] == ['NullHandler'], handlers\n"
              "assert not logging.getLogger().handlers and logging.getLogger().level == logging.WARNING\n")
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environ, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""


class _BusyOnce(BaseHTTPRequestHandler):
    """503 to the first request, then 200 with a JSON body."""

    answered = 0

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        type(self).answered += 1
        status, body = (503, b'{"message": "busy"}') if self.answered == 1 else (200, b'{"ok": true}')
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def busy_once() -> Iterator[str]:
    handler = type("BusyOnce", (_BusyOnce,), {"answered": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_http_client_logs_each_answer_and_the_retry_never_a_header(busy_once, caplog):
    client = HttpClient(busy_once, backend="iceberg", connect_timeout=2, read_timeout=2, max_retries=2,
                        translate=lambda failure: InternalError(failure.message()), sleep=lambda seconds: None,
                        headers=lambda: {"Authorization": f"Bearer {SECRET}"})
    with caplog.at_level(logging.DEBUG, logger="lance_sync"):
        assert client.request("GET", "/config", params={"warehouse": "wh"}) == {"ok": True}
    lines = [(record.name, record.levelname, record.getMessage()) for record in caplog.records]
    http, retry = "lance_sync.drivers.support.http", "lance_sync.drivers.support.retry"
    assert (http, "DEBUG", "iceberg: GET /v1/config -> 503") in lines
    assert (http, "DEBUG", "iceberg: GET /v1/config -> 200") in lines
    [(_, level, message)] = [line for line in lines if line[0] == retry]
    assert level == "INFO"
    assert message.startswith("iceberg: GET /v1/config: attempt 1 of 3 failed (")
    assert "busy" in message and "retrying in" in message
    assert not any(SECRET in message or "Bearer" in message for _, _, message in lines)
