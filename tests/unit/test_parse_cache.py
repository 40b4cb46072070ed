"""Parsed manifest files kept by content between runs (lance_sync.manifest.parsing); the
`parsed` fixture (tests/unit/conftest.py) lists the files parsed."""

from __future__ import annotations

import json
import marshal
import pickle
from pathlib import Path

import pytest

from lance_sync.manifest import load_manifest, parsing
from lance_sync.model.errors import ManifestError


def manifest(tables: int, extra: str = "") -> str:
    return ("version: 1\nowner: o\nbackends:\n  a: {type: dir, root: ./a}\nnamespaces: [{backend: a, id: s}]\n"
            f"tables:\n{extra}" + "".join(f"  - {{name: t{i}, location: ./a/t{i}.lance, properties: {{k: v}}, "
                                          "register: [{backend: a, namespace: s}]}\n" for i in range(tables)))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own, keeping files of 1 KiB or more; the parses counted."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(parsing.CACHE_ENV, str(folder))
    monkeypatch.setattr(parsing, "MIN_BYTES", 1024)
    return folder


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parsed"))


def test_a_large_file_is_parsed_once_across_runs(tmp_path: Path, cache: Path, parsed: list[str]):
    path = tmp_path / "m.yaml"
    path.write_text(manifest(40))
    first = load_manifest([str(path)])
    second = load_manifest([str(path)])
    assert parsed == ["m.yaml"] and len(entries(cache)) == 1
    assert second.tables == first.tables and second.namespaces == first.namespaces
    path.write_text(manifest(41))  # another content, another entry
    assert len(load_manifest([str(path)]).tables) == 41
    assert parsed == ["m.yaml", "m.yaml"] and len(entries(cache)) == 2


def test_a_small_file_is_not_kept(tmp_path: Path, cache: Path):
    (tmp_path / "small.yaml").write_text(manifest(1))
    load_manifest([str(tmp_path / "small.yaml")])
    assert entries(cache) == []


SECRET = "s3cr3t-value-never-kept"
#: a variable in a typed field (unquoted), in a quoted one, and in a text map
WITH_VARIABLES = manifest(40, "  - name: x\n    location: ./a/${TABLE}.lance\n    protect: ${PROTECT}\n"
                              "    properties:\n      t: '${TIER}'\n      n: ${N}\n"
                              "    register: [{backend: a, namespace: s}]\n")


def test_a_value_from_the_environment_is_kept_as_written_and_read_in_the_next_run(
        tmp_path: Path, cache: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "env.yaml"
    path.write_text(WITH_VARIABLES)
    for name, value in (("TABLE", "x"), ("PROTECT", "true"), ("TIER", SECRET), ("N", "010")):
        monkeypatch.setenv(name, value)
    first = load_manifest([str(path)])
    [entry] = entries(cache)
    assert SECRET.encode() not in entry.read_bytes() and b"${TIER}" in entry.read_bytes()
    table = next(t for t in first.tables if t.name == "x")
    assert table.properties == {"t": SECRET, "n": "010"} and table.protect is True

    monkeypatch.setenv("TIER", "silver")
    monkeypatch.setenv("PROTECT", "false")
    again = load_manifest([str(path)])
    assert parsed == ["env.yaml"]  # read back, not parsed
    table = next(t for t in again.tables if t.name == "x")
    assert table.properties == {"t": "silver", "n": "010"} and table.protect is False
    assert table.location.endswith("/a/x.lance")


def test_a_json_file_keeps_its_variables_as_written_too(tmp_path: Path, cache: Path, parsed: list[str],
                                                        monkeypatch: pytest.MonkeyPatch):
    """A JSON manifest's templates, read by the json module, are kept as the plain road keeps
    them: the secret's value is not in the cache, and the next run reads its own."""
    tables = [{"name": f"t{i}", "location": f"./a/t{i}.lance", "properties": {"k": "v"},
               "register": [{"backend": "a", "namespace": "s"}]} for i in range(40)]
    tables[3]["properties"] = {"t": "${TIER}", "cost": "$$5"}
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"version": 1, "owner": "o", "backends": {"a": {"type": "dir", "root": "./a"}},
                                "namespaces": [{"backend": "a", "id": "s"}], "tables": tables}, indent=1))
    monkeypatch.setenv("TIER", SECRET)
    first = load_manifest([str(path)])
    [entry] = entries(cache)
    assert SECRET.encode() not in entry.read_bytes() and b"${TIER}" in entry.read_bytes()
    assert next(t for t in first.tables if t.name == "t3").properties == {"t": SECRET, "cost": "$5"}
    monkeypatch.setenv("TIER", "silver")
    again = load_manifest([str(path)])
    assert parsed == ["env.json"]  # read back, not parsed
    assert next(t for t in again.tables if t.name == "t3").properties == {"t": "silver", "cost": "$5"}


def test_a_variable_not_set_in_the_next_run_is_reported_by_the_parse(tmp_path: Path, cache: Path, parsed: list[str],
                                                                     monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "env.yaml"
    path.write_text(WITH_VARIABLES)
    for name, value in (("TABLE", "x"), ("PROTECT", "true"), ("TIER", "gold"), ("N", "1")):
        monkeypatch.setenv(name, value)
    load_manifest([str(path)])
    monkeypatch.delenv("TIER")
    with pytest.raises(ManifestError) as raised:
        load_manifest([str(path)])
    assert "environment variable 'TIER' is not set" in str(raised.value)
    assert raised.value.position is not None and raised.value.position.line == 11


def test_an_entry_whose_template_has_no_place_is_parsed_again(tmp_path: Path, cache: Path, parsed: list[str]):
    path = tmp_path / "m.yaml"
    path.write_text(manifest(40))
    parsing.keep(path.read_bytes(), marshal.dumps(({"version": 1}, {("tables", 99, "x"): "${X}"}, [])))
    assert len(load_manifest([str(path)]).tables) == 40
    assert parsed == ["m.yaml"]


def test_a_worker_answers_without_the_values_of_variables() -> None:
    environ = {"TABLE": "x", "PROTECT": "true", "TIER": SECRET, "N": "1"}
    [answer] = pickle.loads(parsing._parse_in_worker("env.yaml", [WITH_VARIABLES.encode()], environ))
    assert isinstance(answer, bytes) and SECRET.encode() not in answer
    # a changed version the same worker reads after the earlier one
    changed = WITH_VARIABLES.replace("t: '${TIER}'", "t: '${TIER}'\n      u: '${TIER}'").encode()
    answers = pickle.loads(parsing._parse_in_worker("env.yaml", [WITH_VARIABLES.encode(), changed], environ))
    assert len(answers) == 2 and all(isinstance(a, bytes) and SECRET.encode() not in a for a in answers)
    assert answers[0] != answers[1]


def test_an_entry_that_does_not_read_back_is_parsed_again(tmp_path: Path, cache: Path, parsed: list[str]):
    path = tmp_path / "m.yaml"
    path.write_text(manifest(40))
    load_manifest([str(path)])
    [entry] = entries(cache)
    entry.write_bytes(entry.read_bytes()[:100])  # cut short
    assert len(load_manifest([str(path)]).tables) == 40
    entry.write_bytes(b"something else entirely")
    assert len(load_manifest([str(path)]).tables) == 40
    assert parsed == ["m.yaml"] * 3


def test_off_and_unwritable(tmp_path: Path, cache: Path, parsed: list[str], monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "m.yaml"
    path.write_text(manifest(40))
    monkeypatch.setenv(parsing.CACHE_ENV, "off")
    load_manifest([str(path)])
    assert not cache.exists()
    cache.write_text("a file where the folder would be")
    monkeypatch.setenv(parsing.CACHE_ENV, str(cache / "sub"))
    load_manifest([str(path)])
    load_manifest([str(path)])
    assert parsed == ["m.yaml"] * 3


def test_a_value_marshal_cannot_carry_is_not_kept(tmp_path: Path, cache: Path):
    path = tmp_path / "m.yaml"
    path.write_text(manifest(40).replace("owner: o", "owner: o\nspark: {conf: {a: b}}\nx: 010"))
    parsing.load_plain_document(path, {})  # a LeadingZero: the document reads, nothing is kept
    assert entries(cache) == []


def test_the_least_recently_used_entries_go(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(parsing, "MAX_ENTRIES", 2)
    paths = []
    for count in (40, 41, 42):
        paths.append(tmp_path / f"m{count}.yaml")
        paths[-1].write_text(manifest(count))
        load_manifest([str(paths[-1])])
    assert len(entries(cache)) == 2
    assert parsing.recall(paths[0].read_bytes()) is None
    assert parsing.recall(paths[2].read_bytes()) is not None
