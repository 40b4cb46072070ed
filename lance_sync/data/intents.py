"""Intent records: what makes lance-sync's dataset writes all or nothing.

Before the first byte of a dataset it creates, lance-sync writes an intent record into the
location (`_lance_sync_intent.json`: the owner, the apply, when it started). Lance commits a
dataset's first version in one step, so a location holding an intent record is either:

- an interrupted write (no committed version: no manifest in `_versions/`): only the intent
  record and what Lance writes before it commits (data files, transaction files, an empty
  `_versions/`). The owner's next apply removes exactly
  those and writes again; anyone else's apply leaves the location alone and says whose it is;
- a finished write whose record was not cleared yet (a committed version): the next apply
  checks the dataset and clears the record;
- a record that cannot be read and nothing beside it: the write was cut off while it wrote the
  record (before its first byte of data), so the location counts as empty.

A location holding anything else besides (files lance-sync did not write) is never cleaned.
The one exception is a catalog's table metadata (`catalog_metadata`): an Iceberg catalog
writes the table's `metadata/*.metadata.json` into its location when the table is
registered, also before the dataset exists; it counts as nothing there, and stays.
"""

from __future__ import annotations

import contextlib
import datetime
import json

from pyarrow import fs as pafs

from lance_sync.data.storage import Storage
from lance_sync.model.actions import WriteIntent

INTENT_FILE = "_lance_sync_intent.json"
#: what an interrupted Lance write may leave at a location (Lance's own layout)
LANCE_LAYOUT = frozenset({"data", "_transactions", "_versions", "_deletions", "_indices", "_refs"})
#: the folder an Iceberg catalog keeps a table's metadata in, inside the table's location
#: (Iceberg's default `write.metadata.path`), and the files it holds for a Lance table's
#: companion (no snapshots: metadata JSON only; version-hint.text for file-system catalogs)
CATALOG_METADATA_FOLDER = "metadata"
_CATALOG_METADATA_FILES = (".metadata.json", ".metadata.json.gz", "version-hint.text")


class IntentError(RuntimeError):
    """A location holds a write that is not this owner's, or more than an interrupted write left."""


def new_intent(owner: str, location: str, apply: str) -> WriteIntent:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return WriteIntent(owner=owner, location=location, apply=apply, started=now)


def intent_path(path: str) -> str:
    return f"{path.rstrip('/')}/{INTENT_FILE}"


def read_intent(storage: Storage, path: str) -> WriteIntent | None:
    """The intent record at a location's filesystem path, or None when there is none."""
    try:
        with storage.filesystem.open_input_stream(intent_path(path)) as stream:
            raw = stream.read()
    except FileNotFoundError:
        return None
    try:
        values = json.loads(raw)
        owner = values["owner"]
        if not isinstance(owner, str):
            raise TypeError("owner is not a string")
        return WriteIntent(owner=owner, location=_text(values.get("location")), apply=_text(values.get("apply")),
                           started=_text(values.get("started")))
    except (ValueError, TypeError, KeyError):
        return WriteIntent(owner=None)


def write_intent(storage: Storage, path: str, intent: WriteIntent) -> None:
    """Write the intent record (the location's folder is created where folders exist)."""
    if not storage.scheme:
        storage.filesystem.create_dir(path, recursive=True)
    with storage.filesystem.open_output_stream(intent_path(path)) as stream:
        stream.write(intent.model_dump_json().encode())


def clear_intent(storage: Storage, path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        storage.filesystem.delete_file(intent_path(path))


def clean_interrupted(storage: Storage, path: str, owner: str) -> None:
    """Remove what this owner's interrupted write left at the location: Lance's own layout and
    the intent record, nothing else. IntentError when the write is another owner's or the
    location holds anything an interrupted write does not leave."""
    intent = read_intent(storage, path)
    if intent is None or not intent.is_for(owner, storage.uri(path)):
        whose = intent.describe() if intent is not None else "no intent record"
        raise IntentError(f"{storage.uri(path)} is not an interrupted write of owner '{owner}' there ({whose})")
    entries = [entry for entry in storage.list_dir(path) if not catalog_metadata(storage, entry)]
    foreign = sorted(entry.base_name for entry in entries if not _written_by_lance(entry))
    if foreign:
        raise IntentError(f"{storage.uri(path)} holds files lance-sync did not write "
                          f"({', '.join(foreign[:5])}); it is left as it is")
    delete_lance_files(storage, path)


def catalog_metadata(storage: Storage, entry: pafs.FileInfo) -> bool:
    """Whether a location's entry is a catalog's table metadata folder (see the module
    docstring): `metadata/` holding Iceberg metadata files and nothing else."""
    if entry.base_name != CATALOG_METADATA_FOLDER or entry.type != pafs.FileType.Directory:
        return False
    inside = storage.list_dir(entry.path)
    return bool(inside) and all(item.type == pafs.FileType.File and item.base_name.endswith(_CATALOG_METADATA_FILES)
                                for item in inside)


def _written_by_lance(entry: pafs.FileInfo) -> bool:
    """Whether a dataset root's entry is Lance's (one of its folders) or the intent record."""
    return entry.base_name == INTENT_FILE or (entry.base_name in LANCE_LAYOUT and entry.type == pafs.FileType.Directory)


def lance_entries(storage: Storage, path: str) -> list[pafs.FileInfo]:
    """What Lance and lance-sync write at a dataset's root: Lance's folders and the intent record."""
    return [entry for entry in storage.list_dir(path) if _written_by_lance(entry)]


def delete_lance_files(storage: Storage, path: str) -> None:
    """Delete what Lance and lance-sync wrote at a dataset's root, the intent record last (a
    deletion cut off midway is still an interrupted write the next apply cleans). Anything else
    stays: a catalog's own files (an Iceberg catalog keeps the table's metadata in
    `<location>/metadata/` and needs it to deregister the table) or anyone's. The root itself
    goes (a local folder, an object store's directory marker) when nothing stays."""
    for entry in lance_entries(storage, path):
        if entry.type == pafs.FileType.Directory:
            storage.filesystem.delete_dir(entry.path)
    clear_intent(storage, path)
    if not storage.list_dir(path):
        storage.filesystem.delete_dir(path)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
