"""A changed file read from the parse of its earlier version (lance_sync.manifest.parsing: reparse)
reads exactly as the file parsed whole, or not at all.

The property the fuzz holds it to, over thousands of edits (a fixed seed): whenever
`reparse` answers, parsing the new text whole succeeds and gives the same data, types and
templates; whenever the whole parse fails, `reparse` does not answer. The specific cases
show which layouts it takes, and that it refuses the traps of the module's docstring."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lance_sync.manifest import loader, parsing
from lance_sync.manifest.loader import Document
from lance_sync.manifest.parsing import reparse
from lance_sync.manifest.strategy import FastPathUnavailable

ENVIRON = {"ROOT": "/lake", "DEPTH": "3"}


def typed(value: Any) -> Any:
    """`value` with every scalar's type beside it (True == 1 in Python, not in a manifest)."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return type(value).__name__, value


def whole(text: str) -> Document | None:
    try:
        return loader.parse_plain("m.yaml", text.encode(), ENVIRON, None)
    except FastPathUnavailable:
        return None


def read_again(before: str, after: str) -> Document | None:
    earlier = whole(before)
    assert earlier is not None, before
    return reparse("m.yaml", earlier, before.encode(), after.encode(), ENVIRON)


def assert_same_as_whole(before: str, after: str) -> Document | None:
    """`reparse` answers only what the whole parse gives; its answer."""
    answer, expected = read_again(before, after), whole(after)
    if answer is not None:
        assert expected is not None, f"reparse read text the whole parse refuses:\n{after}"
        assert typed(answer.data) == typed(expected.data)
        assert answer.templates == expected.templates
        assert answer.typed_templates == expected.typed_templates
    return answer


def items(indent: int, count: int, start: int = 0) -> list[str]:
    pad = " " * indent
    return [f"{pad}- {{name: t{i}, location: '/lake/t{i}', properties: {{tier: gold}}, "
            f"register: [{{backend: cat, namespace: ns}}]}}\n" for i in range(start, start + count)]


HEAD = "version: 1\nbackends:\n  cat: {type: dir, root: /lake}\ntables:\n"
TAIL = "namespaces:\n  - {backend: cat, id: ns}\n"


def test_a_changed_item_is_parsed_alone_and_the_rest_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    before = HEAD + "".join(items(2, 50)) + TAIL
    after = before.replace("name: t7, location: '/lake/t7', properties: {tier: gold}",
                           "name: t7, location: '/lake/t7', properties: {tier: silver, n: 010}")
    parsed = []
    parse = loader.parse_plain_text

    def counting(name: str, text: str, *args: Any, **options: Any) -> Any:
        parsed.append(text)
        return parse(name, text, *args, **options)

    earlier = whole(before)
    assert earlier is not None
    monkeypatch.setattr(loader, "parse_plain_text", counting)
    answer = reparse("m.yaml", earlier, before.encode(), after.encode(), ENVIRON)
    assert answer is not None and answer.data["tables"][7]["properties"] == {"tier": "silver", "n": "010"}
    assert answer.data["tables"][8] is earlier.data["tables"][8]  # kept, not parsed again
    assert [text for text in parsed if "t7" in text] == [items(2, 1, 7)[0].replace("gold", "silver, n: 010")]
    assert len(parsed) == 2  # the text around the list, and the one item
    monkeypatch.undo()
    assert_same_as_whole(before, after)


@pytest.mark.parametrize("indent", [0, 2, 4])
def test_insert_remove_reorder_at_any_indentation(indent: int) -> None:
    listed = items(indent, 30)
    before = HEAD + "".join(listed) + TAIL
    edits = [
        listed[:5] + items(indent, 1, 100) + listed[5:],  # inserted
        listed[:5] + listed[6:],  # removed
        listed[10:] + listed[:10],  # reordered
        listed + listed[:1],  # a duplicate, for validation to refuse
    ]
    for edited in edits:
        assert assert_same_as_whole(before, HEAD + "".join(edited) + TAIL) is not None


def test_a_variable_in_a_new_item_is_a_template_at_its_new_index() -> None:
    listed = items(2, 10)
    before = HEAD + "".join(listed)
    after = HEAD + "".join(listed[:2] + ["  - {name: tv, location: '${ROOT}/tv'}\n"] + listed[2:])
    answer = assert_same_as_whole(before, after)
    assert answer is not None and answer.templates == {("tables", 2, "location"): "${ROOT}/tv"}
    assert answer.data["tables"][2]["location"] == "/lake/tv"


VARIABLES_HEAD = "backends:\n  cat:\n    root: '${ROOT}'\n    depth: ${DEPTH}\ntables:\n"


def test_variables_around_the_list_are_read_with_it() -> None:
    before = VARIABLES_HEAD + "".join(items(2, 10))
    answer = assert_same_as_whole(before, before.replace("t3'", "t33'"))
    assert answer is not None and answer.data["backends"]["cat"] == {"root": "/lake", "depth": 3}
    assert answer.typed_templates == {("backends", "cat", "depth")}


def test_variables_in_the_list_are_refused() -> None:
    """Their templates go by index, which an insertion moves."""
    before = HEAD + "".join(items(2, 10)).replace("'/lake/t3'", "'${ROOT}/t3'")
    assert read_again(before, before.replace("t4'", "t44'")) is None


@pytest.mark.parametrize("change", [
    pytest.param(lambda text: text.replace("root: /lake", "root: /other"), id="the text before the list"),
    pytest.param(lambda text: text + "owner: o\n", id="the text after the list"),
    pytest.param(lambda text: text.replace("\n", "\r\n"), id="CRLF line breaks"),
    pytest.param(lambda text: text.replace("  - {name: t3,", "  -\n    {name: t3,"), id="an item's dash alone"),
    pytest.param(lambda text: text.replace("  - {name: t3,", "  -\t{name: t3,"), id="a dash and a tab"),
    pytest.param(lambda text: text.replace("  - {name: t3,", "...\n  - {name: t3,"), id="a document end"),
    pytest.param(lambda text: text.replace("tables:\n", "'tables':\n"), id="a quoted key"),
    pytest.param(lambda text: text.replace("tables:\n", "tables:#x\n"), id="a key that is not the key"),
    pytest.param(lambda text: text.replace("t3", "t3\u2028"), id="a line separator"),
])
def test_refused(change: Any) -> None:
    before = HEAD + "".join(items(2, 20)) + TAIL
    assert assert_same_as_whole(before, change(before)) is None


def test_no_line_break_at_the_end_is_refused() -> None:
    """A block scalar's last line break depends on it."""
    before = HEAD + "".join(items(2, 5)) + "  - |\n    last"
    assert assert_same_as_whole(before, before.replace("last", "lost")) is None


def test_a_split_point_inside_a_quoted_value_is_refused() -> None:
    """The earlier version's lines that look like items but are not: it splits into more
    items than it parses into."""
    before = HEAD + "".join(items(2, 3)) + '  - {name: q, comment: "one\n  - two"}\n' + TAIL
    assert whole(before) is not None
    assert len(whole(before).data["tables"]) == 4  # type: ignore[union-attr]
    assert read_again(before, before.replace("t1", "t9")) is None


def test_a_key_line_inside_a_quoted_value_is_refused() -> None:
    before = 'note: "x\ntables:\n  - a\n"\n"tables": [b]\n'
    assert whole(before).data == {"note": "x tables: - a ", "tables": ["b"]}  # type: ignore[union-attr]
    assert assert_same_as_whole(before, before.replace("- a", "- c")) is None


def test_an_item_the_split_does_not_see_is_refused() -> None:
    """An item written `-` then a line break, and a line inside a quoted value that looks
    like an item: as many pieces as items, at the wrong places. (YAML also allows `-` and a
    tab, which libyaml refuses today; reparse refuses it too.)"""
    quoted, plain = '  - {name: q, comment: "one\n  - two"}\n', "  -\n    {name: r}\n"
    before = HEAD + quoted + plain
    assert len(whole(before).data["tables"]) == 2  # type: ignore[union-attr]
    second = quoted.index("  - two")
    assert assert_same_as_whole(before, HEAD + quoted[second:] + plain + quoted[:second] + "\n") is None


@pytest.mark.parametrize("twice", [False, True], ids=["counted within bounds", "counted item by item"])
def test_over_the_limit_of_values_is_refused(monkeypatch: pytest.MonkeyPatch, twice: bool) -> None:
    before = HEAD + "".join(items(2, 20))
    dense = "  - [" + ",".join(["[]"] * 2000) + "]\n"  # a value per 3 characters
    after = before + dense + (items(2, 1)[0] if twice else "")
    monkeypatch.setattr(loader, "MAX_NODES", 0)
    monkeypatch.setattr(parsing, "MAX_NEW_SHARE", 1.0)
    assert whole(before) is not None and whole(after) is None  # the whole parse refuses it
    assert assert_same_as_whole(before, after) is None


# --- the fuzz -----------------------------------------------------------------------------------

def item_text(rng: random.Random, pad: str, number: int) -> str:
    """One item in one of many styles: flow, block, block scalars, multi-line scalars, text
    maps with YAML 1.1 traps, nested sequences, variables, comments."""
    deep = pad + "  "
    styles = [
        f"{pad}- {{name: t{number}, location: '/lake/t{number}', properties: {{tier: gold}}}}\n",
        f"{pad}- name: t{number}\n{deep}location: /lake/t{number}\n{deep}properties:\n{deep}  tier: no\n"
        f"{deep}  n: 010\n",
        f"{pad}- name: t{number}\n{deep}comment: |\n{deep}  line one\n{deep}  - not an item\n\n",
        f"{pad}- name: t{number}\n{deep}comment: |+\n{deep}  kept\n\n",
        f"{pad}- name: t{number}\n{deep}comment: first\n{deep}  second\n",
        f'{pad}- name: t{number}\n{deep}comment: "first\n{pad}- second"\n',
        f"{pad}- name: t{number}  # a comment\n{pad}# a comment at the list's indentation\n",
        f"{pad}- {number}\n",
        f"{pad}- no\n",
        f"{pad}- - a{number}\n{deep}- b\n",
        f"{pad}- {{name: t{number}, location: '${{ROOT}}/t{number}'}}\n",
        f"{pad}- {{name: 'a$$b{number}', protect: yes}}\n",
        f"{pad}- name: t{number}\n{deep}properties: {{when: 2026-01-01, ratio: 1:20}}\n",
        f"{pad}- [t{number},\n{deep}more]\n",
    ]
    return rng.choice(styles)


JUNK = ["...\n", "---\n", "\t- x\n", "  - 'a\n", "x: 1\n", "   bad: [\n", "  -\ty\n", " - a\n", "\n",
        "# note\n", "  - name: dup\n    name: dup\n", "tables:\n", "- z\n", "  - &a x\n", "  - !!str 1\n"]


def estate(rng: random.Random) -> tuple[str, list[str], str, str]:
    pad = " " * rng.choice([0, 2, 2, 4])
    head = rng.choice([HEAD, "tables:  # the tables\n\n", "version: 1\ntables:\n# first\n", VARIABLES_HEAD])
    tail = rng.choice(["", TAIL, "# the end\n", "owner: me\n"])
    listed = [item_text(rng, pad, number) for number in range(rng.randint(1, 12))]
    return head, listed, tail, pad


def edited(rng: random.Random, head: str, listed: list[str], tail: str, pad: str) -> str:
    listed = list(listed)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        where = rng.randrange(len(listed) + 1)
        if kind == 0:
            listed.insert(where, item_text(rng, pad, rng.randrange(1000)))
        elif kind == 1 and listed:
            del listed[min(where, len(listed) - 1)]
        elif kind == 2 and listed:
            listed[min(where, len(listed) - 1)] = item_text(rng, pad, rng.randrange(1000))
        elif kind == 3:
            listed.insert(where, rng.choice(JUNK))
        elif kind == 4 and listed:
            listed.append(listed[min(where, len(listed) - 1)])
        else:
            rng.shuffle(listed)
    text = head + "".join(listed) + tail
    if rng.random() < 0.2:  # any character of any line
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice(" -:#'\"\n\t[{x") + text[at + 1:]
    return text


def test_fuzz_reparse_reads_as_the_whole_parse() -> None:
    rng = random.Random(20261129)
    answered = 0
    for _ in range(3000):
        head, listed, tail, pad = estate(rng)
        before = head + "".join(listed) + tail
        if whole(before) is None:
            continue  # only a parse that succeeded is ever kept
        answered += assert_same_as_whole(before, edited(rng, head, listed, tail, pad)) is not None
    assert answered > 500  # the fuzz reaches the road it tests


# --- where it is used ---------------------------------------------------------------------------

def test_changed_since_reads_a_changed_file_from_the_cached_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """The baseline of `--changed-since` reads the working tree's version of a file from the
    parse cache's entry for the committed version: the same raw manifest as parsing it."""
    from lance_sync.manifest.history import load_baseline

    monkeypatch.setenv(parsing.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(parsing, "MIN_BYTES", 0)
    repo = tmp_path / "repo"
    repo.mkdir()
    manifest = repo / "m.yaml"
    text = HEAD.replace("/lake", str(repo / "lake")) + "".join(
        f"  - {{name: t{i}, location: ./lake/t{i}.lance, register: [{{backend: cat, namespace: ns}}]}}\n"
        for i in range(40)) + TAIL
    manifest.write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(repo)]
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "estate"]):
        subprocess.run([*git, *argv], check=True, capture_output=True)
    parsing.load_plain_document(manifest)  # the committed version, parsed and kept
    manifest.write_text(text.replace("name: t5, location: ./lake/t5.lance", "name: t5, location: ./lake/t55.lance"))

    parsed_whole: list[str] = []
    parse = loader.parse_plain
    monkeypatch.setattr(loader, "parse_plain", lambda name, *args: parsed_whole.append(name) or parse(name, *args))
    baseline = load_baseline("HEAD", [str(manifest)])
    assert parsed_whole == []
    assert baseline.now.tables["t5"]["location"] == "./lake/t55.lance"

    # without the cache, the committed version is parsed, and the working tree's read from it
    monkeypatch.setenv(parsing.CACHE_ENV, "off")
    assert load_baseline("HEAD", [str(manifest)]) == baseline
    assert parsed_whole == [str(manifest)]

    # a change outside the list: the committed version's parse cannot be reused, so the
    # working tree's is parsed whole after it
    parsed_whole.clear()
    manifest.write_text(text.replace("id: ns}", "id: ns, properties: {team: a}}"))
    moved = load_baseline("HEAD", [str(manifest)])
    assert parsed_whole == [str(manifest)] * 2
    assert [entry.get("properties") for entry in moved.now.namespaces.values()] == [{"team": "a"}]

    # most lines new: both versions parsed whole
    parsed_whole.clear()
    manifest.write_text(text.replace("location: ./lake/", "location: ./lake2/"))
    rewritten = load_baseline("HEAD", [str(manifest)])
    assert parsed_whole == [str(manifest)] * 2
    assert rewritten.now.tables["t7"]["location"] == "./lake2/t7.lance"
