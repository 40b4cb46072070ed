"""`unlock`: list this owner's apply leases, or remove the one an apply that is gone left."""

from __future__ import annotations

import dataclasses
import json

import click

from lance_sync.cli.shared import load, manifest_files, manifest_option


@click.command()
@manifest_option
@click.argument("lease_id", required=False)
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: the leases (or the one removed) as one document.")
def unlock(files: tuple[str, ...], lease_id: str | None, output_format: str) -> None:
    """Remove the apply lease LEASE_ID of an apply that is gone; without LEASE_ID, list leases.

    Like `terraform force-unlock`: only for a holder that died (a lease whose holder expired
    or whose process is gone on this host is taken over by the next apply anyway).
    """
    from lance_sync import api

    state = load(manifest_files(files))
    if lease_id is None:
        held = api.held_leases(state)
        if output_format == "json":
            click.echo(json.dumps({"owner": state.owner, "leases": [
                {"where": where, **dataclasses.asdict(record)} for where, record in held]}, indent=2))
            return
        for where, record in held:
            click.echo(f"{where}: {record.describe()}")
        if not held:
            click.echo(f"No apply holds a lease for owner '{state.owner}'.")
        return
    removed = api.unlock(state, lease_id)
    if output_format == "json":
        click.echo(json.dumps({"lease_id": lease_id, "removed": removed}, indent=2))
        return
    for where in removed:
        click.echo(f"Removed {where}")
