"""`lance-sync reconcile`: plan on a schedule, apply what may run unattended, report the rest.

One cycle is the apply session of `lance-sync apply` (lance_sync.apply.session) with an
unattended filter as its review:

1. read the manifest (and the policy file) again, so a new commit is picked up;
2. take the backends' apply leases before planning (another apply holding one: the cycle
   ends as `lease_held` and the next one tries again);
3. plan, and leave out what needs a person: what the policy's `unattended` list does not
   name (by default everything but creates, in-place updates and renames), anything that
   destroys data (always), anything blocked, and whatever depends on those. They are *pending
   approval*, reported every cycle until someone applies them;
4. check the rest against the policy (a violation of the plan as a whole, or by a declared
   object, refuses the cycle; an action a rule forbids is left out as pending), then the
   same guards as apply (flags, live objects), then carry it out with a journal and a
   rollback plan;
5. release the leases; record the cycle in the metrics and as one JSON line.

Between cycles the loop waits the interval. After a failed cycle (an error, or an apply
that partly failed) it backs off: the interval doubled per failure in a row, capped, with
jitter (a random part in [1/2, 1] of that), never below the interval; a good cycle resets
it. A stop (SIGTERM) wakes the wait at once; a cycle that is planning ends before it
applies, one that is applying starts nothing more and ends once the running actions are
done and journalled; then the leases are released.

Each cycle also tells every declared object's sync and health (lance_sync.check.status) from
the plan it made; the status page (lance_sync.apply.status_page) shows them with the last
cycles and what waits for approval. The server of /metrics, /healthz, the page (/) and
/api/status binds a loopback address unless told otherwise, and can require a bearer token.
The JSON lines (through the CLI's masked stdout) and every answer are masked
(`lance_sync.model.secrets`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hmac
import logging
import random
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lance_sync import __version__
from lance_sync.apply.journal import last_applied
from lance_sync.apply.lease import LeaseHeld
from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.session import ApplySession, ApplyStopped, Fresh
from lance_sync.check.status import LastApplied, Reading, StatusReport, after_apply, estate_status
from lance_sync.drivers.base import Drivers
from lance_sync.manifest import load_manifest
from lance_sync.manifest.revision import manifest_revision
from lance_sync.model.actions import (
    Action,
    Destruction,
    Kind,
    OmittedAction,
    Plan,
    PolicyViolation,
    Verb,
)
from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import ExitCode, GuardRefusal, LanceSyncError, PlanConflicts
from lance_sync.model.policy import RETENTION_CLEANUP, enforce
from lance_sync.model.secrets import mask
from lance_sync.model.shared import STATE_DIRECTORY, is_loopback
from lance_sync.plan.planner import assemble_plan, compare_all, read_state
from lance_sync.plan.select import leave_out

if TYPE_CHECKING:
    from lance_sync.apply.report import ApplyReport
    from lance_sync.apply.status_page import StatusBoard

logger = logging.getLogger(__name__)

Outcome = Literal["applied", "in_sync", "pending", "partly_failed", "refused", "lease_held", "error", "stopped"]
OUTCOMES: tuple[Outcome, ...] = ("applied", "in_sync", "pending", "partly_failed", "refused", "lease_held",
                                 "error", "stopped")
#: outcomes after which the loop backs off
FAILED: frozenset[Outcome] = frozenset({"error", "partly_failed"})
#: pending actions a log line names before "pending_count" says the rest
LOGGED_PENDING = 20
#: doublings of the interval after which the backoff grows no more (the cap usually stops it sooner)
MAX_DOUBLINGS = 30
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """'5m', '30s', '1h', '250ms' or plain seconds ('90') -> seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"'{text}' is not a duration (e.g. 30s, 5m, 1h)")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass
class Settings:
    files: list[str]
    policy_file: str | None = None
    interval: float = 300.0
    max_backoff: float = 3600.0
    lock_timeout: float = 0.0
    scan_all: bool = False
    #: parallelism, spark and state_dir are used; allow_drop, allow_replace and allow_revoke follow the policy
    options: ApplyOptions = field(default_factory=ApplyOptions)


@dataclass
class CycleReport:
    outcome: Outcome
    started: float
    finished: float
    #: actions the whole plan holds: how far the catalogs are from the manifest
    drift: int = 0
    applied: int = 0
    failed: int = 0
    skipped: int = 0
    pending: list[OmittedAction] = field(default_factory=list)
    violations: list[PolicyViolation] = field(default_factory=list)
    error: str | None = None
    journal: str | None = None
    #: every declared object's sync and health, as the cycle's plan found them and its apply left them
    status: StatusReport | None = None

    @property
    def failed_cycle(self) -> bool:
        return self.outcome in FAILED

    @property
    def exit_code(self) -> ExitCode:
        """What `reconcile --once` exits with."""
        if self.outcome in ("refused", "lease_held"):
            return ExitCode.REFUSED
        if self.outcome == "partly_failed":
            return ExitCode.PARTIAL_APPLY
        return ExitCode.ERROR if self.outcome == "error" else ExitCode.OK

    def log_record(self, cycle: int, next_run_in: float | None) -> dict[str, Any]:
        return {
            "time": _iso(self.finished), "event": "cycle", "cycle": cycle, "outcome": self.outcome,
            "duration_seconds": round(self.finished - self.started, 3), "drift": self.drift,
            "applied": self.applied, "failed": self.failed, "skipped": self.skipped,
            "pending_count": len(self.pending),
            "pending": [{"action": p.action, "backend": p.backend, "id": p.display_id, "why": p.why}
                        for p in self.pending[:LOGGED_PENDING]],
            "violations": [{"rule": v.rule, "check": v.check, "message": v.message} for v in self.violations],
            "error": self.error, "journal": self.journal,
            "next_run_in_seconds": None if next_run_in is None else round(next_run_in, 3)}


# --- one cycle -----------------------------------------------------------------------------------

def run_cycle(settings: Settings, stop: threading.Event) -> CycleReport:
    """One pass of the apply flow, unattended; every failure becomes the cycle's outcome."""
    started = time.time()
    cycle = _Cycle(settings, stop)
    try:
        report = cycle.run()
    except LeaseHeld as error:
        report = CycleReport("lease_held", started, 0.0, error=str(error))
    except GuardRefusal as error:
        report = CycleReport("refused", started, 0.0, error=str(error))
    except LanceSyncError as error:
        report = CycleReport("error", started, 0.0, error=str(error))
    except Exception as error:  # noqa: BLE001 - a cycle's failure is logged; the loop goes on
        logger.debug("the cycle failed", exc_info=True)
        report = CycleReport("error", started, 0.0, error=f"{type(error).__name__}: {error}")
    report.started, report.finished = started, time.time()
    report.status = cycle.status
    return report


class _Cycle:
    def __init__(self, settings: Settings, stop: threading.Event):
        self.settings = settings
        self.stop = stop
        self.drift = 0
        self.pending: list[OmittedAction] = []
        #: the cycle's report when its review leaves nothing to apply
        self.unapplied: CycleReport | None = None
        self.status: StatusReport | None = None
        self.revision: str | None = None

    def run(self) -> CycleReport:
        state = load_manifest(self.settings.files, policy_file=self.settings.policy_file)
        self.revision = manifest_revision(self.settings.files)
        options = self.settings.options
        allowed = state.policy.unattended_verbs
        # only a retention cleanup destroys data among what `_runnable` keeps
        unattended = dataclasses.replace(options, allow_drop=RETENTION_CLEANUP in allowed,
                                         allow_replace="replace" in allowed,
                                         allow_revoke="revoke" in allowed)

        def planned(drivers: Drivers) -> Plan:
            """The whole plan (the policy is checked on the part that runs), and the status from it."""
            observation = read_state(state, drivers, options.parallelism, scan_all=self.settings.scan_all)
            comparison = compare_all(state, observation, drivers, options.parallelism, strict=False)
            whole = assemble_plan(state, observation, comparison)
            self._tell_status(state, Reading(state, observation, whole, comparison.conflicts), drivers)
            if comparison.conflicts:
                raise PlanConflicts(comparison.conflicts, whole)
            return whole

        session = ApplySession(Fresh(state, planned), unattended, lock_timeout=self.settings.lock_timeout,
                               stop=self.stop, review=lambda whole: self._runnable(state, whole))
        try:
            done = session.run()
        except ApplyStopped:
            return self._report("stopped")
        if done.report is None:
            assert self.unapplied is not None
            return self.unapplied
        report = done.report
        counts = {status: len(report.with_status(status)) for status in ("succeeded", "failed", "skipped")}
        outcome: Outcome = "applied" if report.exit_code == ExitCode.OK else "partly_failed"
        if done.stopped and counts["skipped"]:
            outcome = "stopped"
        self._applied(report)
        return self._report(outcome, applied=counts["succeeded"], failed=counts["failed"],
                            skipped=counts["skipped"], journal=str(report.journal_path))

    def _tell_status(self, state: DesiredState, reading: Reading, drivers: Drivers) -> None:
        """The objects' status for the page; a failure to tell it never stops the cycle."""
        try:
            self.status = estate_status(state, reading, drivers, last_applied(self.settings.options.state_dir),
                                        self.revision)
        except Exception:  # noqa: BLE001 - the page shows the previous status; the cycle goes on
            logger.warning("the objects' status could not be made", exc_info=True)

    def _applied(self, report: ApplyReport) -> None:
        """The status once this cycle's actions ran: those that succeeded are in sync now."""
        succeeded = report.with_status("succeeded")
        if self.status is None or not succeeded:
            return
        applied = LastApplied(time=_iso(time.time()), action="", revision=self.revision,
                              journal=str(report.journal_path))
        self.status = after_apply(self.status, (o.action for o in succeeded), applied)

    def _runnable(self, state: DesiredState, whole: Plan) -> Plan | None:
        """What of the whole plan may run unattended; None, with the cycle's report, when
        nothing may."""
        allowed = state.policy.unattended_verbs
        self.drift = len(whole.actions)
        runnable = leave_out(whole, lambda action: needs_person(action, allowed))
        enforce(state.policy, runnable, state)
        about_the_whole = [v for v in runnable.policy_violations if v.action is None]
        if about_the_whole:
            self.pending = _omitted(runnable)
            self.unapplied = self._report("refused", violations=about_the_whole,
                                          error="the plan breaks the policy; nothing was applied")
            return None
        runnable = leave_out(runnable, lambda action: f"blocked: {action.blocked}" if action.blocked else None)
        runnable.policy_violations = []  # each concerned an action, now left out and listed as pending
        self.pending = _omitted(runnable)
        if not runnable.actions:
            self.unapplied = self._report("pending" if self.pending else "in_sync")
            return None
        return runnable

    def _report(self, outcome: Outcome, **details: Any) -> CycleReport:
        return CycleReport(outcome, 0.0, 0.0, drift=self.drift, pending=self.pending, **details)


def needs_person(action: Action, allowed: tuple[str, ...]) -> str | None:
    """Why an action may not run unattended, or None when it may."""
    if action.blocked:
        return f"blocked: {action.blocked}"
    if action.kind == Kind.VERSIONS:
        return None if RETENTION_CLEANUP in allowed else \
            f"needs approval: {RETENTION_CLEANUP} is not in policy.unattended ({', '.join(allowed)})"
    if action.destroys == Destruction.DATA:
        return "destroys data or a namespace: never run unattended"
    if action.verb == Verb.RECORD:
        return None  # bookkeeping of which principals lance-sync manages: no privilege changes
    if action.verb.value not in allowed:
        return f"needs approval: {action.verb.value} is not in policy.unattended ({', '.join(allowed)})"
    return None


def _omitted(plan: Plan) -> list[OmittedAction]:
    return list(plan.partial.omitted) if plan.partial is not None else []


# --- the loop ------------------------------------------------------------------------------------

class Reconciler:
    """Runs cycles until stopped: the interval between good ones, a capped, jittered backoff
    after failures."""

    def __init__(self, cycle: Callable[[], CycleReport], interval: float, max_backoff: float,
                 metrics: Metrics, log: Callable[[dict[str, Any]], None], stop: threading.Event,
                 jitter: Callable[[], float] = random.random, board: StatusBoard | None = None):
        self.cycle = cycle
        self.board = board
        self.interval = interval
        self.max_backoff = max_backoff
        self.metrics = metrics
        self.log = log
        self.stop = stop
        self.jitter = jitter
        self.failures = 0

    def delay(self) -> float:
        """Seconds until the next cycle, given the failures in a row so far."""
        if self.failures == 0:
            return self.interval
        ceiling = min(self.max_backoff, self.interval * 2 ** min(self.failures, MAX_DOUBLINGS))
        return max(self.interval, ceiling * (0.5 + 0.5 * self.jitter()))

    def run(self, max_cycles: int | None = None) -> CycleReport | None:
        """Cycles until stopped (or `max_cycles` ran); the last cycle's report."""
        last: CycleReport | None = None
        cycles = 0
        while not self.stop.is_set():
            logger.info("cycle %d starts", cycles + 1)
            if self.board is not None:
                self.board.cycle_started(cycles + 1, time.time())
            last = self.cycle()
            cycles += 1
            logger.info("cycle %d: %s in %.1f s (drift %d, applied %d, failed %d, pending %d)", cycles, last.outcome,
                     last.finished - last.started, last.drift, last.applied, last.failed, len(last.pending))
            self.failures = self.failures + 1 if last.failed_cycle else 0
            delay = self.delay()
            final = self.stop.is_set() or (max_cycles is not None and cycles >= max_cycles)
            self.metrics.record(last, None if final else last.finished + delay, self.failures)
            if self.board is not None:
                self.board.cycle_done(cycles, last, None if final else last.finished + delay)
            self.log(last.log_record(cycles, None if final else delay))
            if final:
                break
            self.stop.wait(delay)
        return last


# --- metrics -------------------------------------------------------------------------------------

class Metrics:
    """The loop's state in the Prometheus text exposition format (version 0.0.4)."""

    def __init__(self, owner: str):
        self.owner = owner
        self._lock = threading.Lock()
        self.cycles = dict.fromkeys(OUTCOMES, 0)
        self.applied_total = 0
        self.failed_total = 0
        self.errors_total = 0
        self.last: CycleReport | None = None
        self.last_success: float | None = None
        self.next_run: float | None = None
        self.failures_in_a_row = 0

    def record(self, report: CycleReport, next_run: float | None, failures_in_a_row: int) -> None:
        with self._lock:
            self.cycles[report.outcome] += 1
            self.applied_total += report.applied
            self.failed_total += report.failed
            self.errors_total += 1 if report.outcome == "error" else 0
            self.last = report
            if not report.failed_cycle and report.outcome not in ("stopped", "lease_held"):
                self.last_success = report.finished
            self.next_run = next_run
            self.failures_in_a_row = failures_in_a_row

    def render(self) -> str:
        with self._lock:
            last = self.last
            lines: list[str] = []

            def metric(name: str, kind: str, help: str, samples: list[tuple[str, float]]) -> None:
                lines.extend([f"# HELP lance_sync_reconcile_{name} {help}",
                              f"# TYPE lance_sync_reconcile_{name} {kind}"])
                lines.extend(f"lance_sync_reconcile_{name}{labels} {_number(value)}" for labels, value in samples)

            metric("info", "gauge", "The reconcile loop's owner and lance-sync version.",
                   [(f'{{owner="{_label(self.owner)}",version="{_label(__version__)}"}}', 1)])
            metric("cycles_total", "counter", "Cycles run, by outcome.",
                   [(f'{{outcome="{o}"}}', n) for o, n in self.cycles.items()])
            metric("last_outcome", "gauge", "1 for the outcome of the last cycle, 0 for the others.",
                   [(f'{{outcome="{o}"}}', int(last is not None and last.outcome == o)) for o in OUTCOMES])
            if last is not None:
                metric("last_run_timestamp_seconds", "gauge", "When the last cycle ended (Unix time).",
                       [("", last.finished)])
                metric("last_run_duration_seconds", "gauge", "How long the last cycle took.",
                       [("", last.finished - last.started)])
            if self.last_success is not None:
                metric("last_success_timestamp_seconds", "gauge",
                       "When the last cycle that did not fail ended (Unix time).", [("", self.last_success)])
            if self.next_run is not None:
                metric("next_run_timestamp_seconds", "gauge", "When the next cycle starts (Unix time).",
                       [("", self.next_run)])
            metric("drift_actions", "gauge", "Actions the last plan held: how far the catalogs are from the "
                   "manifest.", [("", last.drift if last else 0)])
            metric("pending_actions", "gauge", "Actions the last cycle left for approval.",
                   [("", len(last.pending) if last else 0)])
            metric("policy_violations", "gauge", "Policy violations that refused the last cycle.",
                   [("", len(last.violations) if last else 0)])
            metric("actions_applied_total", "counter", "Actions carried out.", [("", self.applied_total)])
            metric("actions_failed_total", "counter", "Actions that failed.", [("", self.failed_total)])
            metric("errors_total", "counter", "Cycles that ended in an error.", [("", self.errors_total)])
            metric("consecutive_failures", "gauge", "Failed cycles in a row (the backoff grows with it).",
                   [("", self.failures_in_a_row)])
        return "\n".join(lines) + "\n"


class MetricsServer:
    """A small HTTP server for GET /metrics (Prometheus), /healthz (a liveness probe) and, with a
    status board, the status page (/) and its document (/api/status), on the address the user
    gives: loopback by default; another one (a pod's, 0.0.0.0) is bound as asked, with a
    warning (`exposure`). With a `token`, every path but /healthz needs the header
    `Authorization: Bearer TOKEN` (401 without)."""

    def __init__(self, metrics: Metrics, host: str = "127.0.0.1", port: int = 0, board: StatusBoard | None = None,
                 token: str | None = None):
        self.exposure = exposure_warning(host, token is not None)
        handler = _handler(metrics, board, token)
        server_class = _IPv6Server if ":" in host else ThreadingHTTPServer
        try:
            self.server = server_class((host, port), handler)
        except OSError as error:
            raise LanceSyncError(f"cannot listen on {host}:{port} for metrics: {error.strerror}") from None
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="metrics", daemon=True)

    @property
    def base_url(self) -> str:
        address, port = self.server.server_address[:2]
        host = address.decode() if isinstance(address, bytes) else str(address)
        return f"http://{f'[{host}]' if ':' in host else host}:{port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/metrics"

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def exposure_warning(host: str, with_token: bool = False) -> str | None:
    """What to tell a user who serves metrics and the status page beyond this machine; None on loopback."""
    if is_loopback(host):
        return None
    if with_token:
        return (f"metrics, the status page and /healthz are served on {host}, reachable from other machines; "
                "all but /healthz need the bearer token (LANCE_SYNC_STATUS_TOKEN); serve them over TLS (a "
                "proxy) where the network is not trusted")
    return (f"metrics, the status page and /healthz are served on {host}, reachable from other machines and "
            "without authentication; set LANCE_SYNC_STATUS_TOKEN to require a bearer token, or serve them only "
            "where a scraper needs them (a pod's network, behind a firewall)")


def _handler(metrics: Metrics, board: StatusBoard | None, token: str | None) -> type[BaseHTTPRequestHandler]:
    expected = f"Bearer {token}".encode() if token is not None else None
    status_paths = {"/": "html", "/api/status": "json"} if board is not None else {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            path = self.path.split("?", 1)[0]
            if path == "/healthz":  # alive: the loop's process serves (a cycle's failure is in /metrics)
                self._answer(b"ok\n", "text/plain; charset=utf-8")
            elif path not in ("/metrics", *status_paths):
                self.send_error(404, "only /, /api/status, /metrics and /healthz are served")
            elif expected is not None and not hmac.compare_digest(
                    self.headers.get("Authorization", "").encode(), expected):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Bearer realm="lance-sync"')
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/metrics":
                self._answer(mask(metrics.render()).encode(), "text/plain; version=0.0.4; charset=utf-8")
            else:
                assert board is not None
                served = board.served  # one reference read: the document of one moment
                if status_paths[path] == "html":
                    self._answer(served.html, "text/html; charset=utf-8")
                else:
                    self._answer(served.json, "application/json")

        def _answer(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Scrapes are not logged: the cycle lines are the log."""

    return Handler


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _iso(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment, datetime.timezone.utc).isoformat(timespec="milliseconds")


def now() -> str:
    """The time for a log line."""
    return _iso(time.time())


def default_state_dir(files: list[str]) -> Path:
    return Path(files[0]).resolve().parent / STATE_DIRECTORY


@contextlib.contextmanager
def stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set `stop`; a second one ends the process at once. The previous
    handlers come back afterwards."""

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        signal.signal(signum, signal.SIG_DFL)

    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
