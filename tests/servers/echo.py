"""A loopback HTTP server whose error answers echo the request, and a check for leaked secrets.

Some proxies, gateways and servers put what they received into an error answer: the request
line, the query string, every header (Authorization and X-Amz-Security-Token among them) and
the body. `EchoServer` answers every request that way, with an error status (401, 403, 400,
500) and a body in one of three styles:

- "json": one object that every client here reads as an error: the Iceberg REST `error`
  object, AWS JSON protocol `__type`/`message` (botocore), UC's `error_code`/`message`;
- "text": text/plain;
- "html": an HTML page whose heading holds the echo (clients summarise a page by it).

The echo starts with the request line, the query, the credential headers and the body, and
an HTML page's heading holds the credential headers, so a client that cuts a long message
short (or summarises a page by its heading) still shows them. `tokens` makes some paths a token endpoint instead: POST there answers an
OAuth2 token (the token is then sent back, and echoed, on the other calls). `echo_answer`
builds the same answers for a FaultProxy `override` (tests/servers/faults.py), so a real
server can be made to echo on one call only, say a write after the reads succeeded.

    with EchoServer(status=401, style="json") as echo:
        ...  # point a backend at echo.endpoint

`leaks(text, secret)` says in which forms a secret shows in a text: as it is, URL-encoded
(path, query or form), or base64-encoded at any offset (`Basic base64(id:secret)`).
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

STATUSES = (400, 401, 403, 500)
STYLES = ("json", "text", "html")
#: what every echo starts with
ECHO_PHRASE = "echoed:"
#: headers echoed first (clients cut long messages short)
CREDENTIAL_HEADERS = ("authorization", "x-amz-security-token")
_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 500: "Internal Server Error"}
#: status -> (AWS JSON __type, UC error_code): codes whose messages the drivers show
_CODES = {400: ("InvalidInputException", "INVALID_ARGUMENT"), 401: ("AccessDeniedException", "UNAUTHENTICATED"),
          403: ("AccessDeniedException", "PERMISSION_DENIED"), 500: ("InternalServiceException", "INTERNAL_ERROR")}


@dataclass(frozen=True)
class Request:
    """A request as the server received it."""

    method: str
    target: str  #: path and query
    headers: list[tuple[str, str]]
    body: bytes

    def credentials(self) -> list[str]:
        """The credential header lines ("Authorization: Bearer ...")."""
        return [f"{name}: {value}" for name, value in self.headers if name.lower() in CREDENTIAL_HEADERS]

    def echo(self) -> str:
        """The request as an echoing server shows it: the request line, the query string, the
        credential headers, the body, then every other header."""
        lines = [f"{ECHO_PHRASE} {self.method} {self.target}", f"query: {urlsplit(self.target).query}",
                 *self.credentials(), f"body: {self.body.decode('utf-8', 'replace')}"]
        lines += [f"{name}: {value}" for name, value in self.headers if name.lower() not in CREDENTIAL_HEADERS]
        return "\n".join(lines)


def echo_answer(request: Request, status: int, style: str) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body of an error answer in `style` that echoes `request`."""
    text = request.echo()
    reason = _REASONS[status]
    if style == "json":
        aws_type, uc_code = _CODES[status]
        body = json.dumps({"error": {"message": text, "type": aws_type, "code": status}, "__type": aws_type,
                           "error_code": uc_code, "message": text})
        content_type = "application/json"
    elif style == "text":
        body, content_type = f"{status} {reason}: {text}", "text/plain; charset=utf-8"
    elif style == "html":
        heading = html.escape("; ".join(request.credentials()) or f"{status} {reason}")
        body = f"<html><body><h1>{heading}</h1><p>{status} {reason}</p><pre>{html.escape(text)}</pre></body></html>"
        content_type = "text/html; charset=utf-8"
    else:
        raise ValueError(f"unknown echo style {style!r} (one of {', '.join(STYLES)})")
    headers = [("Content-Type", content_type)]
    if status == 500:
        headers.append(("Retry-After", "0"))  # a client that retries does so at once
    return headers, body.encode()


class EchoServer:
    """An HTTP/1.1 server on 127.0.0.1 (a free port) that answers every request with an error
    echoing it; `requests` keeps what it received. `tokens`: path regex -> OAuth2 access token
    answered with 200 to a POST on a matching path."""

    def __init__(self, status: int = 401, style: str = "json", tokens: dict[str, str] | None = None):
        if status not in STATUSES or style not in STYLES:
            raise ValueError(f"status one of {STATUSES}, style one of {STYLES}")
        self.status, self.style = status, style
        self.tokens = [(re.compile(path), token) for path, token in (tokens or {}).items()]
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="echo-server", daemon=True)
        self._thread.start()

    def answer(self, request: Request) -> tuple[int, list[tuple[str, str]], bytes]:
        with self._lock:
            self.requests.append(request)
        path = urlsplit(request.target).path
        for pattern, token in self.tokens:
            if request.method == "POST" and pattern.search(path):
                body = json.dumps({"access_token": token, "token_type": "bearer", "expires_in": 3600})
                return 200, [("Content-Type", "application/json")], body.encode()
        return (self.status, *echo_answer(request, self.status, self.style))

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> EchoServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _handler(echo: EchoServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def handle_one_request(self) -> None:
            """Every method, not only those with a do_* method."""
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline or not self.parse_request():
                self.close_connection = True
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers, data = echo.answer(Request(self.command, self.path, list(self.headers.items()), body))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

    return Handler


def proxy_echo(status: int, style: str) -> Callable[[str, str, list[tuple[str, str]], bytes],
                                                  tuple[list[tuple[str, str]], bytes]]:
    """A FaultProxy `override(..., respond=)` that echoes the request it answers."""
    return lambda method, target, headers, body: echo_answer(Request(method, target, headers, body), status, style)


# --- finding secrets -----------------------------------------------------------------------------

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{6,}")


def leaks(text: str, secret: str) -> list[str]:
    """The forms in which `secret` shows in `text` (empty when it does not): as it is, after
    URL decoding (path or form), inside any run of base64 decoded at any alignment."""
    found = [form for form, decoded in (("as is", text), ("URL-encoded", unquote(text)),
                                        ("form-encoded", unquote_plus(text))) if secret in decoded]
    raw = secret.encode()
    for run in _BASE64_RUN.findall(text):
        if any(raw in decoded for decoded in _base64_decodings(run)):
            found.append(f"base64 in {run[:12]}...")
    return found


def _base64_decodings(run: str) -> Iterable[bytes]:
    for alphabet in (run, run.replace("-", "+").replace("_", "/")):
        for start in range(4):
            part = alphabet[start:]
            part = part[: len(part) - len(part) % 4]
            try:
                yield base64.b64decode(part)
            except ValueError:
                continue


def assert_no_leak(where: str, text: str, *secrets: str) -> None:
    """Fail naming `where`, the secret and its forms when any secret shows in `text`."""
    shown = {secret: leaks(text, secret) for secret in secrets}
    shown = {secret: forms for secret, forms in shown.items() if forms}
    assert not shown, f"{where} shows secrets: {shown}\n--- {where}:\n{text[-3000:]}"
