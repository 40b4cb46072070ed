"""HTTP for the REST drivers: timeouts, retries with backoff, errors at the boundary.

Retry policy: connection failures, 429 and 5xx are retried up to `max_retries` times with
exponential backoff and full jitter, honouring `Retry-After`. A POST (not idempotent) is
retried only when the server cannot have acted on it: the connection was never made, or
it answered 429 or 503. After the last attempt a connection failure is a
ServiceUnavailableError and a throttled answer a ThrottlingError; other error statuses are
handed to the driver's translator, so a failure never turns into an empty result.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from lance_namespace.errors import (
    InternalError,
    LanceNamespaceError,
    ServiceUnavailableError,
    ThrottlingError,
)
from requests.adapters import HTTPAdapter

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
#: statuses after which a POST is known not to have been carried out
RETRYABLE_POST_STATUS = frozenset({429, 503})
BACKOFF_BASE_SECONDS = 0.2
BACKOFF_CAP_SECONDS = 10.0
RETRY_AFTER_CAP_SECONDS = 60.0
POOL_SIZE = 32


@dataclass(frozen=True)
class HttpFailure:
    """An error answer, for a driver's translator."""

    method: str
    url: str
    status: int
    body: Any

    def message(self) -> str:
        detail = self.body.get("message") if isinstance(self.body, dict) else None
        return f"{self.method} {self.url} -> {self.status}: {detail or str(self.body)[:300]}"


Translator = Callable[[HttpFailure], LanceNamespaceError]


class HttpClient:
    def __init__(self, base_url: str, *, connect_timeout: float, read_timeout: float, max_retries: int,
                 translate: Translator, headers: Callable[[], dict[str, str]] | None = None,
                 on_request: Callable[[], None] | None = None, sleep: Callable[[float], None] = time.sleep):
        """Timeouts are in seconds; `headers` is called per request (tokens may refresh)."""
        self.base_url = base_url.rstrip("/")
        self.timeout = (connect_timeout, read_timeout)
        self.max_retries = max_retries
        self.translate = translate
        self.headers = headers or dict
        self.on_request = on_request or (lambda: None)
        self.sleep = sleep
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=POOL_SIZE, pool_maxsize=POOL_SIZE, max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: Any = None, data: dict[str, str] | None = None, ok: tuple[int, ...] = (200,)) -> Any:
        """Send one logical request; returns the decoded JSON body (None when empty)."""
        url = self.base_url + path
        params = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            self.on_request()
            try:
                response = self.session.request(method, url, params=params, json=json, data=data,
                                                headers=self.headers(), timeout=self.timeout)
            except requests.ConnectionError as error:
                if attempt >= self.max_retries or (method == "POST" and not _never_connected(error)):
                    raise ServiceUnavailableError(f"{method} {url}: cannot reach the server: {error}") from None
                self.sleep(self._backoff(attempt, None))
                attempt += 1
                continue
            except requests.Timeout as error:
                if attempt >= self.max_retries or method == "POST":
                    raise ServiceUnavailableError(f"{method} {url}: timed out: {error}") from None
                self.sleep(self._backoff(attempt, None))
                attempt += 1
                continue
            if response.status_code in ok:
                return _decode(response)
            if self._should_retry(method, response.status_code) and attempt < self.max_retries:
                self.sleep(self._backoff(attempt, response.headers.get("Retry-After")))
                attempt += 1
                continue
            failure = HttpFailure(method, url, response.status_code, _decode(response, strict=False))
            if response.status_code == 429:
                raise ThrottlingError(failure.message())
            raise self.translate(failure)

    @staticmethod
    def _should_retry(method: str, status: int) -> bool:
        return status in (RETRYABLE_POST_STATUS if method == "POST" else RETRYABLE_STATUS)

    @staticmethod
    def _backoff(attempt: int, retry_after: str | None) -> float:
        waited = _retry_after_seconds(retry_after)
        if waited is not None:
            return min(waited, RETRY_AFTER_CAP_SECONDS)
        return random.uniform(0, min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt))


def _never_connected(error: requests.ConnectionError) -> bool:
    """True when the request cannot have reached the server (refused, DNS, connect timeout)."""
    return isinstance(error, requests.ConnectTimeout) or "NewConnectionError" in repr(error) \
        or "Connection refused" in str(error)


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _decode(response: requests.Response, strict: bool = True) -> Any:
    """The JSON body, or None when empty.

    A success that is not JSON is accepted only for a write (Unity answers a DELETE with the
    text "200 OK"); a read must answer JSON, so a proxy's HTML page is an error, not an
    empty result.
    """
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        if not strict:
            return response.text
        if response.request.method != "GET":
            return None
        raise InternalError(f"{response.request.method} {response.url}: the answer is not JSON "
                            f"({response.text[:200]!r})") from None
