"""The docs name only what the CLI has (issue 49): every `lance-sync COMMAND --flag` that README.md
or docs/ shows (in code: inline or fenced) names a command and a flag of it, and a flag given a
value from a fixed set gives one of that set; a flag said to default to a value defaults to it."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from lance_sync.cli.app import main

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
#: what ends the arguments of a command written in a doc
_END = {"#", "|", "||", "&&", ";", ">", ">>", "2>&1", "<"}
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`\n]+)`")
_DEFAULT = re.compile(r"`(--[a-z][a-z-]*)`\s*\(default:?\s+`?([^`),;]+)`?\)")


def code_lines(text: str) -> list[str]:
    """Each line of a fenced block, and each inline code span outside them."""
    lines = [line for block in _FENCE.findall(text) for line in block.splitlines()[1:-1]]
    return lines + _SPAN.findall(_FENCE.sub("", text))


def mentions(text: str) -> list[tuple[str, list[str]]]:
    """(command, the words after it) of each `lance-sync COMMAND ...` in the code of `text`."""
    return [found for line in code_lines(text) for found in line_mentions(line)]


def line_mentions(line: str) -> list[tuple[str, list[str]]]:
    """(command, the words after it) of each command `lance-sync COMMAND ...` of a code line."""
    found = []
    if line.lstrip().startswith("#"):  # a comment (a plan's detail line) runs nothing
        return found
    line = re.sub(r"\$\([^)]*\)", "VALUE", line)  # a command substitution is one value
    for match in re.finditer(r"(?:^|&&|;)\s*(?:\$\s+)?(?:\.venv/bin/)?lance-sync\s+(.*)", line):
        words = match.group(1).replace("\\|", "|").split()
        while words and words[0] in GLOBAL_VALUED:  # `lance-sync --chdir DIR plan`
            words = words[2:]
        words = [w for w in words if w not in GLOBAL_FLAGS]
        if words and re.fullmatch(r"[a-z][a-z-]*", words[0]):
            found.append((words[0], words[1:]))
    return found


def bare_flags(text: str) -> list[tuple[str, list[str]]]:
    """(command, [flag and its value]) of each inline `--flag ...` in the sentence of an inline
    `lance-sync COMMAND` before it: "`lance-sync import` against HMS 2.x needs `--namespace hive`".
    Another program's span (`python bench/...`) ends the command's reach."""
    found = []
    for sentence in re.split(r"(?<=[.;])\s+|\n\s*\n|\n\s*[-*|] ", _FENCE.sub("", text)):
        command = None
        for span in _SPAN.findall(sentence):
            named = line_mentions(span)
            if named:
                command = named[-1][0]
            elif re.match(r"--?[a-zA-Z]", span):
                found += [(command, span.replace("\\|", "|").split())] if command else []
            elif re.match(r"[\w./]+ ", span):
                command = None
    return found


def global_options() -> tuple[set[str], set[str]]:
    valued, flags = set(), {"--help", "-h", "--version"}
    for parameter in main.params:
        if isinstance(parameter, click.Option):
            (flags if parameter.is_flag else valued).update(parameter.opts)
    return valued, flags


GLOBAL_VALUED, GLOBAL_FLAGS = global_options()
#: words lance-sync's own output puts after its name, not commands: "lance-sync rollback plan for
#: owner ...", the holder of a Hive lease ("lance-sync lease <id> pid ...")
NOT_COMMANDS = {"rollback", "lease"}


def problems_of(command_name: str, words: list[str]) -> list[str]:
    command = main.commands.get(command_name)
    if command is None:
        return [f"`lance-sync {command_name}`: no such command"]
    options = {opt: p for p in command.params if isinstance(p, click.Option) for opt in p.opts + p.secondary_opts}
    problems = []
    for index, word in enumerate(words):
        if word in _END:
            break
        flag = word.lstrip("[(").split("=")[0].rstrip(".,:;)]\"'")
        if not re.fullmatch(r"--?[a-zA-Z][a-z-]*", flag) or flag in GLOBAL_VALUED | GLOBAL_FLAGS:
            continue
        if flag not in options:
            problems.append(f"`lance-sync {command_name} {flag}`: no such option")
            continue
        given = word.split("=", 1)[1] if "=" in word else words[index + 1] if index + 1 < len(words) else ""
        problems += _choice_problems(command_name, flag, options[flag], given)
    return problems


def _choice_problems(command_name: str, flag: str, parameter: click.Option, given: str) -> list[str]:
    if not isinstance(parameter.type, click.Choice) or parameter.is_flag:
        return []
    values = [v.strip("[]().,'\"") for v in given.split("|")]
    return [f"`lance-sync {command_name} {flag} {value}`: not one of {', '.join(map(str, parameter.type.choices))}"
            for value in values if re.fullmatch(r"[a-z][a-z_-]*", value) and value not in parameter.type.choices]


def test_the_checker_finds_what_does_not_exist():
    text = ("`lance-sync plan --no-such-flag` and\n```console\n$ lance-sync import --root hive\n"
            "$ lance-sync plan --format yaml\n$ lance-sync frobnicate -f x\n```\n\n"
            "`lance-sync import` against HMS 2.x needs `--root hive`.\n\n`python bench.py` takes `--repeat N`.\n")
    found = [p for command, words in mentions(text) + bare_flags(text) for p in problems_of(command, words)]
    assert found == ["`lance-sync import --root`: no such option",
                     "`lance-sync plan --format yaml`: not one of text, json, markdown, html",
                     "`lance-sync frobnicate`: no such command",
                     "`lance-sync plan --no-such-flag`: no such option",
                     "`lance-sync import --root`: no such option"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_flag_a_doc_names_exists(doc: Path):
    text = doc.read_text(encoding="utf-8")
    found = [problem for command, words in mentions(text) + bare_flags(text)
             if command not in NOT_COMMANDS for problem in problems_of(command, words)]
    assert not found, f"{doc.relative_to(REPO)}:\n" + "\n".join(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_default_a_doc_names_is_the_default(doc: Path):
    """"`--flag` (default X)" where a command has --flag: X is its default on one of them."""
    defaults: dict[str, set[str]] = {}
    for command in main.commands.values():
        for parameter in command.params:
            if isinstance(parameter, click.Option) and parameter.default is not None:
                for opt in parameter.opts:
                    defaults.setdefault(opt, set()).add(str(parameter.default))
    wrong = [f"{flag} (default {value.strip()}): the CLI's is {' or '.join(sorted(defaults[flag]))}"
             for flag, value in _DEFAULT.findall(doc.read_text(encoding="utf-8"))
             if flag in defaults and value.strip() not in defaults[flag]]
    assert not wrong, f"{doc.relative_to(REPO)}:\n" + "\n".join(wrong)
