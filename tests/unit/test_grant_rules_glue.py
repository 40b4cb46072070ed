"""Glue's grant rules, offline: Lake Formation permissions per level, spelling, principals,
what a table grant needs on its database, and the `lakeformation_endpoint` setting."""

from __future__ import annotations

import pytest

from lance_sync.drivers.glue.config import GlueConfig, GlueRules
from lance_sync.model.errors import ConfigError
from lance_sync.model.grants import ParentNeed

CONFIG = GlueConfig(catalog_id="123456789012", region="us-east-1")
DATABASE = {"ALL", "ALTER", "CREATE_TABLE", "DESCRIBE", "DROP"}
TABLE = {"ALL", "ALTER", "DELETE", "DESCRIBE", "DROP", "INSERT", "SELECT"}


@pytest.mark.parametrize("id", [("123456789012", "sales"), ("cat", "sales"), ("a", "b", "db")])
def test_databases_take_lake_formation_database_permissions(id):
    assert GlueRules.grant_privileges("namespace", id, CONFIG) == DATABASE


@pytest.mark.parametrize("id", [("123456789012",), ("sales_catalog",)])
def test_a_catalog_has_no_grants(id):
    assert GlueRules.grant_privileges("namespace", id, CONFIG) == frozenset()


@pytest.mark.parametrize("id", [("123456789012", "sales", "orders"), ("a", "b", "db", "t")])
def test_tables_take_lake_formation_table_permissions(id):
    assert GlueRules.grant_privileges("table", id, CONFIG) == TABLE


def test_no_privilege_of_another_resource_kind():
    assert "SELECT" not in GlueRules.grant_privileges("namespace", ("c", "db"), CONFIG)
    assert "CREATE_TABLE" not in GlueRules.grant_privileges("table", ("c", "db", "t"), CONFIG)
    assert "CREATE_DATABASE" not in GlueRules.grant_privileges("namespace", ("c", "db"), CONFIG)


@pytest.mark.parametrize("written, canonical", [
    ("select", "SELECT"), (" Describe ", "DESCRIBE"), ("create_table", "CREATE_TABLE"), ("ALL", "ALL")])
def test_privileges_are_spelled_in_upper_case(written, canonical):
    assert GlueRules.canonical_privilege(written) == canonical


@pytest.mark.parametrize("principal", [
    "arn:aws:iam::123456789012:role/analysts",
    "arn:aws:iam::123456789012:role/teams/data/loaders",
    "arn:aws:iam::123456789012:user/alice@example.com",
    "arn:aws-cn:iam::123456789012:role/analysts",
    "arn:aws-us-gov:iam::123456789012:user/bob",
    "arn:aws:iam::123456789012:saml-provider/corp-idp:user/alice",
    "arn:aws:iam::123456789012:saml-provider/corp-idp:group/analysts",
    "arn:aws:quicksight:us-east-1:123456789012:user/default/alice",
    "arn:aws:identitystore:::group/906771ae-1234-4321-9876-5a6b7c8d9e0f",
    "arn:aws:identitystore:::user/d-1234567890",
    "arn:aws:organizations::123456789012:organization/o-abcdefghij",
    "arn:aws:organizations::123456789012:ou/o-abcdefghij/ou-ab12-cdefgh34",
    "210987654321",
    "123456789012:IAMPrincipals",
    "IAM_ALLOWED_PRINCIPALS",
])
def test_lake_formation_principals_are_accepted(principal):
    assert GlueRules.check_principal(principal, CONFIG) is None


@pytest.mark.parametrize("principal, says", [
    ("", "empty"),
    ("   ", "empty"),
    ("analysts", "not a Lake Formation principal"),
    ("alice@example.com", "not a Lake Formation principal"),
    ("arn:aws:iam::12345:role/analysts", "not a Lake Formation principal"),  # short account
    ("arn:aws:iam::123456789012:group/analysts", "not a Lake Formation principal"),  # IAM groups
    ("arn:aws:iam::123456789012:role/", "not a Lake Formation principal"),
    (" arn:aws:iam::123456789012:role/analysts", "not a Lake Formation principal"),
    ("arn:aws:sts::123456789012:assumed-role/r/session", "not a Lake Formation principal"),
    ("iam_allowed_principals", "not a Lake Formation principal"),
    ("1234567890123", "not a Lake Formation principal"),
    ("arn:aws:iam::123456789012:role/" + "r" * 250, "at most 255"),
])
def test_malformed_principals_are_refused_clearly(principal, says):
    problem = GlueRules.check_principal(principal, CONFIG)
    assert problem is not None and says in problem
    if "not a" in says:
        assert "arn:aws:iam::123456789012:role/" in problem  # an example of what to write


def test_a_table_grant_needs_describe_on_its_database():
    assert GlueRules.parent_needs("table", ("c", "db", "t"), CONFIG) == [
        ParentNeed(("c", "db"), frozenset({"DESCRIBE", "ALL"}))]
    assert GlueRules.parent_needs("namespace", ("c", "db"), CONFIG) == []
    assert GlueRules.parent_needs("namespace", ("c",), CONFIG) == []


def test_lakeformation_endpoint_is_an_http_url():
    config = GlueConfig.from_properties({"catalog_id": "123456789012",
                                         "lakeformation_endpoint": "https://lf.example.com"})
    assert isinstance(config, GlueConfig)
    assert config.lakeformation_endpoint == "https://lf.example.com"
    assert config.to_properties()["lakeformation_endpoint"] == "https://lf.example.com"
    assert GlueConfig().lakeformation_endpoint is None
    with pytest.raises(ConfigError, match="lakeformation_endpoint"):
        GlueConfig.from_properties({"lakeformation_endpoint": "lf.example.com"})
