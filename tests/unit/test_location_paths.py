from __future__ import annotations

import os
from urllib.parse import unquote

from lance_sync.model.locations import (
    is_within,
    nested,
    normalize_location,
    overlapping,
    relative_to,
    resolved_location,
    resolved_locations,
)


def test_one_spelling_per_place():
    assert normalize_location("file:///data/t.lance/") == "/data/t.lance"
    assert normalize_location("file:/data/t.lance") == "/data/t.lance"
    assert normalize_location("t.lance", "/base") == "/base/t.lance"
    assert normalize_location("S3://bucket/t.lance/") == "s3://bucket/t.lance"


def test_nesting():
    assert is_within("/a/b", "/a") and not is_within("/ab", "/a")
    assert relative_to("/root/x/y", "/root") == "x/y"
    assert relative_to("/other", "/root") is None


def test_overlapping_finds_a_nesting_exactly_when_nested_does():
    """`overlapping` compares each location with the one before it in path order only; a
    seeded search over small estates (twins, prefixes that are not parents, the root, object
    stores) holds it to `nested`, which tracks every open ancestor."""
    import random

    rng = random.Random(20261129)
    parts = ["a", "b", "ab", "a b", "a.lance", "b-"]
    found = 0
    for _ in range(20_000):
        locations = [rng.choice(["/", "s3://"]) + "/".join(rng.choice(parts) for _ in range(rng.randint(1, 3)))
                     for _ in range(rng.randint(0, 6))]
        if rng.random() < 0.05:
            locations.append("/")
        expected = next(nested(locations), None) is not None
        assert overlapping(locations) == expected, locations
        found += expected
    assert 0 < found < 20_000  # both answers were tried


def test_nesting_is_found_as_every_pair_compared_finds_it():
    """`nested` and `overlapping` first look for folders on the way that are locations too,
    without sorting (`_apart`); a seeded search over small estates (twins, prefixes that are
    not parents, trailing slashes, the root, object stores, double slashes) holds both to
    comparing every pair. Fails when that first look lets a nesting through."""
    import random

    rng = random.Random(20261205)
    parts = ["a", "b", "ab", "a.lance", "", "b-"]
    found = 0
    for _ in range(20_000):
        locations = [rng.choice(["/", "s3://", "gs://b/"]) + "/".join(rng.choice(parts) for _ in range(rng.randint(1, 3)))
                     + rng.choice(["", "", "", "/"]) for _ in range(rng.randint(0, 6))]
        expected = any(i != j and is_within(location, other) for i, location in enumerate(locations)
                       for j, other in enumerate(locations))
        assert (next(nested(locations), None) is not None) == expected, locations
        assert overlapping(locations) == expected, locations
        found += expected
    assert 0 < found < 20_000  # both answers were tried


def test_a_path_already_normal_is_kept_and_any_other_is_normalized():
    """Locations a catalog answers are mostly normal already; they skip normalizing, and the
    check that lets them must never let through one that normalizing would change."""
    import itertools
    import posixpath

    parts = ["a", "b.lance", ".", "..", "", ".x", "..x", "~", " "]
    for count in range(1, 4):
        for chosen in itertools.product(parts, repeat=count):
            for path in ("/" + "/".join(chosen), "/" + "/".join(chosen) + "/"):
                expected = "/" + posixpath.normpath(path.strip()).lstrip("/")
                assert normalize_location(path) == expected, path
                for url in (f"file://{path}", f"file://{path}%20", f"file://localhost{path}"):
                    assert normalize_location(url) == "/" + posixpath.normpath(
                        unquote(url.strip().removeprefix("file://").removeprefix("localhost"))).lstrip("/"), url


def test_an_observed_table_keeps_every_member_with_its_location_spelled_once_and_properties_shared():
    """The observer builds each table's record anew (not with dataclasses.replace): a member
    added to TableInfo must come through too."""
    from dataclasses import fields

    from lance_sync.drivers.base import TableInfo
    from lance_sync.plan.observe import _normalized

    shared: dict = {}
    first = _normalized(TableInfo(("c", "s", "u"), "/data/u.lance", {"a": "1"}), shared)
    info = TableInfo(("c", "s", "t"), "file:///data/t.lance", {"a": "1"}, is_lance=False,
                     columns=[{"name": "id", "type": "int"}])

    observed = _normalized(info, shared)

    assert observed.location == "/data/t.lance" and observed.properties is first.properties
    kept = [f.name for f in fields(TableInfo) if f.name not in ("location", "properties")]
    assert {name: getattr(observed, name) for name in kept} == {name: getattr(info, name) for name in kept}


def test_a_resolver_resolves_as_realpath_does(tmp_path):
    """`LocationResolver` resolves each folder once and lists its links; it answers what
    os.path.realpath answers for a linked folder, a linked dataset, a path that does not exist
    yet (below a link or not), a dangling link, and leaves object stores alone."""
    (tmp_path / "data" / "a.lance").mkdir(parents=True)
    (tmp_path / "alias").symlink_to("data")
    (tmp_path / "b.lance").symlink_to(tmp_path / "data" / "a.lance")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    locations = [str(tmp_path / name) for name in ("alias/a.lance", "b.lance", "data/a.lance", "alias/new.lance",
                                                    "new/t.lance", "dangling", "alias")]
    assert resolved_locations(locations) == [os.path.realpath(location) for location in locations]
    assert resolved_locations(["s3://bucket/alias/t.lance"]) == ["s3://bucket/alias/t.lance"]
    assert resolved_location(str(tmp_path / "alias" / "a.lance")) == str(tmp_path / "data" / "a.lance")
