"""One apply session: leases, plan, guards, execution, for every plan an apply carries out.

`lance-sync apply` (through `lance_sync.api.apply`) and each reconcile cycle run this one
session, whatever the plan came from:

- a fresh plan of a manifest (`Fresh`) is made while the session holds the leases of every id
  the manifest names (lance_sync.apply.lease), so the live objects it read are the ones the
  apply changes: its creates need no live check;
- a saved or rollback plan (`Saved`) was made before the session: it holds the leases of the
  ids the plan's actions touch (none when the plan changes nothing) and checks every action
  against the live objects, creates too.

Then every plan passes the same guards (lance_sync.apply.guards) before anything changes, and
`execute` carries it out, starting nothing more once a lease is lost or the session is told to
stop. A dry run takes no leases and ends after the guards. The leases are released when the
session ends, however it ends; then the drivers it connected itself are closed (drivers a
caller gave it are the caller's, and stay open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from lance_sync.apply.execute import execute
from lance_sync.apply.guards import check_flags, check_live
from lance_sync.apply.lease import Leases, lease_stores, touched_ids
from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.report import ApplyReport, Outcome
from lance_sync.apply.scheduler import StopSignal
from lance_sync.drivers import close_drivers, connect_drivers
from lance_sync.drivers.base import Drivers, Identifier
from lance_sync.model.actions import Plan
from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import LanceSyncError
from lance_sync.model.shared import Progress

#: how far a session went: nothing to apply, the guards passed (a dry run), or carried out
Stage = Literal["nothing_to_apply", "checked", "executed"]


class Fresh:
    """A plan of the manifest, made by `make` while the session holds the manifest's leases."""

    #: the plan read the live objects under the leases: a create meets what it would create
    checks_creates = False

    def __init__(self, state: DesiredState, make: Callable[[Drivers], Plan]):
        self.state = state
        self.make = make

    @property
    def owner(self) -> str:
        return self.state.owner

    def connect(self) -> Drivers:
        return connect_drivers(self.state)

    def lease_ids(self) -> Mapping[str, Iterable[Identifier]] | None:
        """Every id the manifest names, per backend."""
        return self.state.ids_by_backend()

    def plan(self, drivers: Drivers) -> Plan:
        return self.make(drivers)


class Saved:
    """A plan made before the session: saved (`lance-sync plan --out`) or a rollback plan."""

    #: made before this apply held the leases: its creates are checked against live objects too
    checks_creates = True

    def __init__(self, plan: Plan):
        self.saved = plan

    @property
    def owner(self) -> str:
        return self.saved.owner

    def connect(self) -> Drivers:
        return connect_drivers(self.saved)

    def lease_ids(self) -> Mapping[str, Iterable[Identifier]] | None:
        """The ids the plan's actions touch, per backend; None (no leases) when it changes nothing."""
        return touched_ids(self.saved) if self.saved.has_changes else None

    def plan(self, drivers: Drivers) -> Plan:
        return self.saved


class ApplyStopped(LanceSyncError):
    """The session was told to stop before it changed anything."""


@dataclass
class SessionResult:
    #: the plan the guards saw (when the review kept nothing: the plan as made)
    plan: Plan
    stage: Stage
    #: each action's outcome, the journal and the rollback plan (when it was carried out)
    report: ApplyReport | None = None
    #: the session's stop signal was set when the execution ended
    stopped: bool = False


@dataclass
class ApplySession:
    """One apply of a fresh or saved plan: `run()` takes the leases, gets the plan, reviews it,
    runs the guards and carries it out, then lets go of the leases and its own drivers."""

    source: Fresh | Saved
    options: ApplyOptions
    #: drivers the caller connected (left open); without them the session connects its own
    drivers: Drivers | None = None
    #: seconds to wait for another apply's lease before refusing
    lock_timeout: float = 0.0
    #: another apply holds a lease and this one waits
    on_wait: Progress | None = None
    #: set when the session must change nothing more (a reconcile loop's SIGTERM); checked
    #: before the leases are taken and before the guards, and it stops the execution
    stop: StopSignal | None = None
    #: no leases, nothing changed: the session ends once the guards passed
    dry_run: bool = False
    #: the plan as made, before the guards: the plan to apply, or None for nothing to apply
    review: Callable[[Plan], Plan | None] | None = None
    #: after the guards passed, before anything changes; raising cancels the apply
    before_changes: Callable[[Plan], None] | None = None
    #: each action's outcome as it finishes
    on_done: Callable[[Outcome], None] | None = None

    def run(self) -> SessionResult:
        drivers = self.drivers or self.source.connect()
        try:
            return self._leased(drivers)
        finally:
            if drivers is not self.drivers:
                close_drivers(drivers)

    def _leased(self, drivers: Drivers) -> SessionResult:
        ids = None if self.dry_run else self.source.lease_ids()
        if ids is None:
            self._check_stop()
            return self._apply(drivers, None)
        leases = Leases(lease_stores(drivers, ids, self.source.owner), self.source.owner)
        self._check_stop()
        with leases.holding(self.lock_timeout, on_wait=self.on_wait):
            return self._apply(drivers, leases)

    def _apply(self, drivers: Drivers, leases: Leases | None) -> SessionResult:
        made = self.source.plan(drivers)
        plan = self.review(made) if self.review is not None else made
        if plan is None or (not plan.has_changes and not plan.policy_violations):
            return SessionResult(made if plan is None else plan, "nothing_to_apply")
        self._check_stop()
        check_flags(plan, self.options)
        check_live(plan, drivers, include_creates=self.source.checks_creates,
                   parallelism=self.options.parallelism)
        if self.dry_run:
            return SessionResult(plan, "checked")
        if self.before_changes is not None:
            self.before_changes(plan)
        stop = _either(self.stop, leases.lost if leases is not None else None)
        report = execute(plan, drivers, self.options, on_done=self.on_done, stop=stop)
        return SessionResult(plan, "executed", report, stopped=self.stop is not None and self.stop.is_set())

    def _check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise ApplyStopped("the apply was told to stop before it changed anything")


class _Either:
    """Set when any of its signals is (a stop, or a lost lease)."""

    def __init__(self, *signals: StopSignal):
        self.signals = signals

    def is_set(self) -> bool:
        return any(signal.is_set() for signal in self.signals)


def _either(*signals: StopSignal | None) -> StopSignal | None:
    given = [signal for signal in signals if signal is not None]
    return _Either(*given) if given else None
