"""The AWS Glue backend's configuration and identifier rules, read offline
(see lance_sync.model.backend_config)."""

from __future__ import annotations

import re

from pydantic import Field, SecretStr, model_validator

from lance_sync.model.backend_config import BackendConfig, BackendRules, Identifier
from lance_sync.model.config_types import HttpUrl, NonEmpty
from lance_sync.model.grants import ParentNeed, Securable

#: STS AssumeRole DurationSeconds range
MIN_ROLE_SESSION_SEC, MAX_ROLE_SESSION_SEC = 900, 43200
ACCOUNT_ID = re.compile(r"\d{12}")
#: what botocore accepts as a region name (a host label), checked offline: the region is part
#: of every request's signature scope and of AWS's endpoint
REGION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?")
ROLE_ARN = re.compile(r"arn:[\w-]+:iam::\d{12}:role/.+")
#: characters a catalog name cannot hold here: Glue forbids '/', and both build CatalogIds
CATALOG_ID_SEPARATORS = ("/", ":")
LOWER_CASE_ONLY = "Glue stores names in lower case; write them in lower case"

#: Lake Formation permissions per resource ("Lake Formation permissions reference")
DATABASE_PERMISSIONS = frozenset({"ALL", "ALTER", "CREATE_TABLE", "DESCRIBE", "DROP"})
TABLE_PERMISSIONS = frozenset({"ALL", "ALTER", "DELETE", "DESCRIBE", "DROP", "INSERT", "SELECT"})
#: what a table grant needs on its database to be of use
TABLE_PARENT_NEED = frozenset({"DESCRIBE", "ALL"})
_PARTITION = r"arn:aws(?:-[a-z]+)*"
_ACCOUNT = r"\d{12}"
_IAM_NAME = r"[\w+=,.@-]+"
#: Lake Formation principals (DataLakePrincipalIdentifier) a manifest may name, by kind
PRINCIPAL_FORMS: dict[str, re.Pattern[str]] = {
    "IAM role or user ARN": re.compile(
        rf"{_PARTITION}:iam::{_ACCOUNT}:(?:role|user)/(?:{_IAM_NAME}/)*{_IAM_NAME}"),
    "SAML (Active Directory) user or group ARN": re.compile(
        rf"{_PARTITION}:iam::{_ACCOUNT}:saml-provider/[\w.-]+:(?:user|group)/\S+"),
    "QuickSight user or group ARN": re.compile(
        rf"{_PARTITION}:quicksight:[a-z0-9-]+:{_ACCOUNT}:(?:user|group)/[\w-]+/\S+"),
    "IAM Identity Center user or group ARN": re.compile(
        rf"{_PARTITION}:identitystore:::(?:user|group)/[\w-]+"),
    "organization ARN": re.compile(rf"{_PARTITION}:organizations::{_ACCOUNT}:organization/o-[a-z0-9]{{10,32}}"),
    "organizational unit ARN": re.compile(
        rf"{_PARTITION}:organizations::{_ACCOUNT}:ou/o-[a-z0-9]{{10,32}}/ou-[a-z0-9]{{4,32}}-[a-z0-9]{{8,32}}"),
    "AWS account id": re.compile(_ACCOUNT),
    "every IAM principal of an account": re.compile(rf"{_ACCOUNT}:IAMPrincipals"),
    "IAM_ALLOWED_PRINCIPALS": re.compile("IAM_ALLOWED_PRINCIPALS"),
}
#: DataLakePrincipalIdentifier's length limit (botocore model)
MAX_PRINCIPAL_LENGTH = 255


class GlueConfig(BackendConfig):
    catalog_id: NonEmpty | None = Field(
        None, description="Starting catalog id (default: the caller's account id)")
    endpoint: HttpUrl | None = Field(
        None, description="Custom Glue endpoint for API-compatible metastores")
    lakeformation_endpoint: HttpUrl | None = Field(
        None, description="Custom AWS Lake Formation endpoint for grants (default: `endpoint` "
        "when it is set, else AWS's Lake Formation endpoint of the region)")
    region: str | None = Field(None, description="AWS region (default: from the environment)")
    access_key_id: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    secret_access_key: SecretStr | None = Field(None, description="Static credentials; only from ${VAR}")
    session_token: SecretStr | None = Field(None, description="Temporary credentials; only from ${VAR}")
    assume_role_arn: str | None = Field(None, description="IAM role to assume for Glue calls")
    assume_role_region: str | None = Field(None, description="Region of the STS client")
    assume_role_external_id: str | None = Field(None, description="External id for cross-account roles")
    assume_role_session_name: str | None = Field(None, description="Session name of the assumed role")
    assume_role_timeout_sec: int = Field(
        3600, ge=MIN_ROLE_SESSION_SEC, le=MAX_ROLE_SESSION_SEC,
        description="Assumed-role session duration, seconds; refreshed before it ends")
    root: str | None = Field(
        None, description="lance-sync extension: storage root for tables declared without a "
        "location in a database that has no LocationUri ({root}/{namespace...}/{table}.lance)")

    @model_validator(mode="after")
    def _consistent(self) -> GlueConfig:
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("access_key_id and secret_access_key must be given together")
        if self.session_token is not None and self.access_key_id is None:
            raise ValueError("session_token needs access_key_id and secret_access_key")
        role_options = [name for name in ("assume_role_region", "assume_role_external_id",
                                          "assume_role_session_name")
                        if getattr(self, name) is not None]
        if role_options and self.assume_role_arn is None:
            raise ValueError(f"{', '.join(role_options)} need(s) assume_role_arn")
        for name in ("region", "assume_role_region"):
            region = getattr(self, name)
            if region is not None and not REGION.fullmatch(region):
                raise ValueError(f"{name} must be an AWS region name such as us-east-1, not {region!r}")
        if self.assume_role_arn is not None and not ROLE_ARN.fullmatch(self.assume_role_arn):
            raise ValueError("assume_role_arn must look like arn:aws:iam::123456789012:role/name")
        if self.endpoint is not None and self.catalog_id is None:
            raise ValueError("catalog_id is required with endpoint: the caller's account id is "
                             "resolved through AWS STS, which a custom endpoint need not serve")
        return self


class GlueRules(BackendRules):
    backend_type = "glue"
    config_model = GlueConfig
    #: a catalog, or a catalog chain ending in a database
    namespace_levels = (1, None)
    table_namespace_levels = (2, None)
    checks_read = frozenset({"catalog_id"})

    @classmethod
    def check_namespace_id(cls, parts: Identifier, config: BackendConfig) -> str | None:
        assert isinstance(config, GlueConfig)
        if any(not name for name in parts):
            return "names cannot be empty"
        leads_with_root = bool(parts) and parts[0] == config.catalog_id
        if leads_with_root and len(parts) > 2:
            return (f"'{parts[0]}' is the root catalog: its databases are '{parts[0]}$<database>' "
                    "and its child catalogs are level-1 names")
        named = parts[1:] if leads_with_root else parts
        catalogs = named[:-1] if len(parts) > 1 else named
        if any(sep in name for name in catalogs for sep in CATALOG_ID_SEPARATORS):
            return "catalog names cannot contain '/' or ':'"
        if any(name != name.lower() for name in named):
            return LOWER_CASE_ONLY
        return None

    @classmethod
    def check_table_name(cls, name: str, config: BackendConfig) -> str | None:
        if name != name.lower():
            return LOWER_CASE_ONLY
        return None

    # --- grants: AWS Lake Formation permissions on databases and tables ----------------------

    @classmethod
    def grant_privileges(cls, kind: Securable, id: Identifier, config: BackendConfig) -> frozenset[str]:
        """Databases (namespace ids of two or more levels) and tables; a level-1 namespace is a
        catalog, on which lance-sync manages no grants."""
        if kind == "table":
            return TABLE_PERMISSIONS
        return DATABASE_PERMISSIONS if len(id) >= 2 else frozenset()

    @classmethod
    def check_principal(cls, principal: str, config: BackendConfig) -> str | None:
        if not principal.strip():
            return "a principal cannot be empty"
        if len(principal) > MAX_PRINCIPAL_LENGTH:
            return f"a Lake Formation principal has at most {MAX_PRINCIPAL_LENGTH} characters"
        if any(form.fullmatch(principal) for form in PRINCIPAL_FORMS.values()):
            return None
        return (f"{principal!r} is not a Lake Formation principal: write one of "
                f"{', '.join(PRINCIPAL_FORMS)} (e.g. arn:aws:iam::123456789012:role/analysts)")

    @classmethod
    def parent_needs(cls, kind: Securable, id: Identifier, config: BackendConfig) -> list[ParentNeed]:
        """A table grant is of no use without DESCRIBE (or ALL) on the table's database."""
        return [ParentNeed(tuple(id[:-1]), TABLE_PARENT_NEED)] if kind == "table" else []
