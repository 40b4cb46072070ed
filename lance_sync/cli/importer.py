"""`import`: write a manifest from what a backend holds, to adopt an existing catalog."""

from __future__ import annotations

import json
from pathlib import Path

import click

from lance_sync.cli.shared import (
    end_progress,
    key_value_pairs,
    load,
    manifest_files,
    manifest_option,
    out_option,
    progress,
)
from lance_sync.model.errors import LanceSyncError
from lance_sync.model.secrets import mask


@click.command(name="import")
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
@out_option("Write the manifest here instead of stdout.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the manifest; json: the manifest's text and what was left out.")
def import_(files: tuple[str, ...], backend_name: str, backend_type: str | None, settings: dict[str, str],
            namespaces: tuple[str, ...], owner: str | None, out: str | None, output_format: str) -> None:
    """Write a manifest from what a backend holds, to adopt an existing catalog."""
    from lance_sync import api
    from lance_sync.manifest.importer import OWNER_NEEDED

    if backend_type and not owner:
        raise LanceSyncError(f"--owner is required with --type: {OWNER_NEEDED}")
    imported = api.import_manifest(
        backend_name, None if backend_type else load(manifest_files(files)), backend_type=backend_type or None,
        properties=settings, owner=owner, namespaces=namespaces,
        base_dir=Path(out).resolve().parent if out else None, on_progress=progress)
    end_progress()
    for item in imported.left_out:
        click.echo(f"Left out: {item}", err=True)
    if out:
        Path(out).write_text(mask(imported.text), encoding="utf-8")
        click.echo(f"Wrote {out}", err=True)
    if output_format == "json":
        click.echo(json.dumps({"manifest": imported.text, "left_out": imported.left_out, "output": out}, indent=2))
    elif not out:
        click.echo(imported.text, nl=False)
