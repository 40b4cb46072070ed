"""Manifest loading: YAML with positions -> JSON Schema and models -> semantic checks.

The loading modules are imported by the functions below, not here, so that `lance_sync.cli`
(which needs DEFAULT_MANIFEST) starts fast.

A manifest without problems takes a faster road to the same desired state: plain YAML
without positions (`load_plain_document`), the models in strict mode (`validate_strictly`),
the semantic checks. At the first problem, or a warning, the files take the full road,
which names the file, line and field of each.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lance_sync.manifest.loader import Document
    from lance_sync.manifest.models import ValidatedManifest
    from lance_sync.model.desired import DesiredState, DesiredTable
    from lance_sync.model.policy import Policy

DEFAULT_MANIFEST = "lance-sync.yaml"


def load_manifest(paths: Sequence[str], environ: Mapping[str, str] | None = None,
                  policy_file: str | None = None, allow_unset: bool = False, positions: bool = False,
                  tables: Collection[str] | None = None) -> DesiredState:
    """Load, merge (in order), validate and check manifest files, and add the rules of a policy
    file to the manifest's own; raises ManifestError(s).

    With `positions` every declared object knows its file and line (the full road; messages about
    declared objects name them). With `allow_unset` a variable that is not set is no error: the values that need it are
    not checked and `DesiredState.unset` lists them (for `validate`; a state loaded so must
    not be planned or applied).

    With `tables` (names), only those tables are built when the checks that span entries pass
    as written (lance_sync.manifest.partial): `state.unbuilt` holds the others, for a plan of
    what changed since a revision.
    """
    base_dir = os.path.dirname(os.path.abspath(paths[0]))
    state = _load(paths, environ, base_dir, allow_unset, positions, tables)
    if policy_file is not None:
        state.policy = _with_file(state.policy, load_policy(policy_file, state.backends, environ))
    return state


def _load(paths: Sequence[str], environ: Mapping[str, str] | None, base_dir: str,
          allow_unset: bool, positions: bool = False, tables: Collection[str] | None = None) -> DesiredState:
    from lance_sync.manifest.loader import NotPlain, load_document
    from lance_sync.manifest.merge import merge_documents
    from lance_sync.manifest.parse_once import load_plain_documents
    from lance_sync.manifest.partial import NotPartial, split_tables
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import NotStrict, validate_strictly, validate_structure
    from lance_sync.model.desired import Unbuilt
    from lance_sync.model.errors import ManifestError, ManifestErrors

    try:  # a variable that is not set is a problem here too: the full road records it
        if positions:
            raise NotPlain("positions asked for")
        if tables is None and (state := _load_split(paths, environ, base_dir)) is not None:
            return state
        shared: dict[str, str] = {}  # one copy of each text across the files
        document = merge_documents(load_plain_documents(paths, environ, shared))
        del shared
        if tables is not None:
            chosen, others, registered = split_tables(document.data, tables, base_dir)
            document = dataclasses.replace(document, data={**document.data, "tables": chosen})
        strict = validate_strictly(document)
        if strict is not None:
            model, validated = strict
            # the namespaces live on in the model, and the tables are validated and their raw
            # data let go a chunk at a time as the desired state is built from them (see
            # validate_strictly)
            document = dataclasses.replace(document, data={key: value for key, value in document.data.items()
                                                           if key not in ("tables", "namespaces")})
            state = build_desired_state(model, document, base_dir, validated)
            if not state.notices:  # a warning, like a problem, needs the full road to name its line
                if tables is not None:
                    build = _built_later(model, document, base_dir, others, paths, environ)
                    state.unbuilt = Unbuilt(registered, build)
                return state
    except (NotPlain, NotStrict, NotPartial, ManifestError, ManifestErrors):
        pass
    document = merge_documents([load_document(path, environ, allow_unset) for path in paths])
    model = validate_structure(document)
    return build_desired_state(model, document, base_dir)


def _load_split(paths: Sequence[str], environ: Mapping[str, str] | None, base_dir: str) -> DesiredState | None:
    """The desired state of a manifest split over files of tables, each built in a worker
    (lance_sync.manifest.split_files); None when the files are not so, or not worth it."""
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.split_files import NotSplit, split_files

    split = split_files(paths, environ)
    if split is None:
        return None
    model, document, tables = split
    try:
        state = build_desired_state(model, document, base_dir, tables)
    except NotSplit:
        return None
    return state if not state.notices else None


def _built_later(model: ValidatedManifest, document: Document, base_dir: str, others: dict[str, Any],
                 paths: Sequence[str], environ: Mapping[str, str] | None) -> Callable[[Collection[str]], list[DesiredTable]]:
    """How a partial load builds more of its tables: as it built the first ones, or, when one
    does not pass, by the full road, which names the problem's file and line."""
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import NotStrict, StrictTables
    from lance_sync.model.errors import ManifestError, ManifestErrors

    def build(names: Collection[str]) -> list[DesiredTable]:
        entries = [entry for name, entry in others.items() if name in names]
        try:
            state = build_desired_state(model, document, base_dir, StrictTables(entries))
            if not state.notices:
                return state.tables
        except (NotStrict, ManifestError, ManifestErrors):
            pass
        return [table for table in load_manifest(paths, environ).tables if table.name in names]

    return build


def load_policy(path: str, backends: Collection[str], environ: Mapping[str, str] | None = None) -> Policy:
    """A policy file: the manifest's `policy:` section on its own (rules, unattended)."""
    from lance_sync.manifest.loader import load_document
    from lance_sync.manifest.semantic import build_policy
    from lance_sync.manifest.validate import validate_policy_structure

    document = load_document(path, environ)
    model = validate_policy_structure(document)
    return build_policy(model, document, os.path.dirname(os.path.abspath(path)), backends)


def _with_file(manifest: Policy, from_file: Policy) -> Policy:
    from lance_sync.model.errors import ManifestError, ManifestErrors
    from lance_sync.model.policy import combine

    names = {rule.name: rule for rule in manifest.rules}
    clashes = [ManifestError(f"rule '{rule.name}' is defined in the manifest too (at {names[rule.name].where})",
                             rule.where, "name")
               for rule in from_file.rules if rule.name in names]
    if clashes:
        raise ManifestErrors(clashes)
    return combine(manifest, from_file)

