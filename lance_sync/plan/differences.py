"""How a live object's state differs from the one the manifest declares, apart from what a
comparison decides: lance-sync's own marks, protection, and the words an update's detail uses."""

from __future__ import annotations

from lance_sync.model.actions import ObjectState
from lance_sync.model.marks import MANAGED_KEYS, is_protected


def stays_protected(live: dict[str, str], want: ObjectState) -> bool:
    """A protected table is replaced only by the change that lifts its protection."""
    return is_protected(live) and is_protected(want.properties)


def same_but_marks(have: ObjectState, want: ObjectState) -> bool:
    """Equal apart from lance-sync's marks, which the live object lacks."""
    strip = lambda props: {k: v for k, v in props.items() if k not in MANAGED_KEYS}  # noqa: E731
    return have.location == want.location and strip(have.properties) == strip(want.properties)


def change_detail(have: ObjectState, want: ObjectState) -> str:
    """What differs, for an update's detail: 'changed: location; properties a, b'."""
    changed = sorted(k for k in set(have.properties) | set(want.properties)
                     if have.properties.get(k) != want.properties.get(k))
    parts = []
    if have.location != want.location:
        parts.append("location")
    if changed:
        parts.append("properties " + ", ".join(changed))
    return "changed: " + "; ".join(parts) if parts else "changed"
