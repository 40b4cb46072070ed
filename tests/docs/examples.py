"""Console examples in the docs: found, run and compared with what the doc shows.

An example is a fenced block of README.md or docs/**/*.md with a line starting `$ ` (a
```console block, usually). Each `$ ` line is a command, run with bash in the example's folder;
the lines up to the next `$ ` line are the output it shows (stdout and stderr together).
Commands of one block run in one shell, in order: `cd`, variables and `$?` carry over
(`$ echo $?` shows the exit code of the command before it). `lance-sync` is this checkout's
CLI (`python -m lance_sync`), run with NO_COLOR=1.

What legitimately varies is written as a placeholder in the doc:

- `<DIR>`: the example's folder (absolute); the tool's output has it replaced before comparing.
- `<TIME>`: a time or journal stamp (`20261123T233321322920Z`, `2026-11-23T23:32:15.106+00:00`).
- `<SHA>`: a git commit sha, 7 to 40 hex digits.
- `<ID>`: an identifier (letters, digits, `_`, `.`, `-`).
- `<N>`: a number (a count, a duration, a port, a pid).
- A line `[...]`, or `[... what it stands for ...]`: any lines here, none included.

A command shown with no output prints nothing, unless it is the block's last command and a
```json or ```markdown block follows right after: then that block is a part of its output
(JSON: a value somewhere in the output's document; markdown: its lines, `[...]` as above).
Trailing spaces and trailing blank lines are not compared.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
COMMAND_TIMEOUT = 300  # seconds: a hung command fails the test, it decides nothing

PLACEHOLDERS = {
    "<TIME>": r"[0-9][0-9TZ:.+-]*",
    "<SHA>": r"[0-9a-f]{7,40}",
    "<ID>": r"[A-Za-z0-9_.-]+",
    "<N>": r"[0-9]+(?:\.[0-9]+)?",
}
_GAP = re.compile(r"^\[\.\.\..*\.\.\.\]$|^\[\.\.\.\]$")
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


@dataclass
class Command:
    line: str
    expected: list[str]


@dataclass
class Block:
    doc: str            # path relative to the repository
    index: int          # the how-manieth example of its doc, from 0
    line: int           # where it starts in the doc (1-based)
    commands: list[Command]
    fragment: tuple[str, list[str]] | None = None   # (language, lines) of the block after it

    @property
    def key(self) -> tuple[str, int]:
        return (self.doc, self.index)


def find_blocks(path: Path) -> list[Block]:
    """Every example of one doc, in order."""
    fences = _fenced_blocks(path.read_text().splitlines())
    blocks: list[Block] = []
    for position, (start, _language, lines) in enumerate(fences):
        if not any(line.startswith("$ ") for line in lines):
            continue
        commands: list[Command] = []
        for line in lines:
            if line.startswith("$ "):
                commands.append(Command(line[2:], []))
            elif commands:
                commands[-1].expected.append(line)
        block = Block(str(path.relative_to(REPO)), len(blocks), start, commands)
        follower = fences[position + 1] if position + 1 < len(fences) else None
        if (follower is not None and not commands[-1].expected and follower[1] in ("json", "markdown")
                and follower[0] == start + len(lines) + 3):
            block.fragment = (follower[1], follower[2])
        blocks.append(block)
    return blocks


def _fenced_blocks(lines: list[str]) -> list[tuple[int, str, list[str]]]:
    """(line of the opening fence, language, lines) of each fenced block; blank lines between a
    block and the next one do not count (`follower` above allows one)."""
    found: list[tuple[int, str, list[str]]] = []
    opened: tuple[int, str] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            if opened is None:
                opened, body = (number, line[3:].strip()), []
            else:
                found.append((opened[0], opened[1], body))
                opened = None
        elif opened is not None:
            body.append(line)
    return found


def as_single_command(block: Block) -> Block:
    """The block's first `$ ` line is its only command; the rest is what it prints (a command
    that itself prints `$ ...` lines, as the CI step does)."""
    first = block.commands[0]
    rest = [line for command in block.commands[1:] for line in (f"$ {command.line}", *command.expected)]
    return Block(block.doc, block.index, block.line, [Command(first.line, first.expected + rest)],
                 block.fragment)


# --- matching ------------------------------------------------------------------------------

def _line_pattern(line: str) -> str:
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(line):
        parts.append(re.escape(line[last:match.start()]))
        parts.append(PLACEHOLDERS[match.group()])
        last = match.end()
    parts.append(re.escape(line[last:]))
    return "".join(parts)


def _tidy(lines: list[str]) -> list[str]:
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` is what `expected` shows, placeholders and `[...]` gaps read as above."""
    pattern = []
    for line in _tidy(expected):
        pattern.append(r"(?:[^\n]*\n)*?" if _GAP.match(line.strip()) else _line_pattern(line) + r"\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in _tidy(actual))) is not None


def matches_json(expected: list[str], output: str) -> bool:
    """Whether some value in the JSON document `output` prints (indent 2) as `expected` shows."""
    try:
        document = json.loads(output)
    except ValueError:
        return False
    stack = [document]
    while stack:
        value = stack.pop()
        if matches(expected, json.dumps(value, indent=2).splitlines()):
            return True
        stack.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else [])
    return False


def difference(expected: list[str], actual: list[str], title: str) -> str:
    diff = difflib.unified_diff(_tidy(expected), _tidy(actual), "the doc shows", "the tool prints", lineterm="")
    return f"{title}\n" + "\n".join(diff)


# --- running -------------------------------------------------------------------------------

@dataclass
class Example:
    """The folder an example runs in and its environment; setups prepare both."""
    folder: Path
    env: dict[str, str] = field(default_factory=dict)

    def environment(self) -> dict[str, str]:
        shims = self.folder.parent / "bin"
        shims.mkdir(exist_ok=True)
        cli = shims / "lance-sync"
        cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lance_sync "$@"\n')
        cli.chmod(0o755)
        if not (shims / "python").exists():
            (shims / "python").symlink_to(sys.executable)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("LANCE_SYNC_", "GITHUB_"))}
        return {**base, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO),
                "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}", **self.env}

    def lance_sync(self, *args: str, cwd: Path | None = None, expect: int = 0) -> str:
        """Run the CLI as a setup step (not compared)."""
        result = subprocess.run([sys.executable, "-m", "lance_sync", *args], cwd=cwd or self.folder,
                                env=self.environment(), capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT)
        assert result.returncode == expect, f"setup: lance-sync {' '.join(args)}: {result.returncode}\n" \
                                            f"{result.stdout}{result.stderr}"
        return result.stdout

    def normalize(self, text: str) -> list[str]:
        for folder in {str(self.folder.resolve()), str(self.folder)}:
            for written in (folder, folder.replace("_", "\\_")):  # as is, and markdown-escaped
                text = text.replace(written, "<DIR>")
        return text.splitlines()

    def run(self, block: Block) -> list[str]:
        """Run the block's commands in one shell; the differences from the doc, one per command."""
        self.folder.mkdir(parents=True, exist_ok=True)
        outputs = self.folder.parent / f"outputs-{block.index}"
        outputs.mkdir(exist_ok=True)
        script = ["set +e"]
        for number, command in enumerate(block.commands):
            out = outputs / str(number)
            script.append(f"{{ {command.line}\n}} > '{out}' 2>&1 < /dev/null; __rc=$?; (exit $__rc)")
        subprocess.run(["bash", "-c", "\n".join(script)], cwd=self.folder, env=self.environment(),
                       timeout=COMMAND_TIMEOUT * len(block.commands), check=False)
        failures = []
        for number, command in enumerate(block.commands):
            printed = (outputs / str(number)).read_text() if (outputs / str(number)).exists() else ""
            actual = self.normalize(printed)
            title = f"{block.doc}:{block.line} `$ {command.line}`"
            last = number == len(block.commands) - 1
            if last and block.fragment is not None:
                language, shown = block.fragment
                ok = (matches_json(shown, "\n".join(actual)) if language == "json"
                      else matches(shown + ["[...]"], actual))
                if not ok:
                    failures.append(difference(shown, actual, f"{title} (the {language} block after it)"))
            elif not matches(command.expected, actual):
                failures.append(difference(command.expected, actual, title))
        return failures
