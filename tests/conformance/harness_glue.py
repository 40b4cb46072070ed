"""The Glue backend in the conformance suite: the Glue test server, boto3 as the independent client.

Test namespaces are databases in a child catalog (`ls_conformance`, CatalogId
`<account>:ls_conformance`), so every call the suite makes carries a non-default CatalogId.
Against an external endpoint (LANCE_SYNC_TEST_GLUE_ENDPOINT) they are databases of the
account's default catalog instead, and credentials and region come from the environment.
"""

from __future__ import annotations

import os
from typing import Any

from botocore.exceptions import ClientError

from lance_sync.drivers.base import Identifier
from lance_sync.model.grants import GrantMap, Securable
from lance_sync.model.locations import normalize_location
from tests.conformance.harness import Harness, SpecBehaviour
from tests.servers.glue import glue_client, lakeformation_client

CONFORMANCE_CATALOG = "ls_conformance"
ACCOUNT_ID_VARIABLE = "LANCE_SYNC_TEST_GLUE_ACCOUNT_ID"


class GlueHarness(Harness):
    backend_type = "glue"
    server_fixture = "glue_server"
    behaviour = SpecBehaviour(
        drop_missing_namespace_succeeds=False,
        foreign_table_is_invalid_input=True,
        # Glue folds database and table names to lower case
        lower_case_names=True,
        # database and table names take any single-line text; catalog names cannot hold '.' or '/'
        name_characters=(" ", "%", ".", "$", "é"),
        # a database (the namespace the suite creates) holds tables, never child namespaces
        extra={"nested_namespaces": False},
    )
    #: CreateTime, in seconds as Glue answers it
    identity_resolution_seconds = 1.0

    def __init__(self, server, data_root):
        super().__init__(server, data_root)
        self.glue = glue_client(server)
        self.lakeformation = lakeformation_client(server)
        self.account_id = server.extra.get("account_id") or os.environ[ACCOUNT_ID_VARIABLE]
        self._parent: Identifier | None = None

    def config(self) -> dict[str, Any]:
        config = {"endpoint": self.server.endpoint, "catalog_id": self.account_id,
                  "root": str(self.data_root)}
        if not self.server.external:
            extra = self.server.extra
            config.update(region=extra["region"], access_key_id=extra["access_key_id"],
                          secret_access_key=extra["secret_access_key"])
        return config

    def parent_namespace(self) -> Identifier:
        if self._parent is None:
            self._parent = (self.account_id,) if self.server.external else self._conformance_catalog()
        return self._parent

    def create_foreign_table(self, namespace: Identifier, name: str) -> None:
        catalog_id, database = self._database(namespace)
        self.glue.create_table(CatalogId=catalog_id, DatabaseName=database, TableInput={
            "Name": name,
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"classification": "parquet"},
            "StorageDescriptor": {"Location": self.location(f"{name}_parquet")},
        })

    def check_lance_table(self, table_id: Identifier, location: str, properties: dict[str, str]) -> None:
        catalog_id, database = self._database(table_id[:-1])
        table = self.glue.get_table(CatalogId=catalog_id, DatabaseName=database,
                                    Name=table_id[-1])["Table"]
        assert table["TableType"] == "EXTERNAL_TABLE", table
        parameters = table.get("Parameters", {})
        assert parameters.get("table_type", "").lower() == "lance", parameters
        assert {k: parameters.get(k) for k in properties} == properties, parameters
        stored = table["StorageDescriptor"]["Location"]
        assert normalize_location(stored) == normalize_location(location), (stored, location)

    def table_identity(self, table_id: Identifier) -> Any:
        catalog_id, database = self._database(table_id[:-1])
        return self.glue.get_table(CatalogId=catalog_id, DatabaseName=database, Name=table_id[-1])["Table"]["CreateTime"]

    # --- grants: Lake Formation permissions, through boto3's lakeformation client -----------

    def grant_principals(self) -> list[str]:
        """An IAM role, an IAM user and a role with a path, of the test account."""
        account = self.account_id
        return [f"arn:aws:iam::{account}:role/ls-grants-analysts",
                f"arn:aws:iam::{account}:user/ls-grants-auditor",
                f"arn:aws:iam::{account}:role/teams/ls-grants-loaders"]

    def grant_examples(self, kind: Securable) -> list[str]:
        return ["DESCRIBE", "ALTER", "CREATE_TABLE"] if kind == "namespace" else ["SELECT", "INSERT", "DESCRIBE"]

    def read_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        held: dict[str, set[str]] = {}
        paging: dict[str, str] = {}
        while True:  # boto3 has no ListPermissions paginator
            page = self.lakeformation.list_permissions(Resource=self._resource(kind, id), **paging)
            for entry in page["PrincipalResourcePermissions"]:
                principal = entry["Principal"]["DataLakePrincipalIdentifier"]
                held.setdefault(principal, set()).update(
                    entry.get("Permissions", []), entry.get("PermissionsWithGrantOption", []))
            if not page.get("NextToken"):
                break
            paging = {"NextToken": page["NextToken"]}
        return {principal: frozenset(privileges) for principal, privileges in held.items() if privileges}

    def grant_out_of_band(self, kind: Securable, id: Identifier, principal: str, privileges: list[str]) -> None:
        self.lakeformation.grant_permissions(Principal={"DataLakePrincipalIdentifier": principal},
                                             Resource=self._resource(kind, id), Permissions=privileges)

    def _resource(self, kind: Securable, id: Identifier) -> dict[str, Any]:
        if kind == "namespace":
            catalog_id, database = self._database(id)
            return {"Database": {"CatalogId": catalog_id, "Name": database}}
        catalog_id, database = self._database(id[:-1])
        return {"Table": {"CatalogId": catalog_id, "DatabaseName": database, "Name": id[-1]}}

    def _conformance_catalog(self) -> Identifier:
        try:
            self.glue.create_catalog(Name=CONFORMANCE_CATALOG, CatalogInput={})
        except ClientError as error:
            if error.response["Error"]["Code"] != "AlreadyExistsException":
                raise
        return (CONFORMANCE_CATALOG,)

    def _database(self, namespace: Identifier) -> tuple[str, str]:
        """(CatalogId, database name) of a namespace directly below the parent namespace."""
        catalog, database = namespace
        catalog_id = self.account_id if catalog == self.account_id else f"{self.account_id}:{catalog}"
        return catalog_id, database
