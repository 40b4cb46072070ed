"""The Hive Metastore 3.x backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt

from lance_sync.model.backend_config import BackendConfig, BackendRules, Identifier, root_field
from lance_sync.model.config_types import ThriftUri
from lance_sync.model.grants import Securable

#: what manifests may name a catalog or database: HMS folds case and refuses other characters
MANIFEST_NAME = re.compile(r"[a-z0-9_]+")

# Grants (see docs/backends/hive3.md, "Grants"). HMS stores any string as a privilege; these
# are what Hive's authorizers understand. Tables: the SQL standard based authorizer's set
# (Hive's default since 2.0). Databases: the SQL standard authorizer keeps no database
# privileges, so these are the legacy authorizer's database privileges (without INDEX, which
# Hive never enforced and Hive 3 dropped with indexes).
TABLE_PRIVILEGES = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "ALL"})
DATABASE_PRIVILEGES = frozenset({"ALL", "ALTER", "CREATE", "DROP", "LOCK", "SELECT", "SHOW_DATABASE", "UPDATE"})
#: how a manifest writes a principal: kind, then the name HMS stores (case kept)
PRINCIPAL_KINDS = ("user", "group", "role")
PRINCIPAL = re.compile(r"(user|group|role):(\S(?:.*\S)?)", re.DOTALL)


def split_principal(principal: str) -> tuple[str, str] | None:
    """('user' | 'group' | 'role', name) of a principal a manifest wrote, or None."""
    match = PRINCIPAL.fullmatch(principal)
    return (match.group(1), match.group(2)) if match else None


class Hive3Config(BackendConfig):
    uri: ThriftUri = Field(description="Metastore address, thrift://host:port (not in the spec; "
                           "lance-sync's addition)")
    client_pool_size: PositiveInt = Field(3, alias="client.pool-size",
                                          description="Size of the metastore connection pool")
    client_socket_timeout: PositiveFloat = Field(
        60, alias="client.socket-timeout-sec",
        description="Socket timeout of every metastore call, seconds (lance-sync's addition)")
    client_max_retries: NonNegativeInt = Field(
        3, alias="client.max-retries",
        description="Times a read is sent again after a broken or garbled answer, and any call "
                    "after a failed connect (lance-sync's addition)")
    lease: Literal["lock-api", "table"] = Field(
        "lock-api",
        description="Where apply leases live (lance-sync's addition): 'lock-api', an EXCLUSIVE lock of "
                    "the metastore's lock API (needs its transaction tables); 'table', a view in a "
                    "lease database, for a metastore without them (a weaker guarantee: see "
                    "docs/backends/hive3.md, Apply leases). Every runner of one owner must use the same")
    root: str = root_field()


class Hive3Rules(BackendRules):
    backend_type = "hive3"
    config_model = Hive3Config
    #: manifests declare databases (catalog$database); see the driver's docstring for catalogs
    namespace_levels = (2, 2)
    table_namespace_levels = (2, 2)

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        if not all(MANIFEST_NAME.fullmatch(name) for name in parts):
            return ("Hive names are lower-case letters, digits and '_' (HMS folds names to lower "
                    "case and refuses other characters)")
        return None

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        return cls.check_namespace_id((name,), config)

    @classmethod
    def grant_privileges(cls, kind: Securable, id: Identifier, config: BackendConfig) -> frozenset[str]:
        """Databases (catalog$database) and tables; a catalog has no grants."""
        if kind == "namespace" and len(id) == 2:
            return DATABASE_PRIVILEGES
        if kind == "table" and len(id) == 3:
            return TABLE_PRIVILEGES
        return frozenset()

    @classmethod
    def check_principal(cls, principal: str, config: BackendConfig) -> str | None:
        if split_principal(principal) is None:
            return (f"a Hive principal is written user:NAME, group:NAME or role:NAME "
                    f"(got {principal!r})")
        return None
