"""`plan`: what apply would change."""

from __future__ import annotations

import sys

import click

from lance_sync.cli.shared import (
    REPORT_FORMAT_HELP,
    REPORT_FORMATS,
    changed_since_option,
    end_progress,
    load_changed,
    manifest_files,
    manifest_option,
    out_option,
    parallelism_option,
    policy_option,
    progress,
    render,
    scan_all_option,
    target_option,
)
from lance_sync.model.errors import ExitCode, PlanConflicts


@click.command()
@manifest_option
@out_option("Save the plan for `apply FILE`.")
@click.option("--format", "output_format", type=click.Choice(REPORT_FORMATS), default="text", show_default=True,
              help=REPORT_FORMAT_HELP)
@click.option("--detailed-exitcode", is_flag=True, help="Exit 2 when there are changes, 0 when none.")
@target_option
@changed_since_option
@policy_option
@scan_all_option
@parallelism_option
def plan(files: tuple[str, ...], out: str | None, output_format: str, detailed_exitcode: bool,
         targets: tuple[str, ...], changed_since: str | None, policy_file: str | None, scan_all: bool,
         parallelism: int) -> None:
    """Show what apply would change. Exits 4 when apply would refuse the plan (a blocked
    action, a policy violation)."""
    from lance_sync import api

    paths = manifest_files(files)
    state, baseline = load_changed(paths, policy_file, changed_since)
    try:
        result = api.plan(state, targets=targets, scan_all=scan_all, parallelism=parallelism,
                          on_progress=progress, baseline=baseline)
    except PlanConflicts as conflicts:
        if conflicts.plan is not None and output_format != "json":  # JSON output is the one error document
            click.echo(render(conflicts.plan, output_format), nl=False)
        raise
    finally:
        end_progress()
    click.echo(render(result, output_format), nl=False)
    if out:
        api.save_plan(result, out)
        click.echo(f"Saved the plan to {out}; run `lance-sync apply {out}` to carry it out.", err=True)
    if result.refused:
        sys.exit(ExitCode.REFUSED)
    if detailed_exitcode and result.has_changes:
        sys.exit(ExitCode.CHANGES_PRESENT)
