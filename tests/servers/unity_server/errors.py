"""Unity Catalog error codes, HTTP statuses and error bodies, as UC OSS answers them.

UC OSS renders every failure of its REST API as JSON with `error_code` (the
name of its `ErrorCode` enum), `message` and a google.rpc.ErrorInfo detail.
The "already exists" codes answer HTTP 400, not 409: UC keeps them for
backwards compatibility.
"""

from __future__ import annotations

#: UC OSS ErrorCode name -> HTTP status of its REST API.
HTTP_STATUS = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "CATALOG_ALREADY_EXISTS": 400,
    "SCHEMA_ALREADY_EXISTS": 400,
    "TABLE_ALREADY_EXISTS": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "CATALOG_NOT_FOUND": 404,
    "SCHEMA_NOT_FOUND": 404,
    "TABLE_NOT_FOUND": 404,
    "ABORTED": 409,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNIMPLEMENTED": 501,
    # Not in UC's current enum (older releases had it); used only for injected faults.
    "UNAVAILABLE": 503,
}

#: The error code an injected fault reports for its HTTP status.
CODE_FOR_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
}


class UcError(Exception):
    """A failure answered with UC's error body and the status of its code."""

    def __init__(self, error_code: str, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        return HTTP_STATUS[self.error_code]


def error_body(error_code: str, message: str) -> dict:
    return {
        "error_code": error_code,
        "message": message,
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": error_code}],
    }


class JavaRuntimeFailure(Exception):
    """What UC's JVM throws on input it never checks (a NullPointerException, say).

    Raised inside a transaction it becomes 500 INTERNAL with the operation's
    failure message in front, as UC's TransactionManager reports it.
    """
