"""`version` (what is installed, like `terraform version -json`) and `show` (a saved plan, like
`terraform show PLAN`)."""

from __future__ import annotations

import json
import platform
import sys

import click

from lance_sync import __version__
from lance_sync.cli.shared import REPORT_FORMAT_HELP, REPORT_FORMATS, render

#: the distributions a run depends on: the Lance stack, the data plane, each backend's SDK
COMPONENTS = ("pylance", "lance-namespace", "pyarrow", "pyspark", "botocore", "pymetastore", "thrift", "pydantic",
              "pyyaml", "click")


@click.command()
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: the versions as one document.")
def version(output_format: str) -> None:
    """Print lance-sync's version and those of the libraries and drivers it runs with."""
    from lance_sync.drivers import available_drivers

    components = {name: _installed(name) for name in COMPONENTS}
    drivers = sorted(available_drivers())
    if output_format == "json":
        click.echo(json.dumps({"lance_sync_version": __version__, "python": platform.python_version(),
                               "platform": sys.platform, "components": components, "drivers": drivers}, indent=2))
        return
    click.echo(f"lance-sync {__version__} (Python {platform.python_version()}, {sys.platform})")
    for name, found in components.items():
        click.echo(f"  {name:<16} {found or 'not installed'}")
    click.echo(f"  drivers          {', '.join(drivers)}")


def _installed(distribution: str) -> str | None:
    from importlib import metadata  # only here: every other command starts without it

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@click.command()
@click.argument("plan_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "output_format", type=click.Choice(REPORT_FORMATS), default="text", show_default=True,
              help=REPORT_FORMAT_HELP)
def show(plan_file: str, output_format: str) -> None:
    """Print a saved plan (`plan --out`) or a rollback plan, as `plan` prints one; nothing is read
    from the catalogs."""
    from lance_sync import api

    click.echo(render(api.load_plan(plan_file), output_format), nl=False)
