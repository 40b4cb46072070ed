"""The git revision a manifest is at, for the journal of an apply and for `status`."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

#: git answers these two questions in milliseconds; a hung git must not hold an apply
GIT_TIMEOUT_SECONDS = 10


def manifest_revision(paths: Sequence[str]) -> str | None:
    """The commit the manifest files' repository is at ('3f2a1c9d0b7e'), followed by
    ' (modified)' when a file differs from it; None outside git (or without git)."""
    if not paths:
        return None
    files = [Path(path).resolve() for path in paths]
    head = _git(files[0].parent, "rev-parse", "--short=12", "HEAD")
    if head is None:
        return None
    changed = _git(files[0].parent, "status", "--porcelain", "--", *map(str, files))
    return head.strip() + (" (modified)" if changed and changed.strip() else "")


def _git(folder: Path, *args: str) -> str | None:
    """git's output, or None when it fails (not a repository, no commit yet, no git)."""
    try:
        result = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                                timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None
