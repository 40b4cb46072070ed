"""Retries of transient failures, one policy for every driver.

A failure is transient when trying again may succeed: the backend was unavailable or
throttled, failed on its own side (`ServerError`, a 5xx), or its answer was cut off or
garbled on the way (`BadAnswerError`). Retries are
bounded, spaced by exponential backoff with full jitter, and honour a server's Retry-After.
Anything else (not found, already exists, invalid input, permission) is final at once.

A store's failure (object storage reached through pylance's object_store or pyarrow's AWS
SDK, which retry it themselves first: model.storage_options.STORE_DEFAULTS) comes as an
OSError or a Lance error whose words say what happened; `is_transient_store_error` tells the
ones worth trying again (a 5xx, a reset, refused or timed-out connection, an answer cut off)
from final ones (access denied, not found).

Each retry is logged at INFO (`log_retry`) with the backend, the call, the attempt and the
error: a failure that a retry hides leaves a trace for whoever turns the logs on.
"""

from __future__ import annotations

import functools
import logging
import random
import re
import time
from collections.abc import Callable
from typing import TypeVar

from lance_namespace.errors import (
    ConcurrentModificationError,
    ErrorCode,
    InternalError,
    LanceNamespaceError,
    ServiceUnavailableError,
    ThrottlingError,
)

logger = logging.getLogger(__name__)

BACKOFF_BASE_SECONDS = 0.2
BACKOFF_CAP_SECONDS = 10.0
RETRY_AFTER_CAP_SECONDS = 60.0

T = TypeVar("T")


class BadAnswerError(InternalError):
    """An answer without the shape its API defines: not JSON, cut short, a member missing or
    of the wrong type. Retried like a 5xx, then raised naming the backend and the call."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(InternalError):
    """A server's own failure (a 5xx): Internal (code 18) as the specs say, and worth running
    the call again later."""


class TransientError(ServiceUnavailableError):
    """A failure worth retrying that carries the server's Retry-After, in seconds."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


TRANSIENT_ERRORS: tuple[type[LanceNamespaceError], ...] = (
    ServiceUnavailableError, ThrottlingError, BadAnswerError, ServerError, ConcurrentModificationError)


def is_transient(error: BaseException) -> bool:
    """True when the same call may succeed if sent again."""
    return isinstance(error, TRANSIENT_ERRORS)


#: how object_store (pylance), the AWS SDK (pyarrow) and Lance word a store failure that may
#: succeed when tried again: a 5xx, a connection reset, refused, timed out or closed before
#: the answer, an answer cut off
_TRANSIENT_STORE_WORDING = re.compile(
    r"SERVICE_UNAVAILABLE|INTERNAL_FAILURE|NETWORK_CONNECTION|SLOW_DOWN|REQUEST_TIMEOUT|"
    r"HTTP status 5\d\d|status(?: code)?:? 5\d\d|5\d\d (?:Service Unavailable|Internal Server Error|"
    r"Bad Gateway|Gateway Timeout)|error sending request|request or response body error|"
    r"connection (?:reset|refused|closed|aborted)|broken pipe|timed out|operation timed out|"
    r"server returned nothing|partial file|recv failure|incomplete message|unexpected EOF",
    re.IGNORECASE)


def is_transient_store_error(error: BaseException) -> bool:
    """A store failure that may succeed when tried again (see the module docstring)."""
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    if isinstance(error, LanceNamespaceError):
        if error.code != ErrorCode.INTERNAL:
            return False  # not found, already exists, ...: the catalog's final answers
    elif not isinstance(error, OSError | RuntimeError | ValueError):
        return False
    return bool(_TRANSIENT_STORE_WORDING.search(str(error)))


def backoff_seconds(attempt: int, retry_after: float | None = None) -> float:
    """How long to wait before retry number `attempt + 1` (0-based `attempt`)."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), RETRY_AFTER_CAP_SECONDS)
    return random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt))


def with_retries(call: Callable[[], T], max_retries: int, *,
                 retryable: Callable[[BaseException], bool] = is_transient,
                 sleep: Callable[[float], None] = time.sleep, backend: str = "", label: str = "") -> T:
    """`call()`, sent again up to `max_retries` times while it fails with a transient error.

    The last error is raised unchanged, so its message still names the backend and the call.
    `backend` and `label` name the backend and the call in the log of each retry (the call's
    own name without `label`).
    """
    attempt = 0
    while True:
        try:
            return call()
        except Exception as error:
            if attempt >= max_retries or not retryable(error):
                raise
            wait = backoff_seconds(attempt, getattr(error, "retry_after", None))
            log_retry(backend, label or call_name(call), attempt + 1, max_retries, error, wait)
            sleep(wait)
            attempt += 1


def log_retry(backend: str, call: str, attempt: int, max_retries: int, error: BaseException,
              wait: float) -> None:
    """Log that attempt number `attempt` (1-based) of `call` failed and is retried after `wait` seconds."""
    logger.info("%s: %s: attempt %d of %d failed (%s: %s); retrying in %.2f s", backend or "-", call, attempt,
             max_retries + 1, type(error).__name__, error, wait)


def call_name(call: Callable[..., object]) -> str:
    """A callable's name for a log: its qualified name, with the arguments of a `functools.partial`."""
    if isinstance(call, functools.partial):
        arguments = [repr(argument) for argument in call.args]
        return f"{call_name(call.func)}({', '.join(arguments)})"
    return getattr(call, "__qualname__", None) or repr(call)
