"""Order and parallelism: the actions of a plan run as soon as the actions they depend on have
succeeded, in parallel; what depends on a failure is skipped, and nothing more starts once the
apply is told to stop."""

from __future__ import annotations

import queue
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from lance_sync.apply.report import Outcome
from lance_sync.apply.runner import ActionRunner
from lance_sync.model.actions import Action


class StopSignal(Protocol):
    """Set when an apply must start nothing more (a threading.Event is one)."""

    def is_set(self) -> bool: ...


class Scheduler:
    """Runs units of work as soon as what they depend on succeeded; skips what depends on a failure."""

    def __init__(self, actions: list[Action], parallelism: int):
        self.by_key = {a.key: a for a in actions}
        self.parallelism = max(1, parallelism)
        self.dependents: dict[str, list[str]] = defaultdict(list)
        self.waiting: dict[str, int] = {}
        for key, action in self.by_key.items():
            needs = {d for d in action.depends_on if d in self.by_key}
            self.waiting[key] = len(needs)
            for need in needs:
                self.dependents[need].append(key)

    def run(self, runner: ActionRunner, finish: Callable[[Outcome], None],
            stop: StopSignal | None = None) -> None:
        """Each unit of work goes to the pool as soon as it is ready; finished units come back
        through a queue (waiting on the set of running futures instead costs a pass over all of
        them per finished unit: quadratic with 10,000 declares in flight)."""
        finished: set[str] = set()
        done: queue.SimpleQueue[Future[list[Outcome]]] = queue.SimpleQueue()
        running = 0

        def record(outcome: Outcome, key: str | None = None) -> None:
            finished.add(key or outcome.action.key)
            finish(outcome)

        with ThreadPoolExecutor(self.parallelism, thread_name_prefix="apply") as pool:
            def submit(ready: list[Action]) -> None:
                nonlocal running
                if stop is not None and stop.is_set():
                    for action in ready:
                        record(Outcome(action, "skipped", "the apply was told to stop (its lease was lost, or "
                                                        "SIGTERM); nothing more was started"))
                    return
                for batch in runner.batches(ready):
                    pool.submit(runner.run_batch, batch).add_done_callback(done.put)
                    running += 1

            submit([a for key, a in self.by_key.items() if self.waiting[key] == 0])
            while running:
                future = done.get()
                running -= 1
                ready: list[Action] = []
                for outcome in future.result():
                    key = outcome.action.key  # computed once: a key is a JSON encoding of the id
                    record(outcome, key)
                    if outcome.status == "succeeded":
                        ready += self._released(key)
                    else:
                        self._skip_dependents(key, record)
                submit(ready)
        for key, action in self.by_key.items():
            if key not in finished:
                record(Outcome(action, "skipped", "its dependencies form a cycle"))

    def _released(self, key: str) -> list[Action]:
        ready = []
        for dependent in self.dependents[key]:
            self.waiting[dependent] -= 1
            if self.waiting[dependent] == 0:
                ready.append(self.by_key[dependent])
        return ready

    def _skip_dependents(self, key: str, record: Callable[[Outcome], None]) -> None:
        for dependent in self.dependents[key]:
            if self.waiting[dependent] >= 0:
                self.waiting[dependent] = -1
                record(Outcome(self.by_key[dependent], "skipped", "an action it depends on did not succeed"))
                self._skip_dependents(dependent, record)

