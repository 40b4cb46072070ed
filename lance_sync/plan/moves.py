"""What a table that moves to another location leaves behind: lance-sync registers the new
location and copies nothing, so the old one keeps its data, unmanaged."""

from __future__ import annotations

from collections.abc import Mapping

from lance_sync.model.actions import DatasetStatus, ObjectState


def left_behind(have: ObjectState, want: ObjectState, datasets: Mapping[str, DatasetStatus]) -> list[str]:
    """The warning of a table that moves from the location it `have`s to the one it `want`s,
    where the old one holds something (`datasets`: what the plan found at each location);
    none where it does not move or the old location holds nothing."""
    old, new = have.location, want.location
    if old is None or new is None or old == new:
        return []
    status = datasets.get(old)
    if status is None or status.status == "missing":
        return []
    if status.status != "valid":
        found = f"what is there ({status.status})"
    else:
        size = f", {shown_bytes(status.bytes)}" if status.bytes is not None else ""
        found = f"its Lance dataset ({status.row_count or 0:,} rows{size})"
    return [f"the old location {old} keeps {found}: nothing is copied to {new}, and lance-sync no "
            "longer manages the old one (delete it yourself once it is not needed)"]


def shown_bytes(size: int) -> str:
    """1,234 bytes as '1.2 kB' (decimal units, as `du --si`)."""
    value, unit = float(size), "bytes"
    for larger in ("kB", "MB", "GB", "TB"):
        if value < 1000:
            break
        value, unit = value / 1000, larger
    return f"{size:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


def moved_in_place_note(have: ObjectState, want: ObjectState) -> str:
    """What an in-place location change does and does not do, for its detail."""
    if have.location == want.location:
        return ""
    return ("; the registration is pointed at the new location in place (same table id, properties and "
            "grants); the dataset at the old location is neither moved nor deleted")
