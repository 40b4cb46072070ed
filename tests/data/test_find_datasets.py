"""find_lance_datasets finds exactly the dataset roots under a root, on both engines."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lance_sync.data.find_datasets import find_lance_datasets
from tests.data.tables import typed_table


@pytest.fixture
def lake(tmp_path: Path, make_dataset) -> tuple[Path, list[str]]:
    """A root with nested datasets, a dataset inside a dataset, and things that are not Lance."""
    expected = [
        make_dataset("lake/a.lance"),
        make_dataset("lake/team1/b.lance"),
        make_dataset("lake/team1/deep/er/c.lance"),
        make_dataset("lake/team2/not_a_suffix"),
    ]
    make_dataset("lake/a.lance/inside.lance")  # inside a dataset: never visited
    (tmp_path / "lake/team2/parquet").mkdir(parents=True)
    pq.write_table(typed_table(2), tmp_path / "lake/team2/parquet/part-0.parquet")
    (tmp_path / "lake/empty/dirs").mkdir(parents=True)
    (tmp_path / "lake/readme.txt").write_text("hello")
    return tmp_path / "lake", sorted(str(p) for p in expected)


@pytest.mark.parametrize("engine", ["threads", pytest.param("spark", marks=pytest.mark.spark)])
def test_finds_exactly_the_datasets(request, engine, lake):
    root, expected = lake
    settings = request.getfixturevalue("spark_settings") if engine == "spark" else None
    assert find_lance_datasets(str(root), engine=engine, spark_settings=settings) == expected


def test_results_are_normalized_whatever_the_spelling_of_the_root(lake):
    root, expected = lake
    assert find_lance_datasets(f"file://{root}/") == expected
    assert find_lance_datasets(f"{root}/team1/../") == expected


def test_a_root_that_is_a_dataset_is_the_only_result(make_dataset):
    location = make_dataset("t.lance")
    assert find_lance_datasets(str(location)) == [str(location)]


def test_missing_root_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        find_lance_datasets(str(tmp_path / "nowhere"))
