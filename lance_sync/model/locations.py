"""Table locations: one spelling per place, so equal places compare equal everywhere
(manifest checks, the planner, verify and discover, the drivers). HMS answers `file:/x`
for `file:///x`; both are `/x` here.
"""

from __future__ import annotations

import bisect
import itertools
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter, methodcaller
from typing import Generic, TypeVar
from urllib.parse import unquote

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
T = TypeVar("T")


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
    if _is_normal_local(location):
        return location
    if location.startswith("file:///") and "%" not in location and _is_normal_local(location[7:]):
        return location[7:]  # as a catalog stores a local path (Unity, Iceberg): nothing to unquote
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


def _is_normal_local(location: str) -> bool:
    """True for an absolute local path that normalizing leaves as it is (most locations a
    catalog answers), checked much faster than normalizing: no repeated slash, no part that
    starts with a dot (which rules out `.` and `..`, and sends the rare `.hidden` the slow
    way), no trailing slash or white space."""
    return (location.startswith("/") and "//" not in location and "/." not in location
            and not location.endswith("/") and not location[-1].isspace())


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


# --- locations as the filesystem resolves them ---------------------------------------------------
#
# A symbolic link gives one folder two spellings (`./lake/alias/a.lance` and `./lake/data/a.lance`
# when `alias` links to `data`). Text alone cannot see that they are one place, so one asset per
# path, "nothing else registered points at it" and deletions compare local locations resolved;
# object-store locations have no links and stay as they are.


def resolved_location(location: str) -> str:
    """A normalized location as the filesystem resolves it: a local path with every symbolic
    link on it resolved, as far as the path exists (os.path.realpath); any other as it is."""
    return os.path.realpath(location) if is_local(location) else location


class LocationResolver:
    """`resolved_location` for many locations, each folder resolved and listed once (a plan holds
    up to hundreds of thousands of locations, most in a few folders): a location resolves to its
    folder's resolved path and its own name, unless that name is itself a link."""

    def __init__(self) -> None:
        #: folder -> (its resolved path, the names of the links directly in it)
        self._folders: dict[str, tuple[str, frozenset[str]]] = {}

    def __call__(self, location: str) -> str:
        if not location.startswith("/"):  # an object store's (normalized: local paths are absolute)
            return location
        folder, _, name = location.rpartition("/")
        real, links = self._folder(folder)
        if name in links:
            return os.path.realpath(location)
        return location if real == (folder or "/") else posixpath.join(real, name)

    def keeps(self, folder: str) -> bool:
        """Whether every location directly in `folder` (as `str.rpartition` cuts it) resolves
        to itself: an object store's, or a local folder without links on its path or in it."""
        if not folder.startswith("/") and folder:
            return True
        real, links = self._folder(folder)
        return real == (folder or "/") and not links

    def _folder(self, folder: str) -> tuple[str, frozenset[str]]:
        known = self._folders.get(folder)
        if known is None:
            path = folder or "/"
            known = self._folders[folder] = (os.path.realpath(path), _links_in(path))
        return known


def _links_in(folder: str) -> frozenset[str]:
    """The names of the symbolic links directly in `folder` (none when it cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            return frozenset(entry.name for entry in entries if entry.is_symlink())
    except OSError:
        return frozenset()


def _folders_of(locations: Iterable[str]) -> set[str]:
    """The folders directly holding these locations, each cut at its last "/" (one pass in C)."""
    return set(map(itemgetter(0), map(str.rpartition, locations, itertools.repeat("/"))))


def resolved_locations(locations: Sequence[str]) -> list[str]:
    """`resolved_location` of each of these normalized locations; the locations themselves, at
    the cost of one look at each folder, when no link is on their way (the usual answer)."""
    resolve = LocationResolver()
    if all(map(resolve.keeps, _folders_of(locations))):
        return list(locations)
    return list(map(resolve, locations))


def link_target(location: str) -> str | None:
    """What a local location that is itself a symbolic link points at; None for any other.
    Such a location is never deleted: deleting through it would delete the files it points at."""
    if is_local(location) and os.path.islink(location):
        return os.readlink(location)
    return None


def resolution_note(*pairs: tuple[str, str]) -> str:
    """' once symbolic links are resolved (A is B)' for the (location, resolved) pairs that
    resolve elsewhere; '' when none does."""
    moved = [f"{written} is {resolved}" for written, resolved in pairs if written != resolved]
    return f" once symbolic links are resolved ({'; '.join(moved)})" if moved else ""


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


def overlap(first: str, second: str) -> bool:
    """Equal, or one inside the other (both normalized): one asset per path forbids it."""
    return is_within(first, second) or is_within(second, first)


def overlap_relation(location: str, other: str) -> str:
    """How `location` overlaps `other`, in words: 'is', 'lies inside' or 'contains'."""
    if location.rstrip("/") == other.rstrip("/"):
        return "is"
    return "lies inside" if is_within(location, other) else "contains"


def nested(locations: Sequence[str]) -> Iterator[tuple[int, int]]:
    """(i, j) for each location i that is location j or lies inside it (all normalized), j
    the innermost such location before i in path order: one asset per path forbids each. One
    sort, not a comparison of every pair."""
    if _apart(locations):
        return
    # in the order of their paths' parts: "/" made the lowest character sorts as the lists of
    # parts would (a path holds no NUL), without a list per location
    keys = [location.replace("/", "\0") for location in locations]
    open_ancestors: list[int] = []
    for index in sorted(range(len(keys)), key=keys.__getitem__):
        key = keys[index]
        while open_ancestors and not _key_within(key, keys[open_ancestors[-1]]):
            open_ancestors.pop()
        if open_ancestors:
            yield index, open_ancestors[-1]
        open_ancestors.append(index)


def overlapping(locations: Sequence[str]) -> bool:
    """Whether `nested` finds any pair, found faster: in path order, the first location that
    lies in (or is) another comes right after one it lies in, so comparing each location with
    the one before it is enough."""
    if _apart(locations):
        return False
    keys = sorted([location.replace("/", "\0") for location in locations])
    if len(set(keys)) < len(keys):  # one location twice
        return True
    roots = [key.rstrip("\0") + "\0" for key in keys[:-1]]
    return any(map(str.startswith, keys[1:], roots))


def _apart(locations: Sequence[str]) -> bool:
    """True when no location is another or lies inside another (all normalized), found without
    sorting them: a location that holds another is a folder on the way to it, and the folders on
    the way to a large manifest's locations are few. False when that cannot tell (a location
    ending in "/"): the callers then compare them in path order."""
    if any(map(methodcaller("endswith", "/"), locations)):
        return False
    distinct = set(locations)
    if len(distinct) < len(locations):
        return False
    on_the_way: set[str] = set()
    for folder in _folders_of(locations):
        while folder and folder not in on_the_way:
            on_the_way.add(folder)
            folder = folder.rpartition("/")[0]
    return distinct.isdisjoint(on_the_way)


def _key_within(key: str, root: str) -> bool:
    """`is_within` for locations whose "/" are NUL (`nested`)."""
    root = root.rstrip("\0")
    return key == root or key.startswith(root + "\0")


class LocationIndex(Generic[T]):
    """Items by normalized location, to find those at, inside or around a location without
    comparing it with every other one (a plan holds up to hundreds of thousands)."""

    def __init__(self, items: Iterable[tuple[str, T]]):
        self._at: dict[str, list[T]] = {}
        for location, item in items:
            self._at.setdefault(location.rstrip("/") or "/", []).append(item)
        self._sorted = sorted(self._at)

    def __bool__(self) -> bool:
        return bool(self._at)

    def overlapping(self, location: str) -> list[T]:
        """The items at `location`, inside it, or at a location that contains it."""
        location = location.rstrip("/") or "/"
        found = list(self._at.get(location, []))
        prefix = location + "/" if location != "/" else "/"
        index = bisect.bisect_left(self._sorted, prefix)
        while index < len(self._sorted) and self._sorted[index].startswith(prefix):
            found += self._at[self._sorted[index]]
            index += 1
        for ancestor in _ancestors(location):
            found += self._at.get(ancestor, [])
        return found


def _ancestors(location: str) -> Iterator[str]:
    """`/a/b/c` -> `/a/b`, `/a`, `/`; `s3://bucket/a/b` -> `s3://bucket/a`, `s3://bucket`."""
    match = _SCHEME.match(location)
    head, rest = (location[:match.end()], location[match.end():]) if match else ("", location)
    while "/" in rest.strip("/"):
        rest = rest.rstrip("/").rsplit("/", 1)[0]
        yield head + rest
    if not head and location != "/":
        yield "/"



# --- how paths are shown to people ---------------------------------------------------------------
#
# Plans, reports and pull-request comments show a local location under the manifest's folder
# the way a manifest writes it, relative to that folder (`./lakehouse/orders.lance`), so they
# read the same on every machine; JSON output keeps absolute locations. Files a user types
# back (manifests, saved and rollback plans, journals) are shown relative to the working
# directory when they are below it.

#: a folder's path in text is replaced only where a path starts (not inside another path)
#: and where the folder's name ends (not /data inside /database)
_PATH_START = r"(?<![\w./-])"
_NAME_END = r"(?![\w.-])"


def manifest_relative(location: str, base_dir: str | None) -> str:
    """`location` relative to the manifest's folder (`./data/t.lance`) when it lies below it."""
    if base_dir is None or not is_local(location):
        return location
    inside = relative_to(location, base_dir)
    if inside is not None:
        return "./" + inside
    return "." if normalize_location(location) == normalize_location(base_dir) else location


def with_manifest_relative_paths(text: str, base_dir: str | None) -> str:
    """`text` with every absolute path below `base_dir` written as `manifest_relative` does."""
    folder = (base_dir or "").rstrip("/")
    if not folder:
        return text
    return re.sub(_PATH_START + re.escape(folder) + _NAME_END, ".", text)


def shown_path(path: str | os.PathLike) -> str:
    """A file path relative to the working directory when it is below it, else absolute."""
    absolute = os.path.abspath(path)
    inside = os.path.relpath(absolute)
    return absolute if inside == ".." or inside.startswith(".." + os.sep) else inside
