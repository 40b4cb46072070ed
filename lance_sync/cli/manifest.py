"""`validate` and `schema`: the commands that read manifest files (or nothing) and no catalog."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from lance_sync.cli.shared import load, manifest_files, manifest_option, policy_option
from lance_sync.model.errors import ExitCode

if TYPE_CHECKING:
    from lance_sync.api import SchemaDocument
    from lance_sync.model.desired import DesiredState


@click.command()
@manifest_option
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: one document with the result, warnings and unset variables.")
@policy_option
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
    if violations:  # read again with positions, so each violation names its file and line
        from lance_sync import api

        violations = check_declared(state.policy, api.load(paths, policy_file, allow_unset=True, positions=True))
    counts = {"backends": len(state.backends), "namespaces": len(state.namespaces), "tables": len(state.tables),
              "policy_rules": len(state.policy.rules)}
    unset = [{"variable": u.variable, "field": u.field, "position": str(u.position) if u.position else None}
             for u in state.unset]
    warnings = _engine_warnings(state)
    if output_format == "json":
        click.echo(json.dumps({"files": paths, "valid": True, **counts,
                               "policy_violations": [v.model_dump() for v in violations], "unset": unset,
                               "warnings": warnings}, indent=2))
    else:
        for warning in warnings:
            click.echo(f"Warning: {warning}", err=True)
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


def _engine_warnings(state: DesiredState) -> list[str]:
    """Tables written from a source need Spark; where it cannot start here, say what to install
    (validate cannot know whether a dataset is there already: plan blocks a write that needs it)."""
    from lance_sync.model.engines import missing_engine

    sourced = [t for t in state.tables if t.source]
    problem = missing_engine((state.spark or {}).get("master")) if sourced else None
    if problem is None:
        return []
    names = ", ".join(f"'{t.name}' ({t.position})" if t.position else f"'{t.name}'" for t in sourced[:5])
    more = f" and {len(sourced) - 5} more" if len(sourced) > 5 else ""
    return [f"tables {names}{more} are written from a source by Spark where their dataset is missing: {problem}"]


@click.command()
@click.argument("which", type=click.Choice(["manifest", "overlay", "plan", "policy"]), default="manifest")
def schema(which: SchemaDocument) -> None:
    """Print the JSON Schema of manifests (default), of overlays (-f files after the first: any
    part of a manifest), of plans, or of policy files (--policy)."""
    from lance_sync import api

    document = api.json_schema(which)
    click.echo(json.dumps(document, indent=2))
