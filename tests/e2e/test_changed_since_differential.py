"""`--changed-since` against the full plan, over random git histories: a plan of the changes
never shows less than apply does.

Each history is a split manifest (a base, table files, overlays) committed and applied, then a
second revision made of random edits: tables added, removed, renamed with and without
`renamed_from`, moved between files and between namespaces, their properties changed, a
value shared through a YAML anchor changed, an overlay's values changed, a namespace removed,
table files renamed with `git mv` (or moved
without telling git) and deleted, overlays added and removed, the backend's key renamed, a
namespace's entry moved to another file; committed, staged, or left in the working tree. The
plan since the first revision must then hold every action of the full plan, as the full plan
has it, or list it as left out (a plan widened to everything holds them all), and hold no
action the full plan does not. The `dir` backend runs in the quick lane, the Glue server
(moto) in the servers lane; the seed is printed, and LANCE_SYNC_DIFFERENTIAL_SEED replays one.
"""

from __future__ import annotations

import copy
import functools
import os
import random
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from lance_sync import api
from lance_sync.model.actions import Plan
from lance_sync.model.errors import LanceSyncError
from tests.conformance.harness_glue import GlueHarness
from tests.support.catalogs import GLUE_KEY_VARIABLE, GLUE_SECRET_VARIABLE, glue_env

SEED = int(os.environ.get("LANCE_SYNC_DIFFERENTIAL_SEED", "46"))
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
#: a value that several tables share through a YAML anchor (`&shared` ... `*shared`)
SHARED = "shared"


@dataclass
class Table:
    name: str
    #: its location's name: a rename keeps it
    data: str
    namespace: str
    #: the file that declares it
    file: str
    #: its properties, or SHARED
    properties: dict[str, str] | str = field(default_factory=dict)
    renamed_from: str | None = None


@dataclass
class Revision:
    """A manifest as the random edits see it: rendered to files by `Repo.write`."""

    backend: str = "lake"
    #: declared namespace -> the file that declares it
    namespaces: dict[str, str] = field(default_factory=dict)
    #: the table files, then the overlays, in the order they are given with -f
    files: list[str] = field(default_factory=list)
    overlays: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    #: overlay -> (table's data name -> properties the overlay sets on it)
    patches: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    shared: dict[str, str] = field(default_factory=lambda: {"tier": "gold"})

    def paths(self) -> list[str]:
        return ["base.yaml", *self.files, *self.overlays]


class Repo:
    """One git repository, one catalog applied at its first revision; histories branch from it."""

    def __init__(self, root: Path, backend: dict[str, Any], namespace_id: Callable[[str], list[str]], owner: str):
        self.root, self.backend, self.namespace_id, self.owner = root, backend, namespace_id, owner
        root.mkdir(parents=True)
        self.git("init", "-q")
        (root / ".gitignore").write_text("data/\nlake/\n.lance-sync/\n")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.root, env=GIT_ENV, check=True, capture_output=True,
                              text=True).stdout

    def write(self, revision: Revision) -> None:
        shared = dict(revision.shared)  # one object per file: its tables alias it
        base: dict[str, Any] = {"version": 1, "owner": self.owner, "backends": {revision.backend: self.backend}}
        documents: dict[str, dict[str, Any]] = {"base.yaml": base, **{f: {} for f in revision.paths()[1:]}}
        schema = [{"name": "id", "type": "int64"}]
        for namespace, file in revision.namespaces.items():
            documents[file].setdefault("namespaces", []).append(
                {"backend": revision.backend, "id": self.namespace_id(namespace)})
        for table in revision.tables:
            entry: dict[str, Any] = {"name": table.name, "location": f"./lake/data/{table.data}.lance", "register": [
                {"backend": revision.backend, "namespace": self.namespace_id(table.namespace)}], "schema": schema}
            if table.properties:
                entry["properties"] = shared if table.properties == SHARED else table.properties
            if table.renamed_from:
                entry["renamed_from"] = table.renamed_from
            documents[table.file].setdefault("tables", []).append(entry)
        names = {table.data: table.name for table in revision.tables}
        for overlay, patches in revision.patches.items():
            documents[overlay].setdefault("tables", []).extend(
                {"name": names[data], "properties": properties} for data, properties in patches.items() if data in names)
        for file, document in documents.items():
            (self.root / file).write_text(yaml.safe_dump(document, sort_keys=False))

    def files(self, revision: Revision) -> list[str]:
        return [str(self.root / path) for path in revision.paths()]


# --- the first revision and the random edits ---------------------------------------------------

def first_revision(rng: random.Random) -> Revision:
    revision = Revision(namespaces={"hr": "base.yaml", "ops": "base.yaml"}, files=["a.yaml", "b.yaml"])
    for i in range(rng.randint(3, 6)):
        properties: list[dict[str, str] | str] = [{}, SHARED, {"tier": f"p{i}"}]
        revision.tables.append(Table(f"t{i}", f"d{i}", rng.choice(["hr", "ops"]), rng.choice(revision.files),
                                     rng.choice(properties)))
    if rng.random() < 0.4:
        revision.overlays.append("prod.overlay.yaml")
        revision.patches["prod.overlay.yaml"] = {revision.tables[0].data: {"env": "prod"}}
    return revision


@dataclass
class Edit:
    """What the edits do to the files, in order, before the second revision is written:
    ("mv", old, new) with `git mv`, ("move", old, new) without telling git (which then sees
    a deletion), ("rm", file) with `git rm`."""

    files: list[tuple[str, ...]] = field(default_factory=list)

    def carry_out(self, repo: Repo) -> None:
        for operation, *paths in self.files:
            tracked = subprocess.run(["git", "ls-files", "--error-unmatch", paths[0]], cwd=repo.root,
                                     capture_output=True).returncode == 0
            if operation == "mv" and tracked:
                repo.git("mv", *paths)
            elif operation == "rm" and tracked:
                repo.git("rm", "-q", "-f", paths[0])
            elif operation == "rm":
                (repo.root / paths[0]).unlink(missing_ok=True)
            else:
                (repo.root / paths[0]).rename(repo.root / paths[1])


def edit(rng: random.Random, revision: Revision, serial: list[int], changes: Edit) -> str:
    """One random edit of `revision`; its name."""
    kinds = list(EDITS)
    while True:
        kind = rng.choice(kinds)
        if EDITS[kind](rng, revision, serial, changes) is not False:
            return kind


def add_table(rng, revision, serial, edit):
    serial[0] += 1
    file = rng.choice(revision.files + revision.overlays) if revision.files else "base.yaml"
    revision.tables.append(Table(f"n{serial[0]}", f"n{serial[0]}", rng.choice(list(revision.namespaces) or ["hr"]),
                                 file, rng.choice([{}, SHARED])))
    revision.namespaces.setdefault(revision.tables[-1].namespace, "base.yaml")


def remove_table(rng, revision, serial, edit):
    if not revision.tables:
        return False
    revision.tables.remove(rng.choice(revision.tables))


def rename_table(rng, revision, serial, edit):
    if not revision.tables:
        return False
    table = rng.choice(revision.tables)
    serial[0] += 1
    if rng.random() < 0.5 and table.renamed_from is None:
        table.renamed_from = table.name
    table.name = f"{table.name}_r{serial[0]}"


def move_table(rng, revision, serial, edit):
    if not revision.tables:
        return False
    table = rng.choice(revision.tables)
    if rng.random() < 0.5:
        table.file = rng.choice(revision.files + ["base.yaml"])
    else:
        table.namespace = rng.choice([ns for ns in ["hr", "ops", "fin"] if ns != table.namespace])
        revision.namespaces.setdefault(table.namespace, rng.choice(["base.yaml", *revision.files]))


def change_properties(rng, revision, serial, edit):
    if rng.random() < 0.5:
        revision.shared = {"tier": rng.choice(["gold", "silver", "bronze"]), "n": str(serial[0])}
        serial[0] += 1
    elif revision.tables:
        rng.choice(revision.tables).properties = rng.choice([{}, SHARED, {"tier": "x"}])


def rename_file(rng, revision, serial, edit):
    if not revision.files:
        return False
    old = rng.choice(revision.files)
    serial[0] += 1
    new = f"moved{serial[0]}.yaml"
    revision.files[revision.files.index(old)] = new
    for table in revision.tables:
        table.file = new if table.file == old else table.file
    revision.namespaces = {ns: new if file == old else file for ns, file in revision.namespaces.items()}
    edit.files.append(("mv" if rng.random() < 0.8 else "move", old, new))


def delete_file(rng, revision, serial, edit):
    if not revision.files:
        return False
    gone = rng.choice(revision.files)
    revision.files.remove(gone)
    revision.tables = [table for table in revision.tables if table.file != gone]
    for namespace, file in list(revision.namespaces.items()):
        if file == gone:
            revision.namespaces[namespace] = "base.yaml"
    edit.files.append(("rm", gone))


def add_overlay(rng, revision, serial, edit):
    serial[0] += 1
    overlay = f"env{serial[0]}.overlay.yaml"
    revision.overlays.append(overlay)
    if revision.tables:
        revision.patches[overlay] = {rng.choice(revision.tables).data: {"env": overlay[:5]}}
    if rng.random() < 0.5:
        revision.tables.append(Table(f"o{serial[0]}", f"o{serial[0]}", rng.choice(list(revision.namespaces)), overlay))


def remove_overlay(rng, revision, serial, edit):
    if not revision.overlays:
        return False
    gone = rng.choice(revision.overlays)
    revision.overlays.remove(gone)
    revision.patches.pop(gone, None)
    revision.tables = [table for table in revision.tables if table.file != gone]
    edit.files.append(("rm", gone))


def rename_backend(rng, revision, serial, edit):
    serial[0] += 1
    revision.backend = f"lake{serial[0]}"


def move_namespace_entry(rng, revision, serial, edit):
    if not revision.namespaces:
        return False
    namespace = rng.choice(list(revision.namespaces))
    revision.namespaces[namespace] = rng.choice(["base.yaml", *revision.files])


def remove_namespace(rng, revision, serial, edit):
    """A namespace leaves the manifest; its tables move to another one."""
    if len(revision.namespaces) < 2:
        return False
    gone = rng.choice(list(revision.namespaces))
    del revision.namespaces[gone]
    for table in revision.tables:
        table.namespace = next(iter(revision.namespaces)) if table.namespace == gone else table.namespace


def change_overlay(rng, revision, serial, edit):
    overlay = rng.choice(revision.overlays) if revision.overlays else None
    patched = [table for table in revision.tables if table.file != overlay]
    if overlay is None or not patched:
        return False
    serial[0] += 1
    revision.patches[overlay] = {rng.choice(patched).data: {"env": f"e{serial[0]}"}}


EDITS: dict[str, Callable[..., Any]] = {f.__name__: f for f in [
    add_table, remove_table, rename_table, move_table, change_properties, rename_file, delete_file, add_overlay,
    remove_overlay, change_overlay, rename_backend, move_namespace_entry, remove_namespace]}


# --- the comparison -----------------------------------------------------------------------------

def differences(partial: Plan, full: Plan) -> list[str]:
    """What the plan since the first revision hides or invents, against the full plan."""
    assert partial.partial is not None
    held = {action.key: action for action in partial.actions}
    listed = {omitted.key for omitted in partial.partial.omitted}
    problems = [f"hidden: {a.name} {a.backend}: {a.display_id}" for a in full.actions
                if a.key not in held and a.key not in listed]
    wanted = {action.key: action for action in full.actions}
    problems += [f"invented: {a.name} {a.backend}: {a.display_id}" for a in partial.actions if a.key not in wanted]
    problems += [f"differs: {a.name} {a.backend}: {a.display_id}" for a in partial.actions if a.key in wanted
                 and (a.verb, a.after, a.destroys) != (wanted[a.key].verb, wanted[a.key].after, wanted[a.key].destroys)]
    problems += [f"listed, not planned: {key}" for key in listed - wanted.keys()]
    return problems


def history(repo: Repo, first: Revision, rng: random.Random, serial: list[int]) -> tuple[list[str], str, str]:
    """One second revision of `first`, from its commit: what the plan since it gets wrong, the
    edits made, and how it went ('failed': the full plan failed, 'everything': the plan since
    the first revision widened to everything, 'partial')."""
    revision, changes = copy.deepcopy(first), Edit()
    names = [edit(rng, revision, serial, changes) for _ in range(rng.randint(1, 3))]
    changes.carry_out(repo)
    repo.write(revision)
    how = rng.choice(["commit", "stage", "leave"])
    if how != "leave":
        repo.git("add", "-A")
    if how == "commit":
        repo.git("commit", "-q", "--allow-empty", "-m", "second")
    files = repo.files(revision)
    described = f"{names} ({how})"
    try:
        full = api.plan(api.load(files))
    except LanceSyncError:  # a second revision that does not load or plan: the partial plan must not either
        with pytest.raises(LanceSyncError):
            state, baseline = api.load_changed(files, "first")
            api.plan(state, baseline=baseline)
        return [], described, "failed"
    state, baseline = api.load_changed(files, "first")
    partial = api.plan(state, baseline=baseline)
    assert partial.partial is not None
    whole = any(reason.endswith("everything is planned") for reason in partial.partial.widened)
    return differences(partial, full), described, "everything" if whole else "partial"


def run_histories(root: Path, backend: dict[str, Any], namespace_id: Callable[[int, str], list[str]], owner: str,
                  firsts: int, seconds: int, seed: int) -> None:
    """`firsts` first revisions applied, `seconds` second revisions of each compared; every
    repository (and its catalog objects: `namespace_id` takes its number) its own."""
    firsts = int(os.environ.get("LANCE_SYNC_DIFFERENTIAL_FIRSTS", firsts))
    print(f"differential seed {seed} (LANCE_SYNC_DIFFERENTIAL_SEED replays it)")
    rng = random.Random(seed)
    found: list[str] = []
    outcomes: Counter[str] = Counter()
    for number in range(firsts):
        repo = Repo(root / f"h{number}", backend, functools.partial(namespace_id, number), f"{owner}{number}")
        first = first_revision(rng)
        repo.write(first)
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", "first")
        repo.git("tag", "first")
        api.apply(api.load(repo.files(first)))
        serial = [100]
        for _ in range(seconds):
            problems, described, outcome = history(repo, first, rng, serial)
            outcomes[outcome] += 1
            found += [f"history {number} {described}: {problem}" for problem in problems]
            repo.git("reset", "-q", "--hard", "first")
            repo.git("clean", "-q", "-fd")
    print(f"{firsts * seconds} histories: {dict(outcomes)}")
    # the comparison proves something only where the plan stayed partial
    assert outcomes["partial"] * 3 >= firsts * seconds, (seed, outcomes)
    assert not found, f"seed {seed}:\n" + "\n".join(found[:20])


def test_plans_since_a_revision_hide_nothing_on_dir(tmp_path: Path):
    """The `dir` backend: 50 applied first revisions, 4 second revisions each."""
    run_histories(tmp_path, {"type": "dir", "root": "./lake"}, lambda _, name: [name], "o", 50, 4, SEED)


@pytest.mark.servers
def test_plans_since_a_revision_hide_nothing_on_glue(request: pytest.FixtureRequest, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    """A catalog server (moto's Glue): 15 applied first revisions, 4 second revisions each."""
    server = request.getfixturevalue("glue_server")
    harness = GlueHarness(server, tmp_path / "glue-data")
    parent = list(harness.parent_namespace())
    prefix = harness.unique("d")
    backend = {"type": "glue", **harness.config(), "root": "./lake"}
    if "access_key_id" in backend:  # secrets come from the environment only
        backend.update(access_key_id=f"${{{GLUE_KEY_VARIABLE}}}", secret_access_key=f"${{{GLUE_SECRET_VARIABLE}}}")
        for name, value in glue_env(server).items():
            monkeypatch.setenv(name, value)
    run_histories(tmp_path, backend, lambda n, name: [*parent, f"{prefix}_{n}_{name}"], prefix, 15, 4, SEED + 1)
