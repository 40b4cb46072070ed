"""Manifests written as JSON (lance_sync.manifest.yaml_core: read_json): the json module's data is the
plain YAML road's, or the plain road reads the file. Checked against libyaml's reading of the
same text, on chosen cases and on manifests drawn at random with a fixed seed."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lance_sync import api
from lance_sync.manifest import loader
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.yaml_core import MAX_KEY_CHARACTERS, read_json
from lance_sync.model.errors import ManifestError, ManifestErrors
from tests.support.manifests import same_data


def yaml_road(text: str) -> Any:
    return loader.parse_plain_text("m.json", text, {}).data


def json_road(text: str, templates: dict[Any, str] | None = None) -> Any:
    """What the json module reads of `text`; None when it leaves the text to the plain road."""
    try:
        return read_json(text, {}, loader.TEXT_MAPS, templates)
    except FastPathUnavailable:
        return None


TAKEN = [
    '{"version": 1, "owner": "team", "tables": []}',
    '{"a":1,"b":-0,"c":1.5e3,"d":-2.5E-3,"e":0.0,"f":12345678901234567890}',
    '{"a": true, "b": false, "c": null, "d": "true", "e": "null", "f": "010", "g": ""}',
    '{"a": "x\\/y", "b": "tab\\there", "c": "\\u00e9\\n", "d": "\\"q\\"", "e": "back\\\\slash"}',
    '{"a": {"b": [1, [2, {"c": []}], {}]}, "": "empty key"}',
    '{"tables": [{"name": "t", "properties": {"a": "1.0", "b": null, "c": {"x": 1}}}]}',
    '{"spark": {"conf": {"spark.x": "8"}}, "storage": {"k": "v"}}',
    '{"backends": {"b": {"storage": {"region": "us-east-1"}}}}',
    '\n\r\n  {"a": "b"}  \n\n',
    '{"a": "é ü 中文 \U0001F600"}',
    # a `$` on its own, as Glue, Unity and Hive ids write it: interpolation leaves it as it is
    '{"register": [{"backend": "glue", "namespace": "123456789012$sales"}], "a": "$", "b": "a$b$", "c": ["x$y"]}',
    '{"tables": [{"name": "t", "properties": {"cost": "$5", "k$": "v"}}]}',
]

#: texts both roads may read, that the json module must leave to the plain road
LEFT = [
    '{"tables": [{"name": "t", "properties": {"a": 1.0}}]}',  # a number in a text map: kept as written
    '{"tables": [{"name": "t", "properties": {"a": true}}]}',
    '{"spark": {"conf": {"spark.cores": 8}}}',
    '{"storage": {"k": 1}}',
    '{"backends": {"b": {"storage": {"k": 0.5}}}}',
    '{"namespaces": [{"properties": {"n": 2}}]}',
    '{"tables": [{"source": {"options": {"header": false}}}]}',
    '{"a": "${HOME}"}',  # a template
    '{"a": "x${HOME:-y}"}',
    '{"a": "a$$b"}',  # a `$` written twice: one `$` to the plain road
    '{"a": "${"}',  # a malformed template: the plain road's error
    '{"a": "\\u0024{HOME}"}',  # escapes that spell a template or `$$`
    '{"a": "$\\u007bHOME}"}',
    '{"a": "$\\u007BHOME}"}',
    '{"a": "\\u0024$"}',
    '{"a":\t"b"}',  # a tab
    '{"a": 1} # a comment',
    '{"a": 1}\n---\n{"b": 2}',
    '{"a": b}',  # a plain YAML scalar
    '[{"a": 1}]',  # not an object
    '{"a": 1, "a": 2}',  # a key twice: YAML refuses it
]


@pytest.mark.parametrize("text", TAKEN)
def test_the_json_module_reads_what_the_plain_road_reads(text: str):
    data = json_road(text)
    assert data is not None
    assert same_data(data, yaml_road(text))


@pytest.mark.parametrize("text", LEFT)
def test_what_the_two_might_read_apart_is_left_to_the_plain_road(text: str):
    assert json_road(text) is None


ENVIRON = {"HOME": "/home/x", "EMPTY": "", "PORT": "8080"}


@pytest.mark.parametrize("text", [
    '{"a": "${HOME}", "b": ["x${EMPTY:-d}y", 1], "c": {"d": "a$$b", "e": "$$${PORT}"}, "f": "$"}',
    '{"backends": {"g": {"type": "glue", "access_key_id": "${HOME}"}}, "k${HOME}": "keys stay as written"}',
    '{"tables": [{"name": "t", "properties": {"p": "${PORT}", "q": "$$", "r": "${UNSET:-}"}}]}',
    '{"a": ["${PORT}", ["${HOME}", {"b": "${PORT}"}]]}',
])
def test_templates_are_read_by_the_json_module_as_the_plain_road_reads_them(text: str):
    """A string holding ${VAR} or $$ is interpolated as the plain road does (a JSON string is
    quoted, so its value stays text), and only those that named a variable are templates."""
    from_json = loader.parse_plain("m.json", text.encode(), ENVIRON, None)
    from_yaml = loader.parse_plain_text("m.json", text, ENVIRON)
    assert json_road(text) is None and json_road(text, {}) is not None
    assert same_data(from_json.data, from_yaml.data)
    assert from_json.templates == from_yaml.templates and from_json.typed_templates == from_yaml.typed_templates


@pytest.mark.parametrize("text", ['{"a": "${UNSET}"}', '{"a": "${"}', '{"a": "${1X}"}'])
def test_a_template_that_does_not_read_goes_to_the_full_road(text: str):
    """A variable not set or a malformed reference: FastPathUnavailable, as from the plain road, so that
    the full road names the file, line and field."""
    with pytest.raises(FastPathUnavailable):
        loader.parse_plain("m.json", text.encode(), ENVIRON, None)
    with pytest.raises(FastPathUnavailable):
        loader.parse_plain_text("m.json", text, ENVIRON)


def test_random_templates_read_alike():
    """Strings with $, $$, ${VAR} and ${VAR:-default} at random places of random manifests:
    the json module's road and the plain road agree on the data and the templates."""
    rng = random.Random(20261204)
    pieces = ["a", "$", "$$", "${HOME}", "${EMPTY:-d}", "${PORT}", "é", " "]
    compared = 0
    for _ in range(300):
        document = random_manifest(rng)
        for table in document["tables"]:
            table["location"] = "".join(rng.choice(pieces) for _ in range(rng.randrange(5)))
            table["properties"]["v"] = "".join(rng.choice(pieces) for _ in range(rng.randrange(5)))
        text = json.dumps(document, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 2]))
        try:
            expected = loader.parse_plain_text("m.json", text, ENVIRON)
        except FastPathUnavailable:
            continue
        data = json_road(text, {})
        if data is None:
            continue  # a text map holding a number: left to the plain road, as without templates
        found = loader.parse_plain("m.json", text.encode(), ENVIRON, None)
        compared += 1
        assert same_data(found.data, expected.data), text
        assert found.templates == expected.templates, text
    assert compared > 100


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}',
                                  '{"a": "\\ud83d\\ude00"}', '{"' + "k" * 1100 + '": 1}'])
def test_what_is_not_json_to_yaml_is_left_to_the_plain_road(text: str):
    """NaN and Infinity are text to YAML, libyaml refuses an escaped surrogate pair and an
    implicit key longer than 1024 characters: the plain road reads or refuses them as YAML does."""
    assert json_road(text) is None


@pytest.mark.parametrize("length", [170, 171, 1000, 1018, 1021, 1022, 1024])
@pytest.mark.parametrize("written", ["k", "\\u00e9", "\\\\"])
@pytest.mark.parametrize("before_colon", ["", " ", "   ", "\n", "\r\n "])
def test_a_key_is_taken_only_as_yaml_takes_it(length: int, written: str, before_colon: str):
    """libyaml takes an implicit key on one line with its colon and within 1,024 characters as
    written: a key the json module reads is one the plain road reads alike."""
    text = '{"version": 1, "x": {"' + written * length + '"' + before_colon + ': 1}}'
    data = json_road(text)
    if data is not None:
        assert same_data(data, yaml_road(text))
    if length > MAX_KEY_CHARACTERS or before_colon:
        assert data is None
    if length <= MAX_KEY_CHARACTERS and not before_colon:
        assert data is not None


_ALPHABET = "ab01.-_ :/é\"\\\n$"


def random_scalar(rng: random.Random) -> Any:
    kind = rng.randrange(7)
    if kind == 0:
        return rng.randint(-10**20, 10**20)
    if kind == 1:
        return rng.choice([0.0, -0.0, 1.5, 1e300, -2.5e-7, rng.random()])
    if kind == 2:
        return rng.choice([True, False, None])
    text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(8)))
    return rng.choice([text, "true", "null", "010", "0x1F", ".inf", "~", "1e3", text.strip()])


def random_value(rng: random.Random, depth: int) -> Any:
    if depth > 3 or rng.random() < 0.5:
        return random_scalar(rng)
    if rng.random() < 0.5:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {"".join(rng.choice("kxyz_é") for _ in range(rng.randrange(1, 5))): random_value(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def random_manifest(rng: random.Random) -> dict[str, Any]:
    texts = {f"p{i}": rng.choice([random_scalar(rng), "text"]) for i in range(rng.randrange(3))}
    return {
        "version": 1, "owner": random_scalar(rng), "extra": random_value(rng, 0),
        "storage": texts, "spark": {"conf": dict(texts)},
        "tables": [{"name": f"t{i}", "location": random_scalar(rng), "properties": dict(texts),
                    "register": [{"backend": "b", "namespace": random_value(rng, 2)}]}
                   for i in range(rng.randrange(4))],
    }


def test_random_manifests_read_alike_or_are_left_to_the_plain_road():
    rng = random.Random(20261201)
    taken = 0
    for _ in range(400):
        document = random_manifest(rng)
        text = json.dumps(document, ensure_ascii=rng.random() < 0.5,
                          indent=rng.choice([None, 1, 2]), separators=rng.choice([None, (",", ":")]))
        data = json_road(text)
        if data is not None:
            taken += 1
            assert same_data(data, yaml_road(text)), text
    assert taken > 100  # most are taken: a text map with a number is the usual reason not to


@pytest.mark.parametrize("backend, namespace", [
    ({"type": "dir", "root": "./lake"}, "sales"),
    ({"type": "hive3", "uri": "thrift://127.0.0.1:9083", "root": "./lake"}, "hive$sales"),  # a `$` in its ids
])
def test_a_json_manifest_plans_as_its_yaml_twin(tmp_path: Path, backend: dict[str, str], namespace: str):
    """The same manifest as YAML and as JSON loads into the same desired state, the JSON one
    read by the json module."""
    (tmp_path / "lake").mkdir()
    document = {"version": 1, "owner": "team", "backends": {"lake": backend},
                "namespaces": [{"backend": "lake", "id": namespace, "properties": {"team": "a", "n": "1"}}],
                "tables": [{"name": f"t{i}", "location": f"./lake/data/t{i}.lance", "properties": {"tier": "gold"},
                            "register": [{"backend": "lake", "namespace": namespace}]} for i in range(3)]}
    as_json = tmp_path / "lance-sync.json"
    as_json.write_text(json.dumps(document, indent=2))
    as_yaml = tmp_path / "lance-sync.yaml"
    as_yaml.write_text(
        f"version: 1\nowner: team\nbackends:\n  lake: {json.dumps(backend)}\n"
        f"namespaces:\n  - {{backend: lake, id: '{namespace}', properties: {{team: a, n: 1}}}}\ntables:\n"
        + "".join(f"  - {{name: t{i}, location: ./lake/data/t{i}.lance, properties: {{tier: gold}}, "
                  f"register: [{{backend: lake, namespace: '{namespace}'}}]}}\n" for i in range(3)))
    assert json_road(as_json.read_text()) is not None
    from_json, from_yaml = api.load([str(as_json)]), api.load([str(as_yaml)])
    assert from_json.tables == from_yaml.tables
    assert from_json.namespaces[0].properties == from_yaml.namespaces[0].properties == {"team": "a", "n": "1"}


def test_a_problem_in_a_json_manifest_names_its_line(tmp_path: Path):
    """The json module reads no positions: a problem sends the file down the full road,
    which names the line and field, as for YAML."""
    path = tmp_path / "lance-sync.json"
    path.write_text('{\n  "version": 1,\n  "owner": "team",\n  "backends": {"lake": {"type": "dir", "root": "."}},\n'
                    '  "tables": [\n    {"name": "t", "location": "./t.lance", "protect": "maybe"}\n  ]\n}\n')
    with pytest.raises((ManifestError, ManifestErrors)) as raised:
        api.load([str(path)])
    assert "lance-sync.json:6:" in str(raised.value) and "protect" in str(raised.value)


def test_changed_since_compares_json_files_as_yaml_ones(tmp_path: Path):
    """A JSON base and overlay in git: the change since HEAD is found and only it is built."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                       env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                            "GIT_COMMITTER_EMAIL": "t@e", "PATH": "/usr/bin:/bin"})

    (tmp_path / "lake").mkdir()
    base = {"version": 1, "owner": "team", "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "sales"}],
            "tables": [{"name": f"t{i}", "location": f"./lake/data/t{i}.lance",
                        "register": [{"backend": "lake", "namespace": "sales"}]} for i in range(4)]}
    base_path, overlay_path = tmp_path / "lance-sync.json", tmp_path / "overlay.json"
    base_path.write_text(json.dumps(base, indent=1))
    overlay_path.write_text(json.dumps({"tables": [{"name": "t1", "properties": {"o": "v"}}]}))
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "m")
    base["tables"][2]["properties"] = {"tier": "gold"}
    base_path.write_text(json.dumps(base, indent=1))
    state, baseline = api.load_changed([str(base_path), str(overlay_path)], "HEAD")
    assert [(t.name, t.properties) for t in state.tables] == [("t2", {"tier": "gold"})]
    assert state.unbuilt is not None and baseline.now.tables["t1"]["properties"] == {"o": "v"}
