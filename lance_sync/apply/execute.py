"""Carry out a checked plan (the guards, lance_sync.apply.guards, passed already).

The `Scheduler` (lance_sync.apply.scheduler) runs actions in parallel as soon as the actions
they depend on have succeeded, skipping what depends on a failure; the `ActionRunner`
(lance_sync.apply.runner) says how each (kind, verb) changes a backend, retrying a transient
failure. Every step is journalled (lance_sync.apply.journal), and the inverses of what
succeeded are written as a rollback plan (lance_sync.apply.rollback) that `lance-sync apply`
checks like any other.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
from collections.abc import Callable

from lance_sync.apply.journal import Journal, journal_folder
from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.report import ApplyReport, Outcome
from lance_sync.apply.rollback import write_rollback
from lance_sync.apply.runner import ActionRunner
from lance_sync.apply.scheduler import Scheduler, StopSignal
from lance_sync.drivers.base import Drivers
from lance_sync.manifest.revision import manifest_revision
from lance_sync.model.actions import Plan

__all__ = ["execute"]

logger = logging.getLogger(__name__)


def execute(plan: Plan, drivers: Drivers, options: ApplyOptions,
            on_done: Callable[[Outcome], None] | None = None, stop: StopSignal | None = None) -> ApplyReport:
    """Run every action of a checked plan; independent actions in parallel."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    journal = Journal(journal_folder(options.state_dir) / f"apply-{stamp}.jsonl")
    journal.write("start", plan_owner=plan.owner, actions=len(plan.actions), pid=os.getpid(),
                  revision=manifest_revision(plan.manifest_files))
    logger.info("apply: %d actions, %d at a time; journal %s", len(plan.actions), options.parallelism, journal.path)
    report = ApplyReport(journal_path=journal.path)
    lock = threading.Lock()

    def finish(outcome: Outcome) -> None:
        if logger.isEnabledFor(logging.INFO):
            logger.info("%s: %s%s", outcome.status, outcome.action.headline, f": {outcome.error}" if outcome.error else "")
        with lock:
            report.outcomes.append(outcome)
        journal.append(outcome.status, outcome.action, error=outcome.error, version=outcome.version)
        if on_done:
            on_done(outcome)

    try:
        Scheduler(plan.actions, options.parallelism).run(ActionRunner(plan, drivers, options, stamp), finish, stop,
                                                         before_wait=journal.flush)
    finally:
        succeeded, failed, skipped = (len(report.with_status(status)) for status in ("succeeded", "failed", "skipped"))
        journal.write("end", succeeded=succeeded, failed=failed, skipped=skipped)
        journal.close()
        logger.info("apply done: %d succeeded, %d failed, %d skipped", succeeded, failed, skipped)
    report.rollback_path = write_rollback(plan, report, journal.path.with_suffix(".rollback.json"))
    return report

