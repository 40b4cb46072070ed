"""The dir driver with other processes writing to the same root.

pylance keeps a root's namespaces and tables in one Lance table (`__manifest`), so writers
in different processes commit to one dataset. The multi-process tests run real processes
(spawn) against one local root; the single-process tests recreate a race deterministically:
the driver is handed a manifest read before another writer committed, so its commit meets
that writer's exactly as it would in a race, and Lance's own conflict detection decides.
"""

from __future__ import annotations

import multiprocessing
import traceback
from typing import Any

import lance
import pytest
from lance.dataset import MergeInsertBuilder
from lance.namespace import DirectoryNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    RegisterTableRequest,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InternalError,
    LanceNamespaceError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from lance_sync.drivers.dir.client import is_commit_conflict, short_message
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.model.marks import OWNER_KEY
from tests.support.dir_catalog import (
    connect,
    hand_stale_manifest,
    manifest,
    manifest_rows,
    properties_of,
    table_rows,
)

TABLES_PER_WRITER = 50
#: a worker's wait for the others at the start line
START_TIMEOUT_SECONDS = 120


def error_text(error: BaseException) -> str:
    return f"{type(error).__module__}.{type(error).__qualname__}: {error}"


# --- workers (module level: the spawn context imports them by name) ----------------------------


def declaring_worker(root: str, owner: str, bulk: bool, barrier: Any, results: Any) -> None:
    """Declares TABLES_PER_WRITER tables owned by `owner`: one at a time, or in batches of 10."""
    outcome: dict[str, Any] = {"worker": owner, "declared": [], "failed": {}, "crash": None}
    try:
        driver = connect(root)
        requests = [DeclareTableRequest(id=["ns", f"{owner}_{i}"], location=f"{root}/{owner}_{i}",
                                        properties={OWNER_KEY: owner, "tier": "gold"})
                    for i in range(TABLES_PER_WRITER)]
        barrier.wait(START_TIMEOUT_SECONDS)
        if bulk:
            for start in range(0, len(requests), 10):
                batch = requests[start:start + 10]
                try:
                    errors = driver.declare_tables(batch)
                except Exception as error:  # noqa: BLE001 - the test inspects it
                    errors = [error] * len(batch)
                for request, error in zip(batch, errors, strict=True):
                    if error is None:
                        outcome["declared"].append(request.id[-1])
                    else:
                        outcome["failed"][request.id[-1]] = error_text(error)
        else:
            for request in requests:
                try:
                    driver.declare_table(request)
                except Exception as error:  # noqa: BLE001 - the test inspects it
                    outcome["failed"][request.id[-1]] = error_text(error)
                else:
                    outcome["declared"].append(request.id[-1])
    except BaseException:  # noqa: BLE001 - reported to the test
        outcome["crash"] = traceback.format_exc()
    results.put(outcome)


def pylance_worker(root: str, name: str, count: int, barrier: Any, results: Any) -> None:
    """pylance itself, creating namespaces: each of its writes rewrites the manifest."""
    outcome: dict[str, Any] = {"worker": name, "failed": {}, "crash": None}
    try:
        native = DirectoryNamespace(root=root)
        barrier.wait(START_TIMEOUT_SECONDS)
        for i in range(count):
            try:
                native.create_namespace(CreateNamespaceRequest(id=[f"{name}_{i}"]))
            except Exception as error:  # noqa: BLE001 - the test inspects it
                outcome["failed"][f"{name}_{i}"] = error_text(error)
    except BaseException:  # noqa: BLE001 - reported to the test
        outcome["crash"] = traceback.format_exc()
    results.put(outcome)


def listing_worker(root: str, stop: Any, barrier: Any, results: Any) -> None:
    """Lists the tables of `ns` until told to stop (the writers are done): how many tables
    each listing had, and how many of them carried an owner."""
    outcome: dict[str, Any] = {"worker": "reader", "listings": [], "crash": None}
    try:
        driver = connect(root)
        barrier.wait(START_TIMEOUT_SECONDS)
        while True:
            last = stop.is_set()
            infos = list(driver.list_table_infos(("ns",)))
            outcome["listings"].append((len(infos), sum(OWNER_KEY in i.properties for i in infos)))
            if last:
                break
    except BaseException:  # noqa: BLE001 - reported to the test
        outcome["crash"] = traceback.format_exc()
    results.put(outcome)


def updating_worker(root: str, name: str, count: int, barrier: Any, results: Any) -> None:
    """Sets `count` properties of its own on the one table `ns$shared`, one update each."""
    outcome: dict[str, Any] = {"worker": name, "set": [], "failed": {}, "crash": None}
    try:
        driver = connect(root)
        barrier.wait(START_TIMEOUT_SECONDS)
        for i in range(count):
            key = f"{name}.{i}"
            try:
                driver.update_table_properties(("ns", "shared"), {key: str(i)}, [])
            except Exception as error:  # noqa: BLE001 - the test inspects it
                outcome["failed"][key] = error_text(error)
            else:
                outcome["set"].append(key)
    except BaseException:  # noqa: BLE001 - reported to the test
        outcome["crash"] = traceback.format_exc()
    results.put(outcome)


def run_workers(writers: list[tuple[Any, tuple[Any, ...]]], readers: list[tuple[Any, tuple[Any, ...]]] = (),
                timeout: float = 300) -> list[dict[str, Any]]:
    """Starts every worker at once (one barrier), collects each writer's outcome, then stops
    the readers (their first argument after `args` is a stop event) and collects theirs."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(writers) + len(readers))
    results = context.Queue()
    stop = context.Event()
    processes = [context.Process(target=target, args=(*args, barrier, results)) for target, args in writers]
    processes += [context.Process(target=target, args=(*args, stop, barrier, results)) for target, args in readers]
    for process in processes:
        process.start()
    try:
        outcomes = [results.get(timeout=timeout) for _ in writers]
        stop.set()
        outcomes += [results.get(timeout=timeout) for _ in readers]
    finally:
        stop.set()
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    for outcome in outcomes:
        assert outcome["crash"] is None, outcome["crash"]
    return outcomes


def assert_only_namespace_errors(failed: dict[str, str]) -> None:
    """What a caller sees is a lance_namespace error, never Lance's own."""
    for what, text in failed.items():
        assert text.startswith("lance_namespace.errors."), f"{what}: {text}"


# --- several processes -------------------------------------------------------------------------


def test_processes_declaring_into_one_root_register_each_table_once_with_its_owner(tmp_path, subprocesses):
    root = tmp_path / "lake"
    seed = connect(root)
    seed.create_namespace(CreateNamespaceRequest(id=["ns"]))
    seed.declare_tables([DeclareTableRequest(id=["ns", f"seed_{i}"], location=str(root / f"seed_{i}"),
                                             properties={OWNER_KEY: "seed"}) for i in range(10)])
    outcomes = run_workers(
        writers=[(declaring_worker, (str(root), "A", False)),
                 (declaring_worker, (str(root), "B", False)),
                 (declaring_worker, (str(root), "C", True)),
                 (pylance_worker, (str(root), "pylance", 20))],
        readers=[(listing_worker, (str(root),))])
    by_worker = {o["worker"]: o for o in outcomes}

    registered = table_rows(root)
    for owner in "ABC":
        outcome = by_worker[owner]
        assert_only_namespace_errors(outcome["failed"])
        for name in outcome["declared"]:
            rows = registered.get(f"ns${name}")
            assert rows is not None and len(rows) == 1, name
            assert properties_of(rows[0]) == {OWNER_KEY: owner, "tier": "gold"}
        for name in outcome["failed"]:  # given up: nothing of it is left behind
            assert f"ns${name}" not in registered
        assert len(outcome["declared"]) + len(outcome["failed"]) == TABLES_PER_WRITER
    assert not by_worker["pylance"]["failed"]  # pylance's own writes retry on their own
    # every registered table has exactly one row, and every row its owner
    assert all(len(rows) == 1 and OWNER_KEY in properties_of(rows[0]) for rows in registered.values())

    # a reader during the commits saw whole versions: never fewer tables than before, never
    # fewer than the seed, never a table without its owner
    listings = by_worker["reader"]["listings"]
    assert len(listings) >= 2
    counts = [count for count, _ in listings]
    assert counts[0] >= 10 and counts == sorted(counts)
    assert all(count == owned for count, owned in listings)
    assert counts[-1] == len([i for i in registered if i.startswith("ns$")])


def test_processes_updating_one_table_lose_no_update(tmp_path, subprocesses):
    root = tmp_path / "lake"
    seed = connect(root)
    seed.create_namespace(CreateNamespaceRequest(id=["ns"]))
    seed.declare_table(DeclareTableRequest(id=["ns", "shared"], location=str(root / "shared"),
                                           properties={OWNER_KEY: "o"}))
    count = 20
    outcomes = run_workers([(updating_worker, (str(root), name, count)) for name in ("A", "B", "C")])

    properties = seed.describe_table(DescribeTableRequest(id=["ns", "shared"])).properties or {}
    for outcome in outcomes:
        for key in outcome["set"]:  # an update that returned is there
            assert properties.get(key) == key.split(".")[1], key
        for key, text in outcome["failed"].items():  # one that failed says so, as code 14
            assert text.startswith("lance_namespace.errors.ConcurrentModificationError"), text
            assert key not in properties
        assert len(outcome["set"]) + len(outcome["failed"]) == count
    assert properties[OWNER_KEY] == "o"
    assert len(table_rows(root)["ns$shared"]) == 1


# --- one process, races replayed --------------------------------------------------------------


@pytest.fixture
def driver(tmp_path) -> DirNamespace:
    """A driver whose waits between tries are recorded (in `driver.waits`), not slept."""
    driver = connect(tmp_path / "lake")
    driver.create_namespace(CreateNamespaceRequest(id=["ns"]))
    driver.waits = []  # type: ignore[attr-defined]
    driver.client.sleep = driver.waits.append  # type: ignore[attr-defined]
    return driver


def test_a_declare_is_one_commit_with_its_properties(driver, tmp_path):
    root = tmp_path / "lake"
    before = manifest(root).version
    driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "data" / "t"),
                                             properties={OWNER_KEY: "o", "tier": "gold"}))
    dataset = manifest(root)
    assert dataset.version == before + 1
    [row] = table_rows(root)["ns$t"]
    assert row["location"] == "data/t" and properties_of(row) == {OWNER_KEY: "o", "tier": "gold"}
    described = driver.describe_table(DescribeTableRequest(id=["ns", "t"]))
    assert described.properties == {OWNER_KEY: "o", "tier": "gold"}
    assert described.location.endswith("/data/t")
    # register_table goes the same way
    driver.register_table(RegisterTableRequest(id=["ns", "r"], location="data/r", properties={OWNER_KEY: "o"}))
    assert manifest(root).version == before + 2
    assert properties_of(table_rows(root)["ns$r"][0]) == {OWNER_KEY: "o"}


def test_a_declare_whose_commit_fails_leaves_nothing(driver, tmp_path, monkeypatch):
    def failing_execute(self, data, *args, **kwargs):
        raise OSError("LanceError(IO): No space left on device, /rust/lance/src/io.rs:1:1")

    monkeypatch.setattr(MergeInsertBuilder, "execute", failing_execute)
    with pytest.raises(InternalError) as raised:
        driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(tmp_path / "lake" / "t"),
                                                 properties={OWNER_KEY: "o"}))
    assert "declare table ns$t" in str(raised.value) and "No space left" in str(raised.value)
    assert ".rs:" not in str(raised.value)
    assert "ns$t" not in table_rows(tmp_path / "lake")


def test_a_declare_that_lost_to_pylance_writing_the_same_table_finds_it(driver, tmp_path):
    root = tmp_path / "lake"
    stale = manifest(root)
    DirectoryNamespace(root=str(root)).register_table(RegisterTableRequest(id=["ns", "t"], location="theirs"))
    hand_stale_manifest(driver, stale)
    with pytest.raises(TableAlreadyExistsError):
        driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "mine"),
                                                 properties={OWNER_KEY: "o"}))
    [row] = table_rows(root)["ns$t"]
    assert row["location"] == "theirs"
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_declare_that_lost_to_another_driver_declaring_the_same_table_finds_it(driver, tmp_path):
    root = tmp_path / "lake"
    stale = manifest(root)
    connect(root).declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "theirs"),
                                                    properties={OWNER_KEY: "other"}))
    hand_stale_manifest(driver, stale)
    with pytest.raises(TableAlreadyExistsError):
        driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "mine"),
                                                 properties={OWNER_KEY: "o"}))
    [row] = table_rows(root)["ns$t"]
    assert properties_of(row) == {OWNER_KEY: "other"}
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_declare_that_lost_to_an_unrelated_commit_is_made_on_a_fresh_read(driver, tmp_path):
    root = tmp_path / "lake"
    stale = manifest(root)
    DirectoryNamespace(root=str(root)).create_namespace(CreateNamespaceRequest(id=["other"]))
    hand_stale_manifest(driver, stale)
    driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "t"),
                                             properties={OWNER_KEY: "o"}))
    assert properties_of(table_rows(root)["ns$t"][0]) == {OWNER_KEY: "o"}
    assert {r["object_id"] for r in manifest_rows(root) if r["object_type"] == "namespace"} == {"ns", "other"}
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_bulk_declare_that_lost_a_race_reports_the_table_taken_meanwhile(driver, tmp_path):
    root = tmp_path / "lake"
    stale = manifest(root)
    connect(root).declare_table(DeclareTableRequest(id=["ns", "b"], location=str(root / "theirs"),
                                                    properties={OWNER_KEY: "other"}))
    hand_stale_manifest(driver, stale)
    errors = driver.declare_tables([
        DeclareTableRequest(id=["ns", name], location=str(root / name), properties={OWNER_KEY: "o"})
        for name in ("a", "b", "c")])
    assert [type(e) if e else None for e in errors] == [None, TableAlreadyExistsError, None]
    rows = table_rows(root)
    assert {name: properties_of(rows[f"ns${name}"][0])[OWNER_KEY] for name in "abc"} == {
        "a": "o", "b": "other", "c": "o"}
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_property_update_that_raced_another_keeps_both(driver, tmp_path):
    root = tmp_path / "lake"
    driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "t"),
                                             properties={OWNER_KEY: "o"}))
    stale = manifest(root)
    connect(root).update_table_properties(("ns", "t"), {"theirs": "1"}, [])
    hand_stale_manifest(driver, stale)
    driver.update_table_properties(("ns", "t"), {"mine": "2"}, [OWNER_KEY])
    described = driver.describe_table(DescribeTableRequest(id=["ns", "t"]))
    assert described.properties == {"theirs": "1", "mine": "2"}
    assert len(table_rows(root)["ns$t"]) == 1
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_namespace_property_update_that_raced_another_keeps_both(driver, tmp_path):
    root = tmp_path / "lake"
    stale = manifest(root)
    connect(root).update_namespace_properties(("ns",), {"theirs": "1"}, [])
    hand_stale_manifest(driver, stale)
    driver.update_namespace_properties(("ns",), {"mine": "2"}, [])
    assert driver.describe_namespace(DescribeNamespaceRequest(id=["ns"])).properties == {"theirs": "1", "mine": "2"}
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_a_property_update_of_a_table_deregistered_meanwhile_is_not_found(driver, tmp_path):
    root = tmp_path / "lake"
    driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "t"),
                                             properties={OWNER_KEY: "o"}))
    stale = manifest(root)
    DirectoryNamespace(root=str(root)).deregister_table(DeregisterTableRequest(id=["ns", "t"]))
    hand_stale_manifest(driver, stale)
    with pytest.raises(TableNotFoundError):
        driver.update_table_properties(("ns", "t"), {"mine": "2"}, [])
    assert "ns$t" not in table_rows(root)
    assert len(driver.waits) == 1  # the first try lost the race and was made again


def test_conflicts_that_persist_end_in_concurrent_modification(driver, tmp_path):
    root = tmp_path / "lake"
    stale = manifest(root)
    DirectoryNamespace(root=str(root)).create_namespace(CreateNamespaceRequest(id=["other"]))
    driver.client.commit_attempts = 3
    hand_stale_manifest(driver, stale, times=100)
    with pytest.raises(ConcurrentModificationError) as raised:
        driver.declare_table(DeclareTableRequest(id=["ns", "t"], location=str(root / "t"),
                                                 properties={OWNER_KEY: "o"}))
    message = str(raised.value)
    assert message.startswith("dir: declare table ns$t in " + str(root))
    assert "3 attempts" in message and "Incompatible transaction" in message and ".rs:" not in message
    assert len(driver.waits) == 2 and all(w >= 0 for w in driver.waits)
    assert "ns$t" not in table_rows(root)


def test_create_namespace_exist_ok_whose_namespace_went_meanwhile_creates_it(driver, tmp_path):
    """The create finds the namespace; another writer drops it before ExistOk reads it."""
    driver.create_namespace(CreateNamespaceRequest(id=["x"], properties={"a": "1"}))
    describe = driver.describe_namespace
    looked = []

    def dropped_before_the_first_look(request):
        looked.append(request.id)
        if len(looked) == 1:
            DirectoryNamespace(root=str(tmp_path / "lake")).drop_namespace(DropNamespaceRequest(id=["x"]))
        return describe(request)

    driver.describe_namespace = dropped_before_the_first_look  # type: ignore[method-assign]
    response = driver.create_namespace(CreateNamespaceRequest(id=["x"], mode="ExistOk", properties={"b": "2"}))
    assert response.properties == {"b": "2"} and len(looked) == 1
    assert driver.get_namespace_info(("x",)).properties == {"b": "2"}


def test_drop_namespace_skip_of_a_namespace_another_writer_dropped_succeeds(driver, tmp_path):
    driver.create_namespace(CreateNamespaceRequest(id=["x"]))
    DirectoryNamespace(root=str(tmp_path / "lake")).drop_namespace(DropNamespaceRequest(id=["x"]))
    driver.drop_namespace(DropNamespaceRequest(id=["x"], mode="Skip"))


def test_a_root_level_declare_in_a_fresh_root_keeps_its_properties(tmp_path):
    root = tmp_path / "fresh"
    driver = connect(root)
    driver.declare_table(DeclareTableRequest(id=["t"], location=str(root / "t"), properties={OWNER_KEY: "o"}))
    [row] = table_rows(root)["t"]
    assert properties_of(row) == {OWNER_KEY: "o"}


def test_a_root_level_declare_in_a_fresh_root_whose_properties_fail_is_undone(tmp_path, monkeypatch):
    root = tmp_path / "fresh"
    driver = connect(root)
    driver.client.sleep = lambda seconds: None

    def failing_update(self, *args, **kwargs):
        raise OSError("LanceError(IO): disk I/O error")

    monkeypatch.setattr(lance.LanceDataset, "update", failing_update)
    with pytest.raises(InternalError):
        driver.declare_table(DeclareTableRequest(id=["t"], location=str(root / "t"), properties={OWNER_KEY: "o"}))
    assert "t" not in table_rows(root)


@pytest.mark.parametrize("message", [
    "Incompatible transaction: This Update transaction is incompatible with concurrent transaction "
    "Overwrite at version 64., /home/runner/work/lance/lance/rust/lance/src/io/commit/conflict_resolver.rs:1050:30",
    "Too many concurrent writers. Attempted 0 retries., "
    "/home/runner/work/lance/lance/rust/lance/src/dataset/write/retry.rs:84:21",
    "Retryable commit conflict for version 7: This Update transaction was preempted by concurrent "
    "transaction Update at version 7. Please retry.",
    "Commit conflict for version 12: concurrent writers",
])
def test_lance_commit_conflicts_are_tried_again(message):
    assert is_commit_conflict(OSError(message))
    assert is_commit_conflict(RuntimeError(message))
    assert ".rs:" not in short_message(OSError(message))


@pytest.mark.parametrize("error", [
    OSError("LanceError(IO): No space left on device"),
    ValueError("Dataset at path x was not found"),
    TableAlreadyExistsError("Table already exists: ns$t"),
    LanceNamespaceError("Namespace not found"),
])
def test_other_errors_are_final(error):
    assert not is_commit_conflict(error)
