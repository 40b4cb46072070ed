"""One-shot commands run with the cyclic garbage collector paused; reconcile, and a library load, keep it."""

from __future__ import annotations

import gc

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.errors import ManifestError


@pytest.mark.parametrize(("command", "loader", "collecting"), [
    ("plan", "lance_sync.cli.plan.load_changed", False), ("validate", "lance_sync.cli.manifest.load", False),
    ("reconcile", "lance_sync.cli.reconcile.load", True)])
def test_the_collector_pauses_for_a_command_and_resumes_after_it(monkeypatch, tmp_path, command, loader,
                                                                 collecting):
    seen = []

    def load(*args, **kwargs):
        seen.append(gc.isenabled())
        raise ManifestError("stop here")

    monkeypatch.setattr(loader, load)  # where the command looks its loader up
    assert gc.isenabled()
    result = CliRunner().invoke(main, [command, "-f", str(tmp_path / "m.yaml")])
    assert result.exit_code == 1 and "stop here" in result.output
    assert seen == [collecting]
    assert gc.isenabled()


def test_a_library_load_leaves_the_collector_alone(monkeypatch):
    """Only the CLI's own process pauses the collector: a program (reconcile's other threads
    included) that loads a manifest keeps collecting."""
    from pathlib import Path

    from lance_sync import api

    def refuse() -> None:
        raise AssertionError("the library paused the garbage collector")

    monkeypatch.setattr(gc, "disable", refuse)
    quickstart = Path(__file__).resolve().parents[2] / "examples" / "quickstart" / "lance-sync.yaml"
    assert api.load(str(quickstart)).tables
    assert gc.isenabled()
