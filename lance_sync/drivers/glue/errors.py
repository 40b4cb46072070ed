"""Failed Glue, Lake Formation (and STS) requests as `lance_namespace.errors`.

Errors are translated at the boundary, by their AWS error code: an error answer of Glue or
Lake Formation (`translate_failure`, for the shared HTTP client), a botocore error of STS
(`translate`). AccessDenied is PermissionDenied (15), bad or expired credentials
Unauthenticated (16), throttling Throttling (21, which the HTTP client sends again first), 5xx
ServiceUnavailable (17). Messages start with `glue: <Operation> on <namespace or table>`.
"""

from __future__ import annotations

import botocore.exceptions
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.parsers import ResponseParserError
from lance_namespace.errors import (
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    PermissionDeniedError,
    ServiceUnavailableError,
    ThrottlingError,
    UnauthenticatedError,
)

from lance_sync.drivers.support.answers import one_line
from lance_sync.drivers.support.http import HttpFailure, attempts_note
from lance_sync.drivers.support.retry import BadAnswerError

#: the code of a missing object: the caller's `missing` error, or no answer
NOT_FOUND = "EntityNotFoundException"
_UNAUTHENTICATED_CODES = frozenset({
    "UnrecognizedClientException", "InvalidSignatureException", "IncompleteSignature",
    "SignatureDoesNotMatch", "InvalidClientTokenId", "ExpiredToken", "ExpiredTokenException",
    "MissingAuthenticationToken", "MissingAuthenticationTokenException", "AuthFailure",
})
_THROTTLED_CODES = frozenset({
    "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded",
})
_UNAVAILABLE_CODES = frozenset({
    "InternalServiceException", "InternalFailure", "ServiceUnavailableException",
    "ServiceUnavailable", "OperationTimeoutException", "FederationSourceRetryableException",
})
_ERROR_BY_CODE: dict[str, type[LanceNamespaceError]] = {
    "AccessDeniedException": PermissionDeniedError,
    "AccessDenied": PermissionDeniedError,
    "InvalidInputException": InvalidInputError,
    "ValidationException": InvalidInputError,
    "ValidationError": InvalidInputError,
    "ConcurrentModificationException": ConcurrentModificationError,
    **dict.fromkeys(_UNAUTHENTICATED_CODES, UnauthenticatedError),
    **dict.fromkeys(_THROTTLED_CODES, ThrottlingError),
    **dict.fromkeys(_UNAVAILABLE_CODES, ServiceUnavailableError),
}


def translate_failure(failure: HttpFailure, subject: str, operation: str,
                      missing: type[LanceNamespaceError] | None = None,
                      duplicate: type[LanceNamespaceError] | None = None) -> LanceNamespaceError:
    """The lance_namespace error for an error answer of Glue or Lake Formation (its body
    already masked by the HTTP client)."""
    body = failure.body if isinstance(failure.body, dict) else {}
    message = body.get("message") or body.get("Message") or (failure.body if isinstance(failure.body, str) else "")
    return _answered(operation, subject, aws_error_code(failure), failure.status, str(message), missing,
                     duplicate, attempts_note(failure.attempts))


def aws_error_code(failure: HttpFailure) -> str:
    """The error code of an AWS JSON or REST-JSON error answer: the `x-amzn-ErrorType` header,
    else the body's `__type` (`com.amazonaws.glue#EntityNotFoundException` names the
    shape after `#`) or `code`; "" when it carries none."""
    header = failure.headers.get("x-amzn-ErrorType") or ""
    body = failure.body if isinstance(failure.body, dict) else {}
    code = header.split(":")[0] or body.get("__type") or body.get("code") or body.get("Code") or ""
    return str(code).rpartition("#")[2]


def _answered(operation: str, subject: str, code: str, status: int, message: str,
              missing: type[LanceNamespaceError] | None, duplicate: type[LanceNamespaceError] | None,
              suffix: str = "") -> LanceNamespaceError:
    if code == NOT_FOUND and missing is not None:
        cls = missing
    elif code == "AlreadyExistsException" and duplicate is not None:
        cls = duplicate
    else:
        cls = _ERROR_BY_CODE.get(code) or (ServiceUnavailableError if status >= 500 else InternalError)
    # credential errors can echo key ids and signing details: keep only the code
    detail = "check the configured credentials" if cls is UnauthenticatedError else one_line(message)
    return cls(f"glue: {operation} on {subject} answered {code or status}: {detail}{suffix}")


def translate(error: ClientError | BotoCoreError | ResponseParserError, subject: str, operation: str,
              missing: type[LanceNamespaceError] | None = None,
              duplicate: type[LanceNamespaceError] | None = None) -> LanceNamespaceError:
    """The lance_namespace error for a failed STS request of botocore's (the credentials behind
    the Glue calls)."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return _answered(error.operation_name or operation, subject, details.get("Code", ""), status,
                         details.get("Message", ""), missing, duplicate)
    if isinstance(error, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return UnauthenticatedError(f"glue: {operation} on {subject}: no usable AWS credentials")
    if isinstance(error, ParamValidationError):
        return InvalidInputError(f"glue: {operation} on {subject}: invalid request: {error}")
    if isinstance(error, ResponseParserError):  # STS answers XML, which botocore checks
        return BadAnswerError(f"glue: {operation} on {subject} answered a body that botocore "
                              f"cannot parse: {one_line(str(error), limit=200)}")
    # ConnectionClosedError, ReadTimeoutError, ResponseStreamingError, EndpointConnectionError...
    if isinstance(error, botocore.exceptions.ConnectionError | HTTPClientError | IncompleteReadError):
        return ServiceUnavailableError(f"glue: {operation} on {subject} failed: {error}")
    return InternalError(f"glue: {operation} on {subject} failed: {error}")
