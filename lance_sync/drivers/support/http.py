"""HTTP for the REST drivers: timeouts, retries with backoff, answers checked, errors at the boundary.

Every failure of one attempt is classified:
- transient, the server cannot have acted: the connection was never made, or it answered
  429 or 503;
- transient, the server may have acted: a timeout or a connection lost after the request was
  sent, a body cut short or not decodable, another 5xx;
- a bad answer: a success whose body is not JSON (for a read) or does not fit the answer
  model the caller expects (`expect=`, see `answers.parse_answer`, or `parse=`, which raises
  `answers.UnfitAnswer`);
- transient, the server did not act: an error status the driver's translator reads as
  throttling (AWS answers it as a 400 with a throttling code);
- final: any other error status, handed to the driver's translator.

A retry-safe request (GET, HEAD, PUT, DELETE; or one the caller marks `retry_safe`) is sent
again after any transient failure or bad answer, up to `max_retries` times, spaced by
`retry.backoff_seconds` (which honours Retry-After). Any other request (POST, PATCH) is sent
again only when the server cannot have acted; otherwise the failure is raised at once as a
`TransientError` that says the server may have carried it out. A DELETE that meets 404 after
an earlier attempt may have reached the server counts as done: that attempt deleted it.

After the last attempt the error names the backend, the method and the URL path, what was
wrong and how many attempts were made, e.g. "iceberg: GET /v1/p/namespaces answered a body
cut short (1200 of 4096 bytes) after 4 attempts"; a driver may name the call itself
(`label=`, "glue: GetTables on 123456789012$sales"). Headers (tokens) never appear in a
message, nor does the userinfo of an endpoint URL. A server's text is masked
(`lance_sync.model.secrets`) before anything reads it, so a server that echoes the request
cannot put a token into a message; the credential of every Authorization header sent is
registered for that, except where the client signs each request (`sign=`, AWS SigV4: the
header is a signature, and the signer registers the credentials it signs with). A raw
urllib3 exception never leaves this module.

Requests go straight to a urllib3 connection pool for the endpoint: at thousands of loads per
plan, the client's own work per request, not the server, was the limit, and requests'
per-request preparation and environment scan were most of that work (the Iceberg rows of
`bench/bench_catalogs.py` measure it; docs/benchmarks.md). The environment is read once per
client: HTTP(S)_PROXY and NO_PROXY choose a proxy for the endpoint, REQUESTS_CA_BUNDLE or
CURL_CA_BUNDLE the certificates to trust (else certifi's, as requests would; a driver may
name its own, as AWS_CA_BUNDLE does for botocore). The userinfo of
an endpoint URL is sent as Basic authentication unless the driver sends its own Authorization.
Redirects are not followed: a catalog that answers 3xx is reported with that status.

Each answer is logged at DEBUG as its method, path (without the query) and status, never its
headers or body; each retry at INFO (`retry.log_retry`).

The connect timeout is the socket's; the read timeout is kept by `deadlines`' watchdog on a
blocking socket (the whole answer within `read_timeout` of sending), as per-socket timeouts
cost a poll before every send and receive. Through a proxy the pools keep socket timeouts.
"""

from __future__ import annotations

import email.utils
import http.client
import json as jsonlib
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit
from urllib.request import getproxies, proxy_bypass

import certifi
import urllib3
from lance_namespace.errors import InternalError, LanceNamespaceError, ThrottlingError
from pydantic import BaseModel, ValidationError
from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    HTTPError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.util import make_headers, parse_url

from lance_sync import __version__
from lance_sync.drivers.support import deadlines
from lance_sync.drivers.support.answers import UnfitAnswer, describe_body, one_line, parse_answer
from lance_sync.drivers.support.retry import (
    BadAnswerError,
    ServerError,
    TransientError,
    backoff_seconds,
    log_retry,
)
from lance_sync.model import secrets

logger = logging.getLogger(__name__)

#: statuses worth sending a retry-safe request again for
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
#: statuses after which any request, a POST too, is known not to have been carried out
NOT_CARRIED_OUT_STATUS = frozenset({429, 503})
#: methods whose repetition leaves the same state as one request (RFC 9110 9.2.2)
RETRY_SAFE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
POOL_SIZE = 32
#: characters of an error body kept in a message
BODY_SHOWN = 300
#: headers of every request (a driver's own, such as Authorization, are added per attempt)
BASE_HEADERS = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate",
                "User-Agent": f"lance-sync/{__version__}"}


@dataclass(frozen=True)
class HttpFailure:
    """An error answer, for a driver's translator."""

    method: str
    url: str
    status: int
    body: Any
    attempts: int = 1
    #: the answer's headers (AWS's REST protocols may carry the error code in one)
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def shown_url(self) -> str:
        """The URL for messages: without any userinfo (user:password@) of the endpoint."""
        return without_userinfo(self.url)

    def message(self) -> str:
        """One line: the request, the status and the server's message (an HTML page by its title)."""
        detail = self.body.get("message") if isinstance(self.body, dict) else None
        return (f"{self.method} {self.shown_url} -> {self.status}: {one_line(str(detail or self.body), BODY_SHOWN)}"
                f"{attempts_note(self.attempts)}")


Translator = Callable[[HttpFailure], LanceNamespaceError]
#: signs one attempt: (method, URL, headers, body) -> the headers to send
Signer = Callable[[str, str, dict[str, str], bytes | None], dict[str, str]]


class _Failed(Exception):
    """One attempt went wrong; `error` is what the caller gets if it is not sent again.

    may_have_acted: the server may have carried the request out (so only a retry-safe
    request is sent again); carried_out: it certainly did (it answered success).
    """

    def __init__(self, error: LanceNamespaceError, *, transient: bool, may_have_acted: bool,
                 carried_out: bool = False, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.transient = transient
        self.may_have_acted = may_have_acted or carried_out
        self.carried_out = carried_out
        self.retry_after = retry_after


class HttpClient:
    def __init__(self, base_url: str, *, backend: str, connect_timeout: float, read_timeout: float,
                 max_retries: int, translate: Translator, headers: Callable[[], dict[str, str]] | None = None,
                 sign: Signer | None = None, ca_bundle: str | None = None,
                 on_request: Callable[[], None] | None = None, sleep: Callable[[float], None] = time.sleep):
        """`backend` labels every message ("iceberg", "unity"); timeouts are in seconds;
        `headers` is called per attempt (tokens may refresh), and `sign` last, on the whole
        request (AWS SigV4); `ca_bundle` replaces the environment's certificates to trust;
        `on_request` counts attempts."""
        self.base_url = base_url.rstrip("/")
        self.backend = backend
        self.timeout = (connect_timeout, read_timeout)
        self.max_retries = max_retries
        self.translate = translate
        self.headers = headers or dict
        self.sign = sign
        self.on_request = on_request or (lambda: None)
        self.sleep = sleep
        self._base_headers = {**BASE_HEADERS, **_userinfo_auth(self.base_url)}
        self._base_path = urlsplit(self.base_url).path
        self._origin = _origin(self.base_url)
        #: urlopen(method, target, **options) of the endpoint's connection pool; whether its
        #: connections keep the read timeout by `deadlines` rather than by socket timeouts
        self.send, self._watched = _sender(self.base_url, ca_bundle)
        self._timeout = urllib3.Timeout(connect=connect_timeout, read=None if self._watched else read_timeout)

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None,
                data: dict[str, str] | None = None, ok: tuple[int, ...] = (200,),
                expect: type[BaseModel] | None = None, parse: Callable[[bytes], Any] | None = None,
                retry_safe: bool | None = None, headers: dict[str, str] | None = None,
                content_type: str | None = None, translate: Translator | None = None,
                label: str | None = None) -> Any:
        """Send one logical request; the answer parsed as `expect` (or by `parse`, from its
        bytes, empty ones too), else its JSON (None when empty).

        `retry_safe` overrides the method's own idempotence (an OAuth token request is a POST
        that changes nothing, so it may be sent again). `headers` are this request's own,
        `content_type` replaces the body's, `translate` the client's translator, and `label`
        names the request in messages (default "METHOD /path").
        """
        url = self.base_url + path
        query = urlencode({k: v for k, v in (params or {}).items() if v is not None})
        target = f"{self._base_path}{path}?{query}" if query else self._base_path + path
        body, encoded_type = _encoded_body(json, data)
        request = _Request(method, url, target, label or f"{method} {urlsplit(url).path}", body,
                           {**(headers or {}), **_content_type(content_type or encoded_type)},
                           translate or self.translate)
        safe = method in RETRY_SAFE_METHODS if retry_safe is None else retry_safe
        attempt = 0
        reached = False  # whether an earlier attempt may have reached the server
        while True:
            self.on_request()
            try:
                return self._attempt(request, ok=ok, expect=expect, parse=parse, attempts=attempt + 1,
                                     deleted_before=reached)
            except _Failed as failed:
                reached = reached or failed.may_have_acted
                retry = failed.transient and (safe or not failed.may_have_acted)
                if not retry or attempt >= self.max_retries:
                    raise self._final(failed, attempt + 1, safe) from None
                wait = backoff_seconds(attempt, failed.retry_after)
                log_retry(self.backend, request.label, attempt + 1, self.max_retries, failed.error, wait)
                self.sleep(wait)
                attempt += 1

    # --- one attempt ---------------------------------------------------------------------------

    def _attempt(self, request: _Request, *, ok: tuple[int, ...], expect: type[BaseModel] | None,
                 parse: Callable[[bytes], Any] | None, attempts: int, deleted_before: bool) -> Any:
        method, url, call = request.method, request.url, request.label
        headers = {**self._base_headers, **self.headers(), **request.headers}
        if self.sign is None:
            secrets.register_authorization(headers.get("Authorization"))
        else:
            headers = self.sign(method, self._origin + request.target, headers, request.body)
        attempt = deadlines.begin(self.timeout[1]) if self._watched else None
        try:
            response = self.send(method, request.target, body=request.body, headers=headers,
                                 timeout=self._timeout, retries=False, redirect=False, preload_content=False)
        except HTTPError as error:
            raise self._transport_failure(error, call, url, _expired(attempt)) from None
        try:
            content = response.read()
        except HTTPError as error:
            raise self._body_failure(error, call, _expired(attempt)) from None
        finally:
            response.release_conn()
        answer = _Answer(response.status, response.headers, content)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: %s %s -> %d", self.backend, method, request.target.partition("?")[0], answer.status)
        if answer.status in ok:
            return self._answer(answer, method, call, expect, parse)
        if method == "DELETE" and answer.status == 404 and deleted_before:
            return None  # an earlier attempt deleted it, and its answer was lost
        failure = HttpFailure(method, url, answer.status, answer.error_body(), attempts, answer.headers)
        retry_after = _retry_after_seconds(answer.headers.get("Retry-After"))
        if answer.status in RETRYABLE_STATUS:
            translated = ThrottlingError(failure.message()) if answer.status == 429 else request.translate(failure)
            raise _Failed(translated, transient=True, may_have_acted=answer.status not in NOT_CARRIED_OUT_STATUS,
                          retry_after=retry_after)
        translated = request.translate(failure)
        if isinstance(translated, ThrottlingError):  # refused before it was carried out
            raise _Failed(translated, transient=True, may_have_acted=False, retry_after=retry_after)
        raise _Failed(translated, transient=False, may_have_acted=True)

    def _answer(self, answer: _Answer, method: str, call: str, expect: type[BaseModel] | None,
                parse: Callable[[bytes], Any] | None) -> Any:
        """The success answer: parsed as `expect` or by `parse`, else its JSON; a bad one is a
        BadAnswerError.

        Without an answer model only a read must answer JSON: a write's success needs no body
        (Unity answers a DELETE with the text "200 OK"). A body that fits `expect` is parsed
        straight from its bytes; one that does not is parsed again, step by step, to say what
        was wrong with it.
        """
        if parse is not None:
            try:
                return parse(answer.content)
            except UnfitAnswer as unfit:
                raise self._bad(f"{self.backend}: {call} answered {unfit}", carried_out=True) from None
        checked = expect is not None or method == "GET"
        if not answer.content:
            if checked:
                raise self._bad(f"{self.backend}: {call} answered an empty body", carried_out=True)
            return None
        if expect is not None:
            try:
                return expect.model_validate_json(answer.content)
            except ValidationError:
                pass
        try:
            body = jsonlib.loads(answer.content)
        except ValueError:
            if not checked:
                return None
            raise self._bad(f"{self.backend}: {call} answered a body that is not JSON "
                            f"({answer.content_type()}: {describe_body(answer.masked_text())})",
                            carried_out=True) from None
        if expect is None:
            return body
        try:
            return parse_answer(expect, body, backend=self.backend, call=call)
        except BadAnswerError as error:
            raise self._bad(str(error), carried_out=True) from None

    @staticmethod
    def _bad(message: str, carried_out: bool) -> _Failed:
        """A bad answer: worth asking again for a retry-safe request, never for another."""
        return _Failed(BadAnswerError(message), transient=True, may_have_acted=True, carried_out=carried_out)

    def _transport_failure(self, error: HTTPError, call: str, url: str, expired: bool) -> _Failed:
        """A request that got no answer: cannot connect, timed out (`expired`: ended by its
        read deadline), connection lost."""
        if _never_connected(error):
            return _Failed(TransientError(f"{self.backend}: {call}: cannot reach the server at "
                                          f"{_origin(url)} ({_cause(error)})"),
                           transient=True, may_have_acted=False)
        if expired or isinstance(error, ReadTimeoutError):
            what = self._timed_out()
        elif isinstance(error, (ProtocolError, urllib3.exceptions.SSLError, urllib3.exceptions.ProxyError)):
            what = f"lost the connection before the answer ({_cause(error)})"
        else:  # an invalid URL, ...: sending it again changes nothing
            return _Failed(InternalError(f"{self.backend}: {call} failed: {_cause(error)}"),
                           transient=False, may_have_acted=False)
        return _Failed(TransientError(f"{self.backend}: {call} {what}"), transient=True, may_have_acted=True)

    def _body_failure(self, error: HTTPError, call: str, expired: bool) -> _Failed:
        """An answer whose body did not arrive whole (`expired`: ended by its read deadline).
        Its status line may have been an error's: the request is only known to have been answered."""
        if expired or isinstance(error, ReadTimeoutError):
            return _Failed(TransientError(f"{self.backend}: {call} {self._timed_out()}"),
                           transient=True, may_have_acted=True)
        return self._bad(f"{self.backend}: {call} answered {_cut_short(error)}", carried_out=False)

    def _timed_out(self) -> str:
        return f"timed out waiting for the answer ({self.timeout[1]:g} s)"

    @staticmethod
    def _final(failed: _Failed, attempts: int, safe: bool) -> LanceNamespaceError:
        """The error the caller gets: the attempt's own, noting the attempts made, or that a
        request which is not retry-safe was (or may have been) carried out."""
        error = failed.error
        if not isinstance(error, (BadAnswerError, TransientError)):
            return error  # an error status, translated (its message notes the attempts)
        message = str(error) + attempts_note(attempts)
        if safe or not failed.may_have_acted:
            return type(error)(message)
        if failed.carried_out:
            return BadAnswerError(message + "; the server carried the request out, so it was not sent again")
        return TransientError(message + "; the server may have carried it out, so it was not sent again")


def transient_if_5xx(error_class: type[LanceNamespaceError], status: int) -> type[LanceNamespaceError]:
    """A 5xx that a driver reads as Internal (the specs' code 18) is the server's own failure:
    still code 18, but worth running the call again later (`retry.ServerError`)."""
    return ServerError if error_class is InternalError and status >= 500 else error_class


def attempts_note(attempts: int) -> str:
    return f" after {attempts} attempts" if attempts > 1 else ""


def _expired(attempt: deadlines.Attempt | None) -> bool:
    return attempt is not None and attempt.expired


def _never_connected(error: HTTPError) -> bool:
    """True when the request cannot have reached the server (refused, DNS, connect timeout;
    to the server or to the proxy in front of it)."""
    never_connected = (ConnectTimeoutError, NewConnectionError, ConnectionRefusedError)
    return any(isinstance(cause, never_connected) for cause in _causes(error))


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it wraps (args, reason, __cause__), outermost first."""
    found: list[BaseException] = []
    pending: list[Any] = [error]
    while pending:
        current = pending.pop(0)
        if not isinstance(current, BaseException) or any(current is seen for seen in found):
            continue
        found.append(current)
        pending.extend([*current.args, getattr(current, "reason", None), current.__cause__])
    return found


def _cause(error: HTTPError) -> str:
    """A short reason without URLs or pool internals, e.g. "connection refused"."""
    for cause in reversed(_causes(error)):
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
        if isinstance(cause, http.client.RemoteDisconnected):
            return "the server closed the connection"
        if isinstance(cause, urllib3.exceptions.NameResolutionError):
            return "the host name does not resolve"
    return type(error).__name__


def _cut_short(error: HTTPError) -> str:
    """What is known of a body that ended early, e.g. "a body cut short (1200 of 4096 bytes)"."""
    if isinstance(error, DecodeError):
        return "a body that cannot be decoded (content encoding)"
    for cause in _causes(error):
        if isinstance(cause, http.client.IncompleteRead):  # urllib3's IncompleteRead is one too
            partial = cause.partial if isinstance(cause.partial, int) else len(cause.partial)
            if isinstance(cause.expected, int):  # Content-Length known
                return f"a body cut short ({partial} of {partial + cause.expected} bytes)"
            return f"a body cut short (chunked, {partial} bytes of its last chunk)"
    return f"a body cut short ({_cause(error)})"


def without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _origin(url: str) -> str:
    """scheme://host:port, without any userinfo."""
    parts = urlsplit(without_userinfo(url))
    return f"{parts.scheme}://{parts.netloc}"


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After in seconds: delta-seconds or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    if value.strip().isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


@dataclass(frozen=True)
class _Request:
    """One logical request, as each of its attempts sends it."""

    method: str
    url: str
    #: path and query, as sent to the endpoint's connection pool
    target: str
    label: str
    body: bytes | None
    headers: dict[str, str]
    translate: Translator


@dataclass(frozen=True)
class _Answer:
    """An answer as it arrived: status, headers and the whole (decoded) body."""

    status: int
    headers: Any
    content: bytes

    def masked_text(self) -> str:
        """The body as text, with any secret it echoes masked."""
        return secrets.mask(self.content.decode("utf-8", errors="replace"))

    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "no content type").split(";")[0]

    def error_body(self) -> Any:
        """An error answer's body for the translator, masked: its JSON, else its text, None when empty."""
        if not self.content:
            return None
        text = self.masked_text()
        try:
            return jsonlib.loads(text)
        except ValueError:
            return text


def _content_type(content_type: str | None) -> dict[str, str]:
    return {"Content-Type": content_type} if content_type else {}


def _encoded_body(json: Any, data: dict[str, str] | None) -> tuple[bytes | None, str | None]:
    """The request body and its content type: JSON, a form, or none."""
    if json is not None:
        return jsonlib.dumps(json, allow_nan=False).encode(), "application/json"
    if data is not None:
        return urlencode(data).encode(), "application/x-www-form-urlencoded"
    return None, None


def _userinfo_auth(url: str) -> dict[str, str]:
    """Basic authentication from the userinfo of an endpoint URL (http://user:password@host)."""
    parts = urlsplit(url)
    if parts.username is None:
        return {}
    return make_headers(basic_auth=f"{unquote(parts.username)}:{unquote(parts.password or '')}")


def _sender(base_url: str, ca_bundle: str | None = None) -> tuple[Callable[..., urllib3.BaseHTTPResponse], bool]:
    """`urlopen(method, target, ...)` of a connection pool for the endpoint (`target`: path and
    query), through the proxy the environment names for it: HTTP(S)_PROXY and NO_PROXY, read
    once here rather than per request; and whether the pool's connections are `deadlines`'
    (a proxy's pools keep socket timeouts)."""
    parts = urlsplit(without_userinfo(base_url))
    options: dict[str, Any] = {"maxsize": POOL_SIZE, "block": False}
    if parts.scheme == "https":
        options["ca_certs"] = (ca_bundle or os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
                               or certifi.where())
    proxy = getproxies().get(parts.scheme)
    if not proxy or proxy_bypass(parts.netloc):
        endpoint = parse_url(parts.geturl())
        pool = deadlines.WatchedTLSPool if parts.scheme == "https" else deadlines.WatchedPool
        return pool(endpoint.host or "", port=endpoint.port, **options).urlopen, True
    proxy_url = proxy if "://" in proxy else f"http://{proxy}"
    manager = urllib3.ProxyManager(without_userinfo(proxy_url), proxy_headers=_userinfo_auth(proxy_url) or None,
                                   **options)
    origin = f"{parts.scheme}://{parts.netloc}"
    return (lambda method, target, **request: manager.urlopen(method, origin + target, **request)), False
