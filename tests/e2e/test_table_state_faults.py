"""Index builds, tags and a retention cleanup with faults injected between lance-sync and S3
(moto behind the suite's fault proxy): applies run again until one succeeds, then the plan is
clean and every file the latest and the tagged versions use is still there (issue 47)."""

from __future__ import annotations

import uuid
from pathlib import Path

import lance
import pyarrow as pa
import pytest
import yaml

from tests.servers import s3
from tests.servers.faults import proxy_fixture
from tests.support.cli import cli_env, run_cli

pytestmark = pytest.mark.servers

s3_proxy = proxy_fixture("s3_server")
#: applies run before the store's faults must have let one through
APPLIES = 6


def test_index_builds_and_cleanups_converge_through_s3_faults(s3_server, s3_proxy, tmp_path: Path):
    """Guards: faults on S3 requests (refused, reset, or carried out with the answer lost) never
    leave a broken dataset: the applies converge, and the latest and tagged versions read whole."""
    bucket = s3.new_bucket(s3_server.endpoint, f"ls-faults-{uuid.uuid4().hex[:12]}")
    direct = s3.storage_options(s3_server.endpoint)
    location = f"s3://{bucket}/root/events.lance"
    table = {"name": "events", "location": location, "register": [{"backend": "lake", "namespace": "ev"}],
             "schema": [{"name": "id", "type": "int64"}, {"name": "kind", "type": "string"}]}
    manifest = tmp_path / "lance-sync.yaml"

    def write() -> None:
        manifest.write_text(yaml.safe_dump({
            "version": 1, "owner": "faults",
            "storage": {**s3.storage_options(s3_proxy.server.endpoint), "aws_access_key_id": "${KEY}",
                        "aws_secret_access_key": "${SECRET}"},
            "backends": {"lake": {"type": "dir", "root": f"s3://{bucket}/root"}},
            "namespaces": [{"backend": "lake", "id": "ev"}], "tables": [table]}))

    env = {**{k: v for k, v in cli_env().items() if not k.startswith("AWS_")}, "KEY": s3.ACCESS_KEY_ID,
           "SECRET": s3.SECRET_ACCESS_KEY}
    write()
    assert run_cli(manifest, "apply", "--auto-approve", env=env).returncode == 0  # the dataset, made by lance-sync
    rows = pa.table({"id": pa.array(range(10), pa.int64()), "kind": ["a", "b"] * 5})
    for _ in range(6):
        lance.write_dataset(rows, location, mode="append", storage_options=direct)
    lance.dataset(location, storage_options=direct).tags.create("theirs", 3)
    table.update(indexes=[{"name": "id_idx", "column": "id", "type": "BTREE"},
                          {"name": "kind_idx", "column": "kind", "type": "BITMAP"}],
                 tags={"mine": 5}, retention={"keep_versions": 2})
    write()
    # the dataset's requests only: the catalog's and the leases' faults are other tests' business
    s3_proxy.configure(rate=0.25, seed=47, kinds=("503", "500", "reset", "dropped"), max_faults_per_request=1,
                       only=r"/events\.lance/")
    outcomes = [run_cli(manifest, "apply", "--auto-approve", "--allow-drop", env=env).returncode
                for _ in range(APPLIES)]
    assert s3_proxy.stats["faults"], "the proxy injected no fault"
    assert 0 in outcomes, outcomes
    s3_proxy.configure(rate=0.0)
    assert run_cli(manifest, "plan", "--detailed-exitcode", env=env).returncode == 0
    dataset = lance.dataset(location, storage_options=direct)
    assert {index.name for index in dataset.describe_indices()} == {"id_idx", "kind_idx"}
    assert dataset.to_table().num_rows == 60
    for tag, count in (("theirs", 20), ("mine", 40)):
        assert lance.dataset(location, version=tag, storage_options=direct).to_table().num_rows == count
    assert len(dataset.versions()) < 10  # the cleanup ran
