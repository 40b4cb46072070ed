"""Fixtures for the data-plane tests."""

from __future__ import annotations

from pathlib import Path

import lance
import pytest

from tests.data.tables import typed_table


@pytest.fixture
def make_dataset(tmp_path: Path):
    """make_dataset(relative_path, rows=10) writes a small Lance dataset and returns its path."""

    def make(relative: str, rows: int = 10) -> Path:
        location = tmp_path / relative
        location.parent.mkdir(parents=True, exist_ok=True)
        lance.write_dataset(typed_table(rows), str(location))
        return location

    return make
