"""What the planner reads of a dataset's own state: a dataset's versions are listed (which reads
every version's manifest) only where the plan needs them, and once."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lance_sync.data.table_state import read_table_state


@pytest.fixture
def tagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[int]]:
    """A dataset of 3 versions, `stable` tagged at 2; the list counts calls of versions()."""
    location = str(tmp_path / "t.lance")
    rows = pa.table({"id": [1, 2]})
    lance.write_dataset(rows, location)
    for _ in range(2):
        lance.write_dataset(rows, location, mode="append")
    lance.dataset(location).tags.create("stable", 2)
    calls: list[int] = []
    listed = lance.LanceDataset.versions

    def counted(self: lance.LanceDataset) -> list:
        calls.append(1)
        return listed(self)

    monkeypatch.setattr(lance.LanceDataset, "versions", counted)
    return location, calls


def test_tags_where_declared_need_no_versions(tagged: tuple[str, list[int]]):
    location, calls = tagged
    state = read_table_state(location, None, {"tags": {"stable": 2}})
    assert state.error is None and state.tags["stable"].version == 2
    assert state.versions == () and not calls


@pytest.mark.parametrize("declared", [{"stable": 3}, {"stable": 2, "next": 3}])
def test_a_tag_to_create_or_move_reads_the_versions(tagged: tuple[str, list[int]], declared: dict[str, int]):
    location, calls = tagged
    assert read_table_state(location, None, {"tags": declared}).versions == (1, 2, 3)
    assert len(calls) == 1


def test_a_retention_lists_the_versions_once(tagged: tuple[str, list[int]]):
    location, calls = tagged
    state = read_table_state(location, None, {"tags": {"stable": 2},
                                              "retention": {"keep_versions": 1, "older_than": None}})
    assert state.versions == (1, 2, 3) and len(calls) == 1
    assert state.cleanup is not None and state.cleanup.versions == (1,)  # 2 is tagged, 3 the latest


def test_a_plan_opens_a_dataset_that_declares_state_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The state is read from the dataset as the plan's inspection of its location opened it."""
    from lance_sync import api

    lance.write_dataset(pa.table({"id": [1, 2]}), str(tmp_path / "lake" / "t.lance"))
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text("version: 1\nowner: team\nbackends:\n  lake: {type: dir, root: ./lake}\n"
                        "namespaces: [{backend: lake, id: ns}]\ntables:\n  - name: t\n    location: ./lake/t.lance\n"
                        "    register: [{backend: lake, namespace: ns}]\n    tags: {stable: 1}\n")
    opened: list[str] = []
    open_dataset = lance.dataset
    monkeypatch.setattr(lance, "dataset", lambda uri, *a, **k: opened.append(str(uri)) or open_dataset(uri, *a, **k))
    plan = api.plan(api.load(str(manifest)))
    assert [a.name for a in plan.actions if a.part == "stable"] == ["create tag"]
    assert sum(uri.endswith("t.lance") for uri in opened) == 1
