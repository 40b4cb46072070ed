"""Drivers are built in one place: from a manifest's validated configuration, or from a saved
plan's templates whose secrets are still ${VAR} references."""

from __future__ import annotations

import pytest

from lance_sync.drivers import connect_backends, connect_templates
from lance_sync.manifest import load_manifest
from lance_sync.model.errors import ConfigError

MANIFEST = """\
version: 1
owner: team
backends:
  lake:
    type: dir
    root: ./lake
    storage: {region: us-east-1, aws_secret_access_key: "${LS_TEST_SECRET}"}
"""


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "lance-sync.yaml"
    path.write_text(MANIFEST)
    return load_manifest([str(path)], {"LS_TEST_SECRET": "from-manifest"})


def test_a_manifest_backend_is_built_from_its_validated_configuration(state):
    driver = connect_backends(state.backends)["lake"]
    assert driver.config is state.backends["lake"].config
    assert driver.storage_options() == {"region": "us-east-1", "aws_secret_access_key": "from-manifest"}


def test_a_saved_template_reads_its_secrets_from_the_environment_again(state):
    template = state.backends["lake"].template
    assert template["storage"]["aws_secret_access_key"] == "${LS_TEST_SECRET}"
    driver = connect_templates({"lake": template}, {"LS_TEST_SECRET": "at-apply"})["lake"]
    assert driver.config.storage == {"region": "us-east-1", "aws_secret_access_key": "at-apply"}
    with pytest.raises(ConfigError, match="backend 'lake': storage.aws_secret_access_key needs the "
                                          "environment variable LS_TEST_SECRET"):
        connect_templates({"lake": template}, {})


def test_a_bad_template_names_its_backend(tmp_path):
    with pytest.raises(ConfigError, match="backend 'lake': unknown backend type 'nope'"):
        connect_templates({"lake": {"type": "nope"}}, {})
    with pytest.raises(ConfigError, match="backend 'lake': invalid DirConfig configuration: root"):
        connect_templates({"lake": {"type": "dir"}}, {})


DEFAULT_STORAGE = """\
version: 1
owner: team
storage: {aws_region: eu-west-1, aws_endpoint: "http://127.0.0.1:9000", aws_secret_access_key: "${LS_TEST_SECRET}"}
backends:
  lake:
    type: dir
    root: ./lake
    storage: {region: us-east-1}
  other:
    type: dir
    root: ./other
"""


def test_the_manifest_default_storage_lies_under_each_backends_own(tmp_path):
    path = tmp_path / "lance-sync.yaml"
    path.write_text(DEFAULT_STORAGE)
    state = load_manifest([str(path)], {"LS_TEST_SECRET": "s3cret"})
    drivers = connect_backends(state.backends)
    # the backend's `region` replaces the default's `aws_region`: one key per setting reaches pylance
    assert drivers["lake"].storage_options() == {
        "aws_endpoint": "http://127.0.0.1:9000", "aws_secret_access_key": "s3cret", "region": "us-east-1"}
    assert drivers["other"].storage_options() == {
        "aws_region": "eu-west-1", "aws_endpoint": "http://127.0.0.1:9000", "aws_secret_access_key": "s3cret"}
    # a saved plan keeps the reference of the default's secret, not its value
    assert state.backends["lake"].template["storage"]["aws_secret_access_key"] == "${LS_TEST_SECRET}"
    again = connect_templates({"other": state.backends["other"].template}, {"LS_TEST_SECRET": "at-apply"})
    assert again["other"].storage_options()["aws_secret_access_key"] == "at-apply"
