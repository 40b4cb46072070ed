"""normalize_location: one spelling per location; storage options reach pyarrow's S3 filesystem."""

from __future__ import annotations

import os

import pytest
from pyarrow.fs import AwsDefaultS3RetryStrategy

from lance_sync.data.storage import _s3_arguments
from lance_sync.model.locations import normalize_location


@pytest.mark.parametrize(
    ("written", "normalized"),
    [
        ("/data/t.lance", "/data/t.lance"),
        ("/data/t.lance/", "/data/t.lance"),
        ("/data//x/../t.lance", "/data/t.lance"),
        ("//data/t.lance", "/data/t.lance"),
        ("file:///data/t.lance/", "/data/t.lance"),
        ("file://localhost/data/t.lance", "/data/t.lance"),
        ("file:/data/t.lance", "/data/t.lance"),
        ("s3://bucket/a//b.lance/", "s3://bucket/a/b.lance"),
        ("s3a://bucket/a/b.lance", "s3://bucket/a/b.lance"),
        ("S3N://bucket/a/b.lance", "s3://bucket/a/b.lance"),
        ("gs://bucket/t.lance/", "gs://bucket/t.lance"),
    ],
)
def test_normalize_location(written, normalized):
    assert normalize_location(written) == normalized


def test_relative_and_home_paths_become_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert normalize_location("lake/t.lance") == str(tmp_path / "lake" / "t.lance")
    assert normalize_location("~/t.lance") == os.path.join(str(tmp_path), "t.lance")


def test_remote_file_hosts_are_refused():
    with pytest.raises(ValueError, match="remote host"):
        normalize_location("file://server/share/t.lance")


def test_lance_storage_options_map_to_pyarrow_s3_arguments():
    arguments = _s3_arguments(
        {
            "AWS_ACCESS_KEY_ID": "key",
            "aws_secret_access_key": "secret",
            "aws_region": "eu-west-1",
            "aws_endpoint": "http://127.0.0.1:9000",
            "aws_virtual_hosted_style_request": "true",
        }
    )
    retries = arguments.pop("retry_strategy")
    assert arguments == {
        "access_key": "key",
        "secret_key": "secret",
        "region": "eu-west-1",
        "endpoint_override": "127.0.0.1:9000",
        "scheme": "http",
        "force_virtual_addressing": True,
        "connect_timeout": 5.0,
        "request_timeout": 60.0,
    }
    assert isinstance(retries, AwsDefaultS3RetryStrategy) and retries.max_attempts == 7


def test_the_store_retry_defaults_reach_pyarrow_and_the_user_overrides_them():
    """pylance's keys (STORE_DEFAULTS) set pyarrow's retries and timeouts too, whoever sets them."""
    arguments = _s3_arguments({"CLIENT_MAX_RETRIES": "2", "timeout": "500ms", "connect_timeout": "1m"})
    assert arguments["retry_strategy"].max_attempts == 3
    assert (arguments["request_timeout"], arguments["connect_timeout"]) == (0.5, 60.0)
    assert "request_timeout" not in _s3_arguments({"timeout": "soon"})  # not a duration: pyarrow's default
    assert _s3_arguments({"endpoint": "minio:9000", "allow_http": "true"})["scheme"] == "http"
