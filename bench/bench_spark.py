"""The Spark data plane where it runs: local[*], a 2-worker standalone cluster, and S3 (moto).

    python bench/bench_spark.py                 # 5,000,000 rows, 10,000 datasets, 100,000 files
    python bench/bench_spark.py --quick         # 200,000 rows, 500 datasets, 5,000 files, 1 repeat
    python bench/bench_spark.py --where local,cluster --rows 1000000 --repeat 5

Starts its own moto S3 server and Spark standalone cluster (master and 2 workers of 1 core and
1 GiB) with the test suite's launchers (tests/servers), everything on 127.0.0.1, the Spark driver
too. Each Spark session runs in its own child process (a process holds one classic session):
one per place (`--where`):

    local       local[*], local disk         cluster     the cluster, local disk
    s3          local[*], moto S3            cluster-s3  the cluster, moto S3

and one child per store (local disk, S3) for the one-process baselines and lance-sync's thread
pool. The same inputs serve every place:

- materialize: N rows of Parquet (6 columns, among them uint32, timestamp[ms] and
  fixed_size_list<float32>[8], see bench_data.py) on local disk, written as a new dataset by
  `materialize` (the session's first job: "cold", then `--repeat` more: "warm"), beside one
  `lance.write_dataset` of the same Parquet files, in the same process right after each warm
  run (so that both meet the same load on a shared machine);
- verify: `inspect_locations` of D datasets (engine spark, and threads), beside opening each with
  pylance (version, row count, schema) in a 16-thread pool;
- discover: `find_lance_datasets` over a tree of F files that holds those D datasets (4 files
  each) among plain files in 20 top-level directories (engine spark, and threads), beside one
  recursive pyarrow listing of the tree that picks the directories holding `_versions/`.

Times are medians of `--repeat` runs (the cold materialize is one run per place). "client CPU" is
user+sys CPU of the measuring process and every process it started: the Spark driver's JVM and,
on local[*], the executors' Python workers; not the cluster's executors, not the S3 server (which
share the machine's cores all the same). Nothing here is part of the test suite; inputs live in
a temporary directory that is removed afterwards.
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
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

BUCKET = "bench"
THREADS = 16
TOP_LEVEL = 20  # top-level directories of the discover tree
FILES_PER_DIR = 100  # plain files per directory of the tree
FILES_PER_DATASET = 4  # what pylance writes for a one-fragment dataset (checked)
#: the issue's goals
MATERIALIZE_RATIO_GOAL = 1.5
VERIFY_SECONDS_GOAL = 30.0
PLACES = {
    "local": ("local[*]", "local"),
    "cluster": ("cluster", "local"),
    "s3": ("local[*]", "s3"),
    "cluster-s3": ("cluster", "s3"),
}


# --- measuring ------------------------------------------------------------------------------------

def _process_tree_cpu() -> float:
    """CPU seconds (user+sys) of this process and all its descendants, live or reaped."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        parents[int(entry)] = int(fields[1])
        # utime, stime, cutime, cstime (fields 14-17 of stat(5))
        times[int(entry)] = sum(int(value) for value in fields[11:15]) / tick
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier and pid not in tree]
        tree.update(children)
        frontier = children
    return sum(times.get(pid, 0.0) for pid in tree)


@dataclass
class Sample:
    seconds: float
    cpu: float
    requests: int | None = None  # served by the S3 server meanwhile


#: the S3 server's log, one line per request served (set in a child that works on S3)
REQUEST_LOG: Path | None = None


def _requests_logged() -> int:
    if REQUEST_LOG is None:
        return 0
    with REQUEST_LOG.open("rb") as log:
        return log.read().count(b" HTTP/1.")


def measure(action: Callable[[], Any]) -> tuple[Sample, Any]:
    requests, cpu, began = _requests_logged(), _process_tree_cpu(), time.perf_counter()
    result = action()
    seconds, cpu = time.perf_counter() - began, _process_tree_cpu() - cpu
    time.sleep(0.2 if REQUEST_LOG else 0)  # the server's last log lines
    served = _requests_logged() - requests if REQUEST_LOG else None
    return Sample(seconds, cpu, served), result


def median_sample(samples: list[Sample]) -> Sample:
    served = [s.requests for s in samples if s.requests is not None]
    return Sample(statistics.median(s.seconds for s in samples), statistics.median(s.cpu for s in samples),
                  int(statistics.median(served)) if served else None)


# --- inputs ---------------------------------------------------------------------------------------

def tree_layout(datasets: int, files: int) -> tuple[list[str], list[str]]:
    """Relative paths of the tree: the dataset roots, and the plain files beside them.

    Datasets and plain files are spread over TOP_LEVEL directories; plain files sit
    FILES_PER_DIR to a directory under each top-level directory's `raw/`.
    """
    plain = max(files - FILES_PER_DATASET * datasets, 0)
    roots = [f"team-{i % TOP_LEVEL:02d}/t{i:06d}.lance" for i in range(datasets)]
    per_top = -(-plain // TOP_LEVEL)
    others = []
    for top in range(TOP_LEVEL):
        for index in range(min(per_top, plain - top * per_top)):
            others.append(f"team-{top:02d}/raw/d{index // FILES_PER_DIR:04d}/f{index:05d}.json")
    return roots, others


def template_files(workdir: Path) -> dict[str, bytes]:
    """The files of one small Lance dataset (FILES_PER_DATASET), by path relative to its root."""
    import lance
    import pyarrow as pa

    template = workdir / "template.lance"
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()), "name": ["x"] * 100}),
                        str(template))
    files = {str(p.relative_to(template)): p.read_bytes() for p in template.rglob("*") if p.is_file()}
    shutil.rmtree(template)
    if len(files) != FILES_PER_DATASET:
        raise SystemExit(f"pylance wrote {len(files)} files for a dataset, not {FILES_PER_DATASET}: "
                         "adjust FILES_PER_DATASET")
    return files


def write_tree(root: str, roots: list[str], others: list[str], template: dict[str, bytes],
               storage_options: dict | None) -> None:
    """The tree at `root` (a local directory or s3://bucket/prefix), 32 threads of writes."""
    if root.startswith("s3://"):
        from tests.servers.s3 import s3_client
        client = s3_client(storage_options["aws_endpoint"])  # type: ignore[index]
        bucket, prefix = root[5:].split("/", 1)

        def put(path_and_body: tuple[str, bytes]) -> None:
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path_and_body[0]}", Body=path_and_body[1])
    else:
        def put(path_and_body: tuple[str, bytes]) -> None:
            target = Path(root) / path_and_body[0]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path_and_body[1])

    def items() -> Iterator[tuple[str, bytes]]:
        for dataset in roots:
            for relative, body in template.items():
                yield f"{dataset}/{relative}", body
        for other in others:
            yield other, b'{"not": "lance"}\n'

    with ThreadPoolExecutor(32) as pool:
        for _ in pool.map(put, items(), chunksize=64):
            pass


# --- the children: what is measured ---------------------------------------------------------------

@dataclass
class Job:
    """What a child measures (passed to it as JSON)."""

    kind: str  # "spark" or "baselines"
    store_root: str  # where the tree is, and where datasets are written
    source: str  # the Parquet directory
    rows: int
    datasets: int
    files: int
    repeat: int
    storage_options: dict | None = None
    master: str | None = None
    conf: dict | None = None
    log_file: str | None = None
    requests_log: str | None = None  # the S3 server's log


def run_child(job: Job, workdir: Path) -> dict:
    output = workdir / f"child-{time.monotonic_ns()}.json"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, __file__, "--child", json.dumps(job.__dict__), str(output)],
                            env=env, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"exited {result.returncode}: {result.stderr.strip()[-2000:]}")
    return json.loads(output.read_text())


def child(job: Job) -> dict:
    global REQUEST_LOG
    REQUEST_LOG = Path(job.requests_log) if job.requests_log else None
    if job.kind == "spark":
        return child_spark(job)
    return child_baselines(job)


def dataset_uris(job: Job) -> list[str]:
    roots, _ = tree_layout(job.datasets, job.files)
    return [f"{job.store_root}/{relative}" for relative in roots]


def _remove(uri: str, storage_options: dict | None) -> None:
    from lance_sync.data.storage import open_storage
    storage = open_storage(uri, storage_options)
    storage.filesystem.delete_dir(storage.path(uri))


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"unexpected result: {what}")


def child_spark(job: Job) -> dict:
    from bench_data import SCHEMA

    from lance_sync.data import SparkSettings, find_lance_datasets, get_spark, inspect_locations
    from lance_sync.data.materialize import materialize

    settings = SparkSettings(master=job.master, conf=job.conf or {}, log_file=job.log_file)
    result: dict[str, Any] = {}
    result["session"], _ = measure(lambda: get_spark(settings))
    source = {"format": "parquet", "path": job.source}
    writes, baseline = [], []
    for run in range(1 + job.repeat):
        location = f"{job.store_root}/materialized/run-{run}.lance"
        sample, written = measure(lambda loc=location: materialize(
            source, loc, None, "create", settings, job.storage_options))
        _expect((written.row_count, written.schema) == (job.rows, SCHEMA), f"materialize gave {written}")
        _remove(location, job.storage_options)
        writes.append(sample)
        if run:  # the baseline right after each warm run, so that both see the same load
            baseline.append(pylance_write(job))
    result["materialize cold"], result["materialize warm"] = writes[0], median_sample(writes[1:])
    result["pylance write"] = median_sample(baseline)
    uris = dataset_uris(job)
    samples = []
    for _ in range(job.repeat):
        sample, reports = measure(lambda: inspect_locations(
            uris, job.storage_options, engine="spark", spark_settings=settings))
        _expect(all(r.status == "valid" for r in reports), f"statuses {reports[0]}")
        samples.append(sample)
    result["verify spark"] = median_sample(samples)
    samples = []
    for _ in range(job.repeat):
        sample, found = measure(lambda: find_lance_datasets(
            job.store_root + "/", job.storage_options, engine="spark", spark_settings=settings))
        _expect(sorted(found) == sorted(uris), f"{len(found)} datasets found")
        samples.append(sample)
    result["discover spark"] = median_sample(samples)
    return {name: sample.__dict__ for name, sample in result.items()}


def pylance_write(job: Job) -> Sample:
    """One lance.write_dataset of the Parquet files, in this process."""
    import lance
    import pyarrow.dataset as pads

    location = f"{job.store_root}/materialized/pylance.lance"
    sample, dataset = measure(lambda: lance.write_dataset(pads.dataset(job.source), location,
                                                          storage_options=job.storage_options))
    _expect(dataset.count_rows() == job.rows, "pylance write")
    _remove(location, job.storage_options)
    return sample


def child_baselines(job: Job) -> dict:
    """lance-sync's thread pool, and what one process does with pylance and pyarrow alone."""
    import lance
    from pyarrow import fs as pafs

    from lance_sync.data import find_lance_datasets, inspect_locations
    from lance_sync.data.storage import open_storage

    options = job.storage_options
    uris = dataset_uris(job)
    result: dict[str, Sample] = {}

    def repeated(name: str, action: Callable[[], Any], check: Callable[[Any], bool]) -> None:
        samples = []
        for _ in range(job.repeat):
            sample, value = measure(action)
            _expect(check(value), name)
            samples.append(sample)
        result[name] = median_sample(samples)


    def open_one(uri: str) -> tuple:
        dataset = lance.dataset(uri, storage_options=options)
        return dataset.version, dataset.count_rows(), dataset.schema

    def open_all() -> list:
        with ThreadPoolExecutor(THREADS) as pool:
            return list(pool.map(open_one, uris))

    repeated("pylance open", open_all, lambda opened: len(opened) == len(uris))
    repeated("verify threads", lambda: inspect_locations(uris, options, engine="threads"),
             lambda reports: all(r.status == "valid" for r in reports))

    storage = open_storage(job.store_root, options)

    def list_tree() -> list[str]:
        entries = storage.filesystem.get_file_info(pafs.FileSelector(storage.path(job.store_root), recursive=True))
        return sorted({storage.uri(e.path.rsplit("/", 1)[0]) for e in entries
                       if e.base_name == "_versions" and e.type == pafs.FileType.Directory})

    repeated("pyarrow listing", list_tree, lambda found: found == sorted(uris))
    repeated("discover threads", lambda: find_lance_datasets(job.store_root + "/", options, engine="threads"),
             lambda found: sorted(found) == sorted(uris))
    return {name: sample.__dict__ for name, sample in result.items()}


# --- the table --------------------------------------------------------------------------------------

def cell(sample: dict | None) -> str:
    """Wall time, and the requests the S3 server served meanwhile."""
    if sample is None:
        return "—"
    served = f", {sample['requests']:,} requests" if sample.get("requests") is not None else ""
    return f"{sample['seconds']:.2f} s{served}"


def ratio(sample: dict | None, baseline: dict | None) -> str:
    if sample is None or not baseline or not baseline["seconds"]:
        return "—"
    return f"{sample['seconds'] / baseline['seconds']:.1f}x"


def cpu(sample: dict | None, baseline: dict | None) -> str:
    """Client CPU of lance-sync's run, then of the baseline's."""
    return " / ".join("—" if s is None else f"{s['cpu']:.1f} s" for s in (sample, baseline))


Row = tuple[str, str, "dict | None", str, "dict | None", str]


def print_table(results: dict[str, dict], args: argparse.Namespace, notes: list[str]) -> None:
    rows: list[Row] = []
    per_row: dict[str, float] = {}
    write_task = f"materialize {args.rows:,} rows"
    for place in args.where:
        master, store = PLACES[place]
        spark, base = results.get(place, {}), results.get(f"baselines-{store}", {})
        where = f"{'local[*]' if master == 'local[*]' else '2-worker cluster'}, {store_name(store)}"
        if "error" in spark:
            rows.append(("all", where, None, "", None, f"failed: {spark['error']}"))
            continue
        # the baseline written between the warm runs, in the same process
        write = spark.get("pylance write")
        cold, warm = spark.get("materialize cold"), spark.get("materialize warm")
        if cold:
            rows.append((write_task, f"{where}, cold (first job)", cold, "one lance.write_dataset", write,
                         f"— (session start-up before it: {spark['session']['seconds']:.1f} s)"))
        if warm:
            met = write is not None and warm["seconds"] <= MATERIALIZE_RATIO_GOAL * write["seconds"]
            goal = f"≤ {MATERIALIZE_RATIO_GOAL}x: {'met' if met else 'missed'}"
            per_row[place] = warm["seconds"] / args.rows
            local = "local" if store == "local" else "s3"
            if master == "cluster" and local in per_row:
                goal += (f"; per row ≤ local[*]'s: {'met' if per_row[place] <= per_row[local] else 'missed'} "
                         f"({per_row[place] * 1e6:.2f} vs {per_row[local] * 1e6:.2f} µs)")
            rows.append((write_task, f"{where}, warm", warm, "one lance.write_dataset", write, goal))
    for engine_key, baseline_key, baseline_name, goal_seconds in (
            ("verify", "pylance open", "pylance, 16 threads", VERIFY_SECONDS_GOAL),
            ("discover", "pyarrow listing", "pyarrow recursive listing", None)):
        for store in stores(args.where):
            datasets, files = sizes(args, store)
            task = f"verify {datasets:,} datasets" if engine_key == "verify" else f"discover {files:,} files"
            base = results.get(f"baselines-{store}", {})
            runs = [("threads", base.get(f"{engine_key} threads"))]
            runs += [(f"spark {'local[*]' if PLACES[p][0] == 'local[*]' else 'cluster'}",
                      results.get(p, {}).get(f"{engine_key} spark"))
                     for p in args.where if PLACES[p][1] == store]
            for engine, sample in runs:
                if sample is None:
                    continue
                goal = "—" if goal_seconds is None else \
                    f"< {goal_seconds:g} s: {'met' if sample['seconds'] < goal_seconds else 'missed'}"
                if goal_seconds is not None and datasets != args.datasets:
                    goal = f"— (the goal is for {args.datasets:,})"
                rows.append((task, f"{engine}, {store_name(store)}", sample, baseline_name,
                             base.get(baseline_key), goal))
    print()
    for note in notes:
        print(note)
    print()
    print("| task | engine, where | lance-sync | baseline | ratio | client CPU (lance-sync / baseline) | goal |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for task, where, sample, baseline_name, baseline, goal in rows:
        base = f"{cell(baseline)} ({baseline_name})" if baseline_name else "—"
        print(f"| {task} | {where} | {cell(sample)} | {base} | {ratio(sample, baseline)} | "
              f"{cpu(sample, baseline)} | {goal} |")


def sizes(args: argparse.Namespace, store: str) -> tuple[int, int]:
    """Datasets and files of the tree on this store."""
    return (args.datasets, args.files) if store == "local" else (args.s3_datasets, args.s3_files)


def store_name(store: str) -> str:
    return "local disk" if store == "local" else "S3 (moto)"


def stores(places: list[str]) -> list[str]:
    return sorted({PLACES[p][1] for p in places}, key=["local", "s3"].index)


# --- orchestration ----------------------------------------------------------------------------------

@contextmanager
def servers(places: list[str], workdir: Path) -> Iterator[dict[str, Any]]:
    """moto S3 and the standalone cluster, if a place needs them; stopped afterwards."""
    from tests.servers import s3, spark_cluster
    started: dict[str, Any] = {}
    try:
        if any(PLACES[p][1] == "s3" for p in places):
            server = s3.start(workdir)
            started["s3"] = server
            s3.new_bucket(server.endpoint, BUCKET)
        if any(PLACES[p][0] == "cluster" for p in places):
            (workdir / "cluster").mkdir()
            started["cluster"] = spark_cluster.start(workdir / "cluster", workers=2)
        yield started
    finally:
        for running in started.values():
            running.stop()


def cluster_conf() -> dict[str, str]:
    """What a driver on this machine needs to use the cluster: loopback, and executors that run
    this interpreter and import lance_sync from this checkout (lance_sync.data.spark_session passes
    spark.pyspark.python on as PYSPARK_PYTHON, which is what PySpark reads)."""
    return {"spark.pyspark.python": sys.executable, "spark.executorEnv.PYTHONPATH": str(PROJECT),
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}


def load_average() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--s3-datasets", type=int, default=1_000,
                        help="datasets of the tree on S3 (moto lists in time linear in the bucket's keys)")
    parser.add_argument("--s3-files", type=int, default=10_000, help="files of the tree on S3")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (medians are printed)")
    parser.add_argument("--where", default="local,cluster,s3,cluster-s3", help=", ".join(PLACES))
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200,000 rows, 500 datasets, "
                        "5,000 files (S3: 100 and 1,000), one repeat")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        output = child(Job(**json.loads(args.child[0])))
        Path(args.child[1]).write_text(json.dumps(output))
        return
    if args.quick:
        args.rows, args.datasets, args.files, args.repeat = 200_000, 500, 5_000, 1
        args.s3_datasets, args.s3_files = 100, 1_000
    args.where = [w for w in args.where.split(",") if w]
    unknown = set(args.where) - set(PLACES)
    if unknown:
        parser.error(f"unknown --where: {', '.join(sorted(unknown))}")

    import lance
    import pyspark
    from bench_data import write_parquet_source

    def say(text: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    notes = [f"{os.cpu_count()} cores, shared with other work (load average {load_average()} at the start); "
             f"pyspark {pyspark.__version__}, pylance {lance.__version__}, Python {sys.version.split()[0]}; "
             f"{args.rows:,} rows; {args.datasets:,} datasets and {args.files:,} files on local disk, "
             f"{args.s3_datasets:,} and {args.s3_files:,} on S3; medians of {args.repeat}"]
    scratch = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    results: dict[str, dict] = {}
    try:
        with servers(args.where, scratch) as started:
            if "cluster" in started:
                notes.append(f"cluster: {started['cluster'].master_url}, 2 workers of 1 core and 1 GiB, "
                             f"started in {started['cluster'].startup_seconds:.0f} s")
            say(f"writing {args.rows:,} rows of Parquet")
            write_parquet_source(scratch / "source", args.rows)
            template = template_files(scratch)
            store_roots: dict[str, str] = {}
            options: dict[str, dict | None] = {"local": None}
            for store in stores(args.where):
                if store == "s3":
                    options["s3"] = __import__("tests.servers.s3", fromlist=["x"]).storage_options(
                        started["s3"].endpoint)
                    store_roots["s3"] = f"s3://{BUCKET}/lake"
                else:
                    store_roots["local"] = str(scratch / "lake")
                roots, others = tree_layout(*sizes(args, store))
                say(f"writing the tree on {store_name(store)}: {len(roots):,} datasets, "
                    f"{len(roots) * len(template) + len(others):,} files")
                began = time.perf_counter()
                write_tree(store_roots[store], roots, others, template, options[store])
                notes.append(f"tree on {store_name(store)} written in {time.perf_counter() - began:.0f} s")
            def request_log(store: str) -> str | None:
                return str(started["s3"].log_path) if store == "s3" else None

            for store in stores(args.where):
                say(f"baselines and threads on {store_name(store)}")
                job = Job("baselines", store_roots[store], str(scratch / "source"), args.rows,
                          *sizes(args, store), args.repeat, options[store], requests_log=request_log(store))
                results[f"baselines-{store}"] = run_child(job, scratch)
            for place in args.where:
                master, store = PLACES[place]
                say(f"spark on {place}")
                conf = {}
                if master == "cluster":
                    master, conf = started["cluster"].master_url, cluster_conf()
                job = Job("spark", store_roots[store], str(scratch / "source"), args.rows,
                          *sizes(args, store), args.repeat, options[store], master, conf,
                          str(scratch / f"spark-{place}.log"), request_log(store))
                try:
                    results[place] = run_child(job, scratch)
                except RuntimeError as error:
                    say(f"{place} failed: {error}")
                    results[place] = {"error": str(error).splitlines()[-1][:200]}
        notes.append(f"load average at the end: {load_average()}")
    finally:
        print_table(results, args, notes)
        if args.keep:
            print(f"\nkept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
