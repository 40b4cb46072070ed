"""Shell completion through click: `_LANCE_SYNC_COMPLETE=bash_source lance-sync` prints the script
(docs/cli.md, "Shell completion"), and the script's callback completes commands and options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

ROOT = Path(__file__).resolve().parents[2]


def lance_sync(**environ: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               **environ}
    return subprocess.run([sys.executable, "-m", "lance_sync"], env=environ, capture_output=True, text=True,
                          check=True, timeout=60)


@pytest.mark.parametrize(("shell", "expected"), [
    ("bash", "complete -o nosort -F _lance_sync_completion lance-sync"),
    ("zsh", "#compdef lance-sync"),
    ("fish", "complete --no-files --command lance-sync"),
])
def test_the_completion_script_is_printed(shell: str, expected: str):
    assert expected in lance_sync(_LANCE_SYNC_COMPLETE=f"{shell}_source").stdout


def test_commands_and_options_complete():
    commands = lance_sync(_LANCE_SYNC_COMPLETE="bash_complete", COMP_WORDS="lance-sync pl", COMP_CWORD="1")
    assert commands.stdout.split() == ["plain,plan"]
    options = lance_sync(_LANCE_SYNC_COMPLETE="bash_complete", COMP_WORDS="lance-sync plan --detailed",
                         COMP_CWORD="2")
    assert options.stdout.split() == ["plain,--detailed-exitcode"]
