"""The common YAML reader without keeping texts once (lance_sync.manifest.common_yaml,
`keep_once` false, as a worker that answers rows reads a file): the keys, values and depth of
its flow values are counted from the distinct shapes of their lines instead of walking each
value, and it must answer and refuse exactly as the walk does (`keep_once` true, which
tests/unit/test_common_yaml.py compares with libyaml). Checked on manifests drawn at random
with a fixed seed: many lines of a few shapes each, keys written twice at several depths, keys
that differ by their digits only (alike in a shape), quoted keys (which a shape cannot tell
apart), and the value and depth limits just under and over."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

import pytest

from lance_sync.manifest import loader
from lance_sync.manifest.common_yaml import read_common_yaml
from lance_sync.manifest.parsing import CACHE_ENV, MIN_BYTES, load_plain_document
from lance_sync.manifest.strategy import FastPathUnavailable
from tests.support.manifests import same_data

#: what the reader logs when it walks the values instead of counting them by shape
WALKED = "not counted by shape"


def read(text: str, keep_once: bool, max_nodes: int | None = None, max_depth: int = loader.MAX_DEPTH
         ) -> tuple[Any, ...] | str:
    """The data, templates and typed paths the reader gives, or why it refuses."""
    try:
        return read_common_yaml(text, {}, loader.node_limit(text) if max_nodes is None else max_nodes, max_depth,
                                loader.is_text_map, keep_once)
    except FastPathUnavailable as refusal:
        return str(refusal)


def assert_alike(text: str, **limits: int) -> tuple[Any, ...] | str:
    """Both ways answer alike, or refuse alike (for the same reason); the walk's answer."""
    walked, counted = read(text, True, **limits), read(text, False, **limits)
    if isinstance(walked, str) or isinstance(counted, str):
        assert walked == counted, f"{limits}\n{text}"
        return walked
    assert same_data(walked[0], counted[0]) and walked[1:] == counted[1:], f"{limits}\n{text}"
    return walked


# --- manifests drawn at random: a few line shapes, many lines each -----------------------------

#: keys of flow mappings; `<n>` and `<m>` are each line's numbers (equal on some lines: a key twice
#: there only), `'...'` and `"..."` quoted keys (a shape cannot tell them from another key)
KEYS = ["a", "b", "name", "k<n>", "k<m>", "x<n>y", "n<m>", "'a'", "'k<n>'", '"b"', "a.b"]
#: scalars that stay text (the marked ones are typed, and walked with their paths whatever the road)
TEXTS = ["v<n>", "gold", "'q<n>'", "'/d/ns<m>/t<n>.lance'", "x y", "''", "'a, b: c'", "-x"]
TYPED = ["<n>", "true", "~", "${NAME}", "0o<m>"]


def flow_value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth < 5 and roll < 0.3:
        keys = rng.sample(KEYS, rng.randint(0, 4))
        if keys and rng.random() < 0.08:
            keys.insert(rng.randrange(len(keys) + 1), rng.choice(keys))  # a key twice, at this depth
        return "{" + ", ".join(f"{key}: {flow_value(rng, depth + 1)}" for key in keys) + "}"
    if depth < 5 and roll < 0.45:
        return "[" + ", ".join(flow_value(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    return rng.choice(TYPED) if rng.random() < 0.01 else rng.choice(TEXTS)


def line_shape(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(TEXTS[2:4])  # a quoted item alone
    if roll < 0.15:
        return "[" + ", ".join(flow_value(rng, 2) for _ in range(rng.randint(1, 3))) + "]"
    keys = ["name", "location"] + rng.sample(KEYS[2:], rng.randint(0, 3))
    return "{" + ", ".join(f"{key}: {flow_value(rng, 2)}" for key in dict.fromkeys(keys)) + "}"


def manifest(rng: random.Random) -> str:
    shapes = [line_shape(rng) for _ in range(rng.randint(1, 3))]
    # `<n>` and `<m>` of as many digits but never equal, now and then: keys alike in their shape only
    numbers = rng.choice([([1, 2, 3, 10, 12, 20, 100],) * 2, (list(range(10)),) * 2, ([1, 2, 3, 4], [5, 6, 7, 8])])
    lines = []
    for _ in range(rng.randint(12, 60)):
        shape = rng.choice(shapes)
        lines.append("  - " + shape.replace("<n>", str(rng.choice(numbers[0]))).replace("<m>", str(rng.choice(numbers[1]))))
    head = f"version: 1\nbackends:\n  cat: {flow_value(rng, 1)}\n" if rng.random() < 0.3 else "version: 1\n"
    return head + "tables:\n" + "\n".join(lines) + "\n"


def test_random_manifests_are_counted_by_shape_as_the_walk_counts_them(caplog: pytest.LogCaptureFixture) -> None:
    """Guards the counting by shape: a key twice in a mapping (at any depth, or on some lines of
    a shape only), keys alike but for their digits, quoted keys, and the counts of values and
    levels, each as the walk finds them."""
    rng = random.Random(5050)
    outcomes: dict[str, int] = {}
    caplog.set_level(logging.DEBUG, logger="lance_sync.manifest.common_yaml")
    for _ in range(1500):
        caplog.clear()
        text = manifest(rng)
        answer = assert_alike(text)
        road = "walked" if any(WALKED in record.getMessage() for record in caplog.records) else "shapes"
        kind = answer if isinstance(answer, str) else "taken"
        outcomes[f"{road}: {kind}"] = outcomes.get(f"{road}: {kind}", 0) + 1
    assert outcomes.get("shapes: taken", 0) > 300, outcomes
    assert outcomes.get("shapes: a key written twice in a flow mapping", 0) > 0, outcomes  # refused by shape
    assert outcomes.get("walked: a key written twice in a flow mapping", 0) > 20, outcomes  # digits alike
    assert outcomes.get("walked: taken", 0) > 100, outcomes


def test_random_manifests_meet_the_value_and_depth_limits_as_the_walk_does() -> None:
    """Guards the counts of values (`max_nodes`) and levels (`max_depth`) from shapes: each limit
    just under, at and just over what a manifest holds, answered alike both ways."""
    rng = random.Random(5051)
    checked = 0
    for _ in range(300):
        text = manifest(rng)
        if isinstance(read(text, True), str):
            continue
        part = loader.parse_plain_text("m.yaml", text, {"NAME": "x"})
        refused = [isinstance(assert_alike(text, max_nodes=part.values + shift), str) for shift in (-1, 0, 1)]
        assert refused == [True, False, False], text
        depths = [isinstance(assert_alike(text, max_depth=depth), str) for depth in range(1, 9)]
        assert depths == sorted(depths, reverse=True) and any(depths) and not all(depths), text
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("depth", [60, 61, 62, 63, 64, 65])
def test_the_depth_limit_of_many_lines_of_a_shape_is_the_walks(depth: int) -> None:
    """Guards the depth counted from shapes at the loader's limit (MAX_DEPTH), just under and
    over: `tables`, the item, then `depth` levels of flow values."""
    text = "tables:\n" + "".join(f"  - {'[' * depth}{index}{']' * depth}\n" for index in range(20)) \
        + "".join(f"  - {{a: {'[' * (depth - 1)}v{index}{']' * (depth - 1)}}}\n" for index in range(20))
    answer = assert_alike(text)
    assert isinstance(answer, str) == (depth + 2 > loader.MAX_DEPTH), answer


def test_a_key_twice_in_some_lines_of_a_shape_is_refused() -> None:
    """Guards keys that differ by their digits only: alike in their shape, the walk tells the
    lines with a key twice from the others."""
    lines = "".join(f"  - {{k{index}: 1, k{index + 1}: 2, p: {{q{index}: a, q{index}: b}}}}\n" for index in range(1, 9))
    assert assert_alike("tables:\n" + lines) == "a key written twice in a flow mapping"
    distinct = "".join(f"  - {{k{index}: a, k{index + 1}: b, p: {{q{index}: a}}}}\n" for index in range(1, 9))
    assert not isinstance(assert_alike("tables:\n" + distinct), str)


@pytest.mark.parametrize("keys", ["'a': x, a: y", "'a': x, 'a': y", "a: {'b': x, b: y}", "'a': x, b: y"])
def test_quoted_keys_are_walked(keys: str, caplog: pytest.LogCaptureFixture) -> None:
    """Guards quoted keys, which a shape cannot tell from another key: walked, and refused when
    one is written twice (quoted or not)."""
    caplog.set_level(logging.DEBUG, logger="lance_sync.manifest.common_yaml")
    answer = assert_alike("tables:\n" + "".join(f"  - {{{keys}, n: t{index}}}\n" for index in range(12)))
    assert isinstance(answer, str) == (keys != "'a': x, b: y")
    assert any("a quoted key" in record.getMessage() for record in caplog.records)


def test_the_benchmarks_manifest_is_counted_by_shape(caplog: pytest.LogCaptureFixture) -> None:
    """Guards the fast road itself: a file of tables as bench/bench_catalogs.py writes them is
    counted by shape, not walked, and reads as the walk reads it."""
    caplog.set_level(logging.DEBUG, logger="lance_sync.manifest.common_yaml")
    text = "tables:\n" + "".join(f"  - {{name: t{i}, location: '/x/data/ns{i % 7}/t{i}.lance', properties: "
                                 f"{{tier: gold}}, register: [{{backend: cat, namespace: 'ns{i % 7}'}}]}}\n"
                                 for i in range(2000))
    assert not isinstance(assert_alike(text), str)
    assert not any(WALKED in record.getMessage() for record in caplog.records)


def test_a_file_read_once_is_read_alike_and_its_texts_are_not_kept_once(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards `keep_once` from load_plain_document down to the reader: the same data, its texts
    not kept once (what spares the walk) unless the parse cache keeps the document (a later
    run may recall it into a process that keeps it)."""
    path = tmp_path / "tables.yaml"
    lines = (MIN_BYTES // 40) + 1  # large enough for the cache
    path.write_text("tables:\n" + "".join(f"  - {{name: t{i}, properties: {{tier: gold}}}}\n" for i in range(lines)))
    cached = load_plain_document(path, keep_once=False).data  # the test session's cache is on
    assert cached["tables"][0]["properties"]["tier"] is cached["tables"][1]["properties"]["tier"]
    monkeypatch.setenv(CACHE_ENV, "off")
    kept, once = load_plain_document(path).data, load_plain_document(path, keep_once=False).data
    assert same_data(kept, once) and same_data(kept, cached)
    assert kept["tables"][0]["properties"]["tier"] is kept["tables"][1]["properties"]["tier"]
    assert once["tables"][0]["properties"]["tier"] is not once["tables"][1]["properties"]["tier"]
