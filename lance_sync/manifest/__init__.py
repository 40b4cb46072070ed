"""Manifest loading: YAML with positions -> JSON Schema and models -> semantic checks.

The loading modules are imported by the functions below, not here, so that `lance_sync.cli`
(which needs DEFAULT_MANIFEST) starts fast.

A manifest without problems takes a faster road to the same desired state: plain YAML
without positions (`load_plain_document`), the models in strict mode (`validate_strictly`),
the semantic checks. At the first problem, or a warning, the files take the full road,
which names the file, line and field of each.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lance_sync.model.desired import DesiredState
    from lance_sync.model.policy import Policy

DEFAULT_MANIFEST = "lance-sync.yaml"


def load_manifest(paths: Sequence[str], environ: Mapping[str, str] | None = None,
                  policy_file: str | None = None, allow_unset: bool = False, positions: bool = False) -> DesiredState:
    """Load, merge (in order), validate and check manifest files, and add the rules of a policy
    file to the manifest's own; raises ManifestError(s).

    With `positions` every declared object knows its file and line (the full road; messages about
    declared objects name them). With `allow_unset` a variable that is not set is no error: the values that need it are
    not checked and `DesiredState.unset` lists them (for `validate`; a state loaded so must
    not be planned or applied).
    """
    base_dir = os.path.dirname(os.path.abspath(paths[0]))
    with no_cycle_collection():
        state = _load(paths, environ, base_dir, allow_unset, positions)
    if policy_file is not None:
        state.policy = _with_file(state.policy, load_policy(policy_file, state.backends, environ))
    return state


def _load(paths: Sequence[str], environ: Mapping[str, str] | None, base_dir: str,
          allow_unset: bool, positions: bool = False) -> DesiredState:
    from lance_sync.manifest.loader import NotPlain, load_document
    from lance_sync.manifest.merge import merge_documents
    from lance_sync.manifest.parse_once import load_plain_documents
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import NotStrict, validate_strictly, validate_structure
    from lance_sync.model.errors import ManifestError, ManifestErrors

    try:  # a variable that is not set is a problem here too: the full road records it
        if positions:
            raise NotPlain("positions asked for")
        shared: dict[str, str] = {}  # one copy of each text across the files
        document = merge_documents(load_plain_documents(paths, environ, shared))
        del shared
        strict = validate_strictly(document)
        if strict is not None:
            model, tables = strict
            # the namespaces live on in the model, and the tables are validated and their raw
            # data let go a chunk at a time as the desired state is built from them (see
            # validate_strictly)
            document = dataclasses.replace(document, data={key: value for key, value in document.data.items()
                                                           if key not in ("tables", "namespaces")})
            state = build_desired_state(model, document, base_dir, tables)
            if not state.notices:
                return state  # a warning, like a problem, needs the full road to name its line
    except (NotPlain, NotStrict, ManifestError, ManifestErrors):
        pass
    document = merge_documents([load_document(path, environ, allow_unset) for path in paths])
    model = validate_structure(document)
    return build_desired_state(model, document, base_dir)


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


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Loading makes hundreds of thousands of objects and no garbage cycles; Python's cycle
    collector would scan everything alive again and again as they pile up (a third of the
    time of loading 10,000 tables)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
