"""Manifest loading: YAML with positions -> JSON Schema and models -> semantic checks.

The loading modules are imported by the functions below, not here, so that `lance_sync.cli`
(which needs DEFAULT_MANIFEST) starts fast.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lance_sync.manifest.desired import DesiredState
    from lance_sync.policy import Policy

DEFAULT_MANIFEST = "lance-sync.yaml"
#: lance-sync's own files next to a manifest: apply journals, rollback plans, Spark's log
STATE_DIRECTORY = ".lance-sync"


def load_manifest(paths: Sequence[str], environ: Mapping[str, str] | None = None,
                  policy_file: str | None = None, allow_unset: bool = False) -> DesiredState:
    """Load, merge (in order), validate and check manifest files, and add the rules of a policy
    file to the manifest's own; raises ManifestError(s).

    With `allow_unset` a variable that is not set is no error: the values that need it are
    not checked and `DesiredState.unset` lists them (for `validate`; a state loaded so must
    not be planned or applied).
    """
    from lance_sync.manifest.loader import load_document, merge_documents
    from lance_sync.manifest.semantic import build_desired_state
    from lance_sync.manifest.validate import validate_structure

    document = merge_documents([load_document(path, environ, allow_unset) for path in paths])
    model = validate_structure(document)
    base_dir = os.path.dirname(os.path.abspath(paths[0]))
    state = build_desired_state(model, document, base_dir)
    if policy_file is not None:
        state.policy = _with_file(state.policy, load_policy(policy_file, state.backends, environ))
    return state


def load_policy(path: str, backends: Collection[str], environ: Mapping[str, str] | None = None) -> Policy:
    """A policy file: the manifest's `policy:` section on its own (rules, unattended)."""
    from lance_sync.manifest.loader import load_document
    from lance_sync.manifest.semantic import build_policy
    from lance_sync.manifest.validate import validate_policy_structure

    document = load_document(path, environ)
    model = validate_policy_structure(document)
    return build_policy(model, document, os.path.dirname(os.path.abspath(path)), backends)


def _with_file(manifest: Policy, from_file: Policy) -> Policy:
    from lance_sync.errors import ManifestError, ManifestErrors
    from lance_sync.policy import combine

    names = {rule.name: rule for rule in manifest.rules}
    clashes = [ManifestError(f"rule '{rule.name}' is defined in the manifest too (at {names[rule.name].where})",
                             rule.where, "name")
               for rule in from_file.rules if rule.name in names]
    if clashes:
        raise ManifestErrors(clashes)
    return combine(manifest, from_file)
