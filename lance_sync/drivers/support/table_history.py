"""A table's tags and versions through the Lance Namespace spec (see `table_ops`), read from the
dataset with pylance.

A version's manifest path and size come from one listing of the dataset's `_versions` folder
(pylance's `versions()` gives numbers, times and metadata only): Lance names a manifest after its
version, `{version}.manifest` (naming scheme V1) or, in the zero-padded scheme V2 that new datasets
use, `{2^64 - 1 - version}.manifest`. The path answered is the manifest's full location.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from lance_namespace.errors import TableTagNotFoundError, TableVersionNotFoundError
from lance_namespace_urllib3_client.models import TableVersion, TagContents

from lance_sync.model.locations import normalize_location

if TYPE_CHECKING:
    from lance import LanceDataset

#: the largest version number Lance stores (u64), from which V2 manifest names count down
_U64_MAX = 2**64 - 1
#: digits of a V2 manifest name
_V2_DIGITS = 20
MANIFEST_SUFFIX = ".manifest"


def tags(dataset: LanceDataset) -> dict[str, TagContents]:
    """Every tag of the dataset, by name."""
    return {name: TagContents.model_validate({"branch": entry.get("branch"), "version": entry["version"],
                                              "manifest_size": entry.get("manifest_size") or 0})
            for name, entry in dataset.tags.list().items()}


def tag(dataset: LanceDataset, name: str) -> TagContents:
    """The tag `name`; TableTagNotFound when the dataset has none of that name."""
    found = tags(dataset).get(name)
    if found is None:
        raise TableTagNotFoundError(f"tag {name!r} not found in {dataset.uri}")
    return found


def versions(dataset: LanceDataset) -> list[TableVersion]:
    """Every version of the dataset, oldest first, with its manifest's location and size."""
    manifests = manifest_files(dataset)
    answered = []
    for entry in dataset.versions():
        number = entry["version"]
        path, size = manifests.get(number, (None, None))
        answered.append(TableVersion(
            version=number,
            manifest_path=path or "",
            manifest_size=size,
            timestamp_millis=_millis(entry.get("timestamp")),
            metadata={str(key): str(value) for key, value in (entry.get("metadata") or {}).items()} or None,
        ))
    return answered


def version(dataset: LanceDataset, number: int) -> TableVersion:
    """The version `number`; TableVersionNotFound when the dataset has no such version."""
    for found in versions(dataset):
        if found.version == number:
            return found
    raise TableVersionNotFoundError(f"version {number} not found in {dataset.uri}")


def manifest_files(dataset: LanceDataset) -> dict[int, tuple[str, int | None]]:
    """Version number -> (manifest location, size in bytes), from one listing of `_versions`."""
    from lance_sync.data.storage import open_storage

    location = normalize_location(dataset.uri)
    storage = open_storage(location, dataset.initial_storage_options)
    found = {}
    for info in storage.list_dir(storage.path(location).rstrip("/") + "/_versions"):
        number = manifest_version(info.base_name)
        if number is not None:
            found[number] = (storage.uri(info.path), info.size)
    return found


def manifest_version(name: str) -> int | None:
    """The version a manifest file name stands for (see the module docstring); None for other files."""
    stem = name.removesuffix(MANIFEST_SUFFIX)
    if stem == name or not stem.isdigit():
        return None
    number = int(stem)
    return _U64_MAX - number if len(stem) == _V2_DIGITS else number


def _millis(timestamp: object) -> int | None:
    # pylance builds a naive local time (datetime.fromtimestamp): timestamp() reads it back as one
    return int(timestamp.timestamp() * 1000) if isinstance(timestamp, datetime) else None
