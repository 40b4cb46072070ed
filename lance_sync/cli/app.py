"""The `lance-sync` command line.

Data (plans, reports, manifests, schemas) goes to stdout; progress and diagnostics to
stderr; both are masked, so no registered secret (`lance_sync.model.secrets`) is written. Exit
codes: 0 done or no changes; 1 error; 2 changes present (plan with --detailed-exitcode);
3 apply partly failed; 4 refused by a guard.
"""

from __future__ import annotations

import functools
import gc
import json
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lance_sync import __version__
from lance_sync.manifest import DEFAULT_MANIFEST, STATE_DIRECTORY, load_manifest
from lance_sync.model.errors import ExitCode, GuardRefusal, LanceSyncError, ManifestError
from lance_sync.model.locations import shown_path, with_manifest_relative_paths
from lance_sync.model.secrets import (
    SECRET_KEY,
    mask,
    masked_standard_streams,
    register,
    register_environment,
)
from lance_sync.model.shared import DEFAULT_PARALLELISM
from lance_sync.model.variables import resolve_references

if TYPE_CHECKING:
    from lance_sync.data.inspection import Engine
    from lance_sync.model.actions import Plan
    from lance_sync.model.desired import DesiredState

# Only what every command needs is imported above (click and lance-sync's own light modules):
# `--help` and `validate` must start fast. Each command imports the rest (pydantic models,
# drivers, lance_namespace, pyarrow, Spark) itself; tests/unit/test_imports.py checks.

FORMATS = ("text", "json", "markdown")
#: seconds between two progress lines of an apply that is not on a terminal
PROGRESS_EVERY = 5.0


# --- plumbing --------------------------------------------------------------------------------------

def _fail(message: str, code: int = ExitCode.ERROR, as_json: bool = False) -> None:
    click.echo(f"Error: {message}", err=True)
    if as_json:
        click.echo(json.dumps({"error": message, "exit_code": int(code)}, indent=2))
    sys.exit(code)


def handle_errors(command: Callable) -> Callable:
    """Turn every failure into a message and an exit code; a traceback only with LANCE_SYNC_DEBUG.

    With --format json, the error is also the one JSON document on stdout.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = kwargs.get("output_format") == "json"
        try:
            return command(*args, **kwargs)
        except LanceSyncError as error:
            _fail(str(error), error.exit_code, as_json)
        except KeyboardInterrupt:
            _fail("interrupted", ExitCode.ERROR, as_json)
        except Exception as error:  # noqa: BLE001 - the user gets a message, not a traceback
            if os.environ.get("LANCE_SYNC_DEBUG"):
                traceback.print_exc()
            _fail(f"{type(error).__name__}: {error} (set LANCE_SYNC_DEBUG=1 for a traceback)",
                  ExitCode.ERROR, as_json)

    return wrapper


class _Group(click.Group):
    """Usage errors (an unknown option, a bad value) exit 1 like any error: exit 2 means
    "changes present" to CI scripts. Everything written to stdout and stderr while a command
    runs is masked."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        register_environment()
        with masked_standard_streams():
            return self._main(args, prog_name, complete_var, **extra)

    def _main(self, args: Sequence[str] | None, prog_name: str | None, complete_var: str | None,
              **extra: Any) -> Any:
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as done:
            sys.exit(done.exit_code)
        except click.ClickException as error:
            error.show()
            sys.exit(ExitCode.ERROR)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(ExitCode.ERROR)


def progress(message: str) -> None:
    if sys.stderr.isatty():
        click.echo(f"\r\033[K{message}", err=True, nl=False)


def _end_progress() -> None:
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)


def manifest_files(files: tuple[str, ...]) -> list[str]:
    if files:
        return list(files)
    if Path(DEFAULT_MANIFEST).exists():
        return [DEFAULT_MANIFEST]
    raise ManifestError(f"no manifest given: use -f FILE, or run where {DEFAULT_MANIFEST} is")


def load(paths: list[str], policy_file: str | None = None, allow_unset: bool = False) -> DesiredState:
    """The manifest's desired state; what it should change but need not goes to stderr."""
    state = load_manifest(paths, policy_file=policy_file, allow_unset=allow_unset)
    for notice in state.notices:
        click.echo(f"Warning: {notice}", err=True)
    return state


def manifest_option(command: Callable) -> Callable:
    return click.option("-f", "--file", "files", multiple=True, type=click.Path(dir_okay=False),
                        help=f"Manifest file; repeat to lay overlays over a base (default: {DEFAULT_MANIFEST})."
                        )(command)


def key_value_pairs(context: click.Context, parameter: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """A repeated KEY=VALUE option as a mapping (a value written ${VAR} stays a reference)."""
    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"takes KEY=VALUE (got '{value}')")
        pairs[key] = text
    return pairs


def parallelism_option(command: Callable) -> Callable:
    return click.option("--parallelism", type=click.IntRange(1, 256), default=DEFAULT_PARALLELISM, show_default=True,
                        help="Catalog calls in flight at once.")(command)


def scan_all_option(command: Callable) -> Callable:
    return click.option("--scan-all", is_flag=True,
                        help="List every namespace of every backend, to find owned objects that left the "
                        "manifest anywhere (slower).")(command)


def policy_option(command: Callable) -> Callable:
    return click.option("--policy", "policy_file", type=click.Path(dir_okay=False),
                        help="A policy file (the manifest's `policy:` section on its own); its rules are "
                        "checked with the manifest's.")(command)


def target_option(command: Callable) -> Callable:
    return click.option("--target", "targets", multiple=True, metavar="BACKEND:ID",
                        help="Only this object and what it depends on; repeatable, globs allowed "
                        "(e.g. 'lake:sales$*'). The plan says it is partial.")(command)


def render(plan: Plan, output_format: str) -> str:
    from lance_sync import api

    return api.render(plan, output_format, colour=sys.stdout.isatty() and not os.environ.get("NO_COLOR"))


# --- commands --------------------------------------------------------------------------------------

@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lance-sync")
@click.pass_context
def main(context: click.Context) -> None:
    """Declarative catalog sync for Lance tables: plan and apply a manifest across catalogs."""
    # thrift logs every failed connection attempt at ERROR; the driver's own error says it once
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    if context.invoked_subcommand not in LONG_RUNNING_COMMANDS:
        _pause_collections(context)


#: commands that run until stopped, and so keep the cyclic garbage collector running
LONG_RUNNING_COMMANDS = {"reconcile"}


def _pause_collections(context: click.Context) -> None:
    """Pause the cyclic garbage collector until the command ends. A command builds large
    structures without cycles (the manifest's state, the live state, the plan) and ends soon;
    each full collection rescanned all of them, which was 0.27 s of the 0.6 s a plan takes to
    read 100,000 dir tables."""
    if gc.isenabled():
        gc.disable()
        context.call_on_close(gc.enable)


@main.command()
@manifest_option
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@policy_option
@handle_errors
def validate(files: tuple[str, ...], output_format: str, policy_file: str | None) -> None:
    """Check manifests offline: YAML, schema and semantic checks, and the policy's rules about
    what the manifest declares; no catalog is contacted. Exits 4 when a policy rule is broken.

    Environment variables may be unset (secrets are not given to pull requests from forks):
    the values that use them are not checked, and the output names them. plan and apply
    need every one.
    """
    from lance_sync.model.policy import check_declared
    from lance_sync.plan.render import violation_line

    paths = manifest_files(files)
    state = load(paths, policy_file=policy_file, allow_unset=True)
    violations = check_declared(state.policy, state)
    counts = {"backends": len(state.backends), "namespaces": len(state.namespaces), "tables": len(state.tables),
              "policy_rules": len(state.policy.rules)}
    unset = [{"variable": u.variable, "field": u.field, "position": str(u.position) if u.position else None}
             for u in state.unset]
    if output_format == "json":
        click.echo(json.dumps({"files": paths, "valid": True, **counts,
                               "policy_violations": [v.model_dump() for v in violations], "unset": unset}, indent=2))
    else:
        click.echo(f"{', '.join(paths)}: valid ({counts['backends']} backends, {counts['namespaces']} "
                   f"namespaces, {counts['tables']} tables, {counts['policy_rules']} policy rules)")
        for violation in violations:
            click.echo(f"policy violation: {violation_line(violation)}")
        if violations:
            click.echo(f"{len(violations)} policy violation(s): plan and apply refuse this manifest.")
        if unset:
            click.echo("Not set, so the values that use them were not checked (plan and apply need them):")
            for item in unset:
                click.echo(f"  {item['variable']}: {item['field']} ({item['position']})")
    if violations:
        sys.exit(ExitCode.REFUSED)


@main.command()
@manifest_option
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False), help="Save the plan for `apply FILE`.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--detailed-exitcode", is_flag=True, help="Exit 2 when there are changes, 0 when none.")
@target_option
@policy_option
@scan_all_option
@parallelism_option
@handle_errors
def plan(files: tuple[str, ...], out: str | None, output_format: str, detailed_exitcode: bool,
         targets: tuple[str, ...], policy_file: str | None, scan_all: bool, parallelism: int) -> None:
    """Show what apply would change. Exits 4 when apply would refuse the plan (a blocked
    action, a policy violation)."""
    from lance_sync import api

    state = load(manifest_files(files), policy_file)
    try:
        result = api.plan(state, targets=targets, scan_all=scan_all, parallelism=parallelism,
                          on_progress=progress)
    finally:
        _end_progress()
    click.echo(render(result, output_format), nl=False)
    if out:
        api.save_plan(result, out)
        click.echo(f"Saved the plan to {out}; run `lance-sync apply {out}` to carry it out.", err=True)
    if result.refused:
        sys.exit(ExitCode.REFUSED)
    if detailed_exitcode and result.has_changes:
        sys.exit(ExitCode.CHANGES_PRESENT)


@main.command()
@manifest_option
@click.argument("plan_file", required=False, type=click.Path(dir_okay=False))
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Print what would be done; change nothing.")
@click.option("--allow-drop", is_flag=True, help="Allow actions that delete data or namespaces.")
@click.option("--allow-replace", is_flag=True,
              help="Allow replacing tables (deregister and declare again: a new table id, grants lost).")
@click.option("--lock-timeout", type=click.FloatRange(0), default=0, show_default=True, metavar="SECONDS",
              help="How long to wait for another apply's lease before refusing.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="How to print the plan; json prints one document with the plan and every outcome.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where journals and rollback plans go (default: .lance-sync next to the manifest or plan).")
@click.option("--spark", "spark", help="Spark master or sc:// URL for tables written from a source.")
@target_option
@policy_option
@scan_all_option
@parallelism_option
@handle_errors
def apply(files: tuple[str, ...], plan_file: str | None, auto_approve: bool, dry_run: bool,
          allow_drop: bool, allow_replace: bool, lock_timeout: float, output_format: str,
          state_dir: str | None, spark: str | None, targets: tuple[str, ...], policy_file: str | None,
          scan_all: bool, parallelism: int) -> None:
    """Carry out a fresh plan of the manifest, or a saved plan (PLAN_FILE).

    Every plan passes the same guards against the live objects, while this apply holds each
    backend's lease (one apply at a time per owner and backend).
    """
    from lance_sync import api

    if plan_file and files:
        raise LanceSyncError("give either manifest files (-f) or a saved plan, not both")
    if plan_file and targets:
        raise LanceSyncError("--target limits a fresh plan; save a targeted one with "
                             "`lance-sync plan --target ... -o FILE`")
    anchor = Path(plan_file if plan_file else manifest_files(files)[0])
    target = api.load_plan(plan_file, policy_file) if plan_file \
        else load(manifest_files(files), policy_file)
    _ApplyRun(output_format, auto_approve, dry_run).run(
        target, allow_drop=allow_drop, allow_replace=allow_replace, lock_timeout=lock_timeout,
        targets=targets, scan_all=scan_all, parallelism=parallelism, spark=spark,
        state_dir=Path(state_dir) if state_dir else state_dir_beside(anchor))


def state_dir_beside(manifest_or_plan: Path) -> Path:
    """`.lance-sync` next to the manifest or saved plan; for a plan kept in a `.lance-sync`
    directory (a rollback plan is in .lance-sync/journal/), that directory."""
    folder = manifest_or_plan.resolve().parent
    return next((d for d in (folder, *folder.parents) if d.name == STATE_DIRECTORY), folder / STATE_DIRECTORY)


class _ApplyRun:
    """One `lance-sync apply`: `lance_sync.api.apply`, with the plan, confirmation, progress and
    report shown as it goes."""

    def __init__(self, output_format: str, auto_approve: bool, dry_run: bool):
        self.output_format = output_format
        self.auto_approve = auto_approve
        self.dry_run = dry_run
        self.document: dict[str, Any] = {}
        self.progress = _ApplyProgress()

    @property
    def as_json(self) -> bool:
        return self.output_format == "json"

    def run(self, target: Any, **settings: Any) -> None:
        from lance_sync import api

        hooks = api.ApplyHooks(on_progress=progress, on_plan=self._show_plan, confirm=self._confirm,
                               on_outcome=self.progress.update, on_wait=_waiting)
        try:
            result = api.apply(target, dry_run=self.dry_run, hooks=hooks, **settings)
        except GuardRefusal as refusal:
            if "plan" not in self.document:  # refused before planning (a lease): a plain error
                raise
            return self._finish("refused", error=str(refusal), code=ExitCode.REFUSED)
        finally:
            _end_progress()
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
        _end_progress()
        self.document["plan"] = json.loads(plan.model_dump_json())
        if not self.as_json:
            click.echo(render(plan, self.output_format), nl=False)

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


def _outcome_document(outcome: Any) -> dict[str, Any]:
    action = outcome.action
    return {"verb": action.verb.value, "kind": action.kind.value, "backend": action.backend, "id": action.id,
            "display_id": action.display_id, "status": outcome.status, "error": outcome.error,
            "transient": outcome.transient if outcome.status == "failed" else None}


def _shown_path(path: Path | None) -> str | None:
    return shown_path(path) if path is not None else None


class _ApplyProgress:
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
        self.bar: Any = None
        self.ticker: threading.Thread | None = None

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

    def update(self, outcome: Any) -> None:
        with self.lock:
            self.done += 1
            self.unsuccessful += outcome.status != "succeeded"
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
            done, unsuccessful = self.done, self.unsuccessful
        trouble = f", {unsuccessful} failed or skipped" if unsuccessful else ""
        click.echo(f"Applying: {done} of {self.total} actions done{trouble} "
                   f"({time.monotonic() - self.started:.0f} s)", err=True)


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


def _print_outcome(outcome: Any, base_dir: str | None) -> None:
    action = outcome.action
    mark = {"succeeded": "ok", "failed": "FAILED", "skipped": "skipped"}[outcome.status]
    detail = f": {outcome.error}" if outcome.error else ""
    line = f"{mark:>7}  {action.name} {action.backend}: {action.display_id}{detail}"
    click.echo(with_manifest_relative_paths(line, base_dir), err=True)


def _print_report(report: Any, base_dir: str | None) -> None:
    """What apply did. Locations below the manifest's folder are shown relative to it; the
    journal and rollback plan relative to the working directory, to be typed back."""

    def echo(line: str) -> None:
        click.echo(with_manifest_relative_paths(line, base_dir))

    succeeded, failed, skipped = (report.with_status(s) for s in ("succeeded", "failed", "skipped"))
    echo(f"\nApply {'complete' if not failed and not skipped else 'partly failed'}: "
         f"{len(succeeded)} succeeded, {len(failed)} failed, {len(skipped)} skipped.")
    for outcome in failed:
        echo(f"  failed:  {outcome.action.name} {outcome.action.backend}: "
             f"{outcome.action.display_id}: {outcome.error}")
    for outcome in skipped:
        echo(f"  skipped: {outcome.action.name} {outcome.action.backend}: "
             f"{outcome.action.display_id} ({outcome.error})")
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


@main.command()
@manifest_option
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True)
@scan_all_option
@parallelism_option
@handle_errors
def drift(files: tuple[str, ...], output_format: str, scan_all: bool, parallelism: int) -> None:
    """Report what differs between the manifest and the catalogs, and the repair the next apply
    would do. Exits 2 when anything differs, 0 when nothing does. Objects another owner (or
    nobody) owns are never drift."""
    from lance_sync import api
    from lance_sync.check.drift import render_drift

    state = load(manifest_files(files))
    try:
        report = api.drift(state, scan_all=scan_all, parallelism=parallelism, on_progress=progress)
    finally:
        _end_progress()
    click.echo(render_drift(report, output_format), nl=False)
    if report.has_drift:
        sys.exit(ExitCode.CHANGES_PRESENT)


def _duration(context: click.Context, parameter: click.Parameter, value: str) -> float:
    from lance_sync.apply.reconcile import parse_duration

    try:
        seconds = parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    if seconds <= 0:
        raise click.BadParameter("must be more than 0")
    return seconds


@main.command()
@manifest_option
@click.option("--interval", default="5m", show_default=True, metavar="DURATION", callback=_duration,
              help="Time between cycles: 30s, 5m, 1h.")
@click.option("--max-backoff", default="1h", show_default=True, metavar="DURATION", callback=_duration,
              help="Longest wait after failed cycles (the wait doubles per failure in a row, with jitter).")
@click.option("--metrics-port", type=click.IntRange(0, 65535),
              help="Serve Prometheus metrics at http://127.0.0.1:PORT/metrics (0: a free port, logged at "
              "start); none without it.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Loopback address for the metrics (127.0.0.1 or ::1); other addresses are refused.")
@click.option("--once", is_flag=True, help="Run one cycle and exit with its code (0, 1, 3 or 4).")
@click.option("--lock-timeout", type=click.FloatRange(0), default=0, show_default=True, metavar="SECONDS",
              help="How long a cycle waits for another apply's lease before leaving it to the next cycle.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where journals and rollback plans go (default: .lance-sync next to the manifest).")
@click.option("--spark", "spark", help="Spark master or sc:// URL for tables written from a source.")
@policy_option
@scan_all_option
@parallelism_option
@handle_errors
def reconcile(files: tuple[str, ...], interval: float, max_backoff: float, metrics_port: int | None,
              metrics_host: str, once: bool, lock_timeout: float, state_dir: str | None, spark: str | None,
              policy_file: str | None, scan_all: bool, parallelism: int) -> None:
    """Plan on a schedule and apply what the policy lets run unattended (by default creates and
    in-place updates, never removals); report the rest as pending approval.

    Each cycle takes the apply leases, plans, passes the same guards as apply and keeps a
    journal. One JSON line per cycle on stdout. SIGTERM (or Ctrl-C) ends the current cycle
    safely, releases the leases and exits 0.
    """
    import threading

    from lance_sync.apply.execute import ApplyOptions
    from lance_sync.apply.reconcile import (
        Metrics,
        MetricsServer,
        Reconciler,
        Settings,
        default_state_dir,
        now,
        run_cycle,
        stopping_on_signals,
    )

    paths = manifest_files(files)
    state = load(paths, policy_file=policy_file)  # a bad manifest fails at once, not in a cycle
    options = ApplyOptions(parallelism=parallelism, spark=spark,
                           state_dir=Path(state_dir) if state_dir else default_state_dir(paths))
    settings = Settings(files=paths, policy_file=policy_file, interval=interval, max_backoff=max_backoff,
                        lock_timeout=lock_timeout, scan_all=scan_all, options=options)
    metrics = Metrics(state.owner)
    server = MetricsServer(metrics, metrics_host, metrics_port).start() if metrics_port is not None else None
    stop = threading.Event()

    def log(record: dict[str, Any]) -> None:
        click.echo(json.dumps(record, ensure_ascii=False))

    try:
        with stopping_on_signals(stop):
            log({"time": now(), "event": "start", "owner": state.owner, "files": paths,
                 "interval_seconds": interval, "max_backoff_seconds": max_backoff,
                 "unattended": list(state.policy.unattended_verbs), "metrics": server.url if server else None,
                 "pid": os.getpid()})
            last = Reconciler(lambda: run_cycle(settings, stop), interval, max_backoff, metrics, log,
                              stop).run(max_cycles=1 if once else None)
    finally:
        if server is not None:
            server.close()
    log({"time": now(), "event": "stop", "reason": "signal" if stop.is_set() else "once"})
    if once and last is not None and last.exit_code:
        sys.exit(last.exit_code)


@main.command()
@manifest_option
@click.argument("lease_id", required=False)
@handle_errors
def unlock(files: tuple[str, ...], lease_id: str | None) -> None:
    """Remove the apply lease LEASE_ID of an apply that is gone; without LEASE_ID, list leases.

    Like `terraform force-unlock`: only for a holder that died (a lease whose holder expired
    or whose process is gone on this host is taken over by the next apply anyway).
    """
    from lance_sync import api

    state = load(manifest_files(files))
    if lease_id is None:
        held = api.held_leases(state)
        for where, record in held:
            click.echo(f"{where}: {record.describe()}")
        if not held:
            click.echo(f"No apply holds a lease for owner '{state.owner}'.")
        return
    for where in api.unlock(state, lease_id):
        click.echo(f"Removed {where}")


@main.command(name="import")
@manifest_option
@click.option("--backend", "backend_name", required=True, help="Backend to read (its name in the manifest, "
              "or the name to give it with --type).")
@click.option("--type", "backend_type", help="Backend type when no manifest defines it (dir, unity, ...).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", callback=key_value_pairs,
              help="Backend property with --type; secrets as ${VAR}.")
@click.option("--namespace", "namespaces", multiple=True, help="Namespace to import from (recursively); "
              "default: the backend's root.")
@click.option("--owner", help="Owner of the written manifest (default: the -f manifest's owner; "
              "required with --type).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
@handle_errors
def import_(files: tuple[str, ...], backend_name: str, backend_type: str | None, settings: dict[str, str],
            namespaces: tuple[str, ...], owner: str | None, output: str | None) -> None:
    """Write a manifest from what a backend holds, to adopt an existing catalog."""
    from lance_sync import api
    from lance_sync.manifest.importer import OWNER_NEEDED

    if backend_type and not owner:
        raise LanceSyncError(f"--owner is required with --type: {OWNER_NEEDED}")
    imported = api.import_manifest(
        backend_name, None if backend_type else load(manifest_files(files)), backend_type=backend_type or None,
        properties=settings, owner=owner, namespaces=namespaces,
        base_dir=Path(output).resolve().parent if output else None, on_progress=progress)
    _end_progress()
    for item in imported.left_out:
        click.echo(f"Left out: {item}", err=True)
    if output:
        Path(output).write_text(mask(imported.text), encoding="utf-8")
        click.echo(f"Wrote {output}", err=True)
    else:
        click.echo(imported.text, nl=False)


@main.command()
@click.argument("which", type=click.Choice(["manifest", "overlay", "plan", "policy"]), default="manifest")
@handle_errors
def schema(which: str) -> None:
    """Print the JSON Schema of manifests (default), of overlays (-f files after the first: any
    part of a manifest), of plans, or of policy files (--policy)."""
    from lance_sync.manifest.models import (
        manifest_json_schema,
        overlay_json_schema,
        policy_json_schema,
    )
    from lance_sync.model.actions import plan_json_schema

    documents = {"manifest": manifest_json_schema, "overlay": overlay_json_schema, "plan": plan_json_schema,
                 "policy": policy_json_schema}
    document = documents[which]()
    click.echo(json.dumps(document, indent=2))


@main.command()
@manifest_option
@click.option("--engine", type=click.Choice(["auto", "threads", "spark"]), default="auto", show_default=True,
              help="Thread pool, Spark, or Spark above 2,000 locations.")
@click.option("--spark", "spark", help="Spark master or sc:// URL (default: embedded local[*]).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@parallelism_option
@handle_errors
def verify(files: tuple[str, ...], engine: Engine, spark: str | None, output_format: str, parallelism: int) -> None:
    """Check that every table location in scope holds a valid Lance dataset.

    Exits 1 when anything is broken: a registration with no data behind it, data that is not
    Lance, a corrupt dataset, unreadable storage, or columns a catalog records that differ
    from the dataset's.
    """
    from lance_sync import api
    from lance_sync.check.verify import render_verify

    state = load(manifest_files(files))
    report = api.verify(state, engine=engine, spark=spark, parallelism=parallelism, on_progress=progress)
    _end_progress()
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(with_manifest_relative_paths(render_verify(report), state.base_dir), nl=False)
    if report.broken:
        sys.exit(ExitCode.ERROR)


@main.command()
@manifest_option
@click.argument("root")
@click.option("--engine", type=click.Choice(["auto", "threads", "spark"]), default="auto", show_default=True,
              help="Walk with threads, with Spark, or with Spark above 2,000 top-level directories.")
@click.option("--spark", "spark", help="Spark master or sc:// URL (default: embedded local[*]).")
@click.option("--storage", "storage", multiple=True, metavar="KEY=VALUE", callback=key_value_pairs,
              help="Storage option for ROOT (object stores), over those the manifest gives ROOT (its dir "
                   "backend's, else its default `storage:`); secrets as ${VAR}.")
@parallelism_option
@handle_errors
def discover(files: tuple[str, ...], root: str, engine: Engine, spark: str | None, storage: dict[str, str],
             parallelism: int) -> None:
    """List Lance datasets under ROOT that no backend of the manifest registers, as a manifest snippet."""
    from lance_sync import api
    from lance_sync.check.discover import render_discovered

    state = load(manifest_files(files))
    options = resolve_references(storage, os.environ, "--storage")
    register(*(value for key, value in options.items() if SECRET_KEY.search(key)))
    found = api.discover(state, root, engine=engine, spark=spark, storage_options=options or None,
                         parallelism=parallelism, on_progress=progress)
    _end_progress()
    click.echo(render_discovered(found, state), nl=False)
