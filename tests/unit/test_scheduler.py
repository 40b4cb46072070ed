"""The apply's scheduler: what it starts after a stop or an escaped error (lance_sync.apply.scheduler)."""

from __future__ import annotations

import threading

import pytest

from lance_sync.apply.report import Outcome
from lance_sync.apply.scheduler import AHEAD_PER_WORKER, Scheduler
from lance_sync.model.actions import Action, Kind, ObjectState, Reason, Verb, fingerprint

TABLES = 20


def create(name: str, after: Action | None = None) -> Action:
    state = ObjectState(properties={"lance_sync.owner": "o"}, location=f"/d/{name}.lance")
    return Action(verb=Verb.CREATE, kind=Kind.TABLE, reason=Reason.ABSENT, backend="b", id=["ns", name],
                  display_id=f"ns${name}", detail="d", before=None, after=state,
                  fingerprint=fingerprint(None, []), depends_on=[after.key] if after else [])


class Runner:
    """Runs every unit it is given by calling `effect` first; records what ran."""

    def __init__(self, effect=lambda action: None):
        self.effect = effect
        self.ran: list[str] = []
        self.lock = threading.Lock()

    def batches(self, ready: list[Action]) -> list[list[Action]]:
        return [[action] for action in ready]

    def run_batch(self, unit: list[Action]) -> list[Outcome]:
        with self.lock:
            self.ran.append(unit[0].id[-1])
        self.effect(unit[0])
        return [Outcome(unit[0], "succeeded")]


def test_after_a_stop_only_the_units_already_handed_out_run():
    stop = threading.Event()
    runner = Runner(effect=lambda action: stop.set())
    outcomes: list[Outcome] = []
    Scheduler([create(f"t{i}") for i in range(TABLES)], parallelism=1).run(runner, outcomes.append, stop)
    assert 1 <= len(runner.ran) <= AHEAD_PER_WORKER
    assert len(outcomes) == TABLES
    skipped = [o for o in outcomes if o.status == "skipped"]
    assert len(skipped) == TABLES - len(runner.ran) and all("told to stop" in (o.error or "") for o in skipped)


def test_an_escaped_error_is_raised_and_starts_nothing_more():
    def fail(action: Action) -> None:
        raise RuntimeError("a bug")

    runner = Runner(effect=fail)
    with pytest.raises(RuntimeError, match="a bug"):
        Scheduler([create(f"t{i}") for i in range(TABLES)], parallelism=1).run(runner, lambda outcome: None)
    assert 1 <= len(runner.ran) <= AHEAD_PER_WORKER


def test_outcomes_are_matched_to_their_actions_whatever_their_order_in_a_unit():
    class Reversed(Runner):
        def batches(self, ready: list[Action]) -> list[list[Action]]:
            return [ready]  # one unit

        def run_batch(self, unit: list[Action]) -> list[Outcome]:
            return [Outcome(a, "failed" if a.id[-1] == "a" else "succeeded") for a in reversed(unit)]

    parent_a, parent_b = create("a"), create("b")
    outcomes: list[Outcome] = []
    Scheduler([parent_a, parent_b, create("a_child", after=parent_a), create("b_child", after=parent_b)],
              parallelism=2).run(Reversed(), outcomes.append)
    status = {o.action.id[-1]: o.status for o in outcomes}
    assert status == {"a": "failed", "b": "succeeded", "a_child": "skipped", "b_child": "succeeded"}
