"""One-shot commands run with the cyclic garbage collector paused; reconcile keeps it."""

from __future__ import annotations

import gc

import pytest
from click.testing import CliRunner

from lance_sync.cli import app as cli
from lance_sync.model.errors import ManifestError


@pytest.mark.parametrize(("command", "collecting"), [("plan", False), ("validate", False), ("reconcile", True)])
def test_the_collector_pauses_for_a_command_and_resumes_after_it(monkeypatch, tmp_path, command, collecting):
    seen = []

    def load(*args, **kwargs):
        seen.append(gc.isenabled())
        raise ManifestError("stop here")

    monkeypatch.setattr(cli, "load", load)
    assert gc.isenabled()
    result = CliRunner().invoke(cli.main, [command, "-f", str(tmp_path / "m.yaml")])
    assert result.exit_code == 1 and "stop here" in result.output
    assert seen == [collecting]
    assert gc.isenabled()
