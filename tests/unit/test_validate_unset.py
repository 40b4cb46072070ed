"""`validate` with environment variables unset (a pull request from a fork gets no secrets):
everything else is checked, and the output names what was not resolved. plan still needs
every variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import main

MANIFEST = """\
version: 1
owner: team
backends:
  uc: {type: unity, endpoint: "${LS_UC_ENDPOINT}", catalog: main, auth_token: "${LS_UC_TOKEN}"}
  ice: {type: iceberg, endpoint: "http://127.0.0.1:1", credential: "${LS_ICE_CREDENTIAL}"}
  lake: {type: dir, root: "${LS_LAKE_ROOT}"}
namespaces:
  - {backend: uc, id: NAMESPACE}
  - {backend: ice, id: wh.sales}
  - {backend: lake, id: sales}
tables:
  - {name: orders, location: "s3://${LS_BUCKET}/orders.lance", register: [{backend: uc, namespace: main$sales}]}
  - {name: returns, location: /elsewhere/returns.lance, register: [{backend: lake, namespace: sales}]}
"""
VARIABLES = ["LS_UC_ENDPOINT", "LS_UC_TOKEN", "LS_ICE_CREDENTIAL", "LS_LAKE_ROOT", "LS_BUCKET"]


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)

    def write(namespace: str = "main$sales") -> str:
        path = tmp_path / "lance-sync.yaml"
        path.write_text(MANIFEST.replace("NAMESPACE", namespace))
        return str(path)

    return write


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_validate_checks_the_rest_and_names_each_unset_variable(manifest):
    result = run("validate", "-f", manifest())
    assert result.exit_code == 0, result.output
    assert "valid (3 backends, 3 namespaces, 2 tables, 0 policy rules)" in result.output
    for name, field in [("LS_UC_ENDPOINT", "backends.uc.endpoint"), ("LS_UC_TOKEN", "backends.uc.auth_token"),
                        ("LS_ICE_CREDENTIAL", "backends.ice.credential"), ("LS_LAKE_ROOT", "backends.lake.root"),
                        ("LS_BUCKET", "tables[0].location")]:
        assert f"  {name}: {field} (" in result.output


def test_validate_as_json_lists_the_unset_variables(manifest):
    result = run("validate", "-f", manifest(), "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["valid"] is True
    assert [u["variable"] for u in document["unset"]] == VARIABLES
    assert document["unset"][1]["position"].endswith(":4:79")


def test_problems_elsewhere_are_still_found(manifest):
    """The catalog check reads `catalog`, which is set: an unset endpoint does not hide it."""
    result = run("validate", "-f", manifest("other$sales"))
    assert result.exit_code == 1
    assert "namespaces[0].id: catalog 'other' is not the configured catalog 'main'" in result.output


def test_checks_that_read_an_unset_setting_are_skipped(manifest):
    """`returns` lies outside the dir root, but the root is not known: not an error here."""
    result = run("validate", "-f", manifest())
    assert result.exit_code == 0
    assert "outside" not in result.output and "inside its root" not in result.output


def test_a_bad_value_next_to_an_unset_one_is_reported(manifest, tmp_path):
    path = manifest()
    manifest_file = Path(path)
    manifest_file.write_text(manifest_file.read_text().replace("catalog: main", "catalog: main, max_retries: many"))
    result = run("validate", "-f", path)
    assert result.exit_code == 1
    assert "backends.uc.max_retries" in result.output


def test_plan_still_needs_every_variable(manifest):
    result = run("plan", "-f", manifest())
    assert result.exit_code == 1
    assert "lance-sync.yaml:4:31: backends.uc.endpoint: environment variable 'LS_UC_ENDPOINT' is not set" \
        in result.output
