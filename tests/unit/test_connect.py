"""Drivers are built in one place: from a manifest's validated configuration, or from a saved
plan's templates whose secrets are still ${VAR} references."""

from __future__ import annotations

import pytest

from lance_sync.drivers import connect_backends, connect_templates
from lance_sync.errors import ConfigError
from lance_sync.manifest import load_manifest

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
