"""Manifest entries the manifest-loading tests build by the thousand."""

from __future__ import annotations

from typing import Any


def table(index: int, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": f"t{index}", "location": f"./lake/t{index}.lance",
                             "properties": {"tier": "gold" if index % 3 else "silver"},
                             "register": [{"backend": "d", "namespace": f"ns{index % 4}"}]}
    return {**entry, **fields}
