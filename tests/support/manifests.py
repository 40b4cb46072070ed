"""Manifest entries the manifest-loading tests build by the thousand, and the loaded `dir`
backend the planner's offline tests declare their tables in."""

from __future__ import annotations

import math
from typing import Any

from lance_sync.drivers.dir.config import DirConfig
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.model.desired import BackendSpec


def table(index: int, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": f"t{index}", "location": f"./lake/t{index}.lance",
                             "properties": {"tier": "gold" if index % 3 else "silver"},
                             "register": [{"backend": "d", "namespace": f"ns{index % 4}"}]}
    return {**entry, **fields}


def dir_backend(name: str = "b", root: str = "/data") -> BackendSpec:
    """A loaded `dir` backend NAME rooted at ROOT, as the manifest loader makes it."""
    return BackendSpec(name=name, type="dir", config=DirConfig(root=root), scope=(), template={}, rules=DirNamespace)


def same_data(a: Any, b: Any) -> bool:
    """Equal, and of the same types and key order all the way down: what two roads that read a
    manifest must both give (1 == 1.0 == True in Python, and NaN is never equal to itself)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_data(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_data(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)
