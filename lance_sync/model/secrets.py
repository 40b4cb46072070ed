"""Secret values, and masking them wherever lance-sync writes.

A value is registered (`register`) where lance-sync learns that it is a secret: the secret
settings of a backend when its configuration is validated or a driver is built (from a
manifest or from a saved plan's `${VAR}` references), tokens a driver obtains at run time,
the credentials botocore resolves, the credential part of the Authorization headers sent.
The registry is process-wide and only grows.

`mask(text)` replaces every registered value, and each form it takes on its way through
URLs, JSON, HTML, Python reprs and base64 (`derived_forms`), with MASK. It runs where text
leaves lance-sync (the CLI's stdout and stderr, log records through `MaskingFilter`, journals,
saved and rollback plans, Spark's log, the metrics page) and where a server's text enters a
driver (error bodies), so that a server which echoes a request (its headers, query and body)
cannot carry a secret back out.

Values shorter than MIN_LENGTH are not masked (they would mask ordinary words); they are
still never printed where they are known to be secrets. This module imports only the
standard library: the CLI imports it before anything else.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import IO, Any, TextIO
from urllib.parse import quote, quote_plus, unquote, urlsplit

MASK = "***"
#: shorter values are not masked: they would hide ordinary words and names
MIN_LENGTH = 4
#: shorter base64 fragments of a value embedded in a longer text are not masked (about 5 bytes)
MIN_BASE64_CORE = 6
#: storage option keys (and other setting names) that hold credentials
SECRET_KEY = re.compile(r"secret|token|password|credential|access_key|account_key|sas|private", re.I)
#: environment variables that object stores and AWS SDKs read credentials from without the
#: manifest naming them; their values are secrets wherever they appear
CREDENTIAL_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
                        "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET", "GOOGLE_SERVICE_ACCOUNT_KEY")
_URLSAFE = str.maketrans("+/", "-_")


def derived_forms(value: str) -> set[str]:
    """`value` and the forms it takes in transit, each at least MIN_LENGTH long: URL-encoded
    (path, query, form), JSON-escaped (also with `\\/`), HTML-escaped, a Python repr's inside, base64 (standard and
    URL-safe) of the value alone, and the fragments of base64 that stay the same wherever the
    value sits in a longer byte string (so `Basic base64(user:secret)` loses its secret)."""
    raw = value.encode()
    in_json = json.dumps(value)[1:-1]
    forms = {value, quote(value, safe=""), quote(value), quote_plus(value), in_json, in_json.replace("/", "\\/"),
             json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1], html.escape(value),
             base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    for offset in range(3):
        core = _base64_core(raw, offset)
        if len(core) >= MIN_BASE64_CORE:
            forms.update((core, core.translate(_URLSAFE)))
    return {form for form in forms if len(form) >= MIN_LENGTH}


def _base64_core(raw: bytes, offset: int) -> str:
    """The base64 characters that depend on `raw` alone when it starts `offset` bytes (mod 3)
    into a longer byte string: those whose 6 bits all fall inside it."""
    encoded = base64.b64encode(bytes(offset) + raw + bytes(2)).decode()
    first = -(-8 * offset // 6)
    end = 8 * (offset + len(raw)) // 6
    return encoded[first:end]


class _Registry:
    """The registered values and their forms, longest first. Readers take `forms` without
    the lock: it is replaced whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: frozenset[str] = frozenset()
        self.forms: tuple[str, ...] = ()

    def add(self, values: Iterable[str | None]) -> None:
        fresh = {v for v in values if isinstance(v, str) and len(v) >= MIN_LENGTH and v not in self.values}
        if not fresh:
            return
        with self._lock:
            fresh -= self.values
            forms = set(self.forms).union(*(derived_forms(v) for v in fresh))
            self.forms = tuple(sorted(forms, key=len, reverse=True))
            self.values = self.values | fresh


_registry = _Registry()


def register(*values: str | None) -> None:
    """Mask these values (None and values shorter than MIN_LENGTH are ignored) from now on."""
    _registry.add(values)


def is_secret(value: str) -> bool:
    """Whether `value` was registered as a secret (one shorter than MIN_LENGTH never is)."""
    return value in _registry.values


def register_authorization(header: str | None) -> None:
    """The credential of an Authorization header value ("Bearer <token>", "Basic <base64>")."""
    if header:
        scheme, _, credential = header.partition(" ")
        register(credential.strip() or scheme)


def url_password(url: str) -> str | None:
    """The password of a URL's userinfo (http://user:password@host), decoded, if it has one."""
    if "://" not in url or "@" not in url:
        return None
    try:
        password = urlsplit(url).password
    except ValueError:  # not a URL after all
        return None
    return unquote(password) if password else None


def register_environment(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """The credentials object stores and AWS SDKs read from the environment by themselves
    (CREDENTIAL_VARIABLES)."""
    register(*(environ.get(name) for name in CREDENTIAL_VARIABLES))


def mask(text: str) -> str:
    """`text` with every registered value, in any of its forms, replaced by MASK. Where the
    forms of two secrets overlap, the whole stretch they cover is masked."""
    forms = _registry.forms
    if not forms or not text:
        return text
    spans = []
    for form in forms:
        start = text.find(form)
        while start != -1:
            spans.append((start, start + len(form)))
            start = text.find(form, start + 1)
    if not spans:
        return text
    spans.sort()
    pieces, done = [], 0
    start, end = spans[0]
    for next_start, next_end in spans[1:]:
        if next_start <= end:
            end = max(end, next_end)
            continue
        pieces += [text[done:start], MASK]
        done, (start, end) = end, (next_start, next_end)
    pieces += [text[done:start], MASK, text[end:]]
    return "".join(pieces)


def mask_exception(error: BaseException) -> None:
    """Mask the text arguments of an exception and of those it was raised from, in place."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(mask(arg) if isinstance(arg, str) else arg for arg in current.args)
        current = current.__cause__ or current.__context__


# --- sinks ---------------------------------------------------------------------------------------


class MaskingStream:
    """A text stream that masks what is written to `stream`.

    Text is held until a line ends (a newline or a carriage return, which a progress line
    uses) or until `flush`, so a secret written in pieces (print's separate writes) is masked
    whole. Its `buffer` takes bytes (click writes some output as bytes) and masks them the
    same way. Everything else (isatty, encoding, fileno) is the wrapped stream's.
    """

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.buffer = _MaskingBuffer(self)
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            self._pending += text
            cut = max(self._pending.rfind("\n"), self._pending.rfind("\r")) + 1
            if cut:
                self.stream.write(mask(self._pending[:cut]))
                self._pending = self._pending[cut:]
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self.stream.write(mask(self._pending))
                self._pending = ""
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _MaskingBuffer:
    """The binary side of a MaskingStream: bytes are decoded (UTF-8) and written as text."""

    def __init__(self, owner: MaskingStream):
        self._owner = owner

    def write(self, data: bytes) -> int:
        self._owner.write(bytes(data).decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        self._owner.flush()


@contextlib.contextmanager
def masked_standard_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr masked until the block ends (then flushed and put back)."""
    originals = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskingStream(sys.stdout), MaskingStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = originals


class MaskingFilter(logging.Filter):
    """Masks a log record before a handler formats it: its message with its arguments, its
    traceback and its stack. On a handler it covers every logger's records, a library's
    (urllib3, botocore) as well as lance-sync's."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message, fits = record.getMessage(), True
        except (TypeError, ValueError):  # arguments that do not fit the message: shown beside it
            message, fits = f"{record.msg} {record.args!r}", False
        masked = mask(message)
        if masked != message or not fits:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:  # the formatter uses this text as it is
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text)
        if record.stack_info:
            record.stack_info = mask(record.stack_info)
        return True


def copy_masked(source: IO[bytes], sink: IO[bytes]) -> None:
    """Copy `source` to `sink` line by line, masked, until `source` ends (a process's output
    to its log file); each line is flushed as it is written."""
    for line in iter(source.readline, b""):
        sink.write(mask(line.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
        sink.flush()
