"""The session's S3 store: moto's server in a subprocess on 127.0.0.1.

`start` is what the `s3_server` fixture calls. The store accepts any credentials; tests use the
fixed ones below, given to lance-sync either as storage options (`storage_options`) or as the
standard AWS environment (`aws_environment`), exactly as a user would.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3

from tests.servers.base import RunningServer, free_port, stop_process, tcp_open, wait_until

REGION = "us-east-1"
ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = "testing"
STARTUP_TIMEOUT_SECONDS = 60


def start(workdir: Path) -> RunningServer:
    """Start moto's server on a free loopback port and wait until S3 answers."""
    log_path = workdir / "s3_server.log"
    port = free_port()
    began = time.monotonic()
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: tcp_open("127.0.0.1", port), STARTUP_TIMEOUT_SECONDS, "moto S3 server",
                   log_path, process)
        wait_until(lambda: s3_client(endpoint).list_buckets() is not None, STARTUP_TIMEOUT_SECONDS,
                   "moto S3 server", log_path, process)
    except BaseException:
        stop_process(process)
        raise
    return RunningServer(name="s3", endpoint=endpoint, startup_seconds=time.monotonic() - began,
                         log_path=log_path, stop=lambda: stop_process(process),
                         extra={"region": REGION, "pid": process.pid})


def s3_client(endpoint: str) -> Any:
    """A boto3 S3 client for the store (path-style addressing, the fixed test credentials)."""
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)


def storage_options(endpoint: str) -> dict[str, str]:
    """Lance storage options for the store."""
    return {"aws_endpoint": endpoint, "aws_region": REGION, "aws_access_key_id": ACCESS_KEY_ID,
            "aws_secret_access_key": SECRET_ACCESS_KEY, "allow_http": "true"}


def aws_environment(endpoint: str) -> dict[str, str]:
    """The standard AWS environment variables that point any AWS client at the store."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY}


def new_bucket(endpoint: str, name: str) -> str:
    """Create the bucket `name` (a test's own: names must be unique per session); return it."""
    s3_client(endpoint).create_bucket(Bucket=name)
    return name
