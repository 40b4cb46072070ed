"""Which store failures are worth trying again (`retry.is_transient_store_error`), in the words
pylance's object_store, pyarrow's AWS SDK and Lance use (as seen behind the fault proxy)."""

from __future__ import annotations

import pytest
from lance_namespace.errors import InternalError, TableAlreadyExistsError

from lance_sync.drivers.support.retry import is_transient, is_transient_store_error

TRANSIENT = [
    OSError("When listing objects under key 'r/t.lance/' in bucket 'b': AWS Error SERVICE_UNAVAILABLE during "
            "ListObjectsV2 operation:"),
    OSError("When completing multiple part upload for key 'k' in bucket 'b': AWS Error INTERNAL_FAILURE during "
            "CompleteMultipartUpload operation:"),
    OSError("AWS Error NETWORK_CONNECTION during PutObject operation: curlCode: 52, Server returned nothing"),
    OSError("When reading information for key 'k' in bucket 'b': AWS Error UNKNOWN (HTTP status 503) during "
            "HeadObject operation: No response body."),
    OSError("LanceError(IO): Generic S3 error: Error getting list response body: HTTP error: request or "
            "response body error"),
    InternalError("Internal error: Failed to overwrite manifest: IO { source: Generic { store: \"S3\", source: "
                  "RetryError(... Http(HttpError { kind: Interrupted, source: reqwest::Error { kind: Request, "
                  "source: hyper::Error(Io, Os { code: 104, kind: ConnectionReset, message: \"Connection reset "
                  "by peer\" }) }) }) } }"),
    ConnectionResetError(104, "Connection reset by peer"),
]
FINAL = [
    OSError("LanceError(IO): No space left on device"),
    OSError("When listing objects under key 'k' in bucket 'b': AWS Error ACCESS_DENIED during ListObjectsV2 "
            "operation: Access Denied"),
    TableAlreadyExistsError("Table already exists: ns$t (connection reset while it was read)"),
    KeyError("connection reset"),
]


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: str(e)[:40])
def test_transient_store_failures(error: BaseException):
    assert is_transient_store_error(error)


@pytest.mark.parametrize("error", FINAL, ids=lambda e: str(e)[:40])
def test_final_store_failures(error: BaseException):
    assert not is_transient_store_error(error)


def test_the_catalogs_policy_is_unchanged():
    """Store wording does not make a catalog error transient: catalogs keep their own policy."""
    assert not is_transient(OSError("AWS Error SERVICE_UNAVAILABLE"))
