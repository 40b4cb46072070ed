"""Fixtures of the offline tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lance_sync.manifest import loader


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the manifest files parsed in this process from now on, in order."""
    names: list[str] = []
    parse = loader.parse_plain

    def counting(name: str, *args: Any) -> loader.Document:
        names.append(Path(name).name)
        return parse(name, *args)

    monkeypatch.setattr(loader, "parse_plain", counting)
    return names
