"""Table locations: one spelling per place, so equal places compare equal everywhere
(manifest checks, the planner, verify and discover, the drivers). HMS answers `file:/x`
for `file:///x`; both are `/x` here.
"""

from __future__ import annotations

import os
import posixpath
import re
from urllib.parse import unquote

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


def scheme(location: str) -> str | None:
    if location.startswith("file:"):
        return "file"
    match = _SCHEME.match(location)
    return match.group(1).lower() if match else None


def is_local(location: str) -> bool:
    return scheme(location) in (None, "file")


def normalize_location(location: str, base_dir: str | None = None) -> str:
    """The canonical spelling of a location.

    Local paths and `file:` URIs become absolute, normalized paths without a scheme
    (`file:///data/t.lance/` -> `/data/t.lance`; `~` expanded; `.`, `..` and repeated
    slashes collapsed; symbolic links not resolved); relative paths are taken from
    `base_dir` (default: the working directory). Object-store URIs keep their scheme,
    lower-cased, with `s3a://` and `s3n://` spelled `s3://`, repeated slashes in the key
    collapsed and a trailing slash dropped.
    """
    location = location.strip()
    match = _SCHEME.match(location)
    if match is None:
        if location.startswith("file:"):
            return _normalize_local(unquote(location[len("file:"):]), base_dir)
        return _normalize_local(location, base_dir)
    scheme_name, rest = match.group(1).lower(), location[match.end():]
    if scheme_name == "file":
        return _normalize_local(unquote(_strip_file_authority(rest)), base_dir)
    scheme_name = _SCHEME_ALIASES.get(scheme_name, scheme_name)
    return f"{scheme_name}://{re.sub('/+', '/', rest).rstrip('/')}"


def _strip_file_authority(rest: str) -> str:
    """`file://localhost/a` and `file:///a` both name `/a`."""
    if rest.startswith("/"):
        return rest
    host, _, path = rest.partition("/")
    if host not in ("", "localhost"):
        raise ValueError(f"file URIs with a remote host are not supported: file://{rest}")
    return "/" + path


def _normalize_local(path: str, base_dir: str | None) -> str:
    base = base_dir if base_dir is not None else os.getcwd()
    normalized = posixpath.normpath(os.path.join(base, os.path.expanduser(path)))
    return "/" + normalized.lstrip("/")


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

