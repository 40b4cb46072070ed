"""A table written from a `source:` where Spark cannot start (issue 22, point 5): validate says
what to install, plan blocks the write (exit 4) and apply refuses before anything changes,
instead of creating everything else and failing that table with ModuleNotFoundError."""

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


def test_plan_blocks_the_write_and_apply_changes_nothing(without_pyspark: None, manifest: Path, tmp_path: Path):
    plan = CliRunner().invoke(main, ["plan", "-f", str(manifest), "--format", "json"])
    assert plan.exit_code == 4, plan.output
    write = next(a for a in json.loads(plan.stdout)["actions"] if a["kind"] == "dataset")
    assert "pip install 'lance-sync[spark]'" in write["blocked"]
    applied = CliRunner().invoke(main, ["apply", "-f", str(manifest), "--auto-approve"])
    assert applied.exit_code == 4 and "lance-sync[spark]" in applied.output, applied.output
    from lance_sync.drivers import connect

    assert connect("dir", {"root": str(tmp_path / "lake")}).get_namespace_info(("sales",)) is None  # nothing made
