"""The common YAML of large manifests read by the json module (lance_sync.manifest.common_yaml):
its data, templates and typed templates are the plain road's (libyaml's events), or it leaves
the file to that road. Checked on manifests drawn at random with a fixed seed, full of the
scalars YAML types in surprising ways, and on each kind of text it refuses."""

from __future__ import annotations

import random

import pytest

from lance_sync.manifest import loader
from lance_sync.manifest.common_yaml import read_common_yaml
from lance_sync.manifest.strategy import FastPathUnavailable
from tests.support.manifests import same_data

ENVIRON = {"PORT": "8080", "EMPTY": "", "NAME": "prod", "FLAG": "true", "ZERO": "010"}


def common_road(text: str, shared: dict[str, str] | None = None, max_nodes: int | None = None
                ) -> loader.Document | None:
    """What parse_plain makes of `text` by this reader; None when it leaves the text to libyaml."""
    try:
        data, written, typed = read_common_yaml(text, {} if shared is None else shared,
                                                loader.node_limit(text) if max_nodes is None else max_nodes,
                                                loader.MAX_DEPTH, loader.is_text_map)
        templates = loader.resolve_templates("m.yaml", data, written, frozenset(typed), ENVIRON)
    except FastPathUnavailable:
        return None
    return loader.Document(data, templates=templates, files=["m.yaml"],
                           typed_templates=frozenset(path for path in typed if path in templates))


def plain_road(text: str, shared: dict[str, str] | None = None, max_nodes: int | None = None
               ) -> loader.PlainPart | None:
    try:
        return loader.parse_plain_text("m.yaml", text, ENVIRON, shared, max_nodes=max_nodes)
    except FastPathUnavailable:
        return None


def assert_reads_alike(text: str) -> bool:
    """The reader's document is the plain road's; whether the reader took the text."""
    fast = common_road(text)
    if fast is None:
        return False
    slow = plain_road(text)
    assert slow is not None, f"taken here, refused by libyaml:\n{text}"
    assert same_data(fast.data, slow.data), f"{text}\n{fast.data!r}\n{slow.data!r}"
    assert fast.templates == slow.templates, text
    assert fast.typed_templates == slow.typed_templates, text
    return True


# --- manifests drawn at random ------------------------------------------------------------------

PLAIN = ["gold", "t1", "a b", "a:b", "s3://bucket/x.lance", "/data/ns0/t0.lance", "x-y", "-x", "+x", "a#b", "a #b",
         "010", "0o7", "0o8", "0x1F", "0xg", "1_000", "12", "-0", "+1", "1.", ".5", "1.5e3", "1e3", "-2.5E-3",
         ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "1:20", "2026-01-01", "true", "True", "TRUE", "tRUE", "false",
         "yes", "no", "on", "off", "y", "n", "~", "null", "Null", "NULL", "nULL", "é", "中文", "x\u00a0y", "a$b", "$",
         "${NAME}", "${PORT}", "${EMPTY:-5}", "${UNSET:-0o7}", "${FLAG}", "${ZERO}", "$${NAME}", "a$$b", "${",
         "it's", "a'b'", "a\"b", "a,b", "a]b", "a: b", "a:", ":a", "?x", "? x", "- x", "&anchor x", "*alias", "!tag x",
         "!!str 5", "%x", "@x", "a@b", "`x", "|", ">", "a|b", "x=y", "(x)", "a;b", "a^b", "a b c", "a  b", "...", "---",
         "-", "--x", "a\\b", "<<", "\tx", "k" * 1100, "a - b", "a -b", "x:-y", "a :b", "a: ", "a{b}", "a[b]", "a ,b",
         "x:", "@", "a@", "a%20b", "~x", "~/x", ".", "..", "./x", "+", "-1.5", "0.", "0b1", "1__0", "1e", "e1"]
QUOTED = ["'a'", "''", "'a''b'", "'it''s'", "'a, b: c # d'", "'${NAME}'", "'$${x}'", "'010'", "'true'", "'~'", "'#x'",
          "'a\\b'", "'a\"b'", "'é'", '"a"', '""', '"a\\"b"', '"tab\\tx"', '"\\u00e9"', '"\\u0024{NAME}"', '"\\x41"',
          '"\\/"', '"\\n"', '"\\\\"', '"${PORT}"', '"\\ud83d\\ude00"', '"a\'b"', "'unterminated", '"a\\', "'a'b'",
          "'a' b", "'" + "q" * 500 + "'", '"\\u2028"', '"\\ufeff"', '"\\uFFFE"', '"\\u0085"', '"\\u00A0x"']
KEYS = ["name", "location", "tier", "a", "a b", "1", "010", "true", "null", "~", "é", "x$y", "${NAME}", "'q'",
        '"dq"', "a:b", "k" * 40, "'1'", "name", "<<"]


#: the scalars above the reader takes in a flow collection (the others, now and then)
TAKEN_PLAIN = [value for value in PLAIN if common_road(f"k: [{value}]\n") is not None]
TAKEN_QUOTED = [value for value in QUOTED if common_road(f"k: [{value}]\n") is not None]


def scalar(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.02:
        return rng.choice(PLAIN + QUOTED)
    return rng.choice(TAKEN_PLAIN) if roll < 0.6 else rng.choice(TAKEN_QUOTED)


def flow_mapping(rng: random.Random, depth: int = 0, keys: list[str] | None = None) -> str:
    chosen = keys or rng.sample(KEYS[:-1] if rng.random() < 0.99 else KEYS, rng.randint(0, 4))
    if rng.random() < 0.01:
        chosen.append(rng.choice(chosen or KEYS))  # a key twice
    entries = [f"{key}: {flow_value(rng, depth + 1)}" for key in chosen]
    if rng.random() < 0.01:
        entries.append(rng.choice(["a", "a: ", "? a", "a:1"]))  # an entry outside the subset
    return spaced(rng, "{", entries, "}")


def flow_sequence(rng: random.Random, depth: int) -> str:
    items = [flow_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.01:
        items.append("a: b")
    return spaced(rng, "[", items, "]")


def spaced(rng: random.Random, opening: str, entries: list[str], closing: str) -> str:
    style = rng.random()
    if style < 0.9:
        return opening + ", ".join(entries) + closing
    if style < 0.94:
        return f"{opening} " + " , ".join(entries) + f" {closing}"
    if style < 0.98:
        return opening + ",".join(entries) + closing
    return opening + ",  ".join(entries) + ("," if rng.random() < 0.5 else "") + closing


def flow_value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.12:
        return flow_mapping(rng, depth)
    if depth < 3 and roll < 0.2:
        return flow_sequence(rng, depth)
    return scalar(rng)


def table_line(rng: random.Random, index: int) -> str:
    properties = {f"p{n}": scalar(rng) for n in range(rng.randint(0, 3))}
    entry = (f"{{name: t{index}, location: '/x/data/ns0/t{index}.lance', "
             f"properties: {{{', '.join(f'{k}: {v}' for k, v in properties.items())}}}, "
             f"register: [{{backend: cat, namespace: {scalar(rng)}}}]")
    if rng.random() < 0.3:
        entry += f", source: {{path: {scalar(rng)}, options: {flow_mapping(rng, 1)}}}"
    if rng.random() < 0.3:
        entry += f", {rng.choice(KEYS)}: {flow_value(rng, 1)}"
    line = entry + "}"
    if rng.random() < 0.05:
        line = flow_mapping(rng)
    if rng.random() < 0.05:
        line += rng.choice(["  # a comment", " # it's 'quoted'", "#x", " # é"])
    return line


def block_head(rng: random.Random) -> list[str]:
    lines = ["version: 1", f"owner: {scalar(rng)}"]
    if rng.random() < 0.5:
        lines += ["# the catalogs", "backends:", f"  cat: {flow_mapping(rng, 1, ['type', 'root'])}"]
    else:
        lines += ["backends:", "  cat:", f"    type: {scalar(rng)}", f"    token: {scalar(rng)}", "    empty:"]
    if rng.random() < 0.4:
        lines += ["storage:"] + [f"  {key}: {scalar(rng)}" for key in ("region", "endpoint", "retries")]
    if rng.random() < 0.3:
        lines += ["spark:", "  conf:", f"    spark.sql.x: {scalar(rng)}", f"    spark.sql.y: {flow_value(rng, 2)}"]
    if rng.random() < 0.2:
        lines += ["namespaces:", f"  - {{backend: cat, id: {scalar(rng)}, properties: {flow_mapping(rng, 2)}}}"]
    return lines


def hazard(rng: random.Random, lines: list[str]) -> list[str]:
    """Now and then, something the reader must refuse or read alike, put anywhere."""
    roll = rng.random()
    if roll > 0.25 or len(lines) < 2:
        return lines
    at = rng.randrange(1, len(lines))
    kinds = ["---", "...", "%YAML 1.2", "a: &x 1", "b: *x", "c: !!str 1", "? d", "e: |", "  text", "f: >", "g:\t1",
             "h: 1\r", "  deeper: 1", "i: 'multi", "  line'", "j: {a: 1,", "  b: 2}", "k: [1,", "2]", "l:", "- 1",
             "m: 1 # note", "# 'x'", "", "   ", "n:  2", "o: a 'b'", "<<: {a: 1}", "version: 2", "\ufeffp: 1", "q: \x85",
             "r:    {a: 1}", "s: ${NAME}", "t: '${PORT}'", "u: a, b", "v: [a, {b: c}]", "w: {}", "x: []", "y: ''"]
    lines.insert(at, rng.choice(kinds))
    return lines


def manifest(rng: random.Random) -> str:
    lines = block_head(rng) + ["tables:"] + [f"  - {table_line(rng, index)}" for index in range(rng.randint(0, 6))]
    return "\n".join(hazard(rng, lines)) + ("\n" if rng.random() < 0.9 else "")


def test_random_manifests_read_as_the_plain_road_reads_them_or_are_left_to_it() -> None:
    rng = random.Random(50)
    taken = [assert_reads_alike(manifest(rng)) for _ in range(3000)]
    assert sum(taken) > 300, f"only {sum(taken)} of {len(taken)} taken: the test no longer tests much"
    assert sum(taken) < len(taken) - 300


def test_random_lines_read_as_the_plain_road_reads_them() -> None:
    rng = random.Random(51)
    taken = [assert_reads_alike(f"a:\n  - {table_line(rng, index)}\nb: {flow_value(rng, 1)}\n")
             for index in range(3000)]
    assert sum(taken) > 1000


#: lines of block structure, put together at random indentations
PIECES = ["a:", "b:", "a: 1", "b: x", "c: [1, 2]", "d: {e: f}", "- 1", "- x", "- {a: 1}", "- [1]", "- 'q'", "# c", "",
          "  ", "e: 'it''s'", 'f: "x"', "g: ~", "h:  {a: 1}", "-  x", "- a: 1", "i: a b", "j: ${NAME}", "k: # c",
          "storage:", "region: 1.0", "properties:", "tables:", "conf:", "spark:", "l: - x", "m: [a,", "b]", "n: }",
          "o: {a: [", "]}", "-", "p: x # 'y'", "q: 'x' # y", 'r: "a\\tb"', "s: a:b", "t: a: b", "u: -1", "v: 010",
          "w: .inf", "x: yes", "- ~", "- 010"]


def test_random_block_structures_read_alike() -> None:
    rng = random.Random(11)
    taken = 0
    for _ in range(20000):
        lines = [" " * rng.choice([0, 0, 2, 2, 4, 6, 1]) + rng.choice(PIECES) for _ in range(rng.randint(1, 7))]
        taken += assert_reads_alike("\n".join(lines) + ("\n" if rng.random() < 0.9 else ""))
    assert taken > 500


def test_each_tricky_scalar_reads_alike_wherever_it_is_written() -> None:
    taken = 0
    for value in PLAIN + QUOTED:
        for text in (f"k: {value}\n", f"k:\n  - {value}\n", f"k: {{a: {value}}}\n", f"k: [{value}]\n",
                     f"tables:\n  - {{properties: {{a: {value}}}}}\n", f"storage:\n  a: {value}\n",
                     f"k: {{{value}: 1}}\n", f"{value}: 1\n", f"k:\n  {value}:\n    - 1\n"):
            taken += assert_reads_alike(text)
    assert taken > 200


@pytest.mark.parametrize("length", [1, 999, 1000, 1001, 1021, 1024, 1025, 1100])
def test_a_block_key_is_taken_only_as_libyaml_takes_it(length: int) -> None:
    text = "k" * length + ": 1\n"
    assert_reads_alike(text)
    assert (common_road(text) is None) == (length > 1000)


@pytest.mark.parametrize("text", [
    "storage:\n  - 1\n  - ~\n", "storage: [1, ~]\n", "storage:\n  a: [1, ~]\n  b:\n", "spark:\n  conf:\n    - 1\n",
    "tables:\n  - {properties: [1, ~, {a: 1}]}\n", "tables:\n  - {properties: {a: [1, ~], b: 1}}\n",
])
def test_only_the_values_of_a_text_map_are_kept_as_written(text: str) -> None:
    assert assert_reads_alike(text)


def test_the_benchmarks_manifest_is_taken() -> None:
    text = ("version: 1\nowner: bench\nbackends:\n  cat: {type: dir, root: '/x/data'}\ntables:\n" +
            "".join(f"  - {{name: t{i}, location: '/x/data/ns{i % 7}/t{i}.lance', properties: {{tier: gold}}, "
                    f"register: [{{backend: cat, namespace: 'ns{i % 7}'}}]}}\n" for i in range(500)))
    assert assert_reads_alike(text)


def test_texts_are_kept_once_as_the_plain_road_keeps_them() -> None:
    text = "a: gold\ntables:\n  - {tier: gold, p: {q: gold}}\n  - {tier: 'gold', n: [gold, '1', 1]}\n"
    shared: dict[str, str] = {}
    fast = common_road(text, shared)
    assert fast is not None
    tables = fast.data["tables"]
    assert tables[0]["tier"] is tables[1]["tier"] is tables[0]["p"]["q"] is tables[1]["n"][0] is shared["gold"]
    assert fast.data["a"] is shared["gold"]
    slow_shared: dict[str, str] = {}
    plain_road(text, slow_shared)
    assert set(slow_shared) - {"tier", "p", "q", "n"} <= set(shared)


def test_the_value_limit_is_the_plain_roads() -> None:
    text = "a: [1, 2, 3]\nb: {c: [4, {d: 5}]}\n"
    values = 1 + 1 + 3 + 1 + 1 + 2 + 1  # the document, each collection and scalar
    assert plain_road(text, max_nodes=values) is not None and common_road(text, max_nodes=values) is not None
    assert plain_road(text, max_nodes=values - 1) is None and common_road(text, max_nodes=values - 1) is None


@pytest.mark.parametrize("depth", [60, 61, 62, 63, 64, 70])
def test_the_depth_limit_is_the_plain_roads(depth: int) -> None:
    text = f"a:\n  b: {'[' * depth}1{']' * depth}\n"
    assert (common_road(text) is None) == (plain_road(text) is None) or common_road(text) is None
    assert_reads_alike(text)


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: 2\n", "a: *x\n", "a: !!str 1\n", "a: !tag x\n", "? a\n: 1\n", "a: {? b: 1}\n",
    "a: |\n  text\n", "a: >\n  text\n", "a: {b: 1,\n  c: 2}\n", "a: [1,\n  2]\n", "a: plain\n  continued\n",
    "a:\t1\n", "a: x\x01\n", "a: x\x7f\n", "a: 1\r\nb: 2\r\n", "a: 1\rb: 2\n", "a: 1\u2028b: 2\n", "a: x\x85\n", "a: 1\n\ufeffb: 2\n",
    "---\na: 1\n", "a: 1\n...\n", "%YAML 1.2\n---\na: 1\n", "a: 1 # it's 'quoted'\n", "# 'a'\nb: 1\n",
    'a: "\\x41"\n', 'a: "\\/"\n', 'a: "\\u0024{NAME}"\n', 'a: "\\ud83d\\ude00"\n', 'a: "\\N"\n',
    "a: 1\na: 2\n", "a: {b: 1, b: 2}\n", "a: {b: 1}\na: {c: 2}\n", "<<: {a: 1}\n", "a: {<<: {b: 1}}\n",
    "a:\n- 1\n", "- 1\n", "a\n", "  a: 1\n", "a: a'b'\n", "a: {b: 'c' d}\n", "a: [a: b]\n", "a: {b}\n",
    "a: {b: }\n", "a: [1, 2,]\n", "a: {b: 1}  {c: 2}\n", "a: {b:  1}\n", "a: {:b}\n", "a: [:b]\n", "a: {b :c}\n",
    "a: [-]\n", "a: [- b]\n", "a: {b: c#d}\n", "a: {'" + "k" * 500 + "': 1}\n", "a: {" + "k" * 1100 + ": 1}\n",
    "'a': 1\n", "k" * 1001 + ": 1\n", "a: - b\n", "a:\n  - b: 1\n", "a:\n  - - b\n", "a:\n  -\n", "",
])
def test_refuses_what_it_cannot_be_sure_of(text: str) -> None:
    assert common_road(text) is None


def test_a_refusal_says_why() -> None:
    with pytest.raises(FastPathUnavailable, match="anchor|libyaml"):
        read_common_yaml("a: &x 1\n", {}, 100, loader.MAX_DEPTH, loader.is_text_map)
