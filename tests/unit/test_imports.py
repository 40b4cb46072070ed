"""Commands import only what they need: `--help` and `validate` must start fast.

Start-up time itself is measured by bench/bench_cli.py, not here; these tests check *what*
a fresh interpreter has imported, which is what makes start-up slow (the Lance Namespace
client alone takes about a second).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lance_sync.drivers import BUILTIN_RULES

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart" / "lance-sync.yaml"

#: never imported by `import lance_sync.cli.app` (so not by --help or shell completion)
HEAVY = ["lance_namespace", "lance", "pyarrow", "pyspark", "pydantic", "jsonschema", "requests", "boto3",
         "thrift", "pandas", "numpy"]
#: never imported by `validate` (the JSON Schema, pydantic and pyarrow's type names are its work)
NOT_FOR_VALIDATE = ["lance_namespace", "lance", "pyspark", "requests", "boto3", "thrift", "pandas"]
#: never imported by a plan of the quickstart before its first apply: its `dir` root does not exist
#: yet, so there is no manifest table for pylance to read (nor pyarrow's datasets and pandas, which
#: pylance imports), Spark only writes a source at apply, and the other backends' clients are not used
NOT_FOR_A_FIRST_PLAN = ["lance", "lance.namespace", "pyarrow.dataset", "pandas", "pyspark", "py4j", "pyiceberg",
                        "boto3", "botocore", "thrift", "pymetastore", "requests", "jsonschema"]


def imported_after(code: str) -> set[str]:
    """Top-level packages a fresh interpreter holds after running `code`."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environ,
                            check=True, cwd=ROOT)
    return set(json.loads(result.stdout.splitlines()[-1]))


def after_the_command(args: list[str], check: str, before: str = "", cwd: Path = ROOT) -> None:
    """Run the `lance-sync` program (`lance_sync.cli.run`, which ends the process itself) with
    `args` in a fresh interpreter, after running `before`; `check` (statements) runs at its exit."""
    body = "".join(f"    {line}\n" for line in [*check.splitlines(), "print('checked')"])
    script = (f"{before}\nimport atexit, sys\nfrom lance_sync.cli import run\n"
              f"def check():\n{body}atexit.register(check)\n"
              f"sys.argv = ['lance-sync', *{args!r}]\nrun()\n")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environ, cwd=cwd)
    assert result.stdout.splitlines()[-1:] == ["checked"], result.stderr


def test_the_command_line_module_imports_no_heavy_package():
    loaded = imported_after("import lance_sync.cli.app")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_validate_imports_no_driver_client_and_no_spark():
    loaded = imported_after("from lance_sync.cli.app import main\n"
                            "try:\n"
                            f"    main(['validate', '-f', {str(QUICKSTART)!r}])\n"
                            "except SystemExit as done:\n"
                            "    assert not done.code, done.code")
    assert "yaml" in loaded  # it did validate
    assert not loaded & set(NOT_FOR_VALIDATE), sorted(loaded & set(NOT_FOR_VALIDATE))


def test_registering_the_drivers_imports_lance_namespace_only_then(tmp_path):
    imported_after("import sys\n"
                   "import lance_sync.drivers\n"
                   "assert 'lance_namespace' not in sys.modules\n"
                   "lance_sync.drivers.register()\n"
                   "import lance_namespace\n"
                   f"ns = lance_namespace.connect('lance-sync-dir', {{'root': {str(tmp_path)!r}}})\n"
                   "assert type(ns).__name__ == 'DirNamespace', type(ns)")


def test_a_plan_loads_the_rest_client_s_models_and_not_its_api_classes(tmp_path):
    """The generated REST client's API classes take most of a second to import and no driver
    calls them: the CLI's process defers the package's body (lance_sync.cli.deferred)."""
    after_the_command(["plan", "-f", str(QUICKSTART)],
                      "assert 'lance_namespace' in sys.modules\n"
                      "api = [m for m in sys.modules if m.startswith('lance_namespace_urllib3_client.api')]\n"
                      "assert not api, api", cwd=tmp_path)


def test_a_first_plan_of_the_quickstart_imports_neither_pylance_nor_spark(tmp_path):
    """The start-up of `lance-sync plan` (issue 50: the quickstart's within 0.6 s) is mostly
    imports; pylance's alone, with pyarrow's datasets and pandas, was a third of it. At its end the
    process leaves the garbage collector paused: resumed, it scanned every imported object again.
    Fails on the code before (602d6a3): the dir driver imported pylance to open a root that does
    not exist."""
    shutil.copytree(QUICKSTART.parent, tmp_path / "quickstart", ignore=shutil.ignore_patterns("lakehouse", ".lance-sync"))
    after_the_command(["plan", "-f", str(tmp_path / "quickstart" / "lance-sync.yaml")],
                      f"held = sorted(set({NOT_FOR_A_FIRST_PLAN!r}) & set(sys.modules))\n"
                      "assert not held, held\n"
                      "assert 'lance_sync.plan.planner' in sys.modules  # it did plan\n"
                      "import gc\n"
                      "assert not gc.isenabled()", cwd=tmp_path)


def test_the_deferred_rest_client_still_answers_every_name(tmp_path):
    """Other users of the package (lancedb, a REST namespace) get the whole package when they
    ask for a name of it, by attribute, by `from ... import`, or by `dir()`."""
    after_the_command(["plan", "-f", str(QUICKSTART)],
                      "import lance_namespace\n"
                      "import lance_namespace_urllib3_client as client\n"
                      "assert 'TableApi' in dir(client)\n"
                      "from lance_namespace_urllib3_client import ApiClient, Configuration, TableApi\n"
                      "assert client.__version__ and client.ApiClient is ApiClient\n"
                      "assert client.models.CreateNamespaceRequest is lance_namespace.CreateNamespaceRequest\n"
                      "import lancedb.namespace", cwd=tmp_path)


def test_a_package_imported_before_the_command_runs_is_left_as_it_is():
    after_the_command(["version"],
                      "assert sys.modules['lance_namespace_urllib3_client'] is client\n"
                      "assert '__getattr__' not in client.__dict__ and client.__dict__.keys() == body.keys()",
                      before="import lance_namespace_urllib3_client as client\nbody = client.__dict__.copy()")


def test_importing_lance_sync_changes_no_other_package():
    """Only the CLI's own process defers the REST client's body: a program that imports
    lance_sync (its API, its drivers, its CLI module) finds the package absent or whole."""
    imported_after("import sys\n"
                   "import lance_sync, lance_sync.api, lance_sync.drivers, lance_sync.cli\n"
                   "client = sys.modules.get('lance_namespace_urllib3_client')\n"
                   "assert client is None or '__getattr__' not in client.__dict__, client\n"
                   "import lance_namespace_urllib3_client\n"
                   "assert '__getattr__' not in lance_namespace_urllib3_client.__dict__\n"
                   "assert lance_namespace_urllib3_client.ApiClient")


def test_backend_packages_and_their_configs_import_no_client():
    """Manifest validation reads each backend's `config`: it must not pull in the backend's SDK."""
    modules = sorted({target.split(":")[0] for target in BUILTIN_RULES.values()})
    loaded = imported_after("import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules))
    clients = {"boto3", "botocore", "thrift", "pymetastore", "lance_namespace", "pyarrow", "lance"}
    assert not loaded & clients, sorted(loaded & clients)


def test_a_manifest_without_problems_loads_without_the_json_schema_checks(tmp_path):
    """The JSON Schema checks name the line of a problem: only the full road, taken at the
    first problem, needs jsonschema (its import is a tenth of a second of every plan)."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(QUICKSTART.read_text().replace("version: 1", "version: 1\nownr: typo", 1))
    loaded = imported_after("from lance_sync.manifest import load_manifest\n"
                            f"load_manifest([{str(QUICKSTART)!r}])")
    assert "yaml" in loaded and "jsonschema" not in loaded
    loaded = imported_after("from lance_sync.manifest import load_manifest\n"
                            "from lance_sync.model.errors import ManifestErrors\n"
                            "try:\n"
                            f"    load_manifest([{str(broken)!r}])\n"
                            "except ManifestErrors as problems:\n"
                            "    assert 'ownr' in str(problems), problems\n"
                            "else:\n"
                            "    raise AssertionError('no problem found')")
    assert "jsonschema" in loaded


def test_a_glue_driver_that_names_its_endpoint_and_keys_makes_no_botocore_session():
    """Glue calls go through the shared HTTP client, signed with botocore's signer: botocore's
    session and client machinery (a tenth of a second of every process) is loaded only for what
    the configuration leaves to botocore's chain."""
    loaded = imported_after(
        "import sys\n"
        "from lance_sync.drivers.glue import GlueNamespace\n"
        "GlueNamespace(endpoint='http://127.0.0.1:9', catalog_id='123456789012', region='us-east-1',\n"
        "              access_key_id='AKIAEXAMPLEKEY', secret_access_key='example-secret')\n"
        "held = {'botocore.session', 'botocore.client', 'botocore.regions'} & set(sys.modules)\n"
        "assert not held, sorted(held)")
    assert "botocore" in loaded and "boto3" not in loaded
