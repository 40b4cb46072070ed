"""Failed Glue (and STS) requests as `lance_namespace.errors`.

Errors are translated at the boundary (`translate`): AccessDenied is PermissionDenied (15),
bad or expired credentials Unauthenticated (16), throttling after botocore's retries
Throttling (21), 5xx and connection failures ServiceUnavailable (17). Messages start with
`glue: <Operation> on <namespace or table>`.
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
from lance_sync.drivers.support.retry import BadAnswerError

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


def translate(error: ClientError | BotoCoreError | ResponseParserError, subject: str, operation: str,
               missing: type[LanceNamespaceError] | None = None,
               duplicate: type[LanceNamespaceError] | None = None) -> LanceNamespaceError:
    """The lance_namespace error for a failed Glue request (or the STS request behind it)."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = details.get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        failed = error.operation_name or operation
        if code == "EntityNotFoundException" and missing is not None:
            cls = missing
        elif code == "AlreadyExistsException" and duplicate is not None:
            cls = duplicate
        else:
            cls = _ERROR_BY_CODE.get(code) or (ServiceUnavailableError if status >= 500 else InternalError)
        # credential errors can echo key ids and signing details: keep only the code
        detail = ("check the configured credentials" if cls is UnauthenticatedError
                  else one_line(details.get("Message", "")))
        return cls(f"glue: {failed} on {subject} answered {code or status}: {detail}")
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
