"""Parsed manifest files kept by content, so that a large file is parsed once, not on every run.

Parsing YAML is most of the time of loading a large manifest (about 16 s of CPU per million
tables); reading a parse back takes a seventh of that. An entry is named by the SHA-256 of
the file's bytes, with the Python version and `FORMAT` (the plain road's output), so an entry
can never be stale: a changed file is a different name. Only what a file says by itself is
kept: a value that refers to the environment (`${VAR}`, which may be a secret) is kept as
written, and read again in the environment of the run that reads the entry back
(lance_sync.manifest.parse_once). Files under `MIN_BYTES` are not worth it.

The folder is `$LANCE_SYNC_CACHE`, else `$XDG_CACHE_HOME/lance-sync`, else
`~/.cache/lance-sync`; `LANCE_SYNC_CACHE=off` turns the cache off. It holds at most
`MAX_ENTRIES` files, the least recently used removed first. An entry that does not read back
(cut short, another format) is ignored and parsed again; a folder that cannot be written
only costs the saving.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

CACHE_ENV = "LANCE_SYNC_CACHE"
#: bump when what is kept for the same bytes changes
FORMAT = 2
MIN_BYTES = 1024 * 1024
MAX_ENTRIES = 64
_SUFFIX = ".parsed"
_MAGIC = b"lance-sync parsed manifest\n"


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off."""
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return None if configured.strip().lower() in ("off", "") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lance-sync"


def cacheable(raw: bytes) -> bool:
    """Whether a file of these bytes is kept: large enough."""
    return len(raw) >= MIN_BYTES


def kept(raw: bytes) -> bool:
    """Whether an entry for a file of these bytes is there (`recall` may still find it unreadable)."""
    path = _entry(raw)
    return path is not None and path.is_file()


def recall(raw: bytes) -> Any:
    """What was kept for a file of these bytes (`keep`), or None."""
    path = _entry(raw)
    if path is None:
        return None
    try:
        stored = path.read_bytes()
        if not stored.startswith(_MAGIC):
            return None
        data = marshal.loads(stored[len(_MAGIC):])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used
    return data


def keep(raw: bytes, marshalled: bytes) -> None:
    """Keep `marshal.dumps` of what a file of these bytes reads as; nothing on failure."""
    path = _entry(raw)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as out:
            out.write(_MAGIC + marshalled)
        os.replace(out.name, path)
        _trim(path.parent)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(out.name)


def _entry(raw: bytes) -> Path | None:
    folder = cache_dir()
    if folder is None or not cacheable(raw):
        return None
    digest = hashlib.sha256(raw)
    digest.update(f"\0{sys.version_info[0]}.{sys.version_info[1]}\0{FORMAT}".encode())
    return folder / f"{digest.hexdigest()}{_SUFFIX}"


def _trim(folder: Path) -> None:
    """The most recently used MAX_ENTRIES entries stay."""
    entries = sorted(folder.glob(f"*{_SUFFIX}"), key=_used, reverse=True)
    for stale in entries[MAX_ENTRIES:]:
        with contextlib.suppress(OSError):
            stale.unlink()


def _used(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # removed by another run meanwhile
