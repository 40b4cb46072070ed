"""Storage options in layers: the environment, the manifest's default, a backend's own.

A storage setting can have several keys (object_store takes `aws_endpoint`, `aws_endpoint_url`,
`endpoint` and `endpoint_url` for one endpoint). A layer that sets a setting under any of its
keys replaces what lower layers set under any other, so that no two keys of one setting reach a
client, which would then pick one of them by its own rules.
"""

from __future__ import annotations

from collections.abc import Mapping

#: the keys of one setting (compared lower-case)
SAME_SETTING: tuple[frozenset[str], ...] = (
    frozenset({"aws_endpoint", "aws_endpoint_url", "endpoint", "endpoint_url"}),
    frozenset({"aws_region", "region", "aws_default_region"}),
    frozenset({"aws_access_key_id", "access_key_id"}),
    frozenset({"aws_secret_access_key", "secret_access_key"}),
    frozenset({"aws_session_token", "session_token", "aws_token", "token"}),
    frozenset({"allow_http", "aws_allow_http"}),
)


def setting_of(key: str) -> frozenset[str]:
    """Every key that names the same setting as `key` (itself included)."""
    lowered = key.lower()
    return next((group for group in SAME_SETTING if lowered in group), frozenset({lowered}))


def layered(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """The options of `layers`, lowest first: a layer's settings replace those of the layers
    below it, whichever key names them."""
    result: dict[str, str] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            for other in [k for k in result if k.lower() in setting_of(key)]:
                del result[other]
            result[str(key)] = str(value)
    return result


#: lance-sync's defaults for the store clients' own retries and timeouts, under every layer the
#: user sets (docs/object-storage.md, "Retries"): pylance's object_store keys, also given to the
#: pyarrow S3 filesystem of lance-sync's location checks (lance_sync.data.storage). A request
#: that failed transiently (a 5xx, a reset or refused connection, a timeout) is sent again up
#: to `client_max_retries` times within `client_retry_timeout` seconds; a download cut off is
#: read again `download_retry_count` times. pylance 14's own defaults (3 retries, 3 downloads)
#: give up on a store that fails one request in three; 6, with object_store's backoff from
#: 0.1 s doubling, is about 6 s of waiting, as the catalogs' retries (drivers.support.retry), so
#: a plan against a store that cannot be reached at all fails in about 11 s, not a minute.
STORE_DEFAULTS: dict[str, str] = {
    "client_max_retries": "6",
    "client_retry_timeout": "30",
    "download_retry_count": "6",
    "connect_timeout": "5s",
    "timeout": "60s",
}


def with_store_defaults(options: Mapping[str, str] | None) -> dict[str, str]:
    """`options` over STORE_DEFAULTS: a default applies only where `options` leave it unset."""
    return layered(STORE_DEFAULTS, options)
