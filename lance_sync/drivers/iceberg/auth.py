"""Authentication of the Iceberg driver: a static bearer token, or OAuth2 client credentials."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pydantic import SecretStr

from lance_sync.drivers.iceberg.answers import OAuthTokenAnswer
from lance_sync.drivers.support.http import HttpClient
from lance_sync.model import secrets

TOKEN_PATH = "/v1/oauth/tokens"
#: a token is renewed once this share of its lifetime has passed
TOKEN_RENEW_AT = 0.9


class SentToken(threading.local):
    """The token this thread sent last, so a 401 renews exactly that one."""

    value: str | None = None


class StaticToken:
    """A configured bearer token, or none at all."""

    def __init__(self, token: str | None):
        self._token = token

    def current(self) -> str | None:
        return self._token

    def discard(self, rejected: str | None) -> bool:
        """A static token cannot be renewed."""
        return False


class ClientCredentials:
    """OAuth2 client-credentials tokens from POST /v1/oauth/tokens, cached until near expiry."""

    def __init__(self, credential: SecretStr, http: HttpClient,
                 clock: Callable[[], float] = time.monotonic):
        self._client_id, self._secret = credential.get_secret_value().split(":", 1)
        secrets.register(self._secret)  # sent on its own in the token request's form
        self._http = http
        self.clock = clock
        self._lock = threading.Lock()
        self._token: str | None = None
        self._renew_at: float | None = None

    def current(self) -> str:
        with self._lock:
            if self._token is None or (self._renew_at is not None and self.clock() >= self._renew_at):
                self._token, self._renew_at = self._fetch()
            return self._token

    def discard(self, rejected: str | None) -> bool:
        """Forget a token the server rejected (unless another thread renewed it already)."""
        with self._lock:
            if rejected is not None and rejected == self._token:
                self._token = None
        return rejected is not None

    def _fetch(self) -> tuple[str, float | None]:
        form = {"grant_type": "client_credentials", "client_id": self._client_id,
                "client_secret": self._secret, "scope": "catalog"}
        # a token request changes nothing on the server, so it is safe to send again
        answer = self._http.request("POST", TOKEN_PATH, data=form, expect=OAuthTokenAnswer, retry_safe=True)
        lifetime = answer.expires_in
        renew_at = self.clock() + lifetime * TOKEN_RENEW_AT if lifetime else None
        secrets.register(answer.access_token)
        return answer.access_token, renew_at
