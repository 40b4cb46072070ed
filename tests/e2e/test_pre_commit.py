"""The pre-commit hook (.pre-commit-hooks.yaml) run by pre-commit itself on a sample repository.

pre-commit would install a `language: python` hook into a virtualenv of its own from PyPI;
without a network, the sample repository declares the hook as `repo: local` with exactly the
definition this repository ships, run as `language: system` by the lance-sync that this test
session imports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"

pytestmark = [pytest.mark.usefixtures("subprocesses"),  # pre-commit and git hooks are processes
              pytest.mark.skipif(shutil.which("pre-commit", path=os.path.dirname(sys.executable)) is None
                                and shutil.which("pre-commit") is None, reason="pre-commit is not installed")]


def shipped_hook() -> dict:
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return hook


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A git repository with the quickstart manifest, an overlay and a pre-commit config."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(QUICKSTART / "lance-sync.yaml", repo / "lance-sync.yaml")
    shutil.copy(QUICKSTART / "prod.overlay.yaml", repo / "prod.overlay.yaml")
    (repo / "README.md").write_text("catalogs\n")
    wrapper = tmp_path / "bin" / "lance-sync"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m lance_sync \"$@\"\n")
    wrapper.chmod(0o755)
    hook = {**shipped_hook(), "language": "system", "entry": f"{wrapper} validate",
            "args": ["-f", "lance-sync.yaml", "-f", "prod.overlay.yaml"]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    return repo


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.test", *args], cwd=repo, check=True)


def pre_commit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or "pre-commit"
    environ = {**os.environ, "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([executable, *args], cwd=repo, env=environ, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)


def test_the_shipped_hook_validates_the_manifests(repository: Path):
    result = pre_commit(repository, "run", "--all-files")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lance-sync validate" in result.stdout and "Passed" in result.stdout


def test_the_hook_fails_a_commit_with_a_broken_manifest(repository: Path):
    manifest = repository / "lance-sync.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1", "version: 2"))
    git(repository, "add", "lance-sync.yaml")
    result = pre_commit(repository, "run")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Failed" in result.stdout and "lance-sync.yaml:" in result.stdout


def test_the_hook_skips_commits_that_touch_no_manifest(repository: Path):
    git(repository, "commit", "-q", "-m", "start", "--no-verify")
    (repository / "README.md").write_text("catalogs, documented\n")
    git(repository, "add", "README.md")
    result = pre_commit(repository, "run")
    assert result.returncode == 0
    assert "(no files to check)Skipped" in result.stdout
