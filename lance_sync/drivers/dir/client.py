"""The directory backend's client of its catalog table, `__manifest`: the rows as the driver
reads and writes them, what its failed commits mean, and `DirClient`, through which the driver
(`driver.DirNamespace`) and its object-store leases (`leases.ManifestRowLeaseRegister`) read
and write the table itself (the rest goes through pylance's DirectoryNamespace).

pylance keeps every namespace and table of a root as a row of the `__manifest` Lance table:
its object id (the names joined with DELIMITER), its type, its location relative to the root
and its properties as JSON metadata. A commit that lost against another writer's commit
(`is_commit_conflict`) is worth trying again on a fresh read: `DirClient.committed` does,
under one write lock per client, and each of its writes is one commit against the version it
read, with Lance's own conflict retries off.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
from lance_namespace.errors import (
    ConcurrentModificationError,
    ErrorCode,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.dir.config import DELIMITER, MANIFEST_TABLE
from lance_sync.drivers.support.retry import backoff_seconds, is_transient_store_error
from lance_sync.model.locations import join_location

if TYPE_CHECKING:
    import lance

ROW_COLUMNS = ("object_id", "object_type", "location", "metadata")
MANIFEST_COLUMNS = frozenset(ROW_COLUMNS)
#: manifest rows as columns (pyarrow's to_pydict), the ROW_COLUMNS of each row at one index
Rows = dict[str, list[Any]]

#: tries of one manifest write (the first included) while other processes' commits conflict
#: with it; the waits between them follow retry.backoff_seconds (jittered, growing and capped,
#: so a write that keeps conflicting gives up after a bounded wait)
COMMIT_ATTEMPTS = 8
#: the driver's row writes each add a small fragment to the manifest (pylance's own writes
#: rewrite it whole); past this many fragments they are folded together after a write
COMPACT_AT_FRAGMENTS = 32
#: manifest rows read at a time by a snapshot
ROW_BATCH = 65_536

T = TypeVar("T")

#: how Lance (pylance 14) words a commit that lost against another writer's commit:
#: "Incompatible transaction: This Update transaction is incompatible with concurrent
#: transaction Overwrite at version 64.", "Too many concurrent writers. Attempted 0
#: retries.", "Retryable commit conflict for version 7: ... was preempted by concurrent
#: transaction ...", "Commit conflict for version 7: ..."
_CONFLICT_WORDING = re.compile(
    r"\bconflict|incompatible transaction|concurrent transaction|"
    r"too many concurrent writ|preempted|please retry", re.IGNORECASE)
#: Lance appends the Rust source locations to its messages
_SOURCE_LOCATION = re.compile(r",\s*/\S+?\.rs:\d+:\d+")


class Raced(Exception):
    """Another writer changed what an attempt read before the attempt could commit."""


def metadata_of(dataset: lance.LanceDataset, object_type: str, id: list[str]) -> str | None:
    """A row's metadata text in this version of the manifest ("" when null); None without the row."""
    rows = dataset.to_table(columns=["metadata"], filter=row_filter(object_type, id)).to_pylist()
    return (rows[0]["metadata"] or "") if rows else None


def is_commit_conflict(error: BaseException) -> bool:
    """A commit that lost against another writer's: worth trying again on a fresh read."""
    if isinstance(error, Raced | ConcurrentModificationError):
        return True
    if isinstance(error, LanceNamespaceError) and error.code != ErrorCode.INTERNAL:
        return False  # not found, already exists, invalid, ...: final answers
    return bool(_CONFLICT_WORDING.search(str(error)))


def short_message(error: BaseException | None) -> str:
    """An error's message on one line, without the Rust source locations Lance appends."""
    text = _SOURCE_LOCATION.sub("", str(error)) if error is not None else ""
    return " ".join(text.split()) or type(error).__name__


def store_unavailable(what: str, error: BaseException) -> ServiceUnavailableError:
    """A transient store failure (`retry.is_transient_store_error`) of `what`, as the runner and
    the lease retry it."""
    return ServiceUnavailableError(f"dir: {what}: the store failed, worth trying again: {short_message(error)}")


def missing_error(object_type: str, id: list[str]) -> LanceNamespaceError:
    missing = NamespaceNotFoundError if object_type == "namespace" else TableNotFoundError
    return missing(f"{object_type} not found: {DELIMITER.join(id)}")


def row_filter(object_type: str, id: list[str]) -> str:
    return (f"object_id = {sql_string(DELIMITER.join(id))} "
            f"AND object_type = {sql_string(object_type)}")


def checked_id(id: Sequence[str] | None) -> list[str]:
    """`id` as a list; InvalidInput unless it has names, each non-empty and without the delimiter."""
    if not id or any(not name or DELIMITER in name for name in id):
        raise InvalidInputError(f"dir: names must be non-empty and cannot contain '{DELIMITER}': {id}")
    return list(id)


def id_text(id: Sequence[str] | None) -> str:
    return DELIMITER.join(id or [])


class RowParser:
    """Each row's object id, type, location and properties (`rows`; `grouped_rows`: its namespace
    and name apart), one batch of rows after the other. Many rows carry the same metadata text (the same properties and owner mark) and
    the same namespace: each distinct text is parsed once, and the rows that carry it share its
    properties dict (which nobody changes in place: a TableInfo is read, never edited) and its
    namespace's names."""

    def __init__(self) -> None:
        self._properties: dict[str | None, dict[str, str]] = {}
        self._parents: dict[str, tuple[str, ...]] = {}

    def rows(self, rows: Rows) -> Iterator[tuple[tuple[str, ...], str, str | None, dict[str, str]]]:
        for names, name, object_type, location, properties in self.grouped_rows(rows):
            yield (*names, name), object_type, location, properties

    def grouped_rows(self, rows: Rows) -> Iterator[tuple[tuple[str, ...], str, str, str | None, dict[str, str]]]:
        """`rows` as each row's namespace (its parent's names), name, type, location and
        properties: a snapshot groups tables by namespace without slicing every id."""
        properties, parents = self._properties, self._parents
        for object_id, object_type, location, metadata in zip(*(rows[c] for c in ROW_COLUMNS), strict=True):
            found = properties.get(metadata)
            if found is None:
                found = properties[metadata] = properties_of(metadata)
            parent, _, name = object_id.rpartition(DELIMITER)
            names = parents.get(parent)
            if names is None:
                names = parents[parent] = tuple(parent.split(DELIMITER)) if parent else ()
            yield names, name, object_type, location, found


class LocationJoiner:
    """`join_location(root, location)` for the locations of many manifest rows, each folder
    joined once: a location is its folder's joined spelling and its own name, when the folder
    names no scheme and the name is one that normalizing leaves as it is (so the result is
    what `join_location` answers); any other goes the slow way. A million rows otherwise spend
    a second joining."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._folders: dict[str, str] = {}

    def __call__(self, location: str) -> str:
        folder, _, name = location.rpartition("/")
        if not folder or ":" in folder or folder[-1].isspace() or not name or "%" in name or name[-1].isspace():
            return join_location(self.root, location)
        joined = self._folders.get(folder)
        if joined is None:
            joined = self._folders[folder] = join_location(self.root, folder)
        if joined.startswith("/"):  # a local path: `.`, `..` and the root itself go the slow way
            if joined == "/" or name.startswith("."):
                return join_location(self.root, location)
        elif "://" not in joined or joined.endswith("://"):
            return join_location(self.root, location)
        return f"{joined}/{name}"


def properties_of(metadata: str | None) -> dict[str, str]:
    """A manifest row's properties, from its metadata column (JSON text)."""
    return dict(json.loads(metadata)) if metadata else {}


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class DirClient:
    """The manifest table of one root, read and written for one driver: every write is one
    commit made by `committed` (see the module docstring)."""

    def __init__(self, root: str, storage_options: dict[str, str] | None,
                 count_call: Callable[[], None]) -> None:
        self.root = root
        self._storage_options = storage_options
        #: counts each request to the store (the driver's `count_call`)
        self._count_call = count_call
        self._write_lock = threading.Lock()
        #: tries of a conflicting manifest write, and how to wait between them (tests shorten both)
        self.commit_attempts = COMMIT_ATTEMPTS
        self.sleep: Callable[[float], None] = time.sleep

    def committed(self, operation: str, attempt: Callable[[], T]) -> T:
        """`attempt()` under the write lock, tried again on a fresh read while its commit
        conflicts with another writer's; ConcurrentModificationError when that persists.

        Each attempt reads what it needs and writes at most one commit, so trying it again
        is safe. Other errors are final (`final_error`).
        """
        last: Exception | None = None
        for tried in range(max(self.commit_attempts, 1)):
            if tried:
                self.sleep(backoff_seconds(tried - 1))
            try:
                with self._write_lock:
                    return attempt()
            except (LanceNamespaceError, Raced, OSError, RuntimeError, ValueError) as error:
                if is_commit_conflict(error):
                    last = error
                    continue
                final = self.final_error(operation, error)
                if final is error:
                    raise
                raise final from error
        raise ConcurrentModificationError(
            f"dir: {operation} in {self.root}: other writers kept changing the manifest table; "
            f"gave up after {max(self.commit_attempts, 1)} attempts (last: {short_message(last)})") from last

    def final_error(self, operation: str, error: BaseException) -> BaseException:
        """What a failed `operation` raises: a store failure worth trying again as
        ServiceUnavailable (a write among them may have been carried out: the runner reads back
        before it tries again), the catalog's own answers as they are, anything else from Lance
        as InternalError naming the operation."""
        if is_transient_store_error(error):
            return store_unavailable(f"{operation} in {self.root}", error)
        if isinstance(error, LanceNamespaceError):
            return error
        return InternalError(f"dir: {operation} in {self.root} failed: {short_message(error)}")

    def writable_manifest(self) -> lance.LanceDataset | None:
        """The manifest table at its latest version; None when the root has none yet."""
        self._count_call()
        uri = join_location(self.root, MANIFEST_TABLE)
        try:
            dataset = self._open(uri)
        except (ValueError, OSError) as error:
            if "not found" in str(error).lower():
                return None
            raise
        if not MANIFEST_COLUMNS.issubset(dataset.schema.names):
            raise UnsupportedOperationError(
                f"dir: the manifest table {uri} lacks the columns {sorted(MANIFEST_COLUMNS)}; "
                f"this pylance version cannot write it")
        return dataset

    def existing_objects(self, dataset: lance.LanceDataset, ids: list[str] | None = None) -> dict[str, str]:
        """object_id -> object_type of the rows in `ids` (of every row when None)."""
        wanted = [i for i in ids if i] if ids is not None else None
        if wanted == []:
            return {}
        filter = None if wanted is None else f"object_id IN ({', '.join(sql_string(i) for i in wanted)})"
        table = dataset.to_table(columns=["object_id", "object_type"], filter=filter)
        return {row["object_id"]: row["object_type"] for row in table.to_pylist()}

    def insert_rows(self, dataset: lance.LanceDataset, rows: list[dict[str, Any]]) -> None:
        """One commit that adds `rows` to the version `dataset` was read at; rows were checked
        against that version, and Lance refuses the commit if another writer added one of
        their ids (or rewrote the manifest) since."""
        table = pa.Table.from_pylist(rows, schema=dataset.schema)
        self._count_call()
        result = (dataset.merge_insert("object_id").when_not_matched_insert_all()
                  .conflict_retries(0).execute(table))
        if result["num_inserted_rows"] != len(rows):
            raise InternalError(f"dir: the manifest of {self.root} took {result['num_inserted_rows']} "
                                f"of {len(rows)} new rows")

    def replace_row_id(self, dataset: lance.LanceDataset, row: dict[str, Any], id: list[str],
                        new_id: str) -> None:
        """One commit, against the version `dataset` was read at, that inserts the table row
        `row` of `id` under `new_id` and deletes it under `id`: a merge on the object id, so that
        Lance refuses the commit if another writer added `new_id` or changed the row since."""
        moved = pa.Table.from_pylist([{**row, "object_id": new_id}], schema=dataset.schema)
        self._count_call()
        result = (dataset.merge_insert("object_id").when_not_matched_insert_all()
                  .when_not_matched_by_source_delete(row_filter("table", id))
                  .conflict_retries(0).execute(moved))
        if (result["num_inserted_rows"], result["num_deleted_rows"]) != (1, 1):
            raise InternalError(f"dir: the manifest of {self.root} took {result['num_inserted_rows']} new "
                                f"row(s) for {new_id} and deleted {result['num_deleted_rows']} for "
                                f"{row['object_id']}, where one of each was asked")

    def replace_location(self, id: list[str], relative: str) -> None:
        """Point the table row of `id` at `relative` (a location relative to the root), in one
        commit made only if the row still holds the location that was read (another writer's
        change in between makes it match nothing, and it is tried again from a fresh read).
        Nothing else in the row changes; a row already there is left alone."""

        def attempt() -> lance.LanceDataset | None:
            dataset = self.writable_manifest()
            rows = [] if dataset is None else dataset.to_table(
                columns=["location"], filter=row_filter("table", id)).to_pylist()
            if dataset is None or not rows:
                raise missing_error("table", id)
            current = rows[0]["location"]
            if current is not None and join_location(self.root, current) == join_location(self.root, relative):
                return None
            where = row_filter("table", id) + (" AND location IS NULL" if current is None
                                               else f" AND location = {sql_string(current)}")
            self._count_call()
            result = dataset.update({"location": sql_string(relative)}, where=where, conflict_retries=0)
            if result["num_rows_updated"] != 1:
                raise Raced(f"the table {id_text(id)} changed since it was read")
            return dataset

        written = self.committed(f"update table location of {id_text(id)}", attempt)
        if written is not None:
            self.compact_if_fragmented(written)

    def patch_metadata(self, object_type: str, id: list[str],
                        patch: Callable[[dict[str, str]], dict[str, str]]) -> None:
        """Read the row's properties, `patch` them, and write them back only if they are still
        what was read (another writer's patch in between makes the write match nothing, and it
        is tried again from a fresh read)."""

        def attempt() -> lance.LanceDataset | None:
            dataset = self.writable_manifest()
            rows = [] if dataset is None else dataset.to_table(
                columns=["metadata"], filter=row_filter(object_type, id)).to_pylist()
            if not rows:
                raise missing_error(object_type, id)
            current = properties_of(rows[0]["metadata"])
            patched = patch(current)
            if patched == current:
                return None
            self.replace_metadata(object_type, id, patched, expected=rows[0]["metadata"], dataset=dataset)
            return dataset

        written = self.committed(f"update {object_type} properties of {id_text(id)}", attempt)
        if written is not None:
            self.compact_if_fragmented(written)

    def replace_metadata(self, object_type: str, id: list[str], properties: dict[str, str], *,
                          expected: str | None, dataset: lance.LanceDataset | None = None) -> None:
        """One commit that sets the row's properties, if its metadata is still `expected`
        (None: no properties)."""
        if dataset is None:
            dataset = self.writable_manifest()
        if dataset is None:
            raise missing_error(object_type, id)
        where = row_filter(object_type, id)
        if expected is None:
            where += " AND metadata IS NULL"
        else:
            where += f" AND metadata = {sql_string(expected)}"
        self._count_call()
        result = dataset.update({"metadata": sql_string(json.dumps(properties))}, where=where,
                                conflict_retries=0)
        if result["num_rows_updated"] != 1:  # the row changed or went since it was read
            raise Raced(f"the {object_type} {id_text(id)} changed since it was read")

    def row_metadata(self, object_type: str, id: list[str]) -> str | None:
        """The metadata text of a row as stored ("" when null); None when there is no such row."""
        dataset = self.writable_manifest()
        if dataset is None:
            return None
        return metadata_of(dataset, object_type, id)

    def swap_metadata(self, object_type: str, id: list[str], expected: str,
                       properties: dict[str, str]) -> str | None:
        """Set the row's properties if its metadata is still `expected`, in one commit; the new
        metadata text, or None when the row changed or went. Only conflicts with other writers'
        commits are tried again (on a fresh read, so the condition is checked again)."""

        def attempt() -> str | None:
            dataset = self.writable_manifest()
            if dataset is None or metadata_of(dataset, object_type, id) != expected:
                return None
            try:
                self.replace_metadata(object_type, id, properties, expected=expected or None,
                                       dataset=dataset)
            except Raced:
                return None
            return json.dumps(properties)

        return self.committed(f"swap {object_type} properties of {id_text(id)}", attempt)

    def delete_row(self, object_type: str, id: list[str], expected: str) -> bool:
        """Remove the row (a namespace without children, a table's registration) if its metadata
        is still `expected`, in one commit; False when it changed or went."""

        def attempt() -> bool:
            dataset = self.writable_manifest()
            if dataset is None or metadata_of(dataset, object_type, id) != expected:
                return False
            self._count_call()
            condition = f"{row_filter(object_type, id)} AND metadata = {sql_string(expected)}"
            return dataset.delete(condition, conflict_retries=0)["num_deleted_rows"] == 1

        return self.committed(f"remove {object_type} {id_text(id)}", attempt)

    def compact_if_fragmented(self, written: lance.LanceDataset) -> None:
        """Best effort: fold the manifest's small fragments together once there are many (as
        counted in `written`, the version a write was made on), so that scans stay fast. A
        compaction that meets another writer's commit is dropped; readers keep reading the
        version they opened."""
        if len(written.get_fragments()) + 1 < COMPACT_AT_FRAGMENTS:
            return
        try:
            with self._write_lock:
                dataset = self._manifest()
                if dataset is None:
                    return
                self._count_call()
                dataset.optimize.compact_files()
        except Exception:  # noqa: BLE001 - tidying only; the write it follows has succeeded
            return

    # --- reading ------------------------------------------------------------------------------

    def _manifest(self) -> lance.LanceDataset | None:
        """The manifest table for a bulk read; None when there is none the scan can use."""
        self._count_call()
        try:
            dataset = self._open(join_location(self.root, MANIFEST_TABLE))
        except (ValueError, OSError):
            return None
        return dataset if MANIFEST_COLUMNS.issubset(dataset.schema.names) else None

    def _open(self, uri: str) -> lance.LanceDataset:
        """The dataset at `uri`, by pylance, imported here: a driver that never opens a dataset
        (a plan of a root that does not exist yet) does without it."""
        import lance

        return lance.dataset(uri, storage_options=self._storage_options)

    def manifest_rows(self, *object_types: str, within: str | None = None) -> Rows | None:
        """The manifest rows of these object types (whose object id starts with `within`, filtered
        by Lance in the scan), as columns, in one scan of one version; None when there is no
        usable manifest."""
        dataset = self._manifest()
        if dataset is None:
            return None
        condition = f"object_type IN ({', '.join(map(sql_string, object_types))})"
        if within:
            condition += f" AND starts_with(object_id, {sql_string(within)})"
        return dataset.to_table(columns=list(ROW_COLUMNS), filter=condition).to_pydict()

    def manifest_batches(self, *object_types: str) -> Iterator[Rows] | None:
        """`manifest_rows` of the whole root, a batch of rows at a time (one scan of one version)."""
        dataset = self._manifest()
        if dataset is None:
            return None
        condition = f"object_type IN ({', '.join(map(sql_string, object_types))})"
        return (batch.to_pydict() for batch in dataset.to_batches(columns=list(ROW_COLUMNS), filter=condition,
                                                                   batch_size=ROW_BATCH))
