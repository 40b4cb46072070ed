"""Creating, rewriting and deleting datasets: all or nothing, and only what lance-sync created."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lance_sync.data.datasets import DatasetWriteError, delete_dataset, write_dataset
from lance_sync.data.inspection import inspect_location
from lance_sync.data.intents import INTENT_FILE

SCHEMA = pa.schema([("id", pa.int64())])


def empty(at: str, mode: str, target: pa.Schema | None) -> None:
    lance.write_dataset(target.empty_table(), at, mode=mode)


def create(location: Path, owner: str = "me", write=empty) -> int:
    return write_dataset(str(location), mode="create", owner=owner, apply="a1", schema=SCHEMA, write=write)


def test_a_created_dataset_carries_its_owners_record_and_no_intent(tmp_path: Path):
    location = tmp_path / "t.lance"
    assert create(location) == 1
    report = inspect_location(str(location))
    assert (report.status, report.owner, report.intent) == ("valid", "me", None)


def test_a_failed_write_leaves_the_location_as_it_was(tmp_path: Path):
    def fails(at: str, mode: str, target: pa.Schema | None) -> None:
        lance.fragment.write_fragments(pa.table({"id": [1]}), at, schema=target)  # data files, no commit
        raise RuntimeError("the source went away")

    location = tmp_path / "t.lance"
    with pytest.raises(RuntimeError, match="source went away"):
        create(location, write=fails)
    assert not location.exists()


def test_this_owners_cut_off_write_is_cleaned_and_written_again(tmp_path: Path):
    location = tmp_path / "t.lance"
    lance.fragment.write_fragments(pa.table({"id": [1]}), str(location), schema=SCHEMA)
    (location / INTENT_FILE).write_text(json.dumps({"owner": "me", "location": str(location), "apply": "a0"}))
    assert inspect_location(str(location)).status == "interrupted"
    assert create(location) == 1
    assert lance.dataset(str(location)).count_rows() == 0  # the cut-off write's rows are gone


@pytest.mark.parametrize("record", [{"owner": "other"}, {"owner": "me", "location": "/elsewhere.lance"}],
                         ids=["another owner's", "copied from elsewhere"])
def test_a_write_that_is_not_this_owners_here_is_left_alone(tmp_path: Path, record: dict):
    location = tmp_path / "t.lance"
    lance.fragment.write_fragments(pa.table({"id": [1]}), str(location), schema=SCHEMA)
    (location / INTENT_FILE).write_text(json.dumps({"location": str(location), **record}))
    with pytest.raises(DatasetWriteError, match="the location is not empty"):
        create(location)
    assert len(list((location / "data").iterdir())) == 1


def test_files_lance_sync_did_not_write_stop_the_cleaning(tmp_path: Path):
    location = tmp_path / "t.lance"
    location.mkdir()
    (location / INTENT_FILE).write_text(json.dumps({"owner": "me", "location": str(location)}))
    (location / "notes.txt").write_text("someone else's")
    with pytest.raises(DatasetWriteError, match=r"holds files lance-sync did not write \(notes.txt\)"):
        create(location)
    assert (location / "notes.txt").read_text() == "someone else's"


def test_a_half_written_intent_record_alone_is_an_empty_location(tmp_path: Path):
    location = tmp_path / "t.lance"
    location.mkdir()
    (location / INTENT_FILE).write_text('{"own')
    assert inspect_location(str(location)).status == "missing"
    assert create(location) == 1


def test_a_written_dataset_without_the_declared_columns_is_not_done(tmp_path: Path):
    def other_columns(at: str, mode: str, target: pa.Schema | None) -> None:
        lance.write_dataset(pa.schema([("name", pa.string())]).with_metadata(target.metadata).empty_table(), at)

    location = tmp_path / "t.lance"
    with pytest.raises(DatasetWriteError, match="does not have the declared columns"):
        create(location, write=other_columns)
    assert inspect_location(str(location)).intent is not None  # the next apply sees an unfinished write


def test_only_datasets_this_owner_created_are_deleted_or_rewritten(tmp_path: Path):
    theirs, mine = tmp_path / "theirs.lance", tmp_path / "mine.lance"
    lance.write_dataset(pa.table({"id": [1]}), str(theirs))
    create(mine)
    with pytest.raises(DatasetWriteError, match="carries no lance-sync owner record"):
        delete_dataset(str(theirs), owner="me")
    with pytest.raises(DatasetWriteError, match="records owner 'me'"):
        delete_dataset(str(mine), owner="other")
    with pytest.raises(DatasetWriteError, match="refusing to rewrite"):
        write_dataset(str(theirs), mode="overwrite", owner="me", apply="a2", schema=SCHEMA, write=empty)
    assert lance.dataset(str(theirs)).count_rows() == 1
    delete_dataset(str(mine), owner="me")
    delete_dataset(str(mine), owner="me")  # nothing there: deleted already
    assert not mine.exists()


def test_a_write_cut_off_inside_its_commit_is_interrupted_not_committed(tmp_path: Path):
    """Lance may have made `_versions/` but not yet its manifest: nothing was committed."""
    location = tmp_path / "t.lance"
    lance.fragment.write_fragments(pa.table({"id": [1]}), str(location), schema=SCHEMA)
    (location / "_versions").mkdir()
    (location / INTENT_FILE).write_text(json.dumps({"owner": "me", "location": str(location)}))
    assert inspect_location(str(location)).status == "interrupted"
    assert create(location) == 1


def test_a_committed_dataset_that_breaks_is_never_cleaned_as_an_unfinished_write(tmp_path: Path):
    location = tmp_path / "t.lance"
    lance.write_dataset(pa.table({"id": [1, 2]}), str(location))
    (location / INTENT_FILE).write_text(json.dumps({"owner": "me", "location": str(location)}))
    for data_file in (location / "data").iterdir():
        data_file.unlink()
    assert inspect_location(str(location)).status == "corrupt"
    with pytest.raises(DatasetWriteError, match="the location is not empty"):
        create(location)
    assert any((location / "_versions").iterdir())


def test_deleting_a_dataset_leaves_the_files_lance_did_not_write(tmp_path: Path):
    """An Iceberg catalog keeps the table's metadata in `<location>/metadata/`; apply deletes the
    data first and deregisters after, so the catalog must still find its files."""
    mine = tmp_path / "mine.lance"
    create(mine)
    (mine / "metadata").mkdir()
    (mine / "metadata" / "00000-x.metadata.json").write_text("{}")
    delete_dataset(str(mine), owner="me")
    assert sorted(p.name for p in mine.iterdir()) == ["metadata"]
    assert inspect_location(str(mine)).status == "missing"  # the catalog's metadata alone
    delete_dataset(str(mine), owner="me")  # nothing of the dataset is left: deleted already
    assert (mine / "metadata" / "00000-x.metadata.json").read_text() == "{}"
    # a location holding Lance's folders but no readable dataset is not deleted
    (mine / "data").mkdir()
    (mine / "data" / "x.lance").write_text("x")
    with pytest.raises(DatasetWriteError, match="holds no readable Lance dataset"):
        delete_dataset(str(mine), owner="me")


def test_a_delete_never_follows_a_link_out_of_its_location(tmp_path: Path):
    """Issue 46: a location that is itself a symbolic link to this owner's dataset is refused
    (on main at 94cefba the files of the dataset it points at were deleted); links inside a
    location are removed, never what they point at; a location reached through a linked folder
    is deleted where it resolves."""
    real = tmp_path / "data" / "t.lance"
    create(real)
    link = tmp_path / "link.lance"
    link.symlink_to(real)
    with pytest.raises(DatasetWriteError, match="it is a symbolic link"):
        delete_dataset(str(link), owner="me")
    assert lance.dataset(str(real)).version == 1
    link.unlink()
    outside = tmp_path / "outside"
    (outside / "kept").mkdir(parents=True)
    (outside / "kept" / "file").write_text("x")
    (real / "_versions" / "linked").symlink_to(outside)
    (tmp_path / "alias").symlink_to("data")
    delete_dataset(str(tmp_path / "alias" / "t.lance"), owner="me")
    assert not real.exists() and (outside / "kept" / "file").read_text() == "x"


def iceberg_metadata(location: Path, name: str = "00000-x.metadata.json") -> Path:
    """What an Iceberg catalog writes into a table's location when the table is registered."""
    (location / "metadata").mkdir(parents=True, exist_ok=True)
    (location / "metadata" / name).write_text('{"format-version": 2}')
    return location / "metadata" / name


def test_an_iceberg_catalogs_metadata_alone_is_an_empty_location_and_stays(tmp_path: Path):
    """A table declared in an Iceberg catalog before its data: the location holds only the
    catalog's metadata/ folder; lance-sync writes the dataset beside it, and a failed write
    cleans up around it."""
    location = tmp_path / "t.lance"
    metadata = iceberg_metadata(location)
    assert inspect_location(str(location)).status == "missing"

    def fails(at: str, mode: str, target: pa.Schema | None) -> None:
        lance.fragment.write_fragments(pa.table({"id": [1]}), at, schema=target)
        raise RuntimeError("the source went away")

    with pytest.raises(RuntimeError, match="source went away"):
        create(location, write=fails)
    assert sorted(p.name for p in location.iterdir()) == ["metadata"]
    assert create(location) == 1
    assert inspect_location(str(location)).status == "valid" and metadata.exists()


@pytest.mark.parametrize("other", ["part-0.parquet", "snap-1.avro"])
def test_a_metadata_folder_holding_anything_else_is_data(tmp_path: Path, other: str):
    location = tmp_path / "t.lance"
    iceberg_metadata(location)
    (location / "metadata" / other).write_text("x")
    assert inspect_location(str(location)).status == "not_lance"
    with pytest.raises(DatasetWriteError, match="the location is not empty"):
        create(location)


def test_a_create_whose_answers_the_store_lost_is_taken_as_done_when_tried_again(tmp_path):
    """A create tried again after a store failure finds this owner's finished dataset, with its
    intent record cleared or not: done, never 'the location is not empty'."""
    location = str(tmp_path / "t.lance")
    schema = pa.schema([pa.field("id", pa.int64())])
    written = write_dataset(location, mode="create", owner="o", apply="a1", schema=schema, write=_empty)
    again = write_dataset(location, mode="create", owner="o", apply="a1", schema=schema, write=_refused)
    assert again == written
    with pytest.raises(DatasetWriteError, match="not empty"):
        write_dataset(location, mode="create", owner="someone-else", apply="a2", schema=schema, write=_refused)


def test_a_store_that_does_not_answer_is_no_reason_to_refuse_a_create(tmp_path, monkeypatch):
    """An unreachable location is an OSError (apply retries a transient one), not 'not empty'."""
    import lance_sync.data.datasets as datasets
    from lance_sync.data.inspection import LocationReport
    from lance_sync.drivers.support.retry import is_transient_store_error

    location = str(tmp_path / "t.lance")
    monkeypatch.setattr(datasets, "inspect_location", lambda *_: LocationReport(
        location, "unreachable", error="AWS Error SERVICE_UNAVAILABLE during ListObjectsV2 operation"))
    with pytest.raises(OSError, match="the store did not say what is there") as raised:
        write_dataset(location, mode="create", owner="o", apply="a", schema=pa.schema([("id", pa.int64())]),
                      write=_refused)
    assert is_transient_store_error(raised.value)


def _empty(at: str, mode: str, target: pa.Schema | None) -> None:
    assert target is not None
    lance.write_dataset(target.empty_table(), at, mode=mode)


def _refused(at: str, mode: str, target: pa.Schema | None) -> None:
    raise AssertionError("nothing is written")
