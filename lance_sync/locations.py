"""Table locations: one spelling per place, so equal places compare equal.

Local paths become absolute POSIX paths without `file://` (HMS answers `file:/x` for
`file:///x`); object-store URIs keep their scheme and lose trailing slashes.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme(location: str) -> str | None:
    if location.startswith("file:"):
        return "file"
    match = _SCHEME.match(location)
    return match.group(1).lower() if match else None


def is_local(location: str) -> bool:
    return scheme(location) in (None, "file")


def normalize_location(location: str, base_dir: str | None = None) -> str:
    """The canonical spelling of a location; relative paths are taken from `base_dir` (or cwd)."""
    location = location.strip()
    if location.startswith("file:"):
        path = unquote(re.sub(r"^file:(//(localhost)?)?", "", location))
        return posixpath.normpath("/" + path.lstrip("/"))
    if scheme(location) is None:
        base = base_dir if base_dir is not None else os.getcwd()
        return posixpath.normpath(os.path.join(base, os.path.expanduser(location)))
    prefix, rest = location.split("://", 1)
    return f"{prefix.lower()}://{rest.rstrip('/')}"


def join_location(root: str, child: str) -> str:
    """`child` under `root`, unless `child` is already absolute."""
    if scheme(child) is not None or child.startswith("/"):
        return normalize_location(child)
    return normalize_location(root.rstrip("/") + "/" + child)


def relative_to(location: str, root: str) -> str | None:
    """The path of `location` inside `root`, or None when it is not inside."""
    location, root = normalize_location(location), normalize_location(root)
    if location == root or not is_within(location, root):
        return None
    return location[len(root.rstrip("/")) + 1:]


def is_within(location: str, root: str) -> bool:
    """True when `location` is `root` or lies below it (both already normalized)."""
    root = root.rstrip("/")
    return location == root or location.startswith(root + "/")

