"""The manifest as a git revision had it: what `--changed-since REF` compares the working tree
with (lance_sync.plan.changes).

The same files are read (every `-f` file and the policy file), at the same paths, from the
revision instead of the working tree, so relative locations resolve as they do now. A file
the revision does not have is an empty part of the manifest there: its entries are all new.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import LanceSyncError, ManifestError, ManifestErrors

GIT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Baseline:
    """What a plan limited to the changes since a revision compares with."""

    #: as the user wrote it ('origin/main', a tag, a sha)
    ref: str
    #: the commit it names
    revision: str
    #: the manifest there; None when it cannot be used (then `problem` says why)
    state: DesiredState | None
    problem: str | None = None

    @property
    def shown(self) -> str:
        """'origin/main (1a2b3c4)'."""
        short = self.revision[:7]
        return self.ref if self.ref.startswith(short) else f"{self.ref} ({short})"


def load_baseline(ref: str, paths: Sequence[str], policy_file: str | None = None,
                  environ: Mapping[str, str] | None = None) -> Baseline:
    """The manifest of `paths` (and `policy_file`) at git revision `ref`. LanceSyncError when
    the files are not in a git repository or `ref` names no commit."""
    from lance_sync.manifest import load_manifest
    from lance_sync.manifest.loader import reading_files_with

    folder = Path(paths[0]).resolve().parent
    revision = _git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                    problem=f"--changed-since {ref}: no such commit").strip()
    names = [Path(p) for p in paths]
    present = [p for p in names if _exists_at(revision, p)]
    if not present:
        return Baseline(ref, revision, None, f"the manifest did not exist at {ref}")
    if policy_file is not None and not _exists_at(revision, Path(policy_file)):
        policy_file = None
    try:
        with reading_files_with(lambda path: _show(revision, path)):
            state = load_manifest([str(p) for p in present], environ, policy_file)
    except (ManifestError, ManifestErrors) as error:
        return Baseline(ref, revision, None, f"the manifest at {ref} does not load ({str(error).splitlines()[0]})")
    return Baseline(ref, revision, state)


def _exists_at(revision: str, path: Path) -> bool:
    try:
        _show(revision, path)
    except FileNotFoundError:
        return False
    return True


def _show(revision: str, path: Path) -> bytes:
    """A file's bytes at a revision; FileNotFoundError when the revision does not have it."""
    path = path.resolve()
    result = subprocess.run(["git", "-C", str(path.parent), "show", f"{revision}:./{path.name}"],
                            capture_output=True, timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise FileNotFoundError(str(path))
    return result.stdout


def _git(folder: Path, *args: str, problem: str) -> str:
    try:
        result = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                                timeout=GIT_TIMEOUT_SECONDS, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise LanceSyncError("--changed-since needs git, which is not installed") from None
    if result.returncode != 0:
        inside = subprocess.run(["git", "-C", str(folder), "rev-parse", "--is-inside-work-tree"],
                                capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS,
                                stdin=subprocess.DEVNULL)
        if inside.returncode != 0:
            raise LanceSyncError(f"--changed-since needs the manifest in a git repository; {folder} is not in one")
        raise LanceSyncError(problem)
    return result.stdout
