"""A table written from a `source:` where Spark cannot start (issue 22, point 5; issue 49):
validate and plan say what to install; apply does everything else and fails that write with the
same words, not with a bare ModuleNotFoundError."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.engines import missing_engine


@pytest.fixture
def without_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    """pyspark cannot be found (as in an install without the spark extra)."""
    monkeypatch.setitem(sys.modules, "pyspark", None)


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    (tmp_path / "data.csv").write_text("id\n1\n")
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "owner": "engine",
        "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": [{"name": "orders", "location": "./lake/orders.lance",
                    "register": [{"backend": "lake", "namespace": "sales"}],
                    "source": {"format": "csv", "path": "./data.csv", "options": {"header": "true"}}}],
    }, sort_keys=False))
    return path


def test_the_missing_engine_names_the_extra(without_pyspark: None):
    assert "pip install 'lance-sync[spark]'" in (missing_engine(None) or "")
    assert "pip install 'lance-sync[connect]'" in (missing_engine("sc://spark:15002") or "")


def test_validate_says_what_to_install(without_pyspark: None, manifest: Path):
    result = CliRunner().invoke(main, ["validate", "-f", str(manifest), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert any("'orders'" in w and "lance-sync[spark]" in w for w in document["warnings"]), document


def test_plan_names_the_table_and_apply_runs_the_rest(without_pyspark: None, manifest: Path, tmp_path: Path):
    """Issue 49: the write that cannot run fails with what to install; everything else is done."""
    plan = CliRunner().invoke(main, ["plan", "-f", str(manifest), "--format", "json"])
    assert plan.exit_code == 0, plan.output
    assert any("table 'orders'" in w and "pip install 'lance-sync[spark]'" in w for w in json.loads(plan.stdout)["warnings"])
    applied = CliRunner().invoke(main, ["apply", "-f", str(manifest), "--auto-approve"])
    assert applied.exit_code == 3 and "lance-sync[spark]" in applied.output, applied.output
    from lance_sync.drivers import connect

    lake = connect("dir", {"root": str(tmp_path / "lake")})
    assert lake.get_namespace_info(("sales",)) is not None and lake.get_table_info(("sales", "orders")) is None
