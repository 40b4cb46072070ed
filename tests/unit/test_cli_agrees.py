"""Help that agrees with the tool (issue 49): one spelling of a flag on every command (the old
one still taken), every option explained, --chdir where --no-color is taken, and reconcile's
help giving the unattended default the policy has."""

from __future__ import annotations

from pathlib import Path

import click
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.policy import DEFAULT_UNATTENDED
from tests.support.cli import cli_env, run_cli

MANIFEST = {
    "version": 1, "owner": "agrees",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "sales"}],
    "tables": [{"name": "orders", "location": "./lake/data/orders.lance",
                "register": [{"backend": "lake", "namespace": "sales"}], "schema": [{"name": "id", "type": "int64"}]}],
}


def write(folder: Path) -> Path:
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(MANIFEST, sort_keys=False))
    return path


def options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def test_every_option_of_every_command_is_explained():
    unexplained = [f"{name} {option.opts}" for name, command in main.commands.items()
                   for option in options(command) if not option.help]
    assert not unexplained


def test_out_is_spelled_one_way_and_the_old_spelling_still_works(tmp_path: Path):
    spellings = {name: [o.opts for o in options(command) if "-o" in o.opts] for name, command in main.commands.items()}
    assert {name: opts for name, opts in spellings.items() if opts} == {"plan": [["-o", "--out"]],
                                                                        "import": [["-o", "--out"]]}
    manifest = write(tmp_path)
    assert run_cli(manifest, "apply", "--auto-approve", env=cli_env()).returncode == 0
    for flag in ("--out", "--output"):
        written = tmp_path / f"imported{flag}.yaml"
        result = run_cli(manifest, "import", "--backend", "lake", flag, str(written), env=cli_env())
        assert result.returncode == 0 and "name: orders" in written.read_text(), result.stderr


def test_chdir_is_taken_after_the_command_too(tmp_path: Path):
    manifest = write(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for given in (["--chdir", str(elsewhere)], [f"--chdir={elsewhere}"]):
        result = run_cli(manifest, "plan", *given, "-o", "saved.json", env=cli_env())
        assert result.returncode == 0, result.stderr
        assert (elsewhere / "saved.json").exists()
        (elsewhere / "saved.json").unlink()


def test_reconcile_help_gives_the_unattended_default():
    text = " ".join(CliRunner().invoke(main, ["reconcile", "--help"]).output.split())
    assert f"by default {', '.join(DEFAULT_UNATTENDED[:-1])} and {DEFAULT_UNATTENDED[-1]}" in text
