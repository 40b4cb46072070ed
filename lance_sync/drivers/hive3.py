"""Hive Metastore 3.x backend (spec: hive3.md)."""

from __future__ import annotations

from pydantic import Field, PositiveFloat, PositiveInt

from lance_sync.drivers.base import BackendConfig, SyncNamespace, default_root
from lance_sync.drivers.config_types import ThriftUri


class Hive3Config(BackendConfig):
    uri: ThriftUri = Field(description="Metastore address, thrift://host:port (not in the spec; "
                           "lance-sync's addition)")
    client_pool_size: PositiveInt = Field(3, alias="client.pool-size",
                                          description="Size of the metastore connection pool")
    client_socket_timeout: PositiveFloat = Field(
        60, alias="client.socket-timeout-sec",
        description="Socket timeout of every metastore call, seconds (lance-sync's addition)")
    root: str = Field(default_factory=default_root,
                      description="Storage root for tables declared without a location (default: cwd)")


class Hive3Namespace(SyncNamespace):
    backend_type = "hive3"
    config_model = Hive3Config
    #: catalog, or catalog$database
    namespace_levels = (1, 2)
    table_namespace_levels = (2, 2)
