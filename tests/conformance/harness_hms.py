"""The Hive driver against the real Hive Metastore 2.3 (default catalog only); pymetastore looks through.

HMS 2.3 has no catalog API, so test namespaces are databases of the default catalog `hive`,
addressed without a catalog prefix. The same pymetastore checks serve the Hive 3 harness
(harness_hive3.py), which adds a catalog.
"""

from __future__ import annotations

from typing import Any

from pymetastore.hive_metastore.ttypes import (
    FieldSchema,
    GetTableRequest,
    GrantRevokePrivilegeRequest,
    GrantRevokeType,
    HiveObjectPrivilege,
    HiveObjectRef,
    HiveObjectType,
    PrincipalType,
    PrivilegeBag,
    PrivilegeGrantInfo,
    Role,
    SerDeInfo,
    StorageDescriptor,
    Table,
)

from lance_sync.drivers.base import Identifier
from lance_sync.model.grants import GrantMap, Securable
from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness, SpecBehaviour
from tests.servers.hive_support import hive_client

#: HMS accepts only [A-Za-z0-9_] in database names and adds '/' for table names (checked
#: against both servers): none of the suite's special characters; names are stored lower-case.
HIVE_BEHAVIOUR = SpecBehaviour(
    drop_missing_namespace_succeeds=False,
    drop_cascade=True,
    foreign_table_is_invalid_input=True,
    lower_case_names=True,
    name_characters=(),
)

#: the suite's grantees: a role must exist before it can hold a grant (created once per server)
GRANT_USER, GRANT_GROUP, GRANT_ROLE = "lsync_alice", "lsync_analysts", "lsync_readers"
PRINCIPAL_KINDS = {PrincipalType.USER: "user", PrincipalType.GROUP: "group", PrincipalType.ROLE: "role"}


def object_ref(kind: Securable, id: Identifier) -> HiveObjectRef:
    """The database or table as pymetastore names it, with its catalog (HMS 2.3 skips the
    field it does not know)."""
    if kind == "namespace":
        catalog, database = id
        return HiveObjectRef(objectType=HiveObjectType.DATABASE, dbName=database, catName=catalog)
    catalog, database, name = id
    return HiveObjectRef(objectType=HiveObjectType.TABLE, dbName=database, objectName=name, catName=catalog)


class HmsHarness(Harness):
    backend_type = "hive3"
    server_fixture = "hms_server"
    behaviour = HIVE_BEHAVIOUR
    identity_resolution_seconds = 1.0

    def config(self) -> dict[str, Any]:
        return {"uri": self.server.endpoint, "root": str(self.data_root)}

    def parent_namespace(self) -> Identifier:
        return ("hive",)

    def create_foreign_table(self, namespace: Identifier, name: str) -> None:
        """An external Parquet table, as Hive itself would register one."""
        catalog, database = namespace
        table = Table(
            tableName=name, dbName=database, catName=catalog, tableType="EXTERNAL_TABLE",
            partitionKeys=[], parameters={"EXTERNAL": "TRUE", "classification": "parquet"},
            sd=StorageDescriptor(
                cols=[FieldSchema("id", "bigint", None)],
                location=(self.data_root / f"{name}_parquet").as_uri(),
                inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                serdeInfo=SerDeInfo(
                    serializationLib="org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                    parameters={}),
                parameters={}))
        with hive_client(self.server.endpoint) as client:
            client.create_table(table)

    # --- grants ---------------------------------------------------------------------------

    def grant_principals(self) -> list[str]:
        with hive_client(self.server.endpoint) as client:
            if GRANT_ROLE not in client.get_role_names():
                client.create_role(Role(roleName=GRANT_ROLE, ownerName="admin"))
        return [f"user:{GRANT_USER}", f"group:{GRANT_GROUP}", f"role:{GRANT_ROLE}"]

    def grant_examples(self, kind: Securable) -> list[str]:
        return ["SELECT", "CREATE", "ALTER"] if kind == "namespace" else ["SELECT", "INSERT", "UPDATE"]

    def read_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        """Every principal's rows on the object (list_privileges without a principal),
        privileges upper-cased."""
        with hive_client(self.server.endpoint) as client:
            rows = client.list_privileges(None, None, object_ref(kind, id))
        grants: dict[str, set[str]] = {}
        for row in rows:
            principal = f"{PRINCIPAL_KINDS[row.principalType]}:{row.principalName}"
            grants.setdefault(principal, set()).add(row.grantInfo.privilege.upper())
        return {principal: frozenset(privileges) for principal, privileges in grants.items()}

    def grant_out_of_band(self, kind: Securable, id: Identifier, principal: str, privileges: list[str]) -> None:
        """Granted by another grantor, in lower case: HMS keeps a privilege as it is sent, and
        revokes a database's only in that exact spelling."""
        kind_name, _, name = principal.partition(":")
        principal_type = {value: key for key, value in PRINCIPAL_KINDS.items()}[kind_name]
        ref = object_ref(kind, id)
        bag = PrivilegeBag([HiveObjectPrivilege(
            hiveObject=ref, principalName=name, principalType=principal_type,
            grantInfo=PrivilegeGrantInfo(privilege=privilege.lower(), createTime=0, grantor="admin",
                                         grantorType=PrincipalType.ROLE, grantOption=True))
            for privilege in privileges])
        with hive_client(self.server.endpoint) as client:
            assert client.grant_revoke_privileges(GrantRevokePrivilegeRequest(
                requestType=GrantRevokeType.GRANT, privileges=bag)).success

    def table_identity(self, table_id: Identifier) -> Any:
        """The create time HMS sets on create_table (seconds): tests that compare it wait a second."""
        catalog, database, name = table_id
        with hive_client(self.server.endpoint) as client:
            return client.get_table_req(GetTableRequest(dbName=database, tblName=name, catName=catalog)).table.createTime

    def check_lance_table(self, table_id: Identifier, location: str, properties: dict[str, str]) -> None:
        catalog, database, name = table_id
        with hive_client(self.server.endpoint) as client:
            table = client.get_table_req(GetTableRequest(dbName=database, tblName=name, catName=catalog)).table
        assert table.tableType == "EXTERNAL_TABLE", table.tableType
        parameters = table.parameters or {}
        assert parameters.get("EXTERNAL") == "TRUE", parameters
        assert parameters.get("table_type", "").lower() == "lance", parameters
        assert {k: parameters.get(k) for k in properties} == properties, parameters
        assert normalize_location(table.sd.location) == normalize_location(location), (table.sd.location, location)
