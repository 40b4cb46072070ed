"""The one client of an Iceberg REST catalog that the driver, its leases and the rest share:
the HTTP transport with its authentication, the warehouses' API prefixes, the translation of
error answers, and ids written as request paths."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

from lance_namespace.errors import LanceNamespaceError, NamespaceNotFoundError, TableNotFoundError
from pydantic import BaseModel

from lance_sync.drivers.base import secret_value
from lance_sync.drivers.iceberg.answers import CatalogConfig
from lance_sync.drivers.iceberg.auth import ClientCredentials, SentToken, StaticToken
from lance_sync.drivers.iceberg.config import LEVEL_SEPARATOR, IcebergConfig
from lance_sync.drivers.iceberg.errors import ErrorAnswer, ErrorMeanings, error_for, token_error
from lance_sync.drivers.iceberg.identifiers import encode_segment, split_table
from lance_sync.drivers.support.http import HttpClient, Translator

BACKEND = "iceberg"
CONFIG_PATH = "/v1/config"


class IcebergClient:
    """Sends the calls of one Iceberg REST endpoint, each counted by `on_request`.

    `send` is the one way a call goes out: its answer parsed, its error answer translated with
    the meanings the call gives a status (`errors.error_for`), a rejected OAuth2 token renewed
    once. Paths name a warehouse by its API prefix (GET /v1/config, cached in `prefixes`).
    """

    def __init__(self, config: IcebergConfig, on_request: Callable[[], None]) -> None:
        def http(translate: Translator, headers: Callable[[], dict[str, str]] | None = None) -> HttpClient:
            connect_timeout, read_timeout = config.timeout_seconds()
            return HttpClient(config.endpoint, backend=BACKEND, connect_timeout=connect_timeout,
                              read_timeout=read_timeout, max_retries=config.max_retries,
                              translate=translate, headers=headers, on_request=on_request)

        if config.credential is not None:
            self.auth: StaticToken | ClientCredentials = ClientCredentials(config.credential, http(token_error))
        else:
            self.auth = StaticToken(secret_value(config.auth_token))
        self.http = http(ErrorAnswer, headers=self._auth_headers)
        #: warehouse -> its API prefix, as `prefix` found it
        self.prefixes: dict[str, str] = {}
        self._sent_token = SentToken()
        self._prefix_lock = threading.Lock()

    def send(self, method: str, path: str, *, expect: type[BaseModel] | None = None,
             meanings: ErrorMeanings | None = None, **request: Any) -> Any:
        """One API call, its answer parsed as `expect` (an instance of it is returned), its error
        answer translated; a rejected OAuth2 token is renewed once."""
        try:
            try:
                return self.http.request(method, path, expect=expect, **request)
            except ErrorAnswer as answer:
                if answer.failure.status != 401 or not self.auth.discard(self._sent_token.value):
                    raise
            return self.http.request(method, path, expect=expect, **request)
        except ErrorAnswer as answer:
            raise error_for(answer.failure, meanings or {}) from answer

    def _auth_headers(self) -> dict[str, str]:
        token = self.auth.current()
        self._sent_token.value = token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def prefix(self, warehouse: str, missing: type[LanceNamespaceError]) -> str:
        """The warehouse's API prefix from GET /v1/config (cached): overrides, then defaults, then
        (the spec's rule for a config that names none) the warehouse name itself. A warehouse the
        server does not know is `missing`."""
        known = self.prefixes.get(warehouse)
        if known is not None:  # every request asks: no lock once known
            return known
        with self._prefix_lock:
            if warehouse not in self.prefixes:
                try:
                    config = self.send("GET", CONFIG_PATH, params={"warehouse": warehouse},
                                       expect=CatalogConfig, meanings={404: NamespaceNotFoundError})
                except NamespaceNotFoundError as error:
                    raise missing(f"iceberg: warehouse '{warehouse}' not found ({error})") from error
                self.prefixes[warehouse] = config.prefix() or quote(warehouse, safe="")
            return self.prefixes[warehouse]

    def catalog_path(self, warehouse: str, missing: type[LanceNamespaceError]) -> str:
        """/v1/{prefix}: the root of the warehouse's calls."""
        return f"/v1/{self.prefix(warehouse, missing)}"

    def namespace_path(self, warehouse: str, levels: tuple[str, ...],
                       missing: type[LanceNamespaceError] = NamespaceNotFoundError) -> str:
        return f"{self.catalog_path(warehouse, missing)}/namespaces/{encode_segment(LEVEL_SEPARATOR.join(levels))}"

    def table_path(self, id: Iterable[str] | None) -> str:
        warehouse, levels, name = split_table(id)
        return f"{self.namespace_path(warehouse, levels, missing=TableNotFoundError)}/tables/{encode_segment(name)}"
