"""Parsed manifest files kept by content between runs (lance_sync.manifest.parse_cache); the
`parsed` fixture (tests/unit/conftest.py) lists the files parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lance_sync.manifest import load_manifest, parse_cache, parse_once


def manifest(tables: int, extra: str = "") -> str:
    return ("version: 1\nowner: o\nbackends:\n  a: {type: dir, root: ./a}\nnamespaces: [{backend: a, id: s}]\n"
            f"tables:\n{extra}" + "".join(f"  - {{name: t{i}, location: ./a/t{i}.lance, properties: {{k: v}}, "
                                          "register: [{backend: a, namespace: s}]}\n" for i in range(tables)))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own, keeping files of 1 KiB or more; the parses counted."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(parse_cache.CACHE_ENV, str(folder))
    monkeypatch.setattr(parse_cache, "MIN_BYTES", 1024)
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


def test_what_refers_to_the_environment_or_is_small_is_not_kept(tmp_path: Path, cache: Path,
                                                                monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TIER", "gold")
    (tmp_path / "env.yaml").write_text(manifest(40, "  - {name: x, location: ./a/x.lance, properties: {t: '${TIER}'}, "
                                                            "register: [{backend: a, namespace: s}]}\n"))
    (tmp_path / "small.yaml").write_text(manifest(1))
    for name in ("env.yaml", "small.yaml"):
        load_manifest([str(tmp_path / name)])
    assert entries(cache) == []


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
    monkeypatch.setenv(parse_cache.CACHE_ENV, "off")
    load_manifest([str(path)])
    assert not cache.exists()
    cache.write_text("a file where the folder would be")
    monkeypatch.setenv(parse_cache.CACHE_ENV, str(cache / "sub"))
    load_manifest([str(path)])
    load_manifest([str(path)])
    assert parsed == ["m.yaml"] * 3


def test_a_value_marshal_cannot_carry_is_not_kept(tmp_path: Path, cache: Path):
    path = tmp_path / "m.yaml"
    path.write_text(manifest(40).replace("owner: o", "owner: o\nspark: {conf: {a: b}}\nx: 010"))
    parse_once.load_plain_document(path, {})  # a LeadingZero: the document reads, nothing is kept
    assert entries(cache) == []


def test_the_least_recently_used_entries_go(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(parse_cache, "MAX_ENTRIES", 2)
    paths = []
    for count in (40, 41, 42):
        paths.append(tmp_path / f"m{count}.yaml")
        paths[-1].write_text(manifest(count))
        load_manifest([str(paths[-1])])
    assert len(entries(cache)) == 2
    assert parse_cache.recall(paths[0].read_bytes()) is None
    assert parse_cache.recall(paths[2].read_bytes()) is not None
