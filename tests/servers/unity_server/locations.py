"""Storage locations normalized as UC OSS's NormalizedURL does.

UC parses a location as a java.net.URI (so spaces, quotes and a bare `%` are
refused), normalizes its path (`.`/`..` and repeated slashes), drops trailing
slashes, turns local paths into `file:///` URIs and accepts only the schemes
s3, gs, abfs, abfss and file.
"""

from __future__ import annotations

import os
import posixpath
import re
import urllib.parse

from tests.servers.unity_server.errors import UcError

CLOUD_SCHEMES = ("s3", "gs", "abfs", "abfss")
MANAGED_STORAGE_PREFIX = "__unitystorage"

_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
# Characters java.net.URI refuses anywhere in a URI ("[" and "]" only fit an IPv6 host).
_ILLEGAL_URI_CHARACTER = re.compile(r'[\x00-\x20\x7f"<>\\^`{|}\[\]]|%(?![0-9A-Fa-f]{2})')
# What java.nio's Path.toUri() leaves unescaped in a local path.
_PATH_SAFE = "/-_.!~*'()@:&=+$,;"


def normalize_location(location: str | None) -> str:
    """A location as UC stores and returns it; UcError(INVALID_ARGUMENT) when UC refuses it."""
    if location is None or not location.strip():
        raise UcError("INVALID_ARGUMENT", "Path cannot be null or empty")
    if "/" not in location:
        raise UcError("INVALID_ARGUMENT", f"Ambiguous path: {location}")
    if _ILLEGAL_URI_CHARACTER.search(location) or location.count("#") > 1:
        raise UcError("INVALID_ARGUMENT", f"Unsupported path: {location}")
    scheme = _scheme_of(location)
    if scheme is None:
        absolute = posixpath.normpath(os.path.abspath(location))
        return "file://" + _strip_slashes(urllib.parse.quote(absolute, safe=_PATH_SAFE))
    if scheme == "file":
        return "file://" + _strip_slashes(_normalized_hierarchy(location[len("file:"):]))
    if scheme in CLOUD_SCHEMES:
        normalized = f"{scheme}:" + _normalized_hierarchy(location[len(scheme) + 1:])
        return normalized.rstrip("/") or normalized
    raise UcError("INVALID_ARGUMENT", f"Unsupported URI scheme: {scheme}")


def is_cloud_storage_root(location: str) -> bool:
    """True for a whole bucket or container, such as `s3://bucket`."""
    scheme = _scheme_of(location)
    if scheme not in CLOUD_SCHEMES:
        return False
    path = urllib.parse.unquote(urllib.parse.urlsplit(location).path)
    return path.strip("/") == ""


def managed_storage(storage_root: str | None, kind: str, entity_id: str) -> tuple[str | None, str | None]:
    """A catalog's or schema's (storage_root, storage_location), as UC derives them.

    `kind` is "catalogs" or "schemas"; UC places managed storage at
    `{root}/__unitystorage/{kind}/{id}`.
    """
    if storage_root is None:
        return None, None
    root = normalize_location(storage_root)
    refuse_managed_storage_prefix(root)
    return root, normalize_location(f"{root}/{MANAGED_STORAGE_PREFIX}/{kind}/{entity_id}")


def refuse_managed_storage_prefix(location: str) -> None:
    if MANAGED_STORAGE_PREFIX in location:
        raise UcError(
            "INVALID_ARGUMENT",
            f"Input path '{location}' contains managed storage prefix {MANAGED_STORAGE_PREFIX}.",
        )


def _scheme_of(location: str) -> str | None:
    match = _SCHEME.match(location)
    return match.group(1) if match else None


def _normalized_hierarchy(rest: str) -> str:
    """`//authority/path?query#fragment` with its path normalized like java.net.URI."""
    authority = ""
    if rest.startswith("//"):
        end = len(rest)
        for delimiter in "/?#":
            position = rest.find(delimiter, 2)
            if position != -1:
                end = min(end, position)
        authority, rest = rest[:end], rest[end:]
    path, separator, tail = _partition_path(rest)
    return authority + _normalize_path(path) + separator + tail


def _partition_path(rest: str) -> tuple[str, str, str]:
    for delimiter in "?#":
        path, separator, tail = rest.partition(delimiter)
        if separator:
            return path, separator, tail
    return rest, "", ""


def _normalize_path(path: str) -> str:
    """Remove `.` and `..` segments and repeated slashes, keeping a trailing slash."""
    if not path:
        return path
    segments: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == ".." and segments and segments[-1] != "..":
            segments.pop()
        else:
            segments.append(segment)
    leading = "/" if path.startswith("/") else ""
    trailing = "/" if path.endswith("/") and segments else ""
    return leading + "/".join(segments) + trailing


def _strip_slashes(text: str) -> str:
    """UC's removeExtraSlashes: at most one leading slash, no trailing slashes."""
    if len(text) <= 1:
        return text
    stripped = text.lstrip("/")
    if len(stripped) < len(text):
        stripped = "/" + stripped
    return stripped.rstrip("/") or stripped[:1]
