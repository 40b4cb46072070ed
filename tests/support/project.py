"""A copy of the quickstart in a folder of its own, driven through the CLI in this process."""

from __future__ import annotations

import hashlib
from pathlib import Path

import lance_namespace as ln
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.drivers import register

#: tests of a project read it back with lance_namespace.connect("lance-sync-dir", ...)
register()

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


class Project:
    """A copy of the quickstart in a temporary directory, driven through the CLI."""

    def __init__(self, root: Path):
        """The quickstart without its Spark-materialized table (test_pipeline covers that)."""
        self.root = root
        self.manifest_path = root / "lance-sync.yaml"
        manifest = yaml.safe_load((QUICKSTART / "lance-sync.yaml").read_text())
        manifest["tables"] = [t for t in manifest["tables"] if "source" not in t]
        self.write(manifest)

    def run(self, *args: str, input: str | None = None):
        result = CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
        assert "Traceback" not in result.output
        return result

    def plan(self, *args: str):
        return self.run("plan", "-f", str(self.manifest_path), *args)

    def apply(self, *args: str):
        return self.run("apply", "-f", str(self.manifest_path), *args)

    @property
    def manifest(self) -> dict:
        return yaml.safe_load(self.manifest_path.read_text())

    def write(self, manifest: dict) -> None:
        self.manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))

    def driver(self):
        return ln.connect("lance-sync-dir", {"root": str(self.root / "lakehouse")})

    def tables(self, *namespace: str) -> list[str]:
        response = self.driver().list_tables(ln.ListTablesRequest(id=list(namespace)))
        return sorted(response.tables)

    def snapshot(self) -> dict[str, str]:
        """Every file under the project with a hash of its content."""
        return {str(p.relative_to(self.root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(self.root.rglob("*")) if p.is_file()}


def rollback_path(result) -> str:
    return next(line.split(": ", 1)[1].split(" (")[0] for line in result.stdout.splitlines()
                if line.startswith("Rollback plan:"))
