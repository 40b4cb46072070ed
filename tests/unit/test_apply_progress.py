"""Apply's progress where stderr is not a terminal (a CI log): counts at the start and every few
seconds while actions run, each failure as it happens, and nothing per successful action."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from lance_sync.cli.apply_display import ApplyProgress


def outcome(status: str, error: str | None = None) -> SimpleNamespace:
    action = SimpleNamespace(name="create table", backend="lake", display_id="sales$orders",
                             headline="create table lake: sales$orders")
    return SimpleNamespace(action=action, status=status, error=error)


class Stderr:
    """What has been written to stderr so far (capsys hands it out once)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]):
        self.capsys = capsys
        self.text = ""

    def wait_for(self, expected: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while expected not in self.text:
            assert time.monotonic() < deadline, f"{expected!r} never came; stderr was:\n{self.text}"
            time.sleep(0.01)
            self.text += self.capsys.readouterr().err


def test_a_line_with_the_counts_comes_while_an_action_is_still_running(capsys):
    stderr = Stderr(capsys)
    progress = ApplyProgress(interval=0.05)
    progress.start(3, None)
    stderr.wait_for("Applying: 0 of 3 actions done")
    progress.update(outcome("succeeded"))
    stderr.wait_for("Applying: 1 of 3 actions done (")
    progress.update(outcome("failed", "InternalError: boom"))
    stderr.wait_for("FAILED  create table lake: sales$orders: InternalError: boom")
    stderr.wait_for("Applying: 2 of 3 actions done, 1 failed or skipped (")
    progress.update(outcome("succeeded"))
    progress.close()
    stderr.text += capsys.readouterr().err
    assert " ok " not in stderr.text  # successes are counted, not listed


def test_the_ticker_stops_with_the_apply(capsys):
    progress = ApplyProgress(interval=0.01)
    progress.start(1, None)
    ticker = progress.ticker
    progress.update(outcome("succeeded"))
    progress.close()
    assert ticker is not None and not ticker.is_alive()
