"""One-shot commands run with the cyclic garbage collector paused; reconcile keeps it."""

from __future__ import annotations

import gc

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.errors import ManifestError


@pytest.mark.parametrize(("command", "module", "collecting"), [
    ("plan", "lance_sync.cli.plan", False), ("validate", "lance_sync.cli.manifest", False),
    ("reconcile", "lance_sync.cli.reconcile", True)])
def test_the_collector_pauses_for_a_command_and_resumes_after_it(monkeypatch, tmp_path, command, module,
                                                                 collecting):
    seen = []

    def load(*args, **kwargs):
        seen.append(gc.isenabled())
        raise ManifestError("stop here")

    monkeypatch.setattr(f"{module}.load", load)  # where the command looks `load` up
    assert gc.isenabled()
    result = CliRunner().invoke(main, [command, "-f", str(tmp_path / "m.yaml")])
    assert result.exit_code == 1 and "stop here" in result.output
    assert seen == [collecting]
    assert gc.isenabled()
