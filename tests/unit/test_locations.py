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
