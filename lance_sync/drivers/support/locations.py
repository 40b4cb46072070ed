"""Locations as the catalogs store them."""

from __future__ import annotations

from lance_sync.model.locations import is_local


def catalog_url(location: str) -> str:
    """A normalized location as a catalog stores it: a local path as a file:// URL, any other
    URI as it is. HMS would otherwise place a bare path on its default file system; Unity
    Catalog 0.4+ would convert it anyway."""
    return f"file://{location}" if is_local(location) else location
