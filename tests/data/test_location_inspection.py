"""inspect_location tells valid, missing, not-Lance and corrupt locations apart, on both engines."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from lance_sync.data import inspection as locations_module
from lance_sync.data.inspection import inspect_location, inspect_locations
from lance_sync.model.arrow_types import columns_from_schema
from tests.data.tables import TYPED_SCHEMA, typed_table


@pytest.fixture
def locations(tmp_path: Path, make_dataset) -> dict[str, tuple[str, str]]:
    """name -> (uri, expected status), one per kind of location."""
    valid = make_dataset("valid.lance")

    parquet_dir = tmp_path / "parquet_dir"
    parquet_dir.mkdir()
    pq.write_table(typed_table(3), parquet_dir / "part-0.parquet")
    plain_file = tmp_path / "plain.txt"
    plain_file.write_text("not a dataset")
    (tmp_path / "empty_dir").mkdir()

    truncated = make_dataset("truncated.lance")
    for manifest in (truncated / "_versions").iterdir():
        manifest.write_bytes(manifest.read_bytes()[:20])
    lost_file = make_dataset("lost_file.lance")
    next((lost_file / "data").iterdir()).unlink()
    no_versions = make_dataset("no_manifests.lance")
    for manifest in (no_versions / "_versions").iterdir():
        manifest.unlink()

    return {
        "valid": (str(valid), "valid"),
        "valid file uri": (f"file://{valid}/", "valid"),
        "missing": (str(tmp_path / "nothing.lance"), "missing"),
        "empty directory": (str(tmp_path / "empty_dir"), "missing"),
        "parquet directory": (str(parquet_dir), "not_lance"),
        "plain file": (str(plain_file), "not_lance"),
        "truncated manifest": (str(truncated), "corrupt"),
        "deleted data file": (str(lost_file), "corrupt"),
        "no manifests": (str(no_versions), "corrupt"),
    }


def test_each_kind_of_location_is_classified(locations):
    for name, (uri, expected) in locations.items():
        report = inspect_location(uri)
        assert (name, report.status) == (name, expected), report.error
        assert report.uri == uri


def test_valid_dataset_reports_version_rows_and_columns(make_dataset):
    location = make_dataset("t.lance", rows=25)
    report = inspect_location(str(location))
    assert (report.version, report.row_count, report.error) == (1, 25, None)
    assert report.columns == columns_from_schema(TYPED_SCHEMA)


def test_problems_are_explained(locations):
    assert "without _versions" in inspect_location(locations["parquet directory"][0]).error
    assert "a file" in inspect_location(locations["plain file"][0]).error
    assert "data file missing" in inspect_location(locations["deleted data file"][0]).error
    assert inspect_location(locations["truncated manifest"][0]).error


def test_storage_failure_is_unreachable_not_missing():
    options = {
        "aws_endpoint": "http://127.0.0.1:9",
        "aws_region": "us-east-1",
        "aws_access_key_id": "x",
        "aws_secret_access_key": "y",
        # no store retries: what is checked is how a refused store is reported, not how long
        # the defaults (model.storage_options.STORE_DEFAULTS) keep trying
        "client_max_retries": "0",
    }
    report = inspect_location("s3://bucket/table.lance", options)
    assert report.status == "unreachable"
    assert report.error


@pytest.mark.parametrize("engine", ["threads", pytest.param("spark", marks=pytest.mark.spark)])
def test_engines_agree_with_the_function_and_keep_order(request, engine, locations):
    settings = request.getfixturevalue("spark_settings") if engine == "spark" else None
    uris = [uri for uri, _ in locations.values()] * 3
    reports = inspect_locations(uris, engine=engine, spark_settings=settings)
    assert reports == [inspect_location(uri) for uri in uris]


def test_auto_engine_uses_spark_from_the_threshold_on(monkeypatch):
    used = []
    monkeypatch.setattr(
        locations_module, "_inspect_with_threads", lambda uris, *a: used.append("threads")
    )
    monkeypatch.setattr(
        locations_module, "_inspect_with_spark", lambda uris, *a: used.append("spark")
    )
    inspect_locations(["a", "b"], spark_threshold=3)
    inspect_locations(["a", "b", "c"], spark_threshold=3)
    assert used == ["threads", "spark"]


def test_a_shared_parent_is_listed_instead_of_asking_for_each_location(tmp_path, monkeypatch, make_dataset):
    """Locations absent from their parent's listing are missing without a call of their own."""
    present = [str(make_dataset("valid.lance")), str(tmp_path / "empty_dir")]
    (tmp_path / "empty_dir").mkdir()
    missing = [str(tmp_path / f"t{i}.lance") for i in range(20)]
    asked: list[str] = []
    inspect_one = locations_module.inspect_location
    monkeypatch.setattr(locations_module, "inspect_location",
                        lambda uri, **options: asked.append((uri, options["listed_as"]))
                        or inspect_one(uri, **options))
    stat = locations_module.Storage.info
    monkeypatch.setattr(locations_module.Storage, "info",
                        lambda storage, path: asked.append(path) or stat(storage, path))

    reports = inspect_locations(missing + present, engine="threads")

    assert [r.status for r in reports] == ["missing"] * 20 + ["valid", "missing"]
    # asked for on their own, but not for their type: the listing told it
    assert sorted(asked) == [(uri, pafs.FileType.Directory) for uri in sorted(present)]
