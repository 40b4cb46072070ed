"""YAML loading: positions, environment interpolation and overlays."""

from __future__ import annotations

import pytest

from lance_sync.errors import ManifestError
from lance_sync.manifest.loader import load_document, merge_documents


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_positions_name_line_and_column(tmp_path):
    doc = load_document(write(tmp_path, "m.yaml", "version: 1\nbackends:\n  lake:\n    root: x\n"))
    position = doc.position(("backends", "lake", "root"))
    assert (position.line, position.column) == (4, 11)


def test_variables_with_defaults_and_escapes(tmp_path):
    text = "a: ${LS_SET}\nb: ${LS_UNSET:-fallback}\nc: price$$\nd: ${LS_EMPTY:-used}\ne: main$sales\n"
    doc = load_document(write(tmp_path, "m.yaml", text), {"LS_SET": "value", "LS_EMPTY": ""})
    assert doc.data == {"a": "value", "b": "fallback", "c": "price$", "d": "used", "e": "main$sales"}
    assert doc.templates[("a",)] == "${LS_SET}"


def test_unquoted_variable_takes_a_yaml_type_and_quoted_stays_text(tmp_path):
    doc = load_document(write(tmp_path, "m.yaml", "port: ${P}\ntext: \"${P}\"\nflag: ${F}\n"), {"P": "8080", "F": "true"})
    assert doc.data == {"port": 8080, "text": "8080", "flag": True}


def test_unset_variable_is_named(tmp_path):
    with pytest.raises(ManifestError, match="'LS_NOT_SET' is not set"):
        load_document(write(tmp_path, "m.yaml", "a: ${LS_NOT_SET}\n"), {})


def test_merge_keys_are_supported(tmp_path):
    doc = load_document(write(tmp_path, "m.yaml", "base: &b {x: 1, y: 2}\nthing:\n  <<: *b\n  y: 3\n"))
    assert doc.data["thing"] == {"x": 1, "y": 3}


def test_overlay_merges_mappings_and_keyed_lists_and_keeps_positions(tmp_path):
    base = load_document(write(tmp_path, "base.yaml",
                               "owner: a\ntables:\n  - name: t\n    location: /x\n    properties: {p: 1}\n"
                               "  - name: u\n    location: /y\n"))
    overlay = load_document(write(tmp_path, "prod.yaml",
                                  "owner: b\ntables:\n  - name: u\n    location: /z\n  - name: v\n    location: /w\n"))
    merged = merge_documents([base, overlay])
    assert merged.data["owner"] == "b"
    assert [t["name"] for t in merged.data["tables"]] == ["t", "u", "v"]
    assert merged.data["tables"][0]["properties"] == {"p": 1}
    assert merged.data["tables"][1]["location"] == "/z"
    assert merged.position(("tables", 1, "location")).file.endswith("prod.yaml")
    assert merged.position(("tables", 0, "location")).file.endswith("base.yaml")
    assert merged.position(("tables", 2, "name")).line == 5
