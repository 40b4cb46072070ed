"""What `lance-sync apply` shows while `lance_sync.api.apply` runs: the plan, the confirmation,
progress while the actions run (a bar on a terminal, a line every few seconds in a CI log),
and what was done; with --format json, one document with all of it instead."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lance_sync.cli.shared import end_progress, progress, render
from lance_sync.model.errors import ExitCode, GuardRefusal, LanceSyncError, PlanConflicts
from lance_sync.model.locations import shown_path, with_manifest_relative_paths

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

    from lance_sync.api import ApplyHooks, ApplyResult
    from lance_sync.apply.report import ApplyReport, Outcome
    from lance_sync.model.actions import Action, Destruction, Plan

#: seconds between two progress lines of an apply that is not on a terminal
PROGRESS_EVERY = 5.0


class ApplyDisplay:
    """One `lance-sync apply`: `lance_sync.api.apply`, with the plan, confirmation, progress and
    report shown as it goes."""

    def __init__(self, output_format: str, auto_approve: bool, allowed: Collection[Destruction] = ()):
        self.output_format = output_format
        self.auto_approve = auto_approve
        #: what the apply was allowed to destroy (--allow-drop, ...): the plan's summary says so
        self.allowed = allowed
        #: with --format json, the one document printed at the end
        self.document: dict[str, Any] = {}
        self.progress = ApplyProgress()

    @property
    def as_json(self) -> bool:
        return self.output_format == "json"

    def run(self, apply: Callable[[ApplyHooks], ApplyResult]) -> None:
        """Run `apply` (`lance_sync.api.apply` with the command's settings) with hooks that show it."""
        from lance_sync.api import ApplyHooks

        hooks = ApplyHooks(on_progress=progress, on_plan=self._show_plan, confirm=self._confirm,
                           on_outcome=self.progress.update, on_wait=_waiting, on_step=self.progress.step)
        try:
            result = apply(hooks)
        except PlanConflicts as conflicts:
            if conflicts.plan is not None and not self.as_json:  # a JSON error is the one document
                self._show_plan(conflicts.plan)
            raise
        except GuardRefusal as refusal:
            if "plan" not in self.document:  # refused before planning (a lease): a plain error
                raise
            return self._finish("refused", error=str(refusal), code=ExitCode.REFUSED)
        finally:
            end_progress()
            self.progress.close()
        if result.status == "dry_run" and not self.as_json:
            click.echo("Dry run: nothing was changed.")
        report = result.report
        if report is not None:
            if not self.as_json:
                _print_report(report, result.plan.base_dir)
            self.document.update(
                outcomes=[_outcome_document(o) for o in report.outcomes], journal=_shown_path(report.journal_path),
                rollback=_shown_path(report.rollback_path),
                rerun_converges=report.rerun_converges if report.exit_code else None)
        self._finish(result.status, code=result.exit_code)

    def _show_plan(self, plan: Plan) -> None:
        end_progress()
        self.document["plan"] = json.loads(plan.model_dump_json())
        if not self.as_json:
            click.echo(render(plan, self.output_format, self.allowed), nl=False)

    def _confirm(self, plan: Plan) -> bool:
        _confirm(self.auto_approve)
        self.progress.start(len(plan.actions), plan.base_dir)
        return True

    def _finish(self, status: str, error: str | None = None, code: int = ExitCode.OK) -> None:
        if error is not None:
            click.echo(f"Error: {error}", err=True)
        if self.as_json:
            click.echo(json.dumps({"status": status, "exit_code": int(code), **self.document,
                                   **({"error": error} if error else {})}, indent=2))
        if code:
            sys.exit(code)


def _waiting(message: str) -> None:
    click.echo(message, err=True)


def _outcome_document(outcome: Outcome) -> dict[str, Any]:
    action = outcome.action
    return {"verb": action.verb.value, "kind": action.kind.value, "backend": action.backend, "id": action.id,
            "display_id": action.display_id, "status": outcome.status, "error": outcome.error,
            "transient": outcome.transient if outcome.status == "failed" else None}


def _shown_path(path: Path | None) -> str | None:
    return shown_path(path) if path is not None else None


class ApplyProgress:
    """A progress bar on a terminal. Anywhere else (a CI log) a line with the counts when the
    actions start and every `interval` seconds until they end, so a long apply is never
    silent, and each failed or skipped action as it happens."""

    def __init__(self, interval: float = PROGRESS_EVERY):
        self.interval = interval
        self.total = 0
        self.done = 0
        self.unsuccessful = 0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.finished = threading.Event()
        self.base_dir: str | None = None
        self.bar: ProgressBar[int] | None = None
        self.ticker: threading.Thread | None = None
        #: the long step running (a Spark start, a write from a source), and its action's key
        self.running: tuple[str, str] | None = None

    def start(self, total: int, base_dir: str | None) -> None:
        """The actions start running; paths below `base_dir` (the manifest's folder) are shown
        relative to it."""
        self.total, self.base_dir, self.started = total, base_dir, time.monotonic()
        if sys.stderr.isatty():
            self.bar = click.progressbar(length=total, label="Applying", file=sys.stderr)
            self.bar.__enter__()
        else:
            self._print_counts()
            self.ticker = threading.Thread(target=self._tick, name="apply-progress", daemon=True)
            self.ticker.start()

    def step(self, action: Action, message: str) -> None:
        """An action's long step starts: the progress line names it until the action ends."""
        shown = with_manifest_relative_paths(message, self.base_dir)
        with self.lock:
            self.running = (action.key, shown)
        if self.bar is not None:
            self.bar.label = f"Applying ({shown})"
        else:
            self._print_counts()

    def update(self, outcome: Outcome) -> None:
        with self.lock:
            self.done += 1
            self.unsuccessful += outcome.status != "succeeded"
            if self.running is not None and self.running[0] == outcome.action.key:
                self.running = None
        if outcome.status != "succeeded":
            _print_outcome(outcome, self.base_dir)
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        self.finished.set()
        if self.ticker is not None:
            self.ticker.join()
            self.ticker = None
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def _tick(self) -> None:
        while not self.finished.wait(self.interval):
            self._print_counts()

    def _print_counts(self) -> None:
        with self.lock:
            done, unsuccessful, running = self.done, self.unsuccessful, self.running
        trouble = f", {unsuccessful} failed or skipped" if unsuccessful else ""
        now = f"; {running[1]}" if running else ""
        click.echo(f"Applying: {done} of {self.total} actions done{trouble} "
                   f"({time.monotonic() - self.started:.0f} s){now}", err=True)


def _confirm(auto_approve: bool) -> None:
    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise LanceSyncError("apply needs confirmation but there is no terminal; "
                             "review the plan and rerun with --auto-approve")
    answer = click.prompt("Do you want to apply these changes? Only 'yes' is accepted",
                          default="", show_default=False, err=True)
    if answer.strip() != "yes":
        raise LanceSyncError("apply cancelled")


def _print_outcome(outcome: Outcome, base_dir: str | None) -> None:
    action = outcome.action
    mark = {"succeeded": "ok", "failed": "FAILED", "skipped": "skipped"}[outcome.status]
    detail = f": {outcome.error}" if outcome.error else ""
    line = f"{mark:>7}  {action.headline}{detail}"
    click.echo(with_manifest_relative_paths(line, base_dir), err=True)


def _print_report(report: ApplyReport, base_dir: str | None) -> None:
    """What apply did. Locations below the manifest's folder are shown relative to it; the
    journal and rollback plan relative to the working directory, to be typed back."""

    def echo(line: str) -> None:
        click.echo(with_manifest_relative_paths(line, base_dir))

    succeeded, failed, skipped = (report.with_status(s) for s in ("succeeded", "failed", "skipped"))
    echo(f"\nApply {'complete' if not failed and not skipped else 'partly failed'}: "
         f"{len(succeeded)} succeeded, {len(failed)} failed, {len(skipped)} skipped.")
    for outcome in failed:
        echo(f"  failed:  {outcome.action.headline}: {outcome.error}")
    for outcome in skipped:
        echo(f"  skipped: {outcome.action.headline} ({outcome.error})")
    if failed and report.rerun_converges:
        echo("The failures were transient (unavailable, throttled, cut-off answers): `apply` again "
             "converges; `lance-sync plan` shows what is left.")
    elif failed:
        echo("Some failures will not pass by themselves: fix their cause (see each error), then run "
             "`lance-sync plan`.")
    elif skipped:
        echo("Run `lance-sync plan` to see what is left; `apply` again converges.")
    click.echo(f"Journal: {_shown_path(report.journal_path)}")
    if report.rollback_path:
        click.echo(f"Rollback plan: {_shown_path(report.rollback_path)} (apply it with `lance-sync apply FILE`; "
                   "it passes the same guards)")
