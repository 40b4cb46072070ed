"""Benchmark a table's own state (issue 47): index builds, and reading index, tag and version
state during a plan, each against the pylance calls it stands for.

    python bench/bench_table_state.py --index-rows 1000000 [--repeat 3] [--dim 16] [--types BTREE,IVF_PQ]
    python bench/bench_table_state.py --state-datasets 10000 [--repeat 3] [--every 10]

Data is made once and kept under `bench/.data/` (not committed; `--data DIR` elsewhere).
Every measured run is a fresh process that times only the call (its imports, and opening or
registering the data, happen before the clock starts); a run of lance-sync and a run of the
baseline alternate (A B A B ...), and the table gives medians, since the machine is shared.

`--index-rows N`: one dataset of N rows (id int64, category string of 50 values, labels
list<string>, text string of 6 words, ts int64, key string unique, vec
fixed_size_list<float32>[dim]). For each index type, each run copies it twice; lance-sync's
copy is registered by an apply of a manifest without indexes, then the measured call is
`api.apply` of the same manifest declaring the index (plan, guards, journal, the build under
its record); the baseline's is `create_scalar_index` / `create_index` with the same column,
type, name and parameters. Wall, CPU (the process's, every thread) and peak RSS (VmHWM, reset
just before the call) of each; for lance-sync also the time of the build action itself.

`--state-datasets N`: N small datasets (10 rows; declaring ones have 3 versions), one catalog
registering them, and two manifests of the same N tables: one where every `--every`-th table
declares state (in turn `indexes:` one BTREE, `tags:` one tag, `retention:`, all three), one
declaring none. Both are applied once (the state built), so each plan finds nothing to do.
Measured: `api.plan` of each manifest, how many datasets it opened and states it read; the
read of table state is what declaring it adds to the same plan, pair by pair (the plan reads a
dataset's state as its inspection opens it). Against the raw loop: 16 threads that open each declaring dataset with
`lance.dataset` and read what its table declares, as the plan does (`describe_indices` and
each index's statistics, for its unindexed rows; `tags.list`; `versions()` for a retention or
a declared tag that is absent or elsewhere). Last, in one process whose inspection opened every
location as a plan's does, lance-sync's read (`read_table_states`) and the raw loop alternately.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = PROJECT / "bench" / ".data"
OWNER = "bench"
#: index type -> (column, parameters): modest vector parameters, so that a run takes minutes on 2 cores
INDEXES: dict[str, tuple[str, dict[str, Any]]] = {
    "BTREE": ("id", {}),
    "BITMAP": ("category", {}),
    "LABEL_LIST": ("labels", {}),
    "INVERTED": ("text", {}),
    "NGRAM": ("text", {}),
    "ZONEMAP": ("ts", {}),
    "BLOOMFILTER": ("key", {}),
    "IVF_FLAT": ("vec", {"num_partitions": 64}),
    "IVF_PQ": ("vec", {"num_partitions": 64, "num_sub_vectors": 4}),
    "IVF_HNSW_SQ": ("vec", {"num_partitions": 64, "m": 8, "ef_construction": 50}),
}
VECTOR_TYPES = {"IVF_FLAT", "IVF_PQ", "IVF_HNSW_SQ"}
RAW_THREADS = 16


# --- measuring in a child process -------------------------------------------------------------------

def reset_peak_rss() -> None:
    """Start VmHWM again from the current RSS, so the peak is the measured call's."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measured(call: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    """Wall, CPU of the whole process (every thread) and peak RSS of one call."""
    reset_peak_rss()
    began, cpu = time.perf_counter(), time.process_time()
    result = call()
    return {"seconds": time.perf_counter() - began, "cpu": time.process_time() - cpu,
            "rss_mb": peak_rss_mb()}, result


def run_child(*argv: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "LANCE_SYNC_CACHE": "off"}
    done = subprocess.run([sys.executable, __file__, *argv], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def manifest_text(tables: list[dict[str, Any]]) -> str:
    """A manifest (JSON is YAML) of a `dir` catalog at ./lake, one namespace."""
    return json.dumps({"version": 1, "owner": OWNER, "backends": {"lake": {"type": "dir", "root": "./lake"}},
                       "namespaces": [{"backend": "lake", "id": "ns"}],
                       "tables": [{**t, "register": [{"backend": "lake", "namespace": "ns"}]} for t in tables]})


def applied(manifest: Path) -> Any:
    from lance_sync import api
    result = api.apply(api.load(str(manifest)), state_dir=manifest.parent / ".lance-sync")
    if result.exit_code != 0:
        failed = result.report.with_status("failed") if result.report else []
        raise SystemExit(f"apply of {manifest} failed: {[o.error for o in failed][:3]}")
    return result


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{os.cpu_count()} cores, load average at the end {one:.2f} / {five:.2f} / {fifteen:.2f}"


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


# --- index builds (--index-rows) --------------------------------------------------------------------

def index_data(data: Path, rows: int, dim: int) -> Path:
    """The dataset every index run copies, made once."""
    base = data / f"index-{rows}-d{dim}" / "t.lance"
    if (base.parent / "ready").exists():
        return base
    import lance
    import numpy as np
    import pyarrow as pa
    shutil.rmtree(base, ignore_errors=True)
    random = np.random.default_rng(7)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"])
    ids = np.arange(rows, dtype=np.int64)
    text = [" ".join(choice) for choice in words[random.integers(0, len(words), (rows, 6))]]
    table = pa.table({
        "id": ids, "category": pa.array([f"c{i % 50}" for i in range(rows)]),
        "labels": pa.array([[f"l{i % 7}", f"l{i % 11}"] for i in range(rows)], pa.list_(pa.string())),
        "text": pa.array(text), "ts": ids * 1000, "key": pa.array([f"k{i}" for i in range(rows)]),
        "vec": pa.FixedSizeListArray.from_arrays(random.random(rows * dim, dtype=np.float32), dim)})
    lance.write_dataset(table, str(base))
    (base.parent / "ready").write_text("")
    return base


def index_child_lance_sync(workdir: str, index_type: str) -> dict[str, Any]:
    """Register the copy (not measured), then apply the manifest declaring the index."""
    import gc

    import lance_sync.data.table_state as table_state
    from lance_sync import api
    folder = Path(workdir)
    column, params = INDEXES[index_type]
    table = {"name": "t", "location": "./lake/data/t.lance"}
    (folder / "plain.yaml").write_text(manifest_text([table]))
    (folder / "indexed.yaml").write_text(manifest_text([{**table, "indexes": [
        {"name": "idx", "column": column, "type": index_type, "params": params}]}]))
    applied(folder / "plain.yaml")
    state = api.load(str(folder / "indexed.yaml"))
    build: dict[str, float] = {}
    change_part = table_state.change_part

    def timed_change(*args: Any, **kwargs: Any) -> int:
        began = time.perf_counter()
        try:
            return change_part(*args, **kwargs)
        finally:
            build["seconds"] = time.perf_counter() - began

    table_state.change_part = timed_change
    gc.disable()  # as lance-sync's commands run
    numbers, result = measured(lambda: api.apply(state, state_dir=folder / ".lance-sync"))
    if result.exit_code != 0 or [o.action.name for o in result.report.outcomes] != ["create index"]:
        raise SystemExit(f"{index_type}: the apply did not build the index: {result.report.outcomes}")
    return {**numbers, "build": build["seconds"], "check": _index_types(folder / "lake" / "data" / "t.lance")}


def index_child_pylance(location: str, index_type: str) -> dict[str, Any]:
    import lance
    column, params = INDEXES[index_type]
    dataset = lance.dataset(location)

    def call() -> None:
        if index_type in VECTOR_TYPES:
            dataset.create_index(column, index_type, name="idx", replace=True, **params)
        else:
            dataset.create_scalar_index(column, index_type, name="idx", replace=True, **params)  # type: ignore[arg-type]

    numbers, _ = measured(call)
    return {**numbers, "check": _index_types(Path(location))}


def _index_types(location: Path) -> list[str]:
    import lance
    return sorted(index.index_type for index in lance.dataset(str(location)).describe_indices())


def index_rows(args: argparse.Namespace) -> None:
    base = index_data(args.data, args.index_rows, args.dim)
    types = args.types.split(",") if args.types else list(INDEXES)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {"A": [], "B": []} for t in types}
    with tempfile.TemporaryDirectory(prefix="bench-index-", dir=args.data) as scratch:
        for run in range(args.repeat):
            for index_type in types:
                print(f"  run {run + 1}: {index_type}", file=sys.stderr)
                work = Path(scratch) / index_type
                shutil.copytree(base, work / "A" / "lake" / "data" / "t.lance")
                shutil.copytree(base, work / "B" / "t.lance")
                runs[index_type]["A"].append(run_child("--index-child-a", str(work / "A"), index_type))
                runs[index_type]["B"].append(run_child("--index-child-b", str(work / "B" / "t.lance"), index_type))
                if runs[index_type]["A"][-1]["check"] != runs[index_type]["B"][-1]["check"]:
                    raise SystemExit(f"{index_type}: the two builds differ: {runs[index_type]['A'][-1]['check']} "
                                     f"/ {runs[index_type]['B'][-1]['check']}")
                shutil.rmtree(work)
    print_index_rows(args, runs)


def print_index_rows(args: argparse.Namespace, runs: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    print(f"\nindex builds on {args.index_rows:,} rows (vectors of {args.dim} float32): {load_average()}; "
          f"medians of {args.repeat} pair(s), lance-sync and pylance alternately; peak RSS the largest\n")
    print("| type | params | pylance s (CPU s) | lance-sync apply s (CPU s) | of which the build action s "
          "| apply / pylance (each pair) | apply - pylance s | CPU apply / pylance | peak RSS MB pylance, "
          "lance-sync | goal 1.05x |")
    print("| --- | --- |" + " ---: |" * 7 + " --- |")
    for index_type, pair in runs.items():
        a, b = pair["A"], pair["B"]
        ratio = median_of(a, "seconds") / median_of(b, "seconds")
        pairs = ", ".join(f"{x['seconds'] / y['seconds']:.2f}" for x, y in zip(a, b, strict=True))
        extra = statistics.median(x["seconds"] - y["seconds"] for x, y in zip(a, b, strict=True))
        params = ", ".join(f"{k}={v}" for k, v in INDEXES[index_type][1].items()) or "defaults"
        print(f"| {index_type} | {params} | {median_of(b, 'seconds'):.2f} ({median_of(b, 'cpu'):.2f}) | "
              f"{median_of(a, 'seconds'):.2f} ({median_of(a, 'cpu'):.2f}) | {median_of(a, 'build'):.2f} | "
              f"{ratio:.2f}x ({pairs}) | {extra:+.3f} | {median_of(a, 'cpu') / median_of(b, 'cpu'):.2f}x | "
              f"{max(r['rss_mb'] for r in b):.0f}, {max(r['rss_mb'] for r in a):.0f} | "
              f"{'met' if ratio <= 1.05 else 'not met'} |")


# --- reading table state during a plan (--state-datasets) -------------------------------------------

def declared_state(position: int) -> dict[str, Any]:
    """What the `position`-th declaring table declares, in turn: indexes, tags, retention, all three."""
    index: dict[str, Any] = {"indexes": [{"name": "id_idx", "column": "id", "type": "BTREE"}]}
    tags: dict[str, Any] = {"tags": {"stable": 2}}
    retention: dict[str, Any] = {"retention": {"keep_versions": 10}}
    return [index, tags, retention, {**index, **tags, **retention}][position % 4]


def state_data(data: Path, datasets: int, every: int) -> Path:
    """N datasets registered in one catalog, the declared state built; made once."""
    folder = data / f"state-{datasets}-every{every}"
    if (folder / "ready").exists():
        return folder
    import lance
    import pyarrow as pa
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "lake" / "data").mkdir(parents=True)
    rows = pa.table({"id": list(range(10)), "name": [f"n{i}" for i in range(10)]})
    plain, declaring = [], []

    def make(i: int) -> None:
        location = str(folder / "lake" / "data" / f"t{i}.lance")
        lance.write_dataset(rows, location)
        if i % every == 0:  # versions for a tag to name and a retention to keep
            for _ in range(2):
                lance.write_dataset(rows, location, mode="append")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(make, range(datasets)))
    for i in range(datasets):
        table = {"name": f"t{i}", "location": f"./lake/data/t{i}.lance"}
        plain.append(table)
        declaring.append({**table, **declared_state(i // every)} if i % every == 0 else table)
    (folder / "plain.yaml").write_text(manifest_text(plain))
    (folder / "state.yaml").write_text(manifest_text(declaring))
    applied(folder / "state.yaml")
    (folder / "ready").write_text("")
    return folder


def write_declared(folder: Path, datasets: int, every: int) -> Path:
    """What the raw loop reads: each declaring dataset and what its table declares."""
    path = folder / "declared.json"
    path.write_text(json.dumps({
        "warm_up": str(folder / "lake" / "data" / "t1.lance"),
        "declared": [[str(folder / "lake" / "data" / f"t{i}.lance"), declared_state(i // every)]
                     for i in range(0, datasets, every)]}))
    return path


def state_child_plan(manifest: str) -> dict[str, Any]:
    """api.plan of a manifest: how many datasets it opened, how many states it read and the time
    spent reading them (summed over the threads that read them)."""
    import gc
    import threading

    import lance

    import lance_sync.data.table_state as table_state
    from lance_sync import api
    state = api.load(manifest)
    drivers = api.connect(state)
    counts: dict[str, Any] = {"opened": 0, "states": 0, "state_seconds": 0.0}
    lock = threading.Lock()
    read_state, open_dataset = table_state.read_opened_state, lance.dataset

    def timed_read(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return read_state(*args, **kwargs)
        finally:
            with lock:
                counts["states"] += 1
                counts["state_seconds"] += time.perf_counter() - began

    def counted_open(*args: Any, **kwargs: Any) -> Any:
        with lock:
            counts["opened"] += 1
        return open_dataset(*args, **kwargs)

    table_state.read_opened_state = timed_read
    lance.dataset = counted_open
    gc.disable()  # as lance-sync's commands run
    numbers, plan = measured(lambda: api.plan(state, drivers=drivers))
    if plan.has_changes:
        raise SystemExit(f"the plan of {manifest} has changes: {[a.display_id for a in plan.actions][:3]}")
    return {**numbers, **counts}


def raw_state_read(declared: list[tuple[str, dict[str, Any]]]) -> int:
    """The lower bound: 16 threads, each dataset opened with `lance.dataset` and what its table
    declares read, as the plan needs it."""
    import lance

    def read(item: tuple[str, dict[str, Any]]) -> int:
        location, state = item
        dataset = lance.dataset(location)
        found = 0
        if "indexes" in state:
            found += sum(dataset.stats.index_stats(i.name)["num_unindexed_rows"] for i in dataset.describe_indices())
        tags: dict[str, Any] = dict(dataset.tags.list()) if "tags" in state or "retention" in state else {}
        # the versions, where the plan needs them: for a retention, or to check a tag's version exists
        if "retention" in state or any(name not in tags or tags[name]["version"] != version
                                       for name, version in (state.get("tags") or {}).items()):
            found += len(dataset.versions())
        return found + len(tags)

    with ThreadPoolExecutor(RAW_THREADS) as pool:
        return sum(pool.map(read, declared))


def state_child_raw(declared_file: str) -> dict[str, Any]:
    """pylance alone in a fresh process (its runtime started on another dataset first)."""
    import lance
    declared = json.loads(Path(declared_file).read_text())
    wanted = [(location, state) for location, state in declared["declared"]]
    lance.dataset(declared["warm_up"]).count_rows()  # pylance's runtime started, as in a plan by then
    numbers, _ = measured(lambda: raw_state_read(wanted))
    return {**numbers, "opened": len(wanted) + 1, "states": len(wanted), "state_seconds": numbers["seconds"]}


def state_child_in_process(manifest: str, declared_file: str, repeat: str) -> dict[str, Any]:
    """In one process whose inspection opened every location as a plan's does: lance-sync's read
    of the declared state (`read_table_states`, 16 threads) and the raw loop, alternately."""
    import gc

    from lance_sync import api
    from lance_sync.data.table_state import read_table_states
    from lance_sync.plan.planner import inspect_declared_datasets
    state = api.load(manifest)
    inspect_declared_datasets(state, api.connect(state))
    wanted = [(t.location, None, t.table_state) for t in state.tables if t.table_state]
    declared = [(location, table) for location, table in json.loads(Path(declared_file).read_text())["declared"]]
    gc.disable()
    runs: dict[str, list[dict[str, float]]] = {"lance_sync": [], "raw": []}
    for _ in range(int(repeat)):
        runs["lance_sync"].append(measured(lambda: read_table_states(wanted, RAW_THREADS))[0])
        runs["raw"].append(measured(lambda: raw_state_read(declared))[0])
    return runs


def state_rows(args: argparse.Namespace) -> None:
    folder = state_data(args.data, args.state_datasets, args.every)
    declared = write_declared(folder, args.state_datasets, args.every)
    runs: dict[str, list[dict[str, Any]]] = {"state": [], "raw": [], "plain": []}
    for run in range(args.repeat):
        print(f"  run {run + 1}", file=sys.stderr)
        runs["state"].append(run_child("--state-child-plan", str(folder / "state.yaml")))
        runs["raw"].append(run_child("--state-child-raw", str(declared)))
        runs["plain"].append(run_child("--state-child-plan", str(folder / "plain.yaml")))
    declaring = len(json.loads(declared.read_text())["declared"])
    print(f"\nreading table state during a plan: {args.state_datasets:,} datasets, {declaring:,} of whose tables "
          f"declare state; {load_average()}; medians of {args.repeat} run(s), in turn\n")
    print("| run | datasets opened | states read (s, summed over threads) | wall s | CPU s | peak RSS MB |")
    print("| --- |" + " ---: |" * 5)
    for name, label in (("state", "plan, state declared"), ("plain", "plan, no state declared"),
                        ("raw", f"pylance, {RAW_THREADS} threads")):
        rows = runs[name]
        print(f"| {label} | {median_of(rows, 'opened'):,.0f} | {median_of(rows, 'states'):,.0f} "
              f"({median_of(rows, 'state_seconds'):.2f}) | {median_of(rows, 'seconds'):.2f} | "
              f"{median_of(rows, 'cpu'):.2f} | {max(r['rss_mb'] for r in rows):.0f} |")
    # the read of table state in a plan: what declaring it adds to the same plan, pair by pair
    added = [(a["seconds"] - c["seconds"], a["cpu"] - c["cpu"])
             for a, c in zip(runs["state"], runs["plain"], strict=True)]
    wall, cpu = statistics.median(w for w, _ in added), statistics.median(c for _, c in added)
    raw, raw_cpu = median_of(runs["raw"], "seconds"), median_of(runs["raw"], "cpu")
    pairs = ", ".join(f"{w / r['seconds']:.2f}" for (w, _), r in zip(added, runs["raw"], strict=True))
    print(f"\nthe state read (plan with state - plan without, median of pairs): {wall:.2f} s, CPU {cpu:.2f} s; "
          f"raw {raw:.2f} s, CPU {raw_cpu:.2f} s: {wall / raw:.2f}x (each run: {pairs}); goal 1.2x "
          f"{'met' if wall / raw <= 1.2 else 'not met'}")
    inside = run_child("--state-child-in-process", str(folder / "state.yaml"), str(declared), str(args.repeat))
    ours, theirs = inside["lance_sync"], inside["raw"]
    pairs = ", ".join(f"{a['seconds'] / b['seconds']:.2f}" for a, b in zip(ours, theirs, strict=True))
    ratio = median_of(ours, "seconds") / median_of(theirs, "seconds")
    print(f"in one process after the plan's inspection, alternately: read_table_states {median_of(ours, 'seconds'):.2f} s "
          f"(CPU {median_of(ours, 'cpu'):.2f} s), raw {median_of(theirs, 'seconds'):.2f} s (CPU "
          f"{median_of(theirs, 'cpu'):.2f} s): {ratio:.2f}x (each pair: {pairs}); goal 1.2x "
          f"{'met' if ratio <= 1.2 else 'not met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index-rows", type=int, help="index builds on a dataset of this many rows")
    parser.add_argument("--dim", type=int, default=16, help="--index-rows: the vectors' dimension")
    parser.add_argument("--types", help="--index-rows: comma-separated index types (default: all)")
    parser.add_argument("--state-datasets", type=int, help="plans reading the state of this many datasets")
    parser.add_argument("--every", type=int, default=10, help="--state-datasets: every N-th table declares state")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of runs (medians)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the data is made once and kept")
    for hidden in ("--index-child-a", "--index-child-b", "--state-child-plan", "--state-child-raw",
                   "--state-child-in-process"):
        parser.add_argument(hidden, nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    children: dict[str, Callable[..., dict[str, Any]]] = {"index_child_a": index_child_lance_sync, "index_child_b": index_child_pylance,
                "state_child_plan": state_child_plan, "state_child_raw": state_child_raw,
                "state_child_in_process": state_child_in_process}
    for option, child in children.items():
        if getattr(args, option):
            print(json.dumps(child(*getattr(args, option))))
            return
    if not args.index_rows and not args.state_datasets:
        parser.error("give --index-rows N and/or --state-datasets N")
    args.data.mkdir(parents=True, exist_ok=True)
    if args.index_rows:
        index_rows(args)
    if args.state_datasets:
        state_rows(args)


if __name__ == "__main__":
    main()
