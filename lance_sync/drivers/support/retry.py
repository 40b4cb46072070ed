"""Retries of transient failures, one policy for every driver.

A failure is transient when trying again may succeed: the backend was unavailable or
throttled, failed on its own side (`ServerError`, a 5xx), or its answer was cut off or
garbled on the way (`BadAnswerError`). Retries are
bounded, spaced by exponential backoff with full jitter, and honour a server's Retry-After.
Anything else (not found, already exists, invalid input, permission) is final at once.

Each retry is logged at INFO (`log_retry`) with the backend, the call, the attempt and the
error: a failure that a retry hides leaves a trace for whoever turns the logs on.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from lance_namespace.errors import (
    ConcurrentModificationError,
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
