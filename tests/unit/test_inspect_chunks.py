"""A plan inspects the declared locations a chunk at a time (lance_sync.plan.planner), so that a
million reports are not alive at once; a folder's locations stay in one chunk, so that the
listing that tells which of them exist is made once."""

from __future__ import annotations

import random

import pytest

from lance_sync.plan import planner


@pytest.mark.parametrize("seed", range(5))
def test_chunks_cover_every_location_in_order_and_keep_a_folder_whole(seed: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pick = random.Random(seed)
    monkeypatch.setattr(planner, "INSPECT_CHUNK", pick.randint(1, 20))
    folders = [f"/data/ns{n}" for n in range(pick.randint(1, 6))] + ["s3://bucket/flat", "s3://bucket/flat/deep"]
    locations = sorted({f"{pick.choice(folders)}/t{i}.lance" for i in range(pick.randint(0, 300))})
    chunks = list(planner._chunks(locations))
    assert [location for chunk in chunks for location in chunk] == locations
    assert all(len(chunk) >= planner.INSPECT_CHUNK for chunk in chunks[:-1])
    folder_chunks = {}
    for index, chunk in enumerate(chunks):
        for location in chunk:
            folder_chunks.setdefault(location.rpartition("/")[0], set()).add(index)
    assert all(len(indexes) == 1 for indexes in folder_chunks.values())
