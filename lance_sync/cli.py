"""The `lance-sync` command line.

Data (plans, reports, manifests, schemas) goes to stdout; progress and diagnostics to
stderr. Exit codes: 0 done or no changes; 1 error; 2 changes present (plan with
--detailed-exitcode); 3 apply partly failed; 4 refused by a guard.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from lance_sync import __version__
from lance_sync.errors import ExitCode, LanceSyncError, ManifestError
from lance_sync.manifest import DEFAULT_MANIFEST, load_manifest
from lance_sync.plan.model import Plan

FORMATS = ("text", "json", "markdown")


# --- plumbing --------------------------------------------------------------------------------------

def _fail(message: str, code: int = ExitCode.ERROR) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def handle_errors(command: Callable) -> Callable:
    """Turn every failure into a message and an exit code; a traceback only with --debug."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except LanceSyncError as error:
            _fail(str(error), error.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted", ExitCode.ERROR)
        except Exception as error:  # noqa: BLE001 - the user gets a message, not a traceback
            if os.environ.get("LANCE_SYNC_DEBUG"):
                traceback.print_exc()
            _fail(f"{type(error).__name__}: {error} (set LANCE_SYNC_DEBUG=1 for a traceback)")

    return wrapper


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


def manifest_option(command: Callable) -> Callable:
    return click.option("-f", "--file", "files", multiple=True, type=click.Path(dir_okay=False),
                        help=f"Manifest file; repeat to lay overlays over a base (default: {DEFAULT_MANIFEST})."
                        )(command)


def parallelism_option(command: Callable) -> Callable:
    return click.option("--parallelism", type=click.IntRange(1, 256), default=8, show_default=True,
                        help="Catalog calls in flight at once.")(command)


def render(plan: Plan, output_format: str) -> str:
    from lance_sync.plan.render import render_json, render_markdown, render_text

    if output_format == "json":
        return render_json(plan)
    if output_format == "markdown":
        return render_markdown(plan)
    return render_text(plan, colour=sys.stdout.isatty() and not os.environ.get("NO_COLOR"))


def make_plan(files: list[str], parallelism: int) -> tuple[Plan, dict[str, Any]]:
    """A fresh plan of the manifests, and the drivers it was made with."""
    from lance_sync.plan.planner import build_plan, connect_backends

    state = load_manifest(files)
    drivers = connect_backends({name: spec.template for name, spec in state.backends.items()})
    try:
        return build_plan(state, drivers, parallelism, progress), drivers
    finally:
        _end_progress()


def load_saved_plan(path: str) -> Plan:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise LanceSyncError(f"{path}: cannot read the plan: {error.strerror}") from None
    try:
        return Plan.model_validate_json(text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LanceSyncError(f"{path}: not a lance-sync plan ({where}: {first['msg']})") from None


# --- commands --------------------------------------------------------------------------------------

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lance-sync")
def main() -> None:
    """Declarative catalog sync for Lance tables: plan and apply a manifest across catalogs."""
    # thrift logs every failed connection attempt at ERROR; the driver's own error says it once
    logging.getLogger("thrift").setLevel(logging.CRITICAL)


@main.command()
@manifest_option
@handle_errors
def validate(files: tuple[str, ...]) -> None:
    """Check manifests offline: YAML, schema and semantic checks; no catalog is contacted."""
    paths = manifest_files(files)
    state = load_manifest(paths)
    click.echo(f"{', '.join(paths)}: valid ({len(state.backends)} backends, {len(state.namespaces)} "
               f"namespaces, {len(state.tables)} tables)")


@main.command()
@manifest_option
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Save the plan for `apply FILE`.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--detailed-exitcode", is_flag=True, help="Exit 2 when there are changes, 0 when none.")
@parallelism_option
@handle_errors
def plan(files: tuple[str, ...], out: str | None, output_format: str, detailed_exitcode: bool,
         parallelism: int) -> None:
    """Show what apply would change."""
    result, _drivers = make_plan(manifest_files(files), parallelism)
    click.echo(render(result, output_format), nl=False)
    if out:
        Path(out).write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
        click.echo(f"Saved the plan to {out}; run `lance-sync apply {out}` to carry it out.", err=True)
    if result.blocked():
        sys.exit(ExitCode.REFUSED)
    if detailed_exitcode and result.has_changes:
        sys.exit(ExitCode.CHANGES_PRESENT)


@main.command()
@manifest_option
@click.argument("plan_file", required=False, type=click.Path(dir_okay=False))
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Print what would be done; change nothing.")
@click.option("--allow-drop", is_flag=True, help="Allow actions that delete data or catalog objects.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="How to print the plan before applying it.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where journals and rollback plans go (default: .lance-sync next to the manifest or plan).")
@click.option("--spark", "spark", help="Spark master or sc:// URL for tables written from a source.")
@parallelism_option
@handle_errors
def apply(files: tuple[str, ...], plan_file: str | None, auto_approve: bool, dry_run: bool,
          allow_drop: bool, output_format: str, state_dir: str | None, spark: str | None,
          parallelism: int) -> None:
    """Carry out a fresh plan of the manifest, or a saved plan (PLAN_FILE)."""
    from lance_sync.apply import ApplyOptions, check_fresh, check_guards, execute
    from lance_sync.plan.planner import connect_backends

    if plan_file and files:
        raise LanceSyncError("give either manifest files (-f) or a saved plan, not both")
    if plan_file:
        result = load_saved_plan(plan_file)
        drivers = connect_backends(result.backends)
        anchor = Path(plan_file).resolve().parent
    else:
        paths = manifest_files(files)
        result, drivers = make_plan(paths, parallelism)
        anchor = Path(paths[0]).resolve().parent
    click.echo(render(result, output_format), nl=False)
    if not result.has_changes:
        return
    check_guards(result, allow_drop)
    if plan_file:
        check_fresh(result, drivers, parallelism)
    if dry_run:
        click.echo("Dry run: nothing was changed.")
        return
    _confirm(auto_approve)
    options = ApplyOptions(allow_drop=allow_drop, parallelism=parallelism, spark=spark,
                           state_dir=Path(state_dir) if state_dir else anchor / ".lance-sync")
    with _ApplyProgress(len(result.actions)) as on_done:
        report = execute(result, drivers, options, on_done=on_done)
    _print_report(report)
    sys.exit(report.exit_code)


class _ApplyProgress:
    """A progress bar on a terminal; one line per finished action otherwise (CI logs)."""

    def __init__(self, total: int):
        self.bar = click.progressbar(length=total, label="Applying", file=sys.stderr) \
            if sys.stderr.isatty() else None

    def __enter__(self) -> Callable[[Any], None]:
        if self.bar is not None:
            self.bar.__enter__()
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def update(self, outcome: Any) -> None:
        if self.bar is None or outcome.status != "succeeded":
            _print_outcome(outcome)
        if self.bar is not None:
            self.bar.update(1)


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


def _print_outcome(outcome: Any) -> None:
    action = outcome.action
    mark = {"succeeded": "ok", "failed": "FAILED", "skipped": "skipped"}[outcome.status]
    detail = f": {outcome.error}" if outcome.error else ""
    click.echo(f"{mark:>7}  {action.action.value} {action.backend}: {action.display_id}{detail}", err=True)


def _print_report(report: Any) -> None:
    succeeded, failed, skipped = (report.with_status(s) for s in ("succeeded", "failed", "skipped"))
    click.echo(f"\nApply {'complete' if not failed and not skipped else 'partly failed'}: "
               f"{len(succeeded)} succeeded, {len(failed)} failed, {len(skipped)} skipped.")
    for outcome in failed:
        click.echo(f"  failed:  {outcome.action.action.value} {outcome.action.backend}: "
                   f"{outcome.action.display_id}: {outcome.error}")
    for outcome in skipped:
        click.echo(f"  skipped: {outcome.action.action.value} {outcome.action.backend}: "
                   f"{outcome.action.display_id} ({outcome.error})")
    if failed or skipped:
        click.echo("Run `lance-sync plan` to see what is left; `apply` again converges.")
    click.echo(f"Journal: {report.journal_path}")
    if report.rollback_path:
        click.echo(f"Rollback plan: {report.rollback_path} (apply it with `lance-sync apply FILE`)")


@main.command(name="import")
@manifest_option
@click.option("--backend", "backend_name", required=True, help="Backend to read (its name in the manifest, "
              "or the name to give it with --type).")
@click.option("--type", "backend_type", help="Backend type when no manifest defines it (dir, unity, ...).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Backend property with --type; secrets as ${VAR}.")
@click.option("--namespace", "namespaces", multiple=True, help="Namespace to import from (recursively); "
              "default: the backend's root.")
@click.option("--owner", help="Owner of the written manifest (default: the manifest's owner).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
@handle_errors
def import_(files: tuple[str, ...], backend_name: str, backend_type: str | None, settings: tuple[str, ...],
            namespaces: tuple[str, ...], owner: str | None, output: str | None) -> None:
    """Write a manifest from what a backend holds, to adopt an existing catalog."""
    from lance_sync.importer import import_manifest, template_from_settings

    if backend_type:
        template = template_from_settings(backend_type, settings)
        owner = owner or "imported"
    else:
        state = load_manifest(manifest_files(files))
        if backend_name not in state.backends:
            raise LanceSyncError(f"backend '{backend_name}' is not defined in the manifest")
        template = state.backends[backend_name].template
        owner = owner or state.owner
    text = import_manifest(backend_name, template, namespaces, owner, progress)
    _end_progress()
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"Wrote {output}", err=True)
    else:
        click.echo(text, nl=False)


@main.command()
@click.argument("which", type=click.Choice(["manifest", "plan"]), default="manifest")
@handle_errors
def schema(which: str) -> None:
    """Print the JSON Schema of manifests (default) or of plans."""
    from lance_sync.manifest.models import manifest_json_schema
    from lance_sync.plan.model import plan_json_schema

    document = manifest_json_schema() if which == "manifest" else plan_json_schema()
    click.echo(json.dumps(document, indent=2))


@main.command()
@manifest_option
@click.option("--engine", type=click.Choice(["auto", "threads", "spark"]), default="auto", show_default=True,
              help="Thread pool, Spark, or Spark above 2,000 locations.")
@click.option("--spark", "spark", help="Spark master or sc:// URL (default: embedded local[*]).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@parallelism_option
@handle_errors
def verify(files: tuple[str, ...], engine: str, spark: str | None, output_format: str, parallelism: int) -> None:
    """Check that every table location in scope holds a valid Lance dataset.

    Exits 1 when anything is broken: a registration with no data behind it, data that is not
    Lance, a corrupt dataset, unreadable storage, or columns a catalog records that differ
    from the dataset's.
    """
    from lance_sync.plan.planner import connect_backends
    from lance_sync.verify import render_verify
    from lance_sync.verify import verify as run_verify

    state = load_manifest(manifest_files(files))
    drivers = connect_backends({name: spec.template for name, spec in state.backends.items()})
    report = run_verify(state, drivers, engine, spark, parallelism, progress)
    _end_progress()
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(render_verify(report), nl=False)
    if report.broken:
        sys.exit(ExitCode.ERROR)


@main.command()
@manifest_option
@click.argument("root")
@click.option("--engine", type=click.Choice(["auto", "threads", "spark"]), default="auto", show_default=True,
              help="Walk with threads, with Spark, or with Spark above 2,000 top-level directories.")
@click.option("--spark", "spark", help="Spark master or sc:// URL (default: embedded local[*]).")
@click.option("--storage", "storage", multiple=True, metavar="KEY=VALUE",
              help="Storage option for ROOT (object stores); secrets as ${VAR}.")
@parallelism_option
@handle_errors
def discover(files: tuple[str, ...], root: str, engine: str, spark: str | None, storage: tuple[str, ...],
             parallelism: int) -> None:
    """List Lance datasets under ROOT that no backend of the manifest registers, as a manifest snippet."""
    from lance_sync.plan.planner import connect_backends, resolve_settings
    from lance_sync.verify import discover as run_discover
    from lance_sync.verify import render_discovered

    state = load_manifest(manifest_files(files))
    drivers = connect_backends({name: spec.template for name, spec in state.backends.items()})
    options = resolve_settings("--storage", storage)
    found = run_discover(state, drivers, root, engine, spark, options or None, parallelism, progress)
    _end_progress()
    click.echo(render_discovered(found, state), nl=False)
