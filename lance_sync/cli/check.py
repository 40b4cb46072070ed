"""`drift`, `status`, `verify` and `discover`: the commands that read catalogs and data and change nothing."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

import click

from lance_sync.cli.shared import (
    FORMATS,
    REPORT_FORMAT_HELP,
    REPORT_FORMATS,
    changed_since_option,
    end_progress,
    key_value_pairs,
    load,
    load_changed,
    manifest_files,
    manifest_option,
    parallelism_option,
    progress,
    scan_all_option,
)
from lance_sync.model.errors import ExitCode
from lance_sync.model.locations import with_manifest_relative_paths
from lance_sync.model.secrets import SECRET_KEY, register
from lance_sync.model.variables import resolve_references

if TYPE_CHECKING:
    from lance_sync.data.inspection import Engine


@click.command()
@manifest_option
@click.option("--format", "output_format", type=click.Choice(REPORT_FORMATS), default="text", show_default=True,
              help=REPORT_FORMAT_HELP)
@changed_since_option
@scan_all_option
@parallelism_option
def drift(files: tuple[str, ...], output_format: str, changed_since: str | None, scan_all: bool,
          parallelism: int) -> None:
    """Report what differs between the manifest and the catalogs, and the repair the next apply
    would do. Exits 2 when anything differs, 0 when nothing does. Objects another owner (or
    nobody) owns are never drift."""
    from lance_sync import api
    from lance_sync.check.drift import render_drift

    paths = manifest_files(files)
    state, baseline = load_changed(paths, None, changed_since)
    try:
        report = api.drift(state, scan_all=scan_all, parallelism=parallelism, on_progress=progress,
                           baseline=baseline)
    finally:
        end_progress()
    click.echo(render_drift(report, output_format), nl=False)
    if report.has_drift:
        sys.exit(ExitCode.CHANGES_PRESENT)


@click.command()
@manifest_option
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="markdown: a pull-request or issue comment; json: every object as one document.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where the applies' journals are (default: .lance-sync next to the manifest).")
@scan_all_option
@parallelism_option
def status(files: tuple[str, ...], output_format: str, state_dir: str | None, scan_all: bool,
           parallelism: int) -> None:
    """Show every object the manifest declares with its sync (Synced, OutOfSync, Missing, Unknown)
    and health (Healthy, Degraded, Missing, Unknown), why, and the last apply that changed it.
    Exits 0 when all are Synced and Healthy, 2 when any is not, 1 when any is Unknown (a
    backend or storage that cannot be read) or on an error."""
    from lance_sync import api
    from lance_sync.check.status import render_status

    state = load(manifest_files(files))
    try:
        report = api.status(state, scan_all=scan_all, parallelism=parallelism, state_dir=state_dir,
                            on_progress=progress)
    finally:
        end_progress()
    click.echo(render_status(report, output_format, state.base_dir), nl=False)
    if report.exit_code:
        sys.exit(report.exit_code)


@click.command()
@manifest_option
@click.option("--engine", type=click.Choice(["auto", "threads", "spark"]), default="auto", show_default=True,
              help="Thread pool, Spark, or Spark above 2,000 locations.")
@click.option("--spark", "spark", help="Spark master or sc:// URL (default: embedded local[*]).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: every location and its findings as one document.")
@parallelism_option
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
    end_progress()
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(with_manifest_relative_paths(render_verify(report), state.base_dir), nl=False)
    if report.broken:
        sys.exit(ExitCode.ERROR)


@click.command()
@manifest_option
@click.argument("root")
@click.option("--engine", type=click.Choice(["auto", "threads", "spark"]), default="auto", show_default=True,
              help="Walk with threads, with Spark, or with Spark above 2,000 top-level directories.")
@click.option("--spark", "spark", help="Spark master or sc:// URL (default: embedded local[*]).")
@click.option("--storage", "storage", multiple=True, metavar="KEY=VALUE", callback=key_value_pairs,
              help="Storage option for ROOT (object stores), over those the manifest gives ROOT (its dir "
                   "backend's, else its default `storage:`); secrets as ${VAR}.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a manifest snippet; json: the locations and the snippet.")
@parallelism_option
def discover(files: tuple[str, ...], root: str, engine: Engine, spark: str | None, storage: dict[str, str],
             output_format: str, parallelism: int) -> None:
    """List Lance datasets under ROOT that no backend of the manifest registers, as a manifest snippet."""
    from lance_sync import api
    from lance_sync.check.discover import render_discovered

    state = load(manifest_files(files))
    options = resolve_references(storage, os.environ, "--storage")
    register(*(value for key, value in options.items() if SECRET_KEY.search(key)))
    found = api.discover(state, root, engine=engine, spark=spark, storage_options=options or None,
                         parallelism=parallelism, on_progress=progress)
    end_progress()
    if output_format == "json":
        click.echo(json.dumps({"root": root, "datasets": found, "snippet": render_discovered(found, state)}, indent=2))
        return
    click.echo(render_discovered(found, state), nl=False)
