"""One unit for timeouts on every backend: `connect_timeout_seconds` and `read_timeout_seconds`.

The specs' own keys still work in the specs' units (Unity: seconds, Iceberg REST:
milliseconds), as lance_namespace.connect() passes them; a manifest that uses one is told
what to write instead."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.drivers.iceberg.driver import IcebergNamespace
from lance_sync.drivers.unity.driver import UnityNamespace
from lance_sync.model.errors import ConfigError

ENDPOINT = "http://127.0.0.1:9"


def test_the_common_keys_are_seconds_on_every_backend(tmp_path):
    unity = UnityNamespace(endpoint=ENDPOINT, catalog="main", root=str(tmp_path),
                           connect_timeout_seconds="1.5", read_timeout_seconds="20")
    iceberg = IcebergNamespace(endpoint=ENDPOINT, root=str(tmp_path),
                               connect_timeout_seconds="1.5", read_timeout_seconds="20")
    assert unity.client.http.timeout == iceberg.client.http.timeout == (1.5, 20.0)


def test_the_spec_keys_keep_their_spec_units(tmp_path):
    unity = UnityNamespace(endpoint=ENDPOINT, catalog="main", root=str(tmp_path),
                           connect_timeout="3", read_timeout="30")
    iceberg = IcebergNamespace(endpoint=ENDPOINT, root=str(tmp_path), connect_timeout="3000", read_timeout="30000")
    assert unity.client.http.timeout == iceberg.client.http.timeout == (3.0, 30.0)


def test_the_spec_defaults_hold_without_either_key(tmp_path):
    assert UnityNamespace(endpoint=ENDPOINT, catalog="main", root=str(tmp_path)).client.http.timeout == (10, 60)
    assert IcebergNamespace(endpoint=ENDPOINT, root=str(tmp_path)).client.http.timeout == (10.0, 30.0)


def test_one_timeout_cannot_be_given_twice(tmp_path):
    with pytest.raises(ConfigError, match="set read_timeout_seconds or read_timeout, not both"):
        IcebergNamespace(endpoint=ENDPOINT, root=str(tmp_path), read_timeout="500", read_timeout_seconds="1")


def test_a_manifest_with_a_spec_key_is_told_what_to_write_instead(tmp_path):
    path = tmp_path / "lance-sync.yaml"
    path.write_text("version: 1\nowner: team\nbackends:\n"
                    f"  uc: {{type: unity, endpoint: '{ENDPOINT}', catalog: main, read_timeout: 90}}\n"
                    f"  ice: {{type: iceberg, endpoint: '{ENDPOINT}', connect_timeout: 2500}}\n")
    result = CliRunner().invoke(main, ["validate", "-f", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (f"Warning: {path}:4:68: backends.uc.read_timeout: 'read_timeout' is deprecated in manifests: "
            "backends count it in different units (seconds here); write read_timeout_seconds: 90") in result.output
    assert ("backends.ice.connect_timeout: 'connect_timeout' is deprecated in manifests: backends count it in "
            "different units (milliseconds here); write connect_timeout_seconds: 2.5") in result.output
