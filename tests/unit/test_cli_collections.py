"""One-shot commands run with the cyclic garbage collector paused; reconcile keeps it."""

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
