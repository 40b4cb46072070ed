"""Glue's and Lake Formation's requests: AWS JSON over the shared HTTP client, signed with SigV4.

Every call is one POST of a JSON body: to `/` with `X-Amz-Target: AWSGlue.<Operation>` for
Glue (AWS JSON 1.1), to `/<Operation>` for Lake Formation (REST-JSON; the operations the
driver sends carry every member in the body). Each attempt is signed by botocore's SigV4
signer with the driver's current credentials and sent through `support.http.HttpClient`
(its connection pool, timeouts, proxies, retries and reading of bodies cut short). botocore's
client is not used for these calls: its per-request pipeline (parameter validation,
serialization, endpoint rules, events, retry bookkeeping, parsing) cost more client CPU than
the HTTP request itself (docs/benchmarks.md).

- Answers are checked against the operation's output shape in botocore's model of the
  service (`answers.answer_parser`): decoded and checked once, handed over as dicts.
- Error answers are translated by their AWS error code (`errors.translate_failure`);
  `EntityNotFoundException` is `missing` (or no answer: None).
- Retries are the shared client's, `MAX_RETRIES` after the first attempt, as botocore's
  standard mode: a read (`answers.READ_OPERATIONS`) is sent again after any transient failure
  or garbled answer; a write only when Glue cannot have acted on it (no connection made,
  throttled), since a resent CreateTable that had landed would meet AlreadyExists.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.model import ServiceModel
from lance_namespace.errors import LanceNamespaceError

from lance_sync.drivers.glue.answers import READ_OPERATIONS, answer_parser
from lance_sync.drivers.glue.credentials import AwsAccess
from lance_sync.drivers.glue.errors import NOT_FOUND, aws_error_code, translate_failure
from lance_sync.drivers.support.http import HttpClient, HttpFailure, Signer, without_userinfo

BACKEND = "glue"
#: botocore's defaults, which the driver had while it sent its calls through botocore
CONNECT_TIMEOUT_SECONDS = 60.0
READ_TIMEOUT_SECONDS = 60.0
MAX_RETRIES = 2


@functools.cache
def service_model(service: str) -> ServiceModel:
    """botocore's model of an AWS service, loaded once per process."""
    from botocore.loaders import create_loader
    return ServiceModel(create_loader().load_service_model(service, "service-2"), service_name=service)


@dataclass(frozen=True)
class _Operation:
    """How one operation of a service is sent and its answer read."""

    path: str
    headers: dict[str, str]
    content_type: str
    parse: Callable[[bytes], dict[str, Any]]
    retry_safe: bool


class _Absent(LanceNamespaceError):
    """EntityNotFound where the caller asked for None instead of an error."""


class AwsJsonService:
    """One AWS service whose calls are JSON POSTs (Glue, Lake Formation) at an endpoint."""

    def __init__(self, service: str, endpoint: str, access: AwsAccess, *, on_request: Callable[[], None],
                 sleep: Callable[[float], None]) -> None:
        self.model = service_model(service)
        self.http = HttpClient(endpoint, backend=BACKEND, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                                read_timeout=READ_TIMEOUT_SECONDS, max_retries=MAX_RETRIES,
                                translate=_translate_unnamed, sign=sigv4_signer(access, self.model.signing_name),
                                ca_bundle=access.ca_bundle(), on_request=on_request, sleep=sleep)
        self._operations: dict[str, _Operation] = {}

    def call(self, operation: str, subject: str, missing: type[LanceNamespaceError] | None,
             duplicate: type[LanceNamespaceError] | None, params: dict[str, Any],
             retry_safe: bool | None = None) -> dict[str, Any] | None:
        """One call, its answer checked; EntityNotFound raises `missing` (None: returns None).
        `retry_safe` marks a write whose resend the caller can tell from a first send (a create
        that meets its own object)."""
        sent = self._operations.get(operation) or self._operation(operation)

        def translate(failure: HttpFailure) -> LanceNamespaceError:
            if missing is None and aws_error_code(failure) == NOT_FOUND:
                return _Absent(operation)
            return translate_failure(failure, subject, operation, missing, duplicate)

        try:
            answer: dict[str, Any] = self.http.request(
                "POST", sent.path, json=params, headers=sent.headers, content_type=sent.content_type,
                parse=sent.parse, retry_safe=sent.retry_safe if retry_safe is None else retry_safe,
                translate=translate, label=f"{operation} on {subject}")
        except _Absent:
            return None
        return answer

    def _operation(self, name: str) -> _Operation:
        model = self.model.operation_model(name)
        if self.model.protocol == "json":
            path = "/"
            headers = {"X-Amz-Target": f"{self.model.metadata['targetPrefix']}.{name}"}
            content_type = f"application/x-amz-json-{self.model.metadata['jsonVersion']}"
        else:  # rest-json
            path, headers, content_type = model.http["requestUri"], {}, "application/json"
        sent = _Operation(path, headers, content_type, answer_parser(model), name in READ_OPERATIONS)
        self._operations[name] = sent
        return sent


def sigv4_signer(access: AwsAccess, signing_name: str) -> Signer:
    """Signs each attempt with SigV4 (botocore's signer) and the credentials current then."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    def sign(method: str, url: str, headers: dict[str, str], body: bytes | None) -> dict[str, str]:
        request = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(access.frozen_credentials(), signing_name, access.region).add_auth(request)
        return dict(request.headers.items())

    return sign


def _translate_unnamed(failure: HttpFailure) -> LanceNamespaceError:
    """The client's translator for a request that names no call (every call names its own)."""
    return translate_failure(failure, without_userinfo(failure.url), failure.method)
