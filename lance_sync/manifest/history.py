"""The manifest as a git revision had it: what `--changed-since REF` compares the working tree
with (lance_sync.plan.changes).

The same files are read (every `-f` file and the policy file), at the same paths, from the
revision instead of the working tree, so relative text reads the same. A file the revision
does not have is an empty part of the manifest there: its entries are all new. Both sides are
kept as written (`RawManifest`): parsing the older manifest is all a comparison needs, so a
plan of a change does not validate a second manifest of 100,000 tables.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lance_sync.model.backend_config import Identifier
from lance_sync.model.errors import LanceSyncError, ManifestError, ManifestErrors

GIT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class RawManifest:
    """A manifest's entries as written (variables resolved, nothing validated), keyed as the
    planner compares them: what `--changed-since` diffs, so the older manifest is only parsed."""

    owner: Any = None
    storage: Any = None
    spark: Any = None
    #: the manifest's `policy:` and the policy file's, as written
    policy: Any = None
    backends: dict[str, Any] = field(default_factory=dict)
    namespaces: dict[tuple[str, Identifier], Any] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)
    #: reads ids as this manifest's backends write them
    ids: IdReader = field(default_factory=lambda: IdReader({}), compare=False, repr=False)

    def registrations(self, names: Iterable[str]) -> set[tuple[str, Identifier]]:
        """The registrations (backend, table id) of the tables `names`, as written (one in a
        backend that is not there or not known is left out: its change widens the plan)."""
        found = set()
        for name in names:
            registrations = self.tables.get(name, {}).get("register")
            for item in registrations if isinstance(registrations, list) else []:
                if isinstance(item, dict) and (key := self.ids(item.get("backend"), item.get("namespace"))) is not None:
                    found.add((key[0], (*key[1], str(item.get("name") or name))))
        return found


class IdReader:
    """(backend, id as written) -> (backend, names), or None where the backend is not there or
    not known; worked out once per backend and id (a large manifest registers many tables in
    each namespace)."""

    def __init__(self, backends: dict[str, Any]):
        self.backends = backends
        self.known: dict[tuple[str, str], tuple[str, Identifier] | None] = {}

    def __call__(self, backend: Any, raw_id: Any) -> tuple[str, Identifier] | None:
        if isinstance(backend, str) and isinstance(raw_id, str):
            key = (backend, raw_id)
            if key not in self.known:
                self.known[key] = self._parsed(backend, raw_id)
            return self.known[key]
        return self._parsed(backend, raw_id)

    def _parsed(self, backend: Any, raw_id: Any) -> tuple[str, Identifier] | None:
        from lance_sync.drivers import backend_rules

        entry = self.backends.get(backend) if isinstance(backend, str) else None
        backend_type = entry.get("type") if isinstance(entry, dict) else None
        try:
            rules = backend_rules(backend_type) if isinstance(backend_type, str) else None
        except (LanceSyncError, KeyError, TypeError):
            rules = None
        if rules is None or not isinstance(raw_id, str | list):
            return None
        return backend, rules.parse_identifier(raw_id)


@dataclass(frozen=True)
class Baseline:
    """What a plan limited to the changes since a revision compares with."""

    #: as the user wrote it ('origin/main', a tag, a sha)
    ref: str
    #: the commit it names
    revision: str
    #: the manifest there, and the working tree's, as written; `then` None when there is no
    #: manifest there to compare with (then `problem` says why)
    then: RawManifest | None
    now: RawManifest = field(default_factory=RawManifest)
    problem: str | None = None

    @property
    def shown(self) -> str:
        """'origin/main (1a2b3c4)'."""
        short = self.revision[:7]
        return self.ref if self.ref.startswith(short) else f"{self.ref} ({short})"


def load_baseline(ref: str, paths: Sequence[str], policy_file: str | None = None,
                  environ: Mapping[str, str] | None = None) -> Baseline:
    """The manifest of `paths` (and `policy_file`) at git revision `ref`, and the working
    tree's, as written. LanceSyncError when the files are not in a git repository or `ref`
    names no commit."""
    from lance_sync.manifest.loader import reading_files_with
    from lance_sync.manifest.parse_once import (
        parse_ahead,
        parsing_files_once,
        parsing_once,
        reparse_changed,
    )

    folder = Path(paths[0]).resolve().parent
    revision = _git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                    problem=f"--changed-since {ref}: no such commit").strip()
    files = [*paths, *([policy_file] if policy_file else [])]
    contents = {path: text for path in files if (text := _show_if_there(revision, Path(path))) is not None}
    working = {path: _read_bytes(path) for path in files}
    changed = {path: (contents[path], raw) for path, raw in working.items()
               if raw is not None and contents.get(path) not in (None, raw)}
    with parsing_once() if not parsing_files_once() else contextlib.nullcontext():
        # a file the revision has as it is now is parsed once, for both sides (and for the load);
        # a changed file is read from the parse of its earlier version where it can be: one an
        # earlier run parsed (the parse cache), else one parsed now, by the same worker process;
        # every other version of a file is parsed at once (in worker processes, when large),
        # the revision's first: its side is read while the working tree's files are still parsing
        for path, (earlier, raw) in changed.items():
            reparse_changed(path, earlier, raw, environ)
        parse_ahead([(path, raw) for path, raw in contents.items() if raw != working[path]]
                    + [(path, raw) for path, raw in working.items() if raw is not None], environ,
                    earlier={(path, raw): earlier for path, (earlier, raw) in changed.items()})
        present = [p for p in paths if p in contents]
        if not present:
            return Baseline(ref, revision, None, raw_manifest(list(paths), policy_file, environ),
                            f"the manifest did not exist at {ref}")
        if all(working[path] == contents.get(path) for path in files):
            now = raw_manifest(list(paths), policy_file, environ)
            return Baseline(ref, revision, now, now)  # nothing changed
        try:
            with reading_files_with(lambda path: contents[_key(path, contents)]):
                then: RawManifest | None = raw_manifest(present, policy_file if policy_file in contents else None,
                                                        environ)
            problem = None
        except (ManifestError, ManifestErrors) as error:
            then, problem = None, f"the manifest at {ref} does not read ({str(error).splitlines()[0]})"
        for path, (earlier, raw) in changed.items():  # the files no worker reads: from the revision's parse
            reparse_changed(path, earlier, raw, environ)
        now = raw_manifest(list(paths), policy_file, environ)
    return Baseline(ref, revision, then, now, problem)


def raw_manifest(paths: list[str], policy_file: str | None = None,
                 environ: Mapping[str, str] | None = None) -> RawManifest:
    """The manifest files merged as written (a variable that is not set stays as written);
    ManifestError when a file is not YAML."""
    from lance_sync.manifest.loader import NotPlain, load_document
    from lance_sync.manifest.merge import merge_documents
    from lance_sync.manifest.parse_once import load_plain_document, load_plain_documents

    def read(path: str) -> Any:
        try:
            return load_plain_document(path, environ)
        except NotPlain:  # anchors, a variable not set...: the full road reads it all
            return load_document(path, environ, allow_unset=True)

    try:
        try:
            documents = load_plain_documents(paths, environ)
        except NotPlain:
            documents = [read(path) for path in paths]
        data = merge_documents(documents).data
    except NotPlain:  # a key twice: the full road merges it
        data = merge_documents([load_document(path, environ, allow_unset=True) for path in paths]).data
    if not isinstance(data, dict):
        raise ManifestError("not a mapping", None)
    found = data.get("backends")
    backends: dict[str, Any] = found if isinstance(found, dict) else {}

    ids = IdReader(backends)
    namespaces = {key: entry for entry in _entries(data, "namespaces")
                  if (key := ids(entry.get("backend"), entry.get("id"))) is not None}
    tables = _by_name(_entries(data, "tables"))
    policy = data.get("policy")
    if policy_file is not None:
        policy = (policy, read(policy_file).data)
    return RawManifest(owner=data.get("owner"), storage=data.get("storage"), spark=data.get("spark"), policy=policy,
                       backends=dict(backends), namespaces=namespaces, tables=tables, ids=ids)


def _entries(data: dict, section: str) -> list[dict]:
    entries = data.get(section)
    if not isinstance(entries, list):
        return []
    return entries if set(map(type, entries)) <= {dict} else [entry for entry in entries if isinstance(entry, dict)]


def _by_name(tables: list[dict]) -> dict[str, Any]:
    """Table entries by name as text (names read in one pass: a million in a large manifest)."""
    names: list[Any] = [entry.get("name") for entry in tables]
    if not set(map(type, names)) <= {str}:
        names = [str(name) for name in names]
    return dict(zip(names, tables, strict=True))


def _key(path: Path, contents: dict[str, bytes]) -> str:
    """The given path a reader asks for by its resolved form."""
    return next(given for given in contents if Path(given).resolve() == Path(path).resolve())


def _read_bytes(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _show_if_there(revision: str, path: Path) -> bytes | None:
    try:
        return _show(revision, path)
    except FileNotFoundError:
        return None


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
