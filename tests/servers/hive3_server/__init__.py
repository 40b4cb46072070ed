"""A Hive Metastore 3.x catalog-level server for tests: real Thrift wire protocol
(pymetastore's generated Processor), HMS 3.1 semantics, state in memory."""
