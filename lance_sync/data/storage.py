"""Storage options as pylance resolves them, and a pyarrow filesystem for a location.

A backend's storage options (the object_store keys pylance takes, e.g. `aws_access_key_id`,
`aws_endpoint`, `aws_region`, `allow_http`) may leave settings to the standard environment,
the way pylance does: for an S3 location it reads every `AWS_*` variable that names one of its
settings (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `AWS_REGION`, keys...). `effective_storage_options`
folds those in under the explicit options, so that every other reader of a location (pyarrow's
filesystem here, Spark executors that do not share this process's environment) sees the store
pylance sees. Credentials neither give (profiles, instance roles) are left to each client's own
AWS credential chain.

The options are translated for pyarrow's S3 filesystem, over lance-sync's store retry defaults
(`model.storage_options.STORE_DEFAULTS`: pylance's keys, so that both clients retry alike);
other schemes use pyarrow's defaults (`FileSystem.from_uri` and the environment's credentials).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyarrow import fs as pafs

from lance_sync.model.locations import is_local, normalize_location
from lance_sync.model.storage_options import layered, with_store_defaults

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
    "aws_default_region": "region",
    "region": "region",
    "aws_endpoint": "endpoint_override",
    "endpoint": "endpoint_override",
    "aws_endpoint_url": "endpoint_override",
    "endpoint_url": "endpoint_override",
}
_TRUE = ("1", "true", "yes")

#: The S3 settings pylance (object_store) takes from `AWS_<KEY>` environment variables, as
#: the option key each becomes, lowest first (AWS_REGION wins over AWS_DEFAULT_REGION);
#: explicit options win over them all.
_S3_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
    "AWS_SESSION_TOKEN": "aws_session_token",
    "AWS_DEFAULT_REGION": "aws_default_region",
    "AWS_REGION": "aws_region",
    "AWS_ENDPOINT": "aws_endpoint",
    "AWS_ENDPOINT_URL": "aws_endpoint_url",
    "AWS_ALLOW_HTTP": "allow_http",
    "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "aws_virtual_hosted_style_request",
    "AWS_SKIP_SIGNATURE": "aws_skip_signature",
    "AWS_SERVER_SIDE_ENCRYPTION": "aws_server_side_encryption",
    "AWS_SSE_KMS_KEY_ID": "aws_sse_kms_key_id",
    "AWS_REQUEST_PAYER": "aws_request_payer",
}


def _on_s3(location: str) -> bool:
    """s3://, s3a:// and s3n:// (normalized to s3://) locations."""
    return normalize_location(location).startswith("s3://")


def effective_storage_options(location: str, storage_options: dict | None = None) -> dict[str, str]:
    """The storage options for `location` with what pylance would take from the environment
    added where the options leave it unset (see the module docstring); for other locations,
    the options as given."""
    options = {str(k): str(v) for k, v in (storage_options or {}).items()}
    if not _on_s3(location):
        return options
    from_environment = layered(*({key: os.environ[variable]} for variable, key in _S3_ENVIRONMENT.items()
                                 if os.environ.get(variable)))
    return layered(from_environment, options)


def shipped_storage_options(locations: Iterable[str], storage_options: dict | None = None) -> dict[str, str]:
    """The storage options to send, with these locations, to processes that do not share this
    environment (Spark executors): `effective_storage_options` of the first location on S3
    (the environment adds the same settings to every S3 location; other stores ignore them),
    or the options as given when none is on S3."""
    on_s3 = next((location for location in locations if _on_s3(location)), None)
    if on_s3 is None:
        return {str(k): str(v) for k, v in (storage_options or {}).items()}
    return effective_storage_options(on_s3, storage_options)


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
        options = effective_storage_options(location, storage_options)
        return _s3_storage(tuple(sorted(options.items())))
    filesystem, _ = pafs.FileSystem.from_uri(location)
    return Storage(filesystem, scheme)


_LOCAL = Storage(pafs.LocalFileSystem(), "")


@functools.lru_cache(maxsize=8)
def _s3_storage(option_items: tuple[tuple[str, str], ...]) -> Storage:
    return Storage(pafs.S3FileSystem(**_s3_arguments(dict(option_items))), "s3")


def _s3_arguments(storage_options: dict) -> dict:
    options = {str(k).lower(): str(v) for k, v in with_store_defaults(storage_options).items()}
    arguments: dict[str, Any] = {_S3_OPTIONS[k]: v for k, v in options.items() if k in _S3_OPTIONS}
    with contextlib.suppress(ValueError):  # a value pylance would refuse: pyarrow keeps its default
        # the SDK's "default" strategy: its "standard" one stops retrying once a shared quota of
        # retries is spent, which a store failing often spends within one plan
        arguments["retry_strategy"] = pafs.AwsDefaultS3RetryStrategy(
            max_attempts=int(options["client_max_retries"]) + 1)
    for key, argument in (("connect_timeout", "connect_timeout"), ("timeout", "request_timeout")):
        seconds = _seconds(options[key])
        if seconds is not None:
            arguments[argument] = seconds
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


def _seconds(duration: str) -> float | None:
    """A duration as object_store spells it ("5s", "500ms", "2m", "1h") in seconds; None when
    it is not one."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", duration)
    if match is None:
        return None
    return float(match[1]) * {"ms": 0.001, "s": 1.0, None: 1.0, "m": 60.0, "h": 3600.0}[match[2]]
