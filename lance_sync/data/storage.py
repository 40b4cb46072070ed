"""A pyarrow filesystem for a location (normalized by lance_sync.locations).

Lance storage options (the object_store keys pylance takes, e.g. `aws_access_key_id`,
`aws_endpoint`, `aws_region`, `allow_http`) are translated for pyarrow's S3 filesystem; other
schemes use pyarrow's defaults (`FileSystem.from_uri` and the environment's credentials).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pyarrow import fs as pafs

from lance_sync.locations import is_local, normalize_location

#: Lance storage option -> pyarrow S3FileSystem argument (keys compared lower-case).
_S3_OPTIONS = {
    "aws_access_key_id": "access_key",
    "access_key_id": "access_key",
    "aws_secret_access_key": "secret_key",
    "secret_access_key": "secret_key",
    "aws_session_token": "session_token",
    "session_token": "session_token",
    "aws_token": "session_token",
    "aws_region": "region",
    "region": "region",
    "aws_endpoint": "endpoint_override",
    "endpoint": "endpoint_override",
    "aws_endpoint_url": "endpoint_override",
    "endpoint_url": "endpoint_override",
}
_TRUE = ("1", "true", "yes")


@dataclass(frozen=True)
class Storage:
    """A pyarrow filesystem for one location's scheme, with URI <-> filesystem-path mapping."""

    filesystem: pafs.FileSystem
    scheme: str  # "" for the local filesystem

    def path(self, location: str) -> str:
        """The filesystem path of a normalized location."""
        return location if not self.scheme else location[len(self.scheme) + 3 :]

    def uri(self, path: str) -> str:
        """The normalized location of a filesystem path."""
        return path if not self.scheme else f"{self.scheme}://{path}"

    def info(self, path: str) -> pafs.FileInfo:
        return self.filesystem.get_file_info(path)

    def list_dir(self, path: str) -> list[pafs.FileInfo]:
        """Entries directly under `path`; empty if it does not exist."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        return self.filesystem.get_file_info(selector)


def open_storage(location: str, storage_options: dict | None = None) -> Storage:
    """The filesystem holding `location` (normalized first). The local filesystem and S3
    filesystems (one per set of options) are made once and shared: pyarrow's filesystems are
    thread-safe, and inspecting thousands of locations should not build a client for each."""
    location = normalize_location(location)
    if is_local(location):
        return _LOCAL
    scheme = location.split("://", 1)[0]
    if scheme == "s3":
        return _s3_storage(tuple(sorted((str(k), str(v)) for k, v in (storage_options or {}).items())))
    filesystem, _ = pafs.FileSystem.from_uri(location)
    return Storage(filesystem, scheme)


_LOCAL = Storage(pafs.LocalFileSystem(), "")


@functools.lru_cache(maxsize=8)
def _s3_storage(option_items: tuple[tuple[str, str], ...]) -> Storage:
    return Storage(pafs.S3FileSystem(**_s3_arguments(dict(option_items))), "s3")


def _s3_arguments(storage_options: dict) -> dict:
    options = {str(k).lower(): str(v) for k, v in storage_options.items()}
    arguments: dict[str, str | bool] = {_S3_OPTIONS[k]: v for k, v in options.items() if k in _S3_OPTIONS}
    endpoint = str(arguments.get("endpoint_override", ""))
    if "://" in endpoint:
        scheme, arguments["endpoint_override"] = endpoint.split("://", 1)
        arguments["scheme"] = scheme
    elif options.get("allow_http", "").lower() in _TRUE:
        arguments["scheme"] = "http"
    if options.get("aws_skip_signature", options.get("skip_signature", "")).lower() in _TRUE:
        arguments["anonymous"] = True
    if options.get("aws_virtual_hosted_style_request", "").lower() in _TRUE:
        arguments["force_virtual_addressing"] = True
    return arguments
