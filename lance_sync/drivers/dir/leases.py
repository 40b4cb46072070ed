"""Apply leases at the root of a directory catalog: files under an exclusive file lock for a
local root (`FileLeaseRegister`), a conditional manifest row for an object-store root
(`ManifestRowLeaseRegister`)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lance_namespace import CreateNamespaceRequest
from lance_namespace.errors import InternalError, NamespaceAlreadyExistsError

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.dir.client import id_text, properties_of, short_message
from lance_sync.drivers.leases import LeaseRecord, LeaseRegister, StoredLease, not_a_lease

if TYPE_CHECKING:
    from lance_sync.drivers.dir.driver import DirNamespace

T = TypeVar("T")


def _file_errors(method: Callable[..., T]) -> Callable[..., T]:
    """A file system failure (permissions, no flock() where the root lives) as InternalError
    naming the lease file, never a raw OSError."""

    @functools.wraps(method)
    def call(self: FileLeaseRegister, *args: Any) -> T:
        try:
            return method(self, *args)
        except OSError as error:
            raise InternalError(f"dir: the apply lease {self.path}: {short_message(error)}") from error

    return call


class FileLeaseRegister(LeaseRegister):
    """An apply lease as the file `<directory>/<name>.json` of a local root.

    Creating it is exclusive: the record is written whole beside it, then linked to its name
    (link() fails when the name exists). A swap or a removal reads the file, compares it and
    writes (os.replace) or unlinks it while holding an exclusive flock() on the directory, which
    every swap and removal takes first, in every thread and process of the host: so each is
    atomic among them. The version is a digest of the file's bytes.
    """

    def __init__(self, directory: Path, name: str):
        self.path = directory / f"{name}.json"
        super().__init__(f"file {self.path}", str(self.path))

    @_file_errors
    def create(self, record: LeaseRecord) -> StoredLease | None:
        text = record.to_json()
        temporary = self._written(text)
        try:
            os.link(temporary, self.path)
        except FileExistsError:
            return None
        finally:
            temporary.unlink()
        return StoredLease(record, _digest(text))

    @_file_errors
    def read(self) -> StoredLease | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        record = LeaseRecord.from_json(text)
        if record is None:
            raise not_a_lease(self.label)
        return StoredLease(record, _digest(text))

    @_file_errors
    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        text = record.to_json()
        with self._locked():
            if not self._still(expected):
                return None
            os.replace(self._written(text), self.path)
        return StoredLease(record, _digest(text))

    @_file_errors
    def remove(self, expected: StoredLease) -> bool:
        with self._locked():
            if not self._still(expected):
                return False
            self.path.unlink()
        return True

    def _still(self, expected: StoredLease) -> bool:
        current = self.read()
        return current is not None and current.version == expected.version

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive flock() on the leases directory itself (so that no lock file is left)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _written(self, text: str) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        temporary.write_text(text, encoding="utf-8")
        return temporary


class ManifestRowLeaseRegister(LeaseRegister):
    """An apply lease as a namespace row of the manifest table of an object-store root (no file
    lock reaches there): a swap is one conditional row update, a removal one conditional row
    delete, each committed against the version it read and tried again on a fresh read while it
    conflicts with other writers' commits (`client.DirClient.committed`). The version is the
    row's metadata text. The row is created with the driver's create_namespace, then read,
    swapped and removed through its client (`client.DirClient`)."""

    def __init__(self, driver: DirNamespace, id: Identifier):
        super().__init__(f"{driver.namespace_id()} {list(id)}", id_text(id))
        self.driver = driver
        self.client = driver.client
        self.id = list(id)

    def create(self, record: LeaseRecord) -> StoredLease | None:
        request = CreateNamespaceRequest(id=self.id, mode="Create", properties=record.to_properties())
        try:
            self.driver.create_namespace(request)
        except NamespaceAlreadyExistsError:
            return None
        return StoredLease(record, "")  # as pylance wrote it: read before the first swap

    def read(self) -> StoredLease | None:
        text = self.client.row_metadata("namespace", self.id)
        if text is None:
            return None
        record = LeaseRecord.from_properties(properties_of(text))
        if record is None:
            raise not_a_lease(self.label)
        return StoredLease(record, text)

    def swap(self, expected: StoredLease, record: LeaseRecord) -> StoredLease | None:
        text = self.version_to_swap(expected)
        if text is None:
            return None
        written = self.client.swap_metadata("namespace", self.id, text, record.to_properties())
        return StoredLease(record, written) if written is not None else None

    def remove(self, expected: StoredLease) -> bool:
        text = self.version_to_swap(expected)
        return text is not None and self.client.delete_row("namespace", self.id, text)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
