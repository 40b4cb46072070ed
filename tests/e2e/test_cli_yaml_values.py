"""The YAML 1.1 traps end to end: `lance-sync` as a subprocess on a `dir` catalog, read back
with pylance's own DirectoryNamespace.

The manifest of the issue stamped 'false', 'false', '8', '1000', '1.1', 'true' and '31' where
the user wrote NO, off, 010, 1_000, 1.10, yes and 0x1F. The catalog must hold the text written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from lance.namespace import DirectoryNamespace
from lance_namespace import DescribeNamespaceRequest, DescribeTableRequest

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

ROOT = Path(__file__).resolve().parents[2]
#: the lance-sync console script of the interpreter running the tests (.venv/bin/lance-sync)
LANCE_SYNC = str(Path(sys.executable).with_name("lance-sync"))

PROPERTIES = "{country: NO, pii: off, build: 010, retention: 1_000, ver: 1.10, flag: yes, mask: 0x1F}"
WRITTEN = {"country": "NO", "pii": "off", "build": "010", "retention": "1_000", "ver": "1.10", "flag": "yes",
           "mask": "0x1F"}
MANIFEST = f"""\
version: 1
owner: team
backends:
  lake: {{type: dir, root: ./lake}}
namespaces:
  - backend: lake
    id: sales
    properties: {PROPERTIES}
tables:
  - name: orders
    location: ./lake/orders.lance
    register: [{{backend: lake, namespace: sales}}]
    properties: {PROPERTIES}
"""


def lance_sync(manifest: Path, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "NO_COLOR": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    environ.pop("LANCE_SYNC_DEBUG", None)
    result = subprocess.run([LANCE_SYNC, command, "-f", str(manifest), *args], capture_output=True, text=True,
                            env=environ, cwd=manifest.parent, timeout=300)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    return result


def test_the_catalog_holds_the_properties_as_written(tmp_path):
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text(MANIFEST)
    applied = lance_sync(manifest, "apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    catalog = DirectoryNamespace(root=str(tmp_path / "lake"))
    namespace = catalog.describe_namespace(DescribeNamespaceRequest(id=["sales"])).properties
    table = catalog.describe_table(DescribeTableRequest(id=["sales", "orders"])).properties
    for properties in (namespace, table):
        assert {key: properties.get(key) for key in WRITTEN} == WRITTEN
    again = lance_sync(manifest, "plan", "--detailed-exitcode")
    assert again.returncode == 0, again.stdout  # no change: what was stamped is what is declared


def test_validate_refuses_a_value_yaml_reads_otherwise_and_says_what_to_write(tmp_path):
    manifest = tmp_path / "lance-sync.yaml"
    manifest.write_text(MANIFEST.replace("owner: team", "owner: 2026").replace("flag: yes,", "flag: ~,", 1))
    result = lance_sync(manifest, "validate")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{manifest}:2:8: owner: must be a string, got a number; write it in quotes: '2026'" in result.stderr
    assert (f"{manifest}:8:88: namespaces[0].properties.flag: must be a string or a number or true or false, "
            "got empty; YAML reads ~ as null: quote it, '~', if you mean the text") in result.stderr
    manifest.with_name("fixed.yaml").write_text(MANIFEST.replace("owner: team", "owner: '2026'"))
    fixed = lance_sync(manifest.with_name("fixed.yaml"), "validate")
    assert fixed.returncode == 0, fixed.stderr
