"""The apply session: it closes the drivers it connected, never those it was given."""

from __future__ import annotations

import threading

import pytest

from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.session import ApplySession, ApplyStopped, Saved
from lance_sync.model.actions import Plan


class ClosableDriver:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def unchanged_plan() -> Plan:
    return Plan(tool_version="0", created_at="now", owner="o", manifest_files=[], backends={}, actions=[])


def test_a_session_closes_the_drivers_it_connected(tmp_path, monkeypatch):
    driver = ClosableDriver()
    monkeypatch.setattr("lance_sync.apply.session.connect_drivers", lambda source: {"b": driver})
    done = ApplySession(Saved(unchanged_plan()), ApplyOptions(state_dir=tmp_path)).run()
    assert done.stage == "nothing_to_apply" and driver.closed == 1


def test_a_session_leaves_the_drivers_it_was_given_open(tmp_path):
    driver = ClosableDriver()
    done = ApplySession(Saved(unchanged_plan()), ApplyOptions(state_dir=tmp_path), drivers={"b": driver}).run()
    assert done.stage == "nothing_to_apply" and driver.closed == 0


def test_a_stopped_session_changes_nothing_and_still_closes_its_drivers(tmp_path, monkeypatch):
    driver = ClosableDriver()
    monkeypatch.setattr("lance_sync.apply.session.connect_drivers", lambda source: {"b": driver})
    stop = threading.Event()
    stop.set()
    reviewed: list[Plan] = []
    session = ApplySession(Saved(unchanged_plan()), ApplyOptions(state_dir=tmp_path), stop=stop,
                           review=lambda plan: reviewed.append(plan) or plan)
    with pytest.raises(ApplyStopped):
        session.run()
    assert not reviewed and driver.closed == 1
