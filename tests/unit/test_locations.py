from __future__ import annotations

from lance_sync.locations import is_within, normalize_location, relative_to


def test_one_spelling_per_place():
    assert normalize_location("file:///data/t.lance/") == "/data/t.lance"
    assert normalize_location("file:/data/t.lance") == "/data/t.lance"
    assert normalize_location("t.lance", "/base") == "/base/t.lance"
    assert normalize_location("S3://bucket/t.lance/") == "s3://bucket/t.lance"


def test_nesting():
    assert is_within("/a/b", "/a") and not is_within("/ab", "/a")
    assert relative_to("/root/x/y", "/root") == "x/y"
    assert relative_to("/other", "/root") is None
