"""Manifest values are what the user wrote: the YAML 1.1 traps (`NO`, `off`, `010`, ...).

PyYAML reads YAML 1.1, where `NO` is false, `010` is 8 and `1_000` is 1000. lance-sync types
plain scalars by YAML 1.2's core schema and keeps the values of free-form text maps (catalog
properties, reader options, Spark and storage settings) exactly as written. Each trap below
goes through every road a manifest takes (the fast plain loader, the full loader, overlays):
the desired state holds the very text written, or loading fails naming file:line:column, the
field and what to write instead; never a different value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from lance_sync.manifest import load_manifest
from lance_sync.manifest import loader as loader_module
from lance_sync.manifest import validate as validate_module
from lance_sync.manifest.loader import TEXT_MAPS, load_document
from lance_sync.manifest.parsing import load_plain_document
from lance_sync.manifest.schema_models import manifest_json_schema
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.yaml_core import LeadingZero, dump_yaml, plain_value
from lance_sync.model.errors import ManifestErrors

#: the issue's traps, and a few more of the same kind
TRAPS = ["NO", "off", "yes", "010", "0x1F", "1_000", "1.10", "1e3", "2026-01-01", "~", ".inf",
         "True", "-0", "+1", "0o17", "1:20", ".NaN", "null", ""]


@dataclass(frozen=True)
class Refused:
    """Loading must fail at the value, with this hint (or fragment of the message)."""

    hint: str


#: what a property takes of each trap: its text, or a refusal when YAML reads it as null
AS_PROPERTY: dict[str, str | Refused] = {
    **{trap: trap for trap in TRAPS},
    "~": Refused("YAML reads ~ as null: quote it, '~', if you mean the text"),
    "null": Refused("YAML reads null as null: quote it, 'null', if you mean the text"),
    "": Refused("YAML reads an empty value as null: write '' for empty text"),
}
#: what a text field (a name, an identifier) takes: YAML 1.2 text as written; a number,
#: boolean or null is refused with the text to write in quotes
AS_TEXT: dict[str, str | Refused] = {
    **{trap: Refused(f"write it in quotes: '{trap}'") for trap in TRAPS},
    **{trap: trap for trap in ("NO", "off", "yes", "1_000", "2026-01-01", "1:20")},
    "~": AS_PROPERTY["~"], "null": AS_PROPERTY["null"], "": AS_PROPERTY[""],
}
#: the owner is text of a pattern that has no ':'
AS_OWNER = {**AS_TEXT, "1:20": Refused("does not match the required pattern")}
#: a boolean field: only true and false (three spellings each)
AS_BOOLEAN: dict[str, bool | Refused] = {
    **{trap: Refused("use true or false") for trap in TRAPS},
    "True": True,
    **{trap: Refused(f"'{trap}' is text in YAML 1.2: use true or false") for trap in ("NO", "off", "yes")},
    "~": Refused("YAML reads ~ as null: use true or false"),
    "null": Refused("YAML reads null as null: use true or false"),
    "": Refused("YAML reads an empty value as null: use true or false"),
}
#: an optional positive number of seconds: YAML 1.2 numbers; null is the default
AS_TIMEOUT: dict[str, float | None | Refused] = {
    "0x1F": 31.0, "1.10": 1.1, "1e3": 1000.0, ".inf": math.inf, "+1": 1.0, "0o17": 15.0,
    "~": None, "null": None, "": None,
    "010": Refused("a leading zero is ambiguous (YAML 1.1 reads 010 as octal 8, YAML 1.2 as 10): write 10"),
    "1_000": Refused("'1_000' is text in YAML 1.2: write 1000"),
    "1:20": Refused("'1:20' is text in YAML 1.2: write 80"),
    **{trap: Refused("must be a number or empty, got a string") for trap in ("NO", "off", "yes", "2026-01-01")},
    "True": Refused("must be a number or empty, got a boolean"),
    "-0": Refused("less than or equal to the minimum of 0"),
    ".NaN": Refused("greater than 0"),
}
#: a count: integers (a float that is a whole number is one)
AS_COUNT: dict[str, int | Refused] = {
    "0x1F": 31, "1e3": 1000, "+1": 1, "0o17": 15, "-0": 0,
    "010": Refused("a leading zero is ambiguous (YAML 1.1 reads 010 as octal 8, YAML 1.2 as 10): write 10"),
    "1_000": Refused("'1_000' is text in YAML 1.2: write 1000"),
    "1:20": Refused("'1:20' is text in YAML 1.2: write 80"),
    **{trap: Refused("must be an integer, got a string") for trap in ("NO", "off", "yes", "2026-01-01")},
    "1.10": Refused("must be an integer, got a number"), ".inf": Refused("must be an integer, got a number"),
    ".NaN": Refused("must be an integer, got a number"), "True": Refused("must be an integer, got a boolean"),
    **{trap: Refused("YAML reads {} as null: write a number".format(trap or "an empty value"))
       for trap in ("~", "null", "")},
}


def scalar(trap: str) -> str:
    """The trap as a plain scalar after `key:` ("" leaves the value empty)."""
    return f" {trap}" if trap else ""


# --- properties: kept as written on every road ---------------------------------------------------

BASE = """\
version: 1
owner: team
backends:
  lake: {ANCHOR}{{type: dir, root: ./lake}}
namespaces:
  - backend: lake
    id: sales
    properties:
      key:{NAMESPACE}
tables:
  - name: orders
    location: ./lake/orders.lance
    register: [{{backend: lake, namespace: sales}}]
    properties:
      key:{TABLE}
"""
#: where the trap stands in BASE: namespace property, table property (line, column; an empty
#: value stands right after the colon, a column before)
BASE_AT = {"namespace": (9, 12), "table": (15, 12)}
OVERLAY = """\
namespaces:
  - backend: lake
    id: sales
    properties:
      key:{NAMESPACE}
tables:
  - name: orders
    properties:
      key:{TABLE}
"""
OVERLAY_AT = {"namespace": (5, 12), "table": (9, 12)}
FIELDS = {"namespace": "namespaces[0].properties.key", "table": "tables[0].properties.key"}
#: the fast road reads plain files; an anchor sends a file down the full road
ROADS = ["fast", "full", "overlay-fast", "overlay-full"]


def write_property_manifest(directory: Path, road: str, where: str, trap: str) -> tuple[list[str], str]:
    """The files to load for a trap in a property, and the one that holds the trap."""
    anchor = "&anchor " if road.endswith("full") else ""
    values = {"NAMESPACE": " plain", "TABLE": " plain"}
    if not road.startswith("overlay"):
        values[where.upper()] = scalar(trap)
    base = directory / "lance-sync.yaml"
    base.write_text(BASE.format(ANCHOR=anchor, **values))
    if not road.startswith("overlay"):
        return [str(base)], str(base)
    overlay = directory / "prod.overlay.yaml"
    values[where.upper()] = scalar(trap)
    overlay.write_text(OVERLAY.format(**values).replace("name: orders", f"name: {anchor}orders"))
    return [str(base), str(overlay)], str(overlay)


def trap_position(road: str, where: str, trap: str) -> tuple[int, int]:
    line, column = (OVERLAY_AT if road.startswith("overlay") else BASE_AT)[where]
    return line, column if trap else column - 1


def assert_refused(error: ManifestErrors, file: str, line: int, column: int, field: str, hint: str) -> None:
    messages = [str(e) for e in error.errors]
    at_value = [m for m in messages if m.startswith(f"{file}:{line}:{column}: {field}: ")]
    assert at_value, f"nothing at {file}:{line}:{column} {field}: {messages}"
    assert hint in at_value[0], at_value[0]


def assert_road(files: list[str], road: str) -> None:
    """The files are read by the road the test means to take."""
    for file in files:
        if road.endswith("full") and file == files[-1]:
            with pytest.raises(FastPathUnavailable):
                load_plain_document(file, {})
        elif not road.endswith("full"):
            load_plain_document(file, {})


@pytest.mark.parametrize("trap", TRAPS)
@pytest.mark.parametrize("where", ["namespace", "table"])
@pytest.mark.parametrize("road", ROADS)
def test_a_property_is_the_text_written_or_refused(tmp_path, monkeypatch, road, where, trap):
    files, file_with_trap = write_property_manifest(tmp_path, road, where, trap)
    assert_road(files, road)
    expected = AS_PROPERTY[trap]
    if isinstance(expected, Refused):
        with pytest.raises(ManifestErrors) as refused:
            load_manifest(files, {})
        assert_refused(refused.value, file_with_trap, *trap_position(road, where, trap), FIELDS[where], expected.hint)
        return
    if not road.endswith("full"):  # a plain manifest without problems never needs the full road
        monkeypatch.setattr(loader_module, "load_document", None)
    state = load_manifest(files, {})
    properties = state.namespaces[0].properties if where == "namespace" else state.tables[0].properties
    assert properties == {"key": expected}
    other = state.tables[0].properties if where == "namespace" else state.namespaces[0].properties
    assert other == {"key": "plain"}


def test_the_issue_s_properties_are_stamped_as_written(tmp_path):
    path = tmp_path / "lance-sync.yaml"
    path.write_text(BASE.format(ANCHOR="", NAMESPACE=" x", TABLE=" x").replace(
        "      key: x\n", "      {country: NO, pii: off, build: 010, retention: 1_000, ver: 1.10, flag: yes, "
        "mask: 0x1F}\n"))
    state = load_manifest([str(path)], {})
    written = {"country": "NO", "pii": "off", "build": "010", "retention": "1_000", "ver": "1.10", "flag": "yes",
               "mask": "0x1F"}
    assert state.namespaces[0].properties == written
    assert state.tables[0].properties == written


@pytest.mark.parametrize(("key", "path"), [
    ("options", "tables[0].source.options.key"), ("conf", "spark.conf.key"), ("storage", "backends.lake.storage.key"),
])
def test_every_text_map_keeps_its_values_as_written(tmp_path, key, path):
    manifest = BASE.format(ANCHOR="", NAMESPACE=" x", TABLE=" x")
    manifest += "    source: {format: csv, path: ./in.csv, options: {key: 010, other: True}}\n"
    manifest += "spark: {conf: {key: 010, other: True}}\n"
    manifest = manifest.replace("root: ./lake}", "root: ./lake, storage: {key: 010, other: True}}")
    file = tmp_path / "lance-sync.yaml"
    file.write_text(manifest)
    state = load_manifest([str(file)], {})
    found = {"options": state.tables[0].source["options"], "conf": (state.spark or {}).get("conf"),
             "storage": state.backends["lake"].config.storage}[key]
    assert found == {"key": "010", "other": "True"}
    file.write_text(manifest.replace(f"{key}: {{key: 010", f"{key}: {{key: ~"))
    with pytest.raises(ManifestErrors) as refused:
        load_manifest([str(file)], {})
    assert f"{path}: " in str(refused.value) and "quote it, '~', if you mean the text" in str(refused.value)


def test_the_text_maps_are_the_free_form_maps_of_the_models():
    """Every mapping of text values the schema defines is one the loader keeps as written."""
    schema = manifest_json_schema()
    found: set[tuple[Any, ...]] = set()

    def walk(node: dict[str, Any], path: tuple[Any, ...]) -> None:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        for option in node.get("anyOf", []) + node.get("oneOf", []):
            walk(option, path)
        if node.get("type") == "array" and "items" in node:
            walk(node["items"], (*path, int))
        for name, child in node.get("properties", {}).items():
            walk(child, (*path, name))
        for child in node.get("patternProperties", {}).values():
            walk(child, (*path, str))
        values = node.get("additionalProperties")
        if isinstance(values, dict) and values.get("type") == ["string", "number", "boolean"]:
            found.add(path)

    walk(schema, ())
    assert found == set(TEXT_MAPS)


# --- every other field keeps its type --------------------------------------------------------------

TYPED = """\
version: 1
owner:{OWNER}
backends:
  lake: {{type: dir, root: ./lake}}
  uc:
    type: unity
    endpoint: http://127.0.0.1:1
    catalog: main
    read_timeout_seconds:{TIMEOUT}
    max_retries:{COUNT}
namespaces:
  - backend: lake
    id:{ID}
tables:
  - name:{NAME}
    location: ./lake/orders.lance
    register:
      - backend: lake
        namespace:{NAMESPACE}
    protect:{PROTECT}
"""
#: field -> (placeholder, line, column of the value, the expectations, what the state holds)
TYPED_FIELDS: dict[str, tuple[str, int, int, dict[str, Any], Any]] = {
    "owner": ("OWNER", 2, 8, AS_OWNER, lambda state: state.owner),
    "backends.uc.read_timeout_seconds": ("TIMEOUT", 9, 27, AS_TIMEOUT,
                                         lambda state: state.backends["uc"].config.read_timeout_seconds),
    "backends.uc.max_retries": ("COUNT", 10, 18, AS_COUNT, lambda state: state.backends["uc"].config.max_retries),
    "namespaces[0].id": ("ID", 13, 9, AS_TEXT, lambda state: state.namespaces[0].id[0]),
    "tables[0].name": ("NAME", 15, 11, AS_TEXT, lambda state: state.tables[0].name),
    "tables[0].register[0].namespace": ("NAMESPACE", 19, 20, AS_TEXT,
                                        lambda state: state.tables[0].registrations[0].id[0]),
    "tables[0].protect": ("PROTECT", 20, 14, AS_BOOLEAN, lambda state: state.tables[0].protect),
}
TYPED_DEFAULTS = {"OWNER": " team", "TIMEOUT": " 5", "COUNT": " 3", "ID": " sales", "NAME": " orders",
                  "NAMESPACE": " sales", "PROTECT": " false"}


@pytest.mark.parametrize("trap", TRAPS)
@pytest.mark.parametrize("field", list(TYPED_FIELDS))
def test_a_typed_field_takes_the_yaml_1_2_meaning_or_refuses(tmp_path, field, trap):
    placeholder, line, column, expectations, read = TYPED_FIELDS[field]
    path = tmp_path / "lance-sync.yaml"
    path.write_text(TYPED.format(**{**TYPED_DEFAULTS, placeholder: scalar(trap)}))
    expected = expectations[trap]
    if isinstance(expected, Refused):
        with pytest.raises(ManifestErrors) as refused:
            load_manifest([str(path)], {})
        assert_refused(refused.value, str(path), line, column if trap else column - 1, field, expected.hint)
        return
    value = read(load_manifest([str(path)], {}))
    assert value == expected and type(value) is type(expected), (value, expected)


def test_the_corpus_covers_every_trap_in_every_field():
    for expectations in (AS_PROPERTY, AS_TEXT, AS_OWNER, AS_BOOLEAN, AS_TIMEOUT, AS_COUNT):
        assert set(expectations) == set(TRAPS)


def test_the_models_explain_a_value_as_the_schema_does(tmp_path, monkeypatch):
    """Both checks name the same hint: the models' errors, had the schema let the value by."""
    path = tmp_path / "lance-sync.yaml"
    path.write_text(TYPED.format(**{**TYPED_DEFAULTS, "OWNER": " 2026", "COUNT": " 010", "PROTECT": " ~"}))

    def problems() -> str:
        with pytest.raises(ManifestErrors) as refused:
            load_manifest([str(path)], {})
        return str(refused.value)

    by_schema = problems()
    monkeypatch.setattr(validate_module, "_check_schema", lambda validator, document: None)
    by_models = problems()
    assert by_models != by_schema  # the models word the problem their own way ...
    for hint in ("2:8: owner: ", "write it in quotes: '2026'", "10:18: backends.uc.max_retries: ",
                 "YAML 1.2 as 10): write 10", "20:14: tables[0].protect: ", "YAML reads ~ as null: use true or false"):
        assert hint in by_schema and hint in by_models, hint  # ... with the same place and hint


# --- ${VAR}: the YAML 1.2 type of the value, never the value in a message ---------------------------

def test_an_unquoted_variable_takes_the_yaml_1_2_type_of_its_value(tmp_path):
    path = tmp_path / "lance-sync.yaml"
    path.write_text(TYPED.format(**{**TYPED_DEFAULTS, "COUNT": " ${COUNT}", "NAME": ' "${NAME}"',
                                    "PROTECT": " ${PROTECT}"}).replace(
        "    protect:", "    properties:\n      a: ${NAME}\n      b: ${COUNT}\n      c: ${PROTECT}\n    protect:"))
    state = load_manifest([str(path)], {"COUNT": "0x10", "NAME": "010", "PROTECT": "True"})
    assert state.backends["uc"].config.max_retries == 16
    assert state.tables[0].name == "010" and state.tables[0].protect is True
    assert state.tables[0].properties == {"a": "010", "b": "0x10", "c": "True"}


@pytest.mark.parametrize(("placeholder", "value", "hint"), [
    ("OWNER", "20261125", "write it in quotes: '${VALUE}'"),
    ("COUNT", "0123456", "the value has a leading zero, which YAML 1.1 reads as octal"),
    ("PROTECT", "yes", "use true or false"),
    ("TIMEOUT", "1_234_567", "must be a number or empty"),
])
def test_a_variable_s_value_is_never_quoted_back(tmp_path, placeholder, value, hint):
    path = tmp_path / "lance-sync.yaml"
    path.write_text(TYPED.format(**{**TYPED_DEFAULTS, placeholder: " ${VALUE}"}))
    with pytest.raises(ManifestErrors) as refused:
        load_manifest([str(path)], {"VALUE": value})
    assert hint in str(refused.value)
    assert value not in str(refused.value)


# --- the loaders agree, explicit tags, and what lance-sync writes reads back the same ---------------

def test_both_loaders_read_the_traps_alike(tmp_path):
    lines = [f"k{i}:{scalar(trap)}" for i, trap in enumerate(TRAPS)]
    text = "\n".join(lines) + "\ntables:\n  - properties:\n" + "".join(
        f"      k{i}:{scalar(trap)}\n" for i, trap in enumerate(TRAPS))
    path = tmp_path / "m.yaml"
    path.write_text(text)
    full, plain = load_document(path, {}), load_plain_document(path, {})
    assert repr(plain.data) == repr(full.data)
    assert full.data["k3"] == LeadingZero("010") and full.data["k0"] == "NO" and full.data["k5"] == "1_000"
    assert full.data["tables"][0]["properties"]["k3"] == "010"
    assert full.written[("k3",)] == "010" and full.written[("tables", 0, "properties", "k9")] == "~"


@pytest.mark.parametrize(("text", "expected"), [
    ("!!str 010", "010"), ("!!int 0x1F", 31), ("!!float 1", 1.0), ("!!bool True", True), ("!!null ~", None),
    ("!!int 010", LeadingZero("010")),
])
def test_an_explicit_tag_reads_its_text_by_yaml_1_2(tmp_path, text, expected):
    path = tmp_path / "m.yaml"
    path.write_text(f"a: {text}\n")
    value = load_document(path, {}).data["a"]
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("text", ["!!int 1_000", "!!bool yes", "!!float 1:20", "!!null x"])
def test_an_explicit_tag_its_text_does_not_fit_is_an_error(tmp_path, text):
    path = tmp_path / "m.yaml"
    path.write_text(f"a: {text}\n")
    with pytest.raises(Exception, match=r"m.yaml:1:4: a: invalid YAML: .* is not .* in YAML 1.2"):
        load_document(path, {})


@pytest.mark.parametrize("text", [*TRAPS, "1.0e3", "-.5", "+.5e-3", "0o8", "0x", "y", "=", "<<"])
def test_written_yaml_reads_back_as_the_same_text(text):
    """`lance-sync import` writes catalog names and properties with dump_yaml: YAML 1.1 (PyYAML)
    and YAML 1.2 (lance-sync) both read back the string written."""
    dumped = dump_yaml({"name": text})
    assert yaml.safe_load(dumped) == {"name": text}
    node = yaml.compose(dumped).value[0][1]
    assert node.style or plain_value(node.value) == text


def test_the_shipped_schema_takes_a_text_map_value_an_editor_reads_as_a_number():
    """Editors read the manifest as YAML 1.2 and check it against the schema: an unquoted
    number or boolean is a fine property or storage value (lance-sync keeps its text)."""
    schema = manifest_json_schema()
    jsonschema.validate({"version": 1, "owner": "t", "backends": {"lake": {"type": "dir", "root": "x",
                                                                           "storage": {"a": 10, "b": True}}},
                         "tables": [{"name": "t", "location": "x/t", "register": [{"backend": "lake",
                                                                                   "namespace": "s"}],
                                     "properties": {"build": 10, "flag": True}}]}, schema)
