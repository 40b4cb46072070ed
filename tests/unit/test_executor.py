"""The applier's executor: dependency order, parallelism, partial failure, rollback plan."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lance_namespace.errors import NamespaceAlreadyExistsError, ServiceUnavailableError

from lance_sync.api import load_plan
from lance_sync.apply.execute import execute
from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.report import ApplyReport, Outcome
from lance_sync.apply.rollback import RollbackRecord, rollback_plan, write_rollback
from lance_sync.drivers.base import NamespaceInfo
from lance_sync.model.actions import (
    Action,
    Kind,
    ObjectState,
    Plan,
    Reason,
    Verb,
    action_key,
    fingerprint,
)


def namespace_action(name: tuple[str, ...], depends: list[str] | None = None) -> Action:
    return Action(verb=Verb.CREATE, kind=Kind.NAMESPACE, reason=Reason.ABSENT, backend="b", id=list(name),
                  display_id="$".join(name), after=ObjectState(properties={"lance_sync.owner": "o"}),
                  detail="r", compared_keys=["lance_sync.owner"], fingerprint=fingerprint(None, []),
                  depends_on=depends or [])


class RecordingDriver:
    """Stands in for a backend: records calls, fails on request, measures concurrency."""

    def __init__(self, fail: set[str] = frozenset(), delay: float = 0.0):
        self.fail, self.delay = fail, delay
        self.created: list[str] = []
        self.running = self.max_running = 0
        self.lock = threading.Lock()

    def create_namespace(self, request):
        with self.lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
        time.sleep(self.delay)
        with self.lock:
            self.running -= 1
        name = "$".join(request.id)
        if name in self.fail:
            raise ServiceUnavailableError(f"cannot create {name}")
        with self.lock:
            self.created.append(name)


def plan_of(actions: list[Action]) -> Plan:
    return Plan(tool_version="0", created_at="now", owner="o", manifest_files=[], backends={}, actions=actions)


def key(*name: str) -> str:
    return action_key("namespace", "b", list(name))


def test_parents_before_children_and_siblings_in_parallel(tmp_path):
    actions = [namespace_action(("a",))] + [namespace_action(("a", str(i)), [key("a")]) for i in range(8)]
    driver = RecordingDriver(delay=0.05)
    report = execute(plan_of(actions), {"b": driver}, ApplyOptions(parallelism=4, state_dir=tmp_path))
    assert report.exit_code == 0
    assert driver.created[0] == "a"
    assert driver.max_running > 1


def test_partial_failure_skips_dependents_reports_and_writes_a_rollback(tmp_path):
    actions = [namespace_action(("a",)), namespace_action(("a", "x"), [key("a")]),
               namespace_action(("b",)), namespace_action(("b", "y"), [key("b")])]
    driver = RecordingDriver(fail={"b"})
    report = execute(plan_of(actions), {"b": driver}, ApplyOptions(parallelism=2, state_dir=tmp_path))
    assert report.exit_code == 3
    assert {o.action.display_id for o in report.with_status("succeeded")} == {"a", "a$x"}
    assert [o.action.display_id for o in report.with_status("failed")] == ["b"]
    assert [o.action.display_id for o in report.with_status("skipped")] == ["b$y"]
    journal = report.journal_path.read_text().splitlines()
    assert any('"failed"' in line and "cannot create b" in line for line in journal)
    rollback = rollback_plan(plan_of(actions), report)
    assert [a.display_id for a in rollback.actions] == ["a$x", "a"] or \
        {a.display_id for a in rollback.actions} == {"a", "a$x"}
    drop_a = next(a for a in rollback.actions if a.display_id == "a")
    assert (drop_a.verb, drop_a.kind) == (Verb.DELETE, Kind.NAMESPACE)
    assert key("a", "x") in drop_a.depends_on


def test_the_rollback_file_holds_what_succeeded_and_reads_back_as_its_rollback_plan(tmp_path):
    actions = [namespace_action(("a",)), namespace_action(("a", "x"), [key("a")]), namespace_action(("b",))]
    report = execute(plan_of(actions), {"b": RecordingDriver(fail={"b"})}, ApplyOptions(state_dir=tmp_path))
    record = RollbackRecord.model_validate_json(report.rollback_path.read_text())
    assert [a.display_id for a in record.succeeded.actions] == ["a", "a$x"]
    read = load_plan(report.rollback_path)
    assert read == rollback_plan(plan_of(actions), report, created_at=record.created_at)
    assert [(a.verb, a.display_id) for a in read.actions] == [(Verb.DELETE, "a$x"), (Verb.DELETE, "a")]


def test_a_rollback_record_keeps_the_version_a_dataset_write_committed(tmp_path):
    """Deleting the data again is refused once a writer made a newer version: the inverse's
    fingerprint covers the version the apply committed, read back from the file."""
    write = Action(verb=Verb.CREATE, kind=Kind.DATASET, reason=Reason.ABSENT, backend="b", id=[],
                   display_id="/d", after=ObjectState(location="/d", columns=[{"name": "x", "type": "int64"}]),
                   detail="r", fingerprint=fingerprint(None, []))
    report = ApplyReport(outcomes=[Outcome(write, "succeeded", version=7)])
    path = write_rollback(plan_of([write]), report, tmp_path / "apply.rollback.json")
    [undo] = load_plan(path).actions
    assert (undo.verb, undo.kind, undo.before.version) == (Verb.DELETE, Kind.DATASET, 7)
    assert undo.fingerprint == fingerprint(ObjectState(location="/d", version=7), [])


class LostAnswerDriver(RecordingDriver):
    """The first create lands but its answer is lost; the resent create meets it, and the read
    that checks it fails once (a flaky network) before it answers."""

    def __init__(self, read_failures: int):
        super().__init__()
        self.read_failures = read_failures
        self.reads = 0

    def create_namespace(self, request):
        name = "$".join(request.id)
        if name in self.created:
            raise NamespaceAlreadyExistsError(f"{name} exists")
        self.created.append(name)
        raise ServiceUnavailableError(f"the answer to creating {name} was lost")

    def get_namespace_info(self, id):
        self.reads += 1
        if self.reads <= self.read_failures:
            raise ServiceUnavailableError("the read was cut off")
        return NamespaceInfo(tuple(id), {"lance_sync.owner": "o"})


def test_a_flaky_read_while_checking_a_resent_create_is_retried(tmp_path, monkeypatch):
    monkeypatch.setattr("lance_sync.apply.runner.backoff_seconds", lambda attempt: 0.0)
    driver = LostAnswerDriver(read_failures=1)
    report = execute(plan_of([namespace_action(("a",))]), {"b": driver}, ApplyOptions(state_dir=tmp_path))
    assert report.exit_code == 0 and driver.created == ["a"] and driver.reads == 2


def test_a_read_that_keeps_failing_while_checking_is_a_transient_failure(tmp_path, monkeypatch):
    """Never an exception out of the apply (that would lose the journal of what was done)."""
    monkeypatch.setattr("lance_sync.apply.runner.backoff_seconds", lambda attempt: 0.0)
    report = execute(plan_of([namespace_action(("a",))]), {"b": LostAnswerDriver(read_failures=99)},
                     ApplyOptions(state_dir=tmp_path))
    [outcome] = report.outcomes
    assert (outcome.status, outcome.transient) == ("failed", True) and report.rerun_converges


class JournalWatchingDriver(RecordingDriver):
    """Creating "b" returns only once the journal on disk records that "a" succeeded."""

    def __init__(self, journal_dir: Path):
        super().__init__()
        self.journal_dir = journal_dir
        self.saw_a = False

    def create_namespace(self, request):
        if request.id == ["b"]:
            deadline = time.monotonic() + 30
            while not self.saw_a and time.monotonic() < deadline:
                self.saw_a = any('"succeeded"' in line and '"display_id": "a"' in line
                                 for path in self.journal_dir.glob("apply-*.jsonl")
                                 for line in path.read_text().splitlines())
                time.sleep(0.01)
        super().create_namespace(request)


def test_an_outcome_reaches_the_journal_file_before_the_apply_waits_for_the_next(tmp_path):
    """Journal lines are buffered while outcomes arrive, and written out whenever the apply waits
    for its workers: a process killed while an action runs leaves the outcomes before it on disk."""
    driver = JournalWatchingDriver(tmp_path / "journal")
    report = execute(plan_of([namespace_action(("a",)), namespace_action(("b",))]), {"b": driver},
                     ApplyOptions(parallelism=2, state_dir=tmp_path))
    assert report.exit_code == 0 and driver.saw_a
