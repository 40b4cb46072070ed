"""The manifest as a git revision had it: what `--changed-since REF` compares the working tree
with (lance_sync.plan.changes).

The same files are read (every `-f` file and the policy file) from the revision instead of
the working tree, each where git finds it there: at the same path, or at the path it was
renamed from (`git diff -M`). A file the revision does not have is an empty part of the
manifest there: its entries are all new. What git cannot tell leaves no revision to compare
with, so the plan covers everything (`Baseline.problem` says why): a file deleted or renamed
away since the revision that reads as a manifest (it may have been a part of it there), and
the first file in another folder than at the revision (relative paths resolve from it). Both
sides are kept as written (`RawManifest`): parsing the older manifest is all a comparison
needs, so a plan of a change does not validate a second manifest of 100,000 tables.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.model.backend_config import Identifier
from lance_sync.model.errors import LanceSyncError, ManifestError, ManifestErrors
from lance_sync.model.variables import Variable, resolved_variables

if TYPE_CHECKING:
    from lance_sync.manifest.loader import Document
    from lance_sync.manifest.parsing import Parsing

logger = logging.getLogger(__name__)

GIT_TIMEOUT_SECONDS = 60
#: top-level keys of a manifest or an overlay (but `version`, which other files have too): a
#: file deleted since the revision that has one may have been a part of the manifest there
MANIFEST_KEYS = frozenset({"owner", "backends", "namespaces", "tables", "storage", "spark", "policy"})
_MANIFEST_KEY = re.compile(rf"""\b({"|".join(sorted(MANIFEST_KEYS))})["']?\s*:""")


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
    #: the `${VAR}` references it resolved (lance_sync.model.variables.resolved_variables)
    variables: list[Variable] = field(default_factory=list, compare=False, repr=False)

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
    #: manifest there to compare with, or what it was cannot be told (then `problem` says why)
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
    return read_baseline(ref, paths, policy_file, environ)[0]


def read_baseline(ref: str, paths: Sequence[str], policy_file: str | None = None,
                  environ: Mapping[str, str] | None = None, meanwhile: Callable[[], None] | None = None
                  ) -> tuple[Baseline, Document | None]:
    """`load_baseline`, and the working tree's files parsed by the plain road and merged (None
    when one needs the full road): the load that follows takes them as they are
    (lance_sync.manifest.load_manifest's `document`). `meanwhile` runs while workers parse."""
    from lance_sync.manifest.parsing import Parsing

    folder = Path(paths[0]).resolve().parent
    revision = _git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                    problem=f"--changed-since {ref}: no such commit").strip()
    files = [*paths, *([policy_file] if policy_file else [])]
    found = find_files(folder, revision, files)
    contents = {path: text for path, text in zip(files, found.show(files), strict=True) if text is not None}
    working = {path: _read_bytes(path) for path in files}
    if (doubt := found.doubt(ref, paths[0])) is not None:
        with Parsing(environ, meanwhile) as parsing:
            parsing.start([(path, raw) for path, raw in working.items() if raw is not None])
            now, document = _read(parsing, working, list(paths), policy_file, {})
        return Baseline(ref, revision, None, now, doubt), document
    changed = {path: (contents[path], raw) for path, raw in working.items()
               if raw is not None and contents.get(path) not in (None, raw)}
    earlier = {path: before for path, (before, _) in changed.items()}
    with Parsing(environ, meanwhile) as parsing:
        # a file the revision has as it is now is parsed once, for both sides (and for the load);
        # a changed file is read from the parse of its earlier version where it can be: one an
        # earlier run parsed (the parse cache), else one parsed now, by the same worker process;
        # every other version of a file is parsed at once (in worker processes, when large),
        # the revision's first: its side is read while the working tree's files are still parsing
        for path, (before, raw) in changed.items():
            parsing.reparse_changed(path, before, raw)
        parsing.start([(path, raw) for path, raw in contents.items() if raw != working[path]]
                      + [(path, raw) for path, raw in working.items() if raw is not None],
                      earlier={(path, raw): before for path, (before, raw) in changed.items()})
        present = [p for p in paths if p in contents]
        if not present or all(working[path] == contents.get(path) for path in files):
            now, document = _read(parsing, working, list(paths), policy_file, earlier)
            if not present:
                return Baseline(ref, revision, None, now, f"the manifest did not exist at {ref}"), document
            return Baseline(ref, revision, now, now), document  # nothing changed
        try:
            then: RawManifest | None = _read(parsing, contents, present,
                                             policy_file if policy_file in contents else None, {},
                                             variables=False)[0]
            problem = None
        except (ManifestError, ManifestErrors) as error:
            then, problem = None, f"the manifest at {ref} does not read ({str(error).splitlines()[0]})"
        now, document = _read(parsing, working, list(paths), policy_file, earlier)
    return Baseline(ref, revision, then, now, problem), document


def raw_manifest(paths: list[str], policy_file: str | None = None,
                 environ: Mapping[str, str] | None = None) -> RawManifest:
    """The manifest files merged as written (a variable that is not set stays as written);
    ManifestError when a file is not YAML."""
    from lance_sync.manifest.parsing import Parsing

    files = [*paths, *([policy_file] if policy_file else [])]
    with Parsing(environ) as parsing:
        return _read(parsing, {path: _read_bytes(path) for path in files}, paths, policy_file, {})[0]


def _read(parsing: Parsing, versions: Mapping[str, bytes | None], paths: list[str], policy_file: str | None,
          earlier: Mapping[str, bytes], variables: bool = True) -> tuple[RawManifest, Document | None]:
    """The files of these versions merged as written, and that merge when the plain road read
    every file (else None); `earlier` the changed files' versions the revision has; with
    `variables`, the variables it resolved (the revision's are never shown)."""
    from lance_sync.manifest.merge import merge_documents

    documents = [_document(parsing, path, versions[path], earlier.get(path)) for path in paths]
    plain = all(not document.positions for document in documents)
    try:
        merged = merge_documents(documents)
    except FastPathUnavailable as unavailable:  # a key twice: the full road merges it
        logger.debug("%s: merged by the full road (%s)", ", ".join(paths), unavailable.reason)
        merged, plain = merge_documents([_full(parsing, path, versions[path]) for path in paths]), False
    policy = None if policy_file is None else _document(parsing, policy_file, versions[policy_file], None).data
    raw = _raw_manifest(merged.data, policy_file is not None, policy)
    if variables:
        environ = os.environ if parsing.environ is None else parsing.environ
        raw = replace(raw, variables=resolved_variables(merged.templates, environ))
    return raw, merged if plain else None


def _document(parsing: Parsing, path: str, raw: bytes | None, earlier: bytes | None) -> Document:
    """A file's document by the plain road, else by the full road (anchors, a variable not set...)."""
    if raw is not None:
        try:
            return parsing.document(path, raw, earlier)
        except FastPathUnavailable as unavailable:
            logger.debug("%s: read by the full road (%s)", path, unavailable.reason)
    return _full(parsing, path, raw)


def _full(parsing: Parsing, path: str, raw: bytes | None) -> Document:
    """A file's document by the full road, from `raw` (None: from the working tree, which
    says why it cannot be read); a variable that is not set stays as written."""
    from lance_sync.manifest.loader import load_document, reading_files_with

    with reading_files_with(lambda _: raw) if raw is not None else contextlib.nullcontext():
        return load_document(path, parsing.environ, allow_unset=True)


def _raw_manifest(data: Any, with_policy_file: bool, policy_file: Any) -> RawManifest:
    if not isinstance(data, dict):
        raise ManifestError("not a mapping", None)
    found = data.get("backends")
    backends: dict[str, Any] = found if isinstance(found, dict) else {}
    ids = IdReader(backends)
    namespaces = {key: entry for entry in _entries(data, "namespaces")
                  if (key := ids(entry.get("backend"), entry.get("id"))) is not None}
    tables = _by_name(_entries(data, "tables"))
    policy = (data.get("policy"), policy_file) if with_policy_file else data.get("policy")
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


def _read_bytes(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


@dataclass(frozen=True)
class RevisionFiles:
    """Where a revision has the manifest's files, as git finds them (`find_files`)."""

    revision: str
    #: the repository's top folder
    top: Path
    #: each file (as given) -> its path in the revision (from the top folder), None outside the repository
    paths: dict[str, str | None]
    #: files the revision has that the working tree deleted or renamed to none of the files
    gone: list[str]

    def show(self, files: Sequence[str]) -> list[bytes | None]:
        """Each file's bytes at the revision; None where the revision does not have it."""
        paths = [path for file in files if (path := self.paths[file]) is not None]
        shown = dict(zip(paths, _show_all(self.top, self.revision, paths), strict=True))
        return [None if (path := self.paths[file]) is None else shown[path] for file in files]

    def doubt(self, ref: str, first: str) -> str | None:
        """Why the manifest at the revision cannot be told, if it cannot: a file gone since
        then that reads as a manifest may have been a part of it; relative paths resolve from
        the first file's folder, which moved."""
        for path, raw in zip(self.gone, _show_all(self.top, self.revision, self.gone), strict=True):
            if _reads_as_manifest(raw):
                return f"{path} was deleted or renamed since {ref} and may have been part of the manifest there"
        now, then = _in_repository(self.top, first), self.paths[first]
        if now is not None and then is not None and Path(now).parent != Path(then).parent:
            return (f"the manifest's first file was in {Path(then).parent.as_posix()}/ at {ref} "
                    "(relative paths resolve from its folder)")
        return None


def find_files(folder: Path, revision: str, files: Sequence[str]) -> RevisionFiles:
    """Where `revision` has each of `files`: at the path it had before a rename git detects
    (`git diff -M` from the revision to the working tree), else at its own path; and which
    files the revision has that were deleted since, or renamed to none of `files`."""
    top = Path(_git(folder, "rev-parse", "--show-toplevel", problem="git rev-parse failed").strip())
    fields = _git(top, "diff", "-M", "--name-status", "-z", revision, "--",
                  problem=f"git diff {revision} failed").split("\0")
    renamed: dict[str, str] = {}
    gone: list[str] = []
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status[:1] in ("R", "C"):
            renamed[fields[i + 2]] = fields[i + 1]
            i += 3
            continue
        if status[:1] == "D":
            gone.append(fields[i + 1])
        i += 2
    mine = {file: _in_repository(top, file) for file in files}
    paths = {file: None if path is None else renamed.get(path, path) for file, path in mine.items()}
    gone += [before for after, before in renamed.items() if after not in mine.values()]
    return RevisionFiles(revision, top, paths, [path for path in gone if path not in paths.values()])


def _in_repository(top: Path, file: str) -> str | None:
    try:
        return Path(file).resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        return None


def _reads_as_manifest(raw: bytes | None) -> bool:
    """A YAML (or JSON) mapping with a key of a manifest (`MANIFEST_KEYS`)."""
    import yaml

    try:
        text = raw.decode() if raw is not None else ""
    except UnicodeDecodeError:
        return False
    if _MANIFEST_KEY.search(text) is None:  # most files are not worth parsing
        return False
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError):
        return False
    return isinstance(data, dict) and not MANIFEST_KEYS.isdisjoint(data)


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


def _show_all(top: Path, revision: str, paths: list[str]) -> list[bytes | None]:
    """Files' bytes at a revision (`paths` from the repository's top folder), in one git
    process; None where the revision does not have one."""
    if not paths:
        return []
    request = "".join(f"{revision}:{path}\n" for path in paths).encode()
    result = subprocess.run(["git", "-C", str(top), "cat-file", "--batch"], input=request, capture_output=True,
                            timeout=GIT_TIMEOUT_SECONDS)
    if result.returncode != 0:
        raise LanceSyncError(f"--changed-since: git cat-file failed: {result.stderr.decode(errors='replace').strip()}")
    output = result.stdout
    found: list[bytes | None] = []
    at = 0
    for _ in paths:
        end = output.index(b"\n", at)
        header = output[at:end].split()
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found.append(output[end + 1:end + 1 + size])
            at = end + 2 + size
        else:  # "<name> missing", or not a file
            found.append(None)
            at = end + 1
    return found
