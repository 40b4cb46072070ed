"""What several commands share: their options, the manifest they read, the progress line.

Only click and lance-sync's own light modules are imported here: `--help` and `validate`
must start fast (tests/unit/test_imports.py checks).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from lance_sync.manifest import DEFAULT_MANIFEST
from lance_sync.model.errors import ManifestError
from lance_sync.model.shared import DEFAULT_PARALLELISM

if TYPE_CHECKING:
    from lance_sync.manifest.history import Baseline
    from lance_sync.model.actions import Destruction, Plan
    from lance_sync.model.desired import DesiredState

FORMATS = ("text", "json", "markdown")
#: the formats of a report a person reads later (plan, show, drift): also one self-contained HTML page
REPORT_FORMATS = (*FORMATS, "html")
REPORT_FORMAT_HELP = "html: one self-contained page (redirect it to a file, open it in a browser)."


def progress(message: str) -> None:
    if sys.stderr.isatty():
        click.echo(f"\r\033[K{message}", err=True, nl=False)


def end_progress() -> None:
    if sys.stderr.isatty():
        click.echo("\r\033[K", err=True, nl=False)


def manifest_files(files: tuple[str, ...]) -> list[str]:
    if files:
        return list(files)
    if Path(DEFAULT_MANIFEST).exists():
        return [DEFAULT_MANIFEST]
    raise ManifestError(f"no manifest given: use -f FILE, or run where {DEFAULT_MANIFEST} is")


def load(paths: list[str], policy_file: str | None = None, allow_unset: bool = False,
         plan_next: bool = False) -> DesiredState:
    """The manifest's desired state; what it should change but need not goes to stderr."""
    from lance_sync import api

    state = api.load(paths, policy_file=policy_file, allow_unset=allow_unset, plan_next=plan_next)
    _warn(state)
    return state


def _warn(state: DesiredState) -> None:
    for notice in state.notices:
        click.echo(f"Warning: {notice}", err=True)


def render(plan: Plan, output_format: str, allowed: Collection[Destruction] = ()) -> str:
    from lance_sync import api

    return api.render(plan, output_format, colour=sys.stdout.isatty() and not os.environ.get("NO_COLOR"),
                      allowed=allowed)


def manifest_option(command: Callable) -> Callable:
    return click.option("-f", "--file", "files", multiple=True, type=click.Path(dir_okay=False),
                        help=f"Manifest file; repeat to lay overlays over a base (default: {DEFAULT_MANIFEST})."
                        )(command)


def out_option(help_text: str) -> Callable[[Callable], Callable]:
    """`-o/--out FILE`, spelled so on every command; `--output`, the spelling `import` had, is
    still taken (hidden)."""

    def decorate(command: Callable) -> Callable:
        @functools.wraps(command)
        def merged(*args: Any, out: str | None = None, output_alias: str | None = None, **kwargs: Any) -> Any:
            return command(*args, out=out or output_alias, **kwargs)

        merged = click.option("--output", "output_alias", type=click.Path(dir_okay=False), hidden=True)(merged)
        return click.option("-o", "--out", "out", type=click.Path(dir_okay=False), metavar="FILE",
                            help=help_text)(merged)

    return decorate


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


def changed_since_option(command: Callable) -> Callable:
    return click.option("--changed-since", "changed_since", metavar="REF",
                        help="Only the manifest entries that differ from git revision REF (and what they "
                        "depend on): catalog calls in proportion to the change. The plan says it is "
                        "partial.")(command)


def load_changed(paths: list[str], policy_file: str | None,
                 changed_since: str | None) -> tuple[DesiredState, Baseline | None]:
    """The manifest's desired state (as `load`), and the manifest at --changed-since REF when
    given."""
    if changed_since is None:
        return load(paths, policy_file, plan_next=True), None
    from lance_sync import api

    state, baseline = api.load_changed(paths, changed_since, policy_file)
    _warn(state)
    return state, baseline


def target_option(command: Callable) -> Callable:
    return click.option("--target", "targets", multiple=True, metavar="BACKEND:ID",
                        help="Only this object and what it depends on; repeatable, globs allowed: "
                        "BACKEND:ID (e.g. lake:sales/orders, or quoted 'lake:sales$*') or a manifest "
                        "table's name. The plan says it is partial.")(command)
