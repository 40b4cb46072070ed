"""YAML loading: positions, environment interpolation and overlays."""

from __future__ import annotations

import pytest

from lance_sync.manifest.loader import load_document
from lance_sync.manifest.merge import merge_documents
from lance_sync.manifest.parsing import load_plain_document
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.model.errors import ManifestError


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
    assert merged.data["tables"][0]["properties"] == {"p": "1"}  # a property is text, as written
    assert merged.data["tables"][1]["location"] == "/z"
    assert merged.position(("tables", 1, "location")).file.endswith("prod.yaml")
    assert merged.position(("tables", 0, "location")).file.endswith("base.yaml")
    assert merged.position(("tables", 2, "name")).line == 5


OVERLAYS = {
    "only new tables (a split manifest)": "tables:\n  - {name: v, location: /v}\n  - {name: w, location: /w}\n",
    "new and changed tables": "tables:\n  - {name: v, location: /v}\n  - {name: t, location: /t2}\n",
    "a table named with a number": "tables:\n  - {name: 1, location: /one}\n  - {name: '1', location: /text}\n",
    "an entry that is not a mapping": "tables:\n  - just text\n  - {name: v, location: /v}\n",
}


@pytest.mark.parametrize("overlay", OVERLAYS.values(), ids=OVERLAYS.keys())
def test_the_plain_merge_keys_tables_as_the_full_merge(tmp_path, overlay):
    """The plain road's keyed merge (names read in one pass, new entries appended at once)
    gives the full road's list."""
    base = "owner: a\ntables:\n  - {name: t, location: /t}\n  - {name: u, location: /u}\n"
    paths = [write(tmp_path, "base.yaml", base), write(tmp_path, "over.yaml", overlay)]
    plain = merge_documents([load_plain_document(path) for path in paths])
    full = merge_documents([load_document(path) for path in paths])
    assert plain.data == full.data


@pytest.mark.parametrize("overlay", ["tables:\n  - {name: v, location: /v}\n  - {name: v, location: /w}\n",
                                     "tables:\n  - {name: t, location: /v}\n  - {name: t, location: /w}\n"],
                         ids=["a new name twice", "a base name twice"])
def test_the_plain_merge_leaves_a_name_twice_to_the_full_road(tmp_path, overlay):
    base = "tables:\n  - {name: t, location: /t}\n"
    paths = [write(tmp_path, "base.yaml", base), write(tmp_path, "over.yaml", overlay)]
    with pytest.raises(FastPathUnavailable):
        merge_documents([load_plain_document(path) for path in paths])


# --- the plain loader: the same data and templates, or FastPathUnavailable ------------------------------------

PLAIN = [
    "version: 1\nowner: team\nbackends:\n  lake: {type: dir, root: ./lake}\n",
    "a: 1\nb: 1.5\nc: true\nd: no\ne: ~\nf:\ng: '1'\nh: \"x\"\ni: 2024-01-01\nj: 0x1F\nk: .inf\nl: [1, a, {m: n}]\n",
    "port: ${P}\ntext: \"${P}\"\nflag: ${F}\nmixed: a-${P}-b\ndefault: ${LS_UNSET_X:-d}\ndollar: $$x\n",
    "tables:\n  - {name: t, location: ./l/t, properties: {tier: gold, n: 3}, register: [{backend: b, namespace: [a, b]}]}\n",
    "list:\n- a\n- - b\n  - c\n- k: v\n",
    "'quoted key': 1\n\"1\": x\n2: y\n",
]
NOT_PLAIN = [
    "base: &b {x: 1}\nthing:\n  <<: *b\n",
    "a: !!str 1\n",
    "a: 1\na: 2\n",
    "? [a]\n: 1\n",
    "",
    "version: 1\n---\nversion: 1\n",
    "a: [1\n",
    "a: ${LS_SURELY_UNSET}\n",
    "a: ${MALFORMED\n",
]


@pytest.mark.parametrize("text", PLAIN)
def test_the_plain_loader_reads_what_the_full_loader_reads(tmp_path, text):
    environ = {"P": "8080", "F": "true"}
    path = write(tmp_path, "m.yaml", text)
    full, plain = load_document(path, environ), load_plain_document(path, environ)
    assert plain.data == full.data and type(plain.data) is type(full.data)
    assert repr(plain.data) == repr(full.data)  # the same types all the way down (1 is not True)
    assert plain.templates == full.templates and plain.files == full.files and not plain.positions


@pytest.mark.parametrize("text", NOT_PLAIN)
def test_the_plain_loader_leaves_anything_else_to_the_full_loader(tmp_path, text):
    with pytest.raises(FastPathUnavailable):
        load_plain_document(write(tmp_path, "m.yaml", text), {})
