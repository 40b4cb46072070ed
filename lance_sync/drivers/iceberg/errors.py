"""Error answers of the Iceberg REST API as `lance_namespace.errors`.

Errors are translated at one place (`IcebergClient.send`, with `error_for`): what a 404 or
409 means depends on the call (a missing table, a missing namespace, a name taken), and where
one status has several meanings for one call, on the error's `type` too (a rename's 404 is
NoSuchTableException or NoSuchNamespaceException); the rest by status (see `_STATUS_ERRORS`).
"""

from __future__ import annotations

from collections.abc import Mapping

from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableNotFoundError,
    UnauthenticatedError,
    UnsupportedOperationError,
)

from lance_sync.drivers.support.answers import one_line
from lance_sync.drivers.support.http import HttpFailure, attempts_note, transient_if_5xx

#: what an error status means when the call gives it no meaning of its own
_STATUS_ERRORS: dict[int, type[LanceNamespaceError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    406: UnsupportedOperationError,
    422: InvalidInputError,
    503: ServiceUnavailableError,
}
#: what an error answer means for one call: by status, or by (status, Iceberg error type),
#: which wins where both match
ErrorMeanings = Mapping[int | tuple[int, str], type[LanceNamespaceError]]


class ErrorAnswer(InternalError):
    """An error answer on its way to `IcebergClient.send`, which gives it its meaning for the
    call."""

    def __init__(self, failure: HttpFailure):
        super().__init__(_describe(failure))
        self.failure = failure


def error_for(failure: HttpFailure, meanings: ErrorMeanings) -> LanceNamespaceError:
    kind = (meanings.get((failure.status, _error_type(failure) or "")) or meanings.get(failure.status)
            or transient_if_5xx(_STATUS_ERRORS.get(failure.status, InternalError), failure.status))
    if kind is TableNotFoundError and _error_type(failure) == "NotFoundException":
        # upstream answers 404 for Iceberg's NotFoundException too: a file the table needs (its
        # metadata.json, kept in the table's location) is missing, while the table is listed.
        # Taking it for an absent table would plan a create the catalog refuses, or count a
        # deregistration as done that never happened.
        return InternalError(f"iceberg: the catalog lists the table but cannot load it: {_describe(failure)}")
    return kind(f"iceberg: {_describe(failure)}")


def _error_type(failure: HttpFailure) -> str | None:
    """The `type` of an Iceberg ErrorModel answer, if the answer is one."""
    error = failure.body.get("error") if isinstance(failure.body, dict) else None
    return error.get("type") if isinstance(error, dict) and isinstance(error.get("type"), str) else None


def token_error(failure: HttpFailure) -> LanceNamespaceError:
    """The token endpoint answers 400/401 for a wrong client or secret (RFC 6749 5.2)."""
    if failure.status in (400, 401):
        return UnauthenticatedError(f"iceberg: OAuth2 token request rejected: {_describe(failure)}")
    return error_for(failure, {})


def _describe(failure: HttpFailure) -> str:
    """Method, URL, status, and the server's error type and message (never a stack trace)."""
    body = failure.body if isinstance(failure.body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):  # Iceberg ErrorModel
        detail = f"{error.get('type') or 'error'}: {error.get('message') or ''}"
    elif isinstance(error, str):  # OAuth2 error
        detail = f"{error}: {body.get('error_description') or ''}"
    else:
        detail = one_line(str(failure.body or ""), 200)
    return f"{failure.method} {failure.shown_url} -> {failure.status} {one_line(detail)}".rstrip() + \
        attempts_note(failure.attempts)
