"""Every relative link of README.md and docs/ leads somewhere: the file exists, and an anchor
(`#section`) names a heading of the page it points at (GitHub's slugs)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.examples import DOCS, REPO

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {_slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def _broken(doc: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(_FENCE.sub("", doc.read_text())):
        if re.match(r"[a-z]+:", target):   # http:, https:, mailto:: not this repository's
            continue
        path, _, anchor = target.partition("#")
        page = (doc.parent / path).resolve() if path else doc
        if not page.exists():
            broken.append(f"{target}: no such file")
        elif anchor and page.suffix == ".md" and anchor not in _anchors(page):
            broken.append(f"{target}: no heading #{anchor} in {page.relative_to(REPO)}")
    return [f"{doc.relative_to(REPO)}: {problem}" for problem in broken]


def test_every_relative_link_of_the_docs_resolves():
    broken = [problem for doc in DOCS for problem in _broken(doc)]
    assert not broken, "\n".join(broken)
