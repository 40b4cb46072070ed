"""The drivers' package layout: small modules, one meaning per public class name, light configs."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from lance_sync.drivers import BUILTIN_RULES

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ROOT / "lance_sync" / "drivers"
MODULE_LINE_LIMIT = 700
#: what a backend's package and its `config` module must not import (manifest validation reads them)
HEAVY = ["boto3", "botocore", "thrift", "pymetastore", "lance_namespace", "pyarrow", "lance"]


def test_no_driver_module_is_over_the_line_limit():
    long = {str(path.relative_to(ROOT)): lines for path in DRIVERS.rglob("*.py")
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINE_LIMIT}
    assert not long, long


def test_no_two_public_classes_of_the_drivers_share_a_name():
    found: dict[str, list[str]] = defaultdict(list)
    for path in DRIVERS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found[node.name].append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in found.items() if len(paths) > 1}


def test_backend_packages_and_their_configs_import_no_client():
    modules = sorted({target.split(":")[0] for target in BUILTIN_RULES.values()})
    script = (f"import importlib, json, sys\nfor name in {modules!r}:\n    importlib.import_module(name)\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environ,
                            check=True, cwd=ROOT)
    loaded = set(json.loads(result.stdout.splitlines()[-1]))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
