from __future__ import annotations

from urllib.parse import unquote

from lance_sync.model.locations import is_within, normalize_location, relative_to


def test_one_spelling_per_place():
    assert normalize_location("file:///data/t.lance/") == "/data/t.lance"
    assert normalize_location("file:/data/t.lance") == "/data/t.lance"
    assert normalize_location("t.lance", "/base") == "/base/t.lance"
    assert normalize_location("S3://bucket/t.lance/") == "s3://bucket/t.lance"


def test_nesting():
    assert is_within("/a/b", "/a") and not is_within("/ab", "/a")
    assert relative_to("/root/x/y", "/root") == "x/y"
    assert relative_to("/other", "/root") is None


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
