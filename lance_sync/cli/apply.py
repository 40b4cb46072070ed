"""`apply`: carry out a fresh plan of the manifest, or a saved plan (what it shows: apply_display)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from lance_sync.cli.apply_display import ApplyDisplay
from lance_sync.cli.shared import (
    FORMATS,
    changed_since_option,
    load_changed,
    manifest_files,
    manifest_option,
    parallelism_option,
    policy_option,
    scan_all_option,
    target_option,
)
from lance_sync.model.errors import LanceSyncError
from lance_sync.model.shared import STATE_DIRECTORY

if TYPE_CHECKING:
    from lance_sync.model.actions import Destruction


@click.command()
@manifest_option
@click.argument("plan_file", required=False, type=click.Path(dir_okay=False))
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Print what would be done; change nothing.")
@click.option("--allow-drop", is_flag=True, help="Allow actions that delete data or namespaces.")
@click.option("--allow-replace", is_flag=True,
              help="Allow replacing tables (deregister and declare again: a new table id, grants lost).")
@click.option("--allow-revoke", is_flag=True, help="Allow revoking privileges (grants_mode, or fewer declared).")
@click.option("--lock-timeout", type=click.FloatRange(0), default=0, show_default=True, metavar="SECONDS",
              help="How long to wait for another apply's lease before refusing.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="How to print the plan; json prints one document with the plan and every outcome.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where journals and rollback plans go (default: .lance-sync next to the manifest or plan).")
@click.option("--spark", "spark", help="Spark master or sc:// URL for tables written from a source.")
@target_option
@changed_since_option
@policy_option
@scan_all_option
@parallelism_option
def apply(files: tuple[str, ...], plan_file: str | None, auto_approve: bool, dry_run: bool,
          allow_drop: bool, allow_replace: bool, allow_revoke: bool, lock_timeout: float, output_format: str,
          state_dir: str | None, spark: str | None, targets: tuple[str, ...], changed_since: str | None,
          policy_file: str | None,
          scan_all: bool, parallelism: int) -> None:
    """Carry out a fresh plan of the manifest, or a saved plan (PLAN_FILE).

    Every plan passes the same guards against the live objects, while this apply holds each
    backend's lease (one apply at a time per owner and backend).
    """
    from lance_sync import api

    if plan_file and files:
        raise LanceSyncError("give either manifest files (-f) or a saved plan, not both")
    if plan_file and changed_since:
        raise LanceSyncError("--changed-since limits a fresh plan; save one with "
                             "`lance-sync plan --changed-since REF -o FILE`")
    if plan_file and targets:
        raise LanceSyncError("--target limits a fresh plan; save a targeted one with "
                             "`lance-sync plan --target ... -o FILE`")
    anchor = Path(plan_file if plan_file else manifest_files(files)[0])
    target, baseline = (api.load_plan(plan_file, policy_file), None) if plan_file \
        else load_changed(manifest_files(files), policy_file, changed_since)
    directory = Path(state_dir) if state_dir else state_dir_beside(anchor)
    ApplyDisplay(output_format, auto_approve, allowed_destructions(allow_drop, allow_replace, allow_revoke)).run(lambda hooks: api.apply(
        target, allow_drop=allow_drop, allow_replace=allow_replace, allow_revoke=allow_revoke, baseline=baseline, dry_run=dry_run, lock_timeout=lock_timeout,
        targets=targets, scan_all=scan_all, parallelism=parallelism, spark=spark, state_dir=directory, hooks=hooks))


def allowed_destructions(allow_drop: bool, allow_replace: bool, allow_revoke: bool) -> set[Destruction]:
    from lance_sync.model.actions import Destruction

    flags = {Destruction.DATA: allow_drop, Destruction.IDENTITY: allow_replace, Destruction.ACCESS: allow_revoke}
    return {what for what, given in flags.items() if given}


def state_dir_beside(manifest_or_plan: Path) -> Path:
    """`.lance-sync` next to the manifest or saved plan; for a plan kept in a `.lance-sync`
    directory (a rollback plan is in .lance-sync/journal/), that directory."""
    folder = manifest_or_plan.resolve().parent
    return next((d for d in (folder, *folder.parents) if d.name == STATE_DIRECTORY), folder / STATE_DIRECTORY)
