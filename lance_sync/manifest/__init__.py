"""Manifest loading: YAML with positions -> JSON Schema and models -> semantic checks."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from lance_sync.manifest.desired import DesiredState
from lance_sync.manifest.loader import load_document, merge_documents
from lance_sync.manifest.semantic import build_desired_state
from lance_sync.manifest.validate import validate_structure

DEFAULT_MANIFEST = "lance-sync.yaml"


def load_manifest(paths: Sequence[str], environ: Mapping[str, str] | None = None) -> DesiredState:
    """Load, merge (in order), validate and check manifest files; raises ManifestError(s)."""
    document = merge_documents([load_document(path, environ) for path in paths])
    model = validate_structure(document)
    base_dir = os.path.dirname(os.path.abspath(paths[0]))
    return build_desired_state(model, document, base_dir)
