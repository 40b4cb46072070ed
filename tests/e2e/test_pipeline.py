"""The data pipeline through the CLI: materialize from sources, verify, discover."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from tests.spark_fixture import TEST_SPARK_BLOCK

VECTOR = pa.list_(pa.float32(), 4)


def run(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def write_sources(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rows = {"id": [1, 2, 3], "name": ["a", "b", "c"], "score": [0.5, 1.5, 2.5]}
    (directory / "people.csv").write_text("id,name,score\n1,a,0.5\n2,b,1.5\n3,c,2.5\n")
    (directory / "people.json").write_text("".join(json.dumps({k: v[i] for k, v in rows.items()}) + "\n"
                                                   for i in range(3)))
    vectors = pa.array([[float(i)] * 4 for i in range(3)], VECTOR)
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.uint32()), "embedding": vectors}),
                   directory / "vectors.parquet")


def pipeline_manifest(root: Path) -> dict:
    common = {"register": [{"backend": "lake", "namespace": "raw"}]}
    return {
        "version": 1, "owner": "pipeline", "spark": TEST_SPARK_BLOCK,
        "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "raw"}],
        "tables": [
            {"name": "from_csv", "location": "./lake/csv.lance", **common,
             "source": {"format": "csv", "path": "./src/people.csv", "options": {"header": True, "inferSchema": True}},
             "schema": [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"},
                        {"name": "score", "type": "float64"}]},
            {"name": "from_json", "location": "./lake/json.lance", **common,
             "source": {"format": "json", "path": "./src/people.json", "casts": {"id": "int32"}}},
            {"name": "from_parquet", "location": "./lake/parquet.lance", **common,
             "source": {"format": "parquet", "path": "./src/vectors.parquet"},
             "schema": [{"name": "id", "type": "uint32"},
                        {"name": "embedding", "type": "fixed_size_list<float32>[4]"}]},
        ],
    }


@pytest.fixture
def pipeline(tmp_path: Path, spark) -> Path:
    write_sources(tmp_path / "src")
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(pipeline_manifest(tmp_path), sort_keys=False))
    result = run("apply", "-f", str(path), "--auto-approve")
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.spark
def test_sources_are_materialized_with_their_declared_types(pipeline: Path):
    lake = pipeline.parent / "lake"
    csv = lance.dataset(str(lake / "csv.lance"))
    assert csv.schema.field("id").type == pa.int64() and csv.count_rows() == 3
    json_table = lance.dataset(str(lake / "json.lance")).to_table()
    assert json_table.schema.field("id").type == pa.int32()
    assert sorted(json_table["name"].to_pylist()) == ["a", "b", "c"]
    parquet = lance.dataset(str(lake / "parquet.lance"))
    assert parquet.schema.field("embedding").type == VECTOR
    assert parquet.schema.field("id").type == pa.uint32()
    owner = yaml.safe_load(pipeline.read_text())["owner"]
    for name in ("csv.lance", "json.lance", "parquet.lance"):  # written by Spark, with the owner's record
        assert lance.dataset(str(lake / name)).schema.metadata == {b"lance_sync.owner": owner.encode()}, name
        assert not (lake / name / "_lance_sync_intent.json").exists()


@pytest.mark.spark
def test_reapply_writes_nothing(pipeline: Path):
    lake = pipeline.parent / "lake"
    versions = {name: lance.dataset(str(lake / name)).version for name in ("csv.lance", "json.lance", "parquet.lance")}
    plan = run("plan", "-f", str(pipeline), "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output
    assert run("apply", "-f", str(pipeline), "--auto-approve").exit_code == 0
    assert versions == {name: lance.dataset(str(lake / name)).version for name in versions}


@pytest.mark.spark
def test_schema_mismatch_is_a_plan_error_unless_overwrite_is_asked(pipeline: Path):
    manifest = yaml.safe_load(pipeline.read_text())
    manifest["tables"][0]["schema"][2]["type"] = "float32"
    pipeline.write_text(yaml.safe_dump(manifest, sort_keys=False))
    refused = run("plan", "-f", str(pipeline))
    assert refused.exit_code == 1
    assert "column 'score' is declared float32 but the dataset has float64" in refused.output
    assert "on_mismatch: overwrite" in refused.output
    manifest["tables"][0]["source"]["on_mismatch"] = "overwrite"
    pipeline.write_text(yaml.safe_dump(manifest, sort_keys=False))
    plan = run("plan", "-f", str(pipeline))
    assert "-/+ replace dataset" in plan.stdout and "[destroys data]" in plan.stdout
    assert run("apply", "-f", str(pipeline), "--auto-approve").exit_code == 4  # it destroys data
    assert run("apply", "-f", str(pipeline), "--auto-approve", "--allow-drop").exit_code == 0
    rewritten = lance.dataset(str(pipeline.parent / "lake" / "csv.lance"))
    assert rewritten.schema.field("score").type == pa.float32()
    assert run("plan", "-f", str(pipeline), "--detailed-exitcode").exit_code == 0


def broken_locations(project: Path) -> dict[str, str]:
    """Locations for a manifest table each: a valid dataset, nothing, nothing yet (non-Lance data
    later, see `break_locations`) and a dataset (corrupt later)."""
    lake = project / "lake"
    valid = lake / "valid.lance"
    lance.write_dataset(pa.table({"x": [1, 2]}), str(valid))
    corrupt = lake / "corrupt.lance"
    lance.write_dataset(pa.table({"x": [1, 2]}), str(corrupt))
    return {"valid": str(valid), "gone": str(lake / "gone.lance"), "plain": str(lake / "plain"),
            "corrupt": str(corrupt)}


def break_locations(locations: dict[str, str]) -> None:
    """After they are registered (lance-sync registers no table on what is not a Lance dataset):
    non-Lance data at one, data files of the other gone."""
    plain = Path(locations["plain"])
    plain.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), plain / "part-0.parquet")
    for data_file in (Path(locations["corrupt"]) / "data").iterdir():
        data_file.unlink()


@pytest.mark.parametrize("engine", ["threads", pytest.param("spark", marks=pytest.mark.spark)])
def test_verify_classifies_every_location(tmp_path: Path, engine: str, request: pytest.FixtureRequest):
    if engine == "spark":
        request.getfixturevalue("spark")
    locations = broken_locations(tmp_path)
    manifest = {"version": 1, "owner": "verify", "spark": TEST_SPARK_BLOCK,
                "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "ns"}],
                "tables": [{"name": name, "location": location, "register": [{"backend": "lake", "namespace": "ns"}]}
                           for name, location in locations.items()]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    assert run("apply", "-f", str(path), "--auto-approve").exit_code == 0
    break_locations(locations)
    result = run("verify", "-f", str(path), "--engine", engine, "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["engine"] == engine
    status = {Path(f["location"]).name: f["status"] for f in report["findings"]}
    assert status == {"valid.lance": "valid", "gone.lance": "missing", "plain": "not_lance",
                      "corrupt.lance": "corrupt"}
    problems = {Path(f["location"]).name: " ".join(f["problems"]) for f in report["findings"]}
    assert problems["valid.lance"] == ""
    assert "dangling registration" in problems["gone.lance"]
    text = run("verify", "-f", str(path), "--engine", engine)
    assert "3 broken, 1 ok." in text.stdout


@pytest.mark.parametrize("engine", ["threads", pytest.param("spark", marks=pytest.mark.spark)])
def test_discover_finds_exactly_the_unregistered_datasets(tmp_path: Path, engine: str,
                                                          request: pytest.FixtureRequest):
    if engine == "spark":
        request.getfixturevalue("spark")
    lake = tmp_path / "lake"
    for name in ("registered.lance", "stray.lance", "deep/er/nested.lance"):
        lance.write_dataset(pa.table({"x": [1]}), str(lake / name))
    lance.write_dataset(pa.table({"x": [1]}), str(lake / "stray.lance" / "inside.lance"))  # inside a dataset
    manifest = {"version": 1, "owner": "discover", "spark": TEST_SPARK_BLOCK,
                "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "ns"}],
                "tables": [{"name": "registered", "location": "./lake/registered.lance",
                            "register": [{"backend": "lake", "namespace": "ns"}]}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    assert run("apply", "-f", str(path), "--auto-approve").exit_code == 0
    result = run("discover", "-f", str(path), str(lake), "--engine", engine)
    assert result.exit_code == 0, result.output
    snippet = yaml.safe_load(result.stdout)
    # written as the manifest writes locations: relative to its folder
    assert sorted(t["location"] for t in snippet["tables"]) == ["./lake/deep/er/nested.lance", "./lake/stray.lance"]


def test_plan_and_apply_without_a_source_never_start_spark(tmp_path: Path, subprocesses: None):
    """A manifest with no `source` must not import pyspark, let alone start a JVM."""
    manifest = {"version": 1, "owner": "nojvm", "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "ns"}],
                "tables": [{"name": "t", "location": "./lake/t.lance", "schema": [{"name": "id", "type": "int64"}],
                            "register": [{"backend": "lake", "namespace": "ns"}]}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))
    script = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from lance_sync.cli.app import main\n"
        f"for args in (['plan', '-f', {str(path)!r}], ['apply', '-f', {str(path)!r}, '--auto-approve'],"
        f" ['verify', '-f', {str(path)!r}]):\n"
        "    assert CliRunner().invoke(main, args).exit_code == 0, args\n"
        "print(sorted(m for m in sys.modules if m.startswith('pyspark') or m == 'py4j'))\n"
    )
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert output.stdout.strip() == "[]", output.stdout + output.stderr


#: what Spark and the JVM print at start-up and while they run
SPARK_LINES = re.compile(r"log4j|Using Spark's default|NativeCodeLoader|incubator modules|Setting (default|Spark) "
                         r"log level|setLogLevel| WARN | ERROR | INFO |py4j|SparkContext|\[Stage \d+")


@pytest.mark.spark
def test_the_quickstart_applies_as_a_new_user_runs_it(tmp_path: Path):
    """The README's main command, in its own process (its own embedded Spark), twice; run
    from another directory, Spark's log goes next to the manifest and never to the terminal."""
    quickstart = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
    copy = tmp_path / "quickstart"
    shutil.copytree(quickstart, copy, ignore=shutil.ignore_patterns("lakehouse", ".lance-sync"))
    command = [sys.executable, "-m", "lance_sync", "apply", "-f", "quickstart/lance-sync.yaml", "--auto-approve"]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert first.returncode == 0, first.stdout + first.stderr
    assert re.search(r"Apply complete: \d+ succeeded, 0 failed, 0 skipped", first.stdout)
    assert lance.dataset(str(copy / "lakehouse" / "data" / "customers.lance")).count_rows() == 20
    for stream in (first.stdout, first.stderr):
        assert not SPARK_LINES.search(stream), stream
    log = (copy / ".lance-sync" / "spark.log").read_text()
    assert "NativeCodeLoader" in log or "incubator modules" in log, log
    assert not (tmp_path / ".lance-sync").exists()
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert again.returncode == 0 and "No changes" in again.stdout


@pytest.mark.spark
def test_a_failed_spark_job_is_one_line_that_names_the_log(tmp_path: Path, spark, spark_settings):
    manifest = pipeline_manifest(tmp_path)
    manifest["tables"] = [{**manifest["tables"][0], "source": {"format": "csv", "path": "./src/missing.csv"}}]
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    result = run("apply", "-f", str(path), "--auto-approve")
    assert result.exit_code == 3, result.output
    failure = next(line for line in result.output.splitlines() if line.startswith("  failed:"))
    assert f"Spark's log: {spark_settings.log_path}" in failure
    assert "at org.apache" not in result.output and "Traceback" not in result.output
