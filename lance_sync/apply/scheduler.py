"""Order and parallelism: the actions of a plan run as soon as the actions they depend on have
succeeded, in parallel; what depends on a failure is skipped, and nothing more starts once the
apply is told to stop."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from lance_sync.apply.report import Outcome
from lance_sync.apply.runner import ActionRunner
from lance_sync.model.actions import Action

#: units of work handed to the workers ahead of them, per worker: enough that none waits for
#: the scheduler, few enough that a stop leaves the rest unstarted and the backlog costs nothing
AHEAD_PER_WORKER = 2


class StopSignal(Protocol):
    """Set when an apply must start nothing more (a threading.Event is one)."""

    def is_set(self) -> bool: ...


#: what a worker hands back: a unit's outcomes, or the error that escaped it
_Done = list[Outcome] | BaseException


class Scheduler:
    """Runs units of work as soon as what they depend on succeeded; skips what depends on a failure."""

    def __init__(self, actions: Sequence[Action], parallelism: int):
        self.by_key = {a.key: a for a in actions}
        #: each action's key by the action's identity: a key is a JSON encoding of the id,
        #: computed once here rather than again for each outcome
        self.key_of = {id(a): key for key, a in self.by_key.items()}
        self.parallelism = max(1, parallelism)
        self.dependents: dict[str, list[str]] = {}
        self.waiting: dict[str, int] = {}
        for key, action in self.by_key.items():
            needs = {d for d in action.depends_on if d in self.by_key}
            self.waiting[key] = len(needs)
            for need in needs:
                self.dependents.setdefault(need, []).append(key)

    def run(self, runner: ActionRunner, finish: Callable[[Outcome], None],
            stop: StopSignal | None = None, before_wait: Callable[[], None] = lambda: None) -> None:
        """Ready units wait in a backlog; the workers are kept AHEAD_PER_WORKER units ahead and
        hand finished units back through a queue. No future per action and no queue of every
        ready action: with 100,000 declares ready at once, those were most of the scheduler's
        own time and memory. `finish` gets each outcome; `before_wait` is called whenever no
        finished unit is waiting, before the scheduler waits for one."""
        finished: set[str] = set()
        backlog: deque[list[Action]] = deque()
        todo: queue.SimpleQueue[list[Action] | None] = queue.SimpleQueue()
        done: queue.SimpleQueue[_Done] = queue.SimpleQueue()
        running = 0

        def record(outcome: Outcome, key: str) -> None:
            finished.add(key)
            finish(outcome)

        def start() -> None:
            """Hand units from the backlog to the workers, or skip them all once told to stop."""
            nonlocal running
            if stop is not None and stop.is_set():
                while backlog:
                    for action in backlog.popleft():
                        record(Outcome(action, "skipped", "the apply was told to stop (its lease was lost, or "
                                                          "SIGTERM); nothing more was started"), self.key_of[id(action)])
                return
            while backlog and running < AHEAD_PER_WORKER * self.parallelism:
                todo.put(backlog.popleft())
                running += 1

        with _workers(runner, todo, done, min(self.parallelism, len(self.by_key))):
            backlog.extend(runner.batches([a for key, a in self.by_key.items() if self.waiting[key] == 0]))
            start()
            while running:
                if done.empty():
                    before_wait()
                outcomes = done.get()
                running -= 1
                if isinstance(outcomes, BaseException):
                    raise outcomes
                ready = self._settle(outcomes, record)
                if ready:
                    backlog.extend(runner.batches(ready))
                start()
        for key, action in self.by_key.items():
            if key not in finished:
                record(Outcome(action, "skipped", "its dependencies form a cycle"), key)

    def _settle(self, outcomes: list[Outcome], record: Callable[[Outcome, str], None]) -> list[Action]:
        """Record a finished unit's outcomes; the actions they leave ready to run. What depends
        on an action that did not succeed is skipped."""
        ready: list[Action] = []
        for outcome in outcomes:
            key = self.key_of[id(outcome.action)]
            record(outcome, key)
            if outcome.status == "succeeded":
                ready += self._released(key)
            else:
                self._skip_dependents(key, record)
        return ready

    def _released(self, key: str) -> list[Action]:
        ready = []
        for dependent in self.dependents.get(key, ()):
            self.waiting[dependent] -= 1
            if self.waiting[dependent] == 0:
                ready.append(self.by_key[dependent])
        return ready

    def _skip_dependents(self, key: str, record: Callable[[Outcome, str], None]) -> None:
        for dependent in self.dependents.get(key, ()):
            if self.waiting[dependent] >= 0:
                self.waiting[dependent] = -1
                record(Outcome(self.by_key[dependent], "skipped", "an action it depends on did not succeed"), dependent)
                self._skip_dependents(dependent, record)


@contextlib.contextmanager
def _workers(runner: ActionRunner, todo: queue.SimpleQueue[list[Action] | None], done: queue.SimpleQueue[_Done],
             count: int) -> Iterator[None]:
    """`count` worker threads for the block; when it ends, by an error too, what no worker has
    taken yet is not started, and every worker finishes its unit and stops."""
    workers = [threading.Thread(target=_work, args=(runner, todo, done), name=f"apply_{i}", daemon=True)
               for i in range(count)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        _drop_unstarted(todo)
        for _ in workers:
            todo.put(None)
        for worker in workers:
            worker.join()


def _work(runner: ActionRunner, todo: queue.SimpleQueue[list[Action] | None], done: queue.SimpleQueue[_Done]) -> None:
    """A worker: runs units until it is handed None."""
    while (unit := todo.get()) is not None:
        try:
            done.put(runner.run_batch(unit))
        except BaseException as error:  # noqa: BLE001 - raised again by the scheduler
            done.put(error)


def _drop_unstarted(todo: queue.SimpleQueue[list[Action] | None]) -> None:
    with contextlib.suppress(queue.Empty):
        while True:
            todo.get_nowait()
