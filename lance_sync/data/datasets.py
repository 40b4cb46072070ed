"""The three things apply does to data: create a dataset, rewrite it, delete it.

- Creating is all or nothing: an intent record goes to the location before the first byte
  (lance_sync.data.intents), the dataset's first commit carries this owner's record in its
  schema metadata (lance_sync.model.marks.DATASET_OWNER_KEY), and the write counts as done only once
  the dataset opens with the declared columns; then the intent record is cleared. A write that
  fails removes what it wrote; one that is cut off (kill -9) is recognised and finished by the
  owner's next apply.
- Rewriting (on_mismatch: overwrite) and deleting happen only to a dataset that carries this
  owner's record: lance-sync created it.
- A delete never follows a link out of the location it was asked to delete: a local location
  is resolved again right before it (the folder apply's guards compared), a location that is
  itself a symbolic link is refused, and links inside it are removed, never what they point at.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Literal

import lance
import pyarrow as pa

from lance_sync.data.inspection import has_committed_version, inspect_location
from lance_sync.data.intents import (
    IntentError,
    clean_interrupted,
    clear_intent,
    delete_lance_files,
    lance_entries,
    new_intent,
    write_intent,
)
from lance_sync.data.storage import open_storage
from lance_sync.model.arrow_types import column_drift, columns_from_schema
from lance_sync.model.locations import link_target, normalize_location, resolved_location
from lance_sync.model.marks import DATASET_OWNER_KEY, dataset_owner, describe_dataset_owner

Mode = Literal["create", "overwrite"]
#: writes the dataset at a location, in a mode, with a target schema that carries the owner's
#: record (None: the writer chooses the schema and must add `owner_record` to it)
Writer = Callable[[str, Mode, pa.Schema | None], None]


class DatasetWriteError(RuntimeError):
    """The location does not allow the write, or what was written is not what was declared."""


def owner_record(owner: str) -> dict[str, str]:
    """The schema metadata a dataset lance-sync creates carries."""
    return {DATASET_OWNER_KEY: owner}


def with_owner_record(schema: pa.Schema, owner: str) -> pa.Schema:
    return schema.with_metadata({**(schema.metadata or {}), **{k.encode(): v.encode()
                                                               for k, v in owner_record(owner).items()}})


def write_dataset(location: str, *, mode: Mode, owner: str, apply: str, schema: pa.Schema | None,
                  write: Writer, storage_options: dict[str, str] | None = None) -> int:
    """Create (or, in mode overwrite, rewrite) the dataset at `location` with `write`; its
    committed version. Raises DatasetWriteError when the location does not allow it."""
    location = normalize_location(location)
    target = with_owner_record(schema, owner) if schema is not None else None
    if mode == "overwrite":
        _check_owned(location, owner, storage_options, "rewrite")
        write(location, mode, target)
        return _checked(location, owner, schema, storage_options).version
    storage = open_storage(location, storage_options)
    path = storage.path(location)
    finished = _prepare(location, owner, storage_options)
    if finished is not None:  # committed by an apply that was cut off before it cleared its record
        _checked(location, owner, schema, storage_options)
        clear_intent(storage, path)
        return finished
    write_intent(storage, path, new_intent(owner, location, apply))
    try:
        write(location, mode, target)
    except BaseException:
        # nothing committed: leave the location as it was (if that fails too, the next apply
        # finds the interrupted write and finishes it)
        with contextlib.suppress(IntentError, OSError):
            if not has_committed_version(storage, path):
                clean_interrupted(storage, path, owner)
        raise
    version = _checked(location, owner, schema, storage_options).version
    clear_intent(storage, path)
    return version


def delete_dataset(location: str, *, owner: str, storage_options: dict[str, str] | None = None) -> None:
    """Delete the dataset at `location`, which must carry this owner's record: what Lance and
    lance-sync wrote there. Other files at the location stay (see `delete_lance_files`): a
    catalog that keeps its own files in the table's location (Iceberg's `metadata/`) must
    still be able to load the table, which apply deregisters after deleting the data. A
    location with nothing Lance wrote is deleted already."""
    location = _deletable(normalize_location(location))
    report = inspect_location(location, storage_options)
    if report.status == "missing":
        return
    storage = open_storage(location, storage_options)
    path = storage.path(location)
    if report.status == "not_lance" and not lance_entries(storage, path):
        return  # only others' files: the dataset was deleted before (or never written)
    _check_owned(location, owner, storage_options, "delete", report.status, report.owner)
    delete_lance_files(storage, path)


def _deletable(location: str) -> str:
    """Where the data of `location` is deleted: a local location resolved through the links of
    the folders above it, as apply's guards compared it. A location that is itself a symbolic
    link is refused: deleting through it would delete the files of the folder it points at."""
    target = link_target(location)
    if target is not None:
        raise DatasetWriteError(f"refusing to delete {location}: it is a symbolic link (to {target}); "
                                "lance-sync never deletes what a link points at")
    return resolved_location(location)


def _prepare(location: str, owner: str, storage_options: dict[str, str] | None) -> int | None:
    """Make the location ready for a new dataset: nothing there, or this owner's cut-off write
    (its leftovers removed). Returns the version when that write had committed already."""
    report = inspect_location(location, storage_options)
    ours = report.intent is not None and report.intent.is_for(owner, location)
    if report.status == "missing":
        return None
    if report.status == "interrupted" and ours:
        storage = open_storage(location, storage_options)
        try:
            clean_interrupted(storage, storage.path(location), owner)
        except IntentError as error:
            raise DatasetWriteError(str(error)) from None
        return None
    if report.status == "valid" and report.owner == owner and (ours or report.intent is None):
        # this owner's write, finished: by an apply cut off before it cleared its record, or
        # by this one before a store failure hid the answer (the record cleared or not)
        return report.version
    if report.status == "unreachable":  # the store failed: nothing is known about the location
        raise OSError(f"cannot create a dataset at {location}: the store did not say what is there: {report.error}")
    held = f"{report.status}" + (f": {report.error}" if report.error else "")
    raise DatasetWriteError(f"cannot create a dataset at {location}: the location is not empty ({held}); "
                            "lance-sync writes only where nothing is")


def _check_owned(location: str, owner: str, storage_options: dict[str, str] | None, what: str,
                 status: str | None = None, recorded: str | None = None) -> None:
    if status is None:
        report = inspect_location(location, storage_options)
        status, recorded = report.status, report.owner
    if status != "valid":
        raise DatasetWriteError(f"refusing to {what} {location}: it holds no readable Lance dataset ({status})")
    if recorded != owner:
        raise DatasetWriteError(f"refusing to {what} {location}: the dataset {describe_dataset_owner(recorded)}; "
                                f"lance-sync {what}s only datasets it created for '{owner}'")


def _checked(location: str, owner: str, schema: pa.Schema | None,
             storage_options: dict[str, str] | None) -> lance.LanceDataset:
    """The dataset just written: it opens, carries this owner's record and has the declared
    columns (a writer may add columns; none declared may be missing or of another type)."""
    try:
        dataset = lance.dataset(location, storage_options=storage_options)
    except (OSError, ValueError) as error:
        raise DatasetWriteError(f"the dataset written at {location} does not open: {error}") from None
    if dataset_owner(dataset.schema.metadata) != owner:
        raise DatasetWriteError(f"the dataset written at {location} does not carry owner '{owner}''s record")
    if schema is not None:
        drift = column_drift(columns_from_schema(schema), columns_from_schema(dataset.schema))
        if drift.mismatched:
            raise DatasetWriteError(f"the dataset written at {location} does not have the declared columns: "
                                    f"{'; '.join(drift.problems())}")
    return dataset
