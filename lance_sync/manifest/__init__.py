"""Manifest loading: YAML with positions -> JSON Schema and models -> semantic checks.

The loading modules are imported by the functions below, not here, so that `lance_sync.cli`
(which needs DEFAULT_MANIFEST) starts fast.

A manifest without problems takes a faster road to the same desired state; at the first
problem, or a warning, the files take the full road, which names the file, line and field of
each (lance_sync.manifest.strategy decides).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lance_sync.manifest.loader import Document
    from lance_sync.model.desired import DesiredState
    from lance_sync.model.policy import Policy

DEFAULT_MANIFEST = "lance-sync.yaml"


def load_manifest(paths: Sequence[str], environ: Mapping[str, str] | None = None,
                  policy_file: str | None = None, allow_unset: bool = False, positions: bool = False,
                  tables: Collection[str] | None = None, document: Document | None = None,
                  meanwhile: Callable[[], None] | None = None) -> DesiredState:
    """Load, merge (in order), validate and check manifest files, and add the rules of a policy
    file to the manifest's own; raises ManifestError(s). Which road the load takes is
    lance_sync.manifest.strategy's.

    With `positions` every declared object knows its file and line (the full road; messages about
    declared objects name them). With `allow_unset` a variable that is not set is no error: the values that need it are
    not checked and `DesiredState.unset` lists them (for `validate`; a state loaded so must
    not be planned or applied).

    With `tables` (names), only those tables are built when the checks that span entries pass
    as written (lance_sync.manifest.strategy.split_tables): `state.unbuilt` holds the others,
    for a plan of what changed since a revision. `document` is the files' plain documents
    merged, when the caller has parsed them (lance_sync.manifest.history.read_baseline).
    `meanwhile` runs while worker processes parse large files (such as importing the planner).
    """
    from lance_sync.manifest.strategy import Load, load_state

    base_dir = os.path.dirname(os.path.abspath(paths[0]))
    state = load_state(Load(paths, environ, base_dir, allow_unset, positions, tables, document, meanwhile))
    if policy_file is not None:
        def positioned() -> Policy:
            return load_state(Load(paths, environ, base_dir, allow_unset, positions=True)).policy

        state.policy = _with_file(state.policy, load_policy(policy_file, state.backends, environ), positioned)
    return state


def load_policy(path: str, backends: Collection[str], environ: Mapping[str, str] | None = None) -> Policy:
    """A policy file: the manifest's `policy:` section on its own (rules, unattended)."""
    from lance_sync.manifest.loader import load_document
    from lance_sync.manifest.semantic import build_policy
    from lance_sync.manifest.validate import validate_policy_structure

    document = load_document(path, environ)
    model = validate_policy_structure(document)
    return build_policy(model, document, os.path.dirname(os.path.abspath(path)), backends)


def _with_file(manifest: Policy, from_file: Policy, positioned: Callable[[], Policy]) -> Policy:
    """The manifest's rules and the policy file's; ManifestErrors naming both places of a rule
    defined in each. A manifest loaded by a fast road knows no positions: `positioned()` loads
    its policy again with them (only then)."""
    from lance_sync.model.errors import ManifestError, ManifestErrors
    from lance_sync.model.policy import combine

    names = {rule.name: rule for rule in manifest.rules}
    clashing = [rule for rule in from_file.rules if rule.name in names]
    if not clashing:
        return combine(manifest, from_file)
    if any(names[rule.name].where is None for rule in clashing):
        names = {rule.name: rule for rule in positioned().rules}
    raise ManifestErrors([ManifestError(f"rule '{rule.name}' is defined in the manifest too"
                                        + (f" (at {names[rule.name].where})" if names[rule.name].where else ""),
                                        rule.where, "name") for rule in clashing])
