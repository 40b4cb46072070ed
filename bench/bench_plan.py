"""Plan and apply N tables on the embedded `dir` backend; print time, API calls and peak memory.

    python bench/bench_plan.py                 # 1,000 and 10,000 tables
    python bench/bench_plan.py --sizes 500
    python bench/bench_plan.py --estate        # 100,000 / 500,000 / 1,000,000 on dir, 100,000 on Glue
    python bench/bench_plan.py --estate --dir-sizes 100000 --glue-sizes 0
    python bench/bench_plan.py --load 1000000  # loading the manifest alone: YAML and JSON files

Each size runs in a fresh subprocess (so peak RSS is that run's own) through the same code
the CLI uses: load the manifest, plan, apply, then plan again (which must find no change).
Tables are declared without data, spread over 10 namespaces.

`--estate` measures large estates instead (see `estate_rows`): per backend and N, the catalog
is seeded as bench_catalogs.py seeds it (every table exactly as lance-sync declares it, so
the plan finds no change), the manifest written as split files (`-f` overlays of 50,000
tables), and a fresh process (its parse cache off) loads the manifest, reads the catalog alone
(the read), then plans as build_plan does (the read again and the declared locations inspected:
on `dir` after the read, those of the tables it does not show in sync; the comparison, the plan
object: the plan), reporting each phase's wall time, the load's CPU time (this
process's, and its child processes': the parse workers and the forked half of the table
build) and the process's peak RSS,
beside the raw read (bench_raw.py in a fresh process: pylance's scan of the `__manifest`
table; Glue: SigV4-signed urllib3 GetDatabases and GetTables pages, 16 threads; wall and CPU)
and the SDK read (bench_catalogs.py's native read: Glue's boto3 GetTables pages, 16 threads).
Glue is seeded through its test server's seeding path (many CreateTable in one control request,
checked and stored as CreateTable stores them; a seeded table is read back with GetTable). On `dir` a first plan (no table yet: every table a
create action; its namespaces exist) is measured too. The machine's load average is printed with the table.

`--load N` measures loading alone: the split manifest of N tables written as YAML (a table a
line, as above) and as the same data in JSON (lance_sync.manifest.yaml_core: read_json), each loaded by
`load_manifest` in a fresh process with the parse cache off, the two alternately `--repeat`
times: wall, the CPU of the process and of its child processes (the parse workers and, from
50,000 tables, the forked half of the table build), peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMESPACES = 10


def write_manifest(directory: Path, tables: int) -> Path:
    lines = ["version: 1", "owner: bench", "backends:", "  lake: {type: dir, root: ./lake}", "namespaces:"]
    lines += [f"  - {{backend: lake, id: ns{n}, properties: {{team: t{n}}}}}" for n in range(NAMESPACES)]
    lines.append("tables:")
    for i in range(tables):
        lines.append(f"  - {{name: t{i}, location: ./lake/data/t{i}.lance, properties: {{tier: gold}}, "
                     f"register: [{{backend: lake, namespace: ns{i % NAMESPACES}}}]}}")
    path = directory / "lance-sync.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_one(tables: int) -> dict:
    """One measured run, in this process."""
    from lance_sync.apply.execute import execute
    from lance_sync.apply.options import ApplyOptions
    from lance_sync.drivers import connect_backends
    from lance_sync.manifest import load_manifest
    from lance_sync.plan.planner import build_plan

    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_manifest(Path(tmp), tables)
        started = time.perf_counter()
        state = load_manifest([str(manifest)])
        loaded = time.perf_counter()
        drivers = connect_backends(state.backends)
        plan = build_plan(state, drivers)
        planned = time.perf_counter()
        calls_before_apply = drivers["lake"].api_calls
        report = execute(plan, drivers, ApplyOptions(parallelism=8, state_dir=Path(tmp) / ".lance-sync"))
        applied = time.perf_counter()
        apply_calls = drivers["lake"].api_calls - calls_before_apply
        reloaded = load_manifest([str(manifest)])
        replan = build_plan(reloaded, connect_backends(reloaded.backends))
        replanned = time.perf_counter()
        assert report.exit_code == 0, [o.error for o in report.with_status("failed")][:3]
        assert not replan.actions, f"re-plan found {len(replan.actions)} changes"
        return {
            "tables": tables, "actions": len(plan.actions),
            "load_s": loaded - started, "plan_s": planned - loaded, "plan_calls": plan.api_calls["lake"],
            "apply_s": applied - planned, "apply_calls": apply_calls,
            "replan_s": replanned - applied, "replan_calls": replan.api_calls["lake"],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


# --- large estates (--estate) -----------------------------------------------------------------------

def _peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM: ru_maxrss would include the parent's at the fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def estate_child(paths: list[str]) -> dict[str, Any]:
    """In a fresh process: each phase of a plan, timed; the plan object's actions; peak RSS."""
    import gc
    began = time.perf_counter()
    from lance_sync.drivers import connect_backends
    from lance_sync.manifest import load_manifest
    from lance_sync.plan.observe import observe
    from lance_sync.plan.planner import assemble_plan, compare_all, read_state
    phases: dict[str, Any] = {"import": time.perf_counter() - began}
    gc.disable()  # as lance-sync's commands run (lance_sync.cli.app._pause_collections)
    mark, cpu = time.perf_counter(), time.process_time()
    state = load_manifest(paths)
    phases["load"], phases["load_cpu"] = time.perf_counter() - mark, time.process_time() - cpu
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the parse workers, the build's child
    phases["load_children_cpu"] = children.ru_utime + children.ru_stime
    phases["load_rss_mb"] = _peak_rss_mb()
    drivers = connect_backends(state.backends)
    mark, cpu = time.perf_counter(), time.process_time()
    live = observe(state, drivers)
    phases["read"], phases["read_cpu"] = time.perf_counter() - mark, time.process_time() - cpu
    phases["read_rss_mb"] = _peak_rss_mb()
    del live
    # the plan as build_plan makes it: on dir the catalog read first, then the locations of the
    # tables it does not show in sync inspected (elsewhere every location, while the catalog is read)
    mark, cpu = time.perf_counter(), time.process_time()
    observation = read_state(state, drivers, every_location=False)
    plan = assemble_plan(state, observation, compare_all(state, observation, drivers, strict=False))
    phases["plan"], phases["plan_cpu"] = time.perf_counter() - mark, time.process_time() - cpu
    phases["actions"] = len(plan.actions)
    phases["peak_rss_mb"] = _peak_rss_mb()
    return phases


def _estate_process(paths: list[Path], env: dict[str, str]) -> dict[str, Any]:
    project = str(Path(__file__).resolve().parents[1])
    output = subprocess.run([sys.executable, __file__, "--estate-child", *map(str, paths)],
                            env={**os.environ, **env, "PYTHONPATH": project, "LANCE_SYNC_CACHE": "off"}, check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def estate_rows(backend_name: str, tables: int, repeat: int, scratch: Path) -> list[dict[str, Any]]:
    """The no-change plan of `tables` seeded tables (and on dir a first plan), `repeat` times."""
    import bench_catalogs as catalogs
    backend = catalogs.BACKENDS[backend_name](scratch / f"{backend_name}-{tables}")
    backend.start()
    try:
        namespaces = [f"ns{i}" for i in range(catalogs.NAMESPACES)]
        seeded = catalogs.tables_for(backend, tables)
        began = time.perf_counter()
        backend.create_namespaces(namespaces)
        # Glue through the server's seeding path (bench_catalogs.Glue.seed_tables): CreateTable
        # over HTTP takes hours at 500,000 tables
        getattr(backend, "seed_tables", backend.create_tables)(seeded)
        print(f"  {backend_name}: seeded {tables:,} tables in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        paths = catalogs.write_manifest(backend, seeded, backend.workdir / "lance-sync.yaml")
        del seeded
        raws, sdks, runs = [], [], []
        for _ in range(repeat):
            raws.append(catalogs.raw_read(backend, tables))
            began = time.perf_counter()
            if backend.native_read(namespaces) != tables:
                raise SystemExit(f"{backend_name}: the SDK read did not find {tables} tables")
            sdks.append(time.perf_counter() - began)
            runs.append(_estate_process(paths, backend.env()))
            if runs[-1]["actions"]:
                raise SystemExit(f"{backend_name}: the seeded state plans {runs[-1]['actions']} changes")
        rows = [{**_median_row(backend_name, "in sync", tables, runs, statistics.median(r.seconds for r in raws)),
                 "raw_cpu": statistics.median(r.cpu for r in raws), "sdk": statistics.median(sdks)}]
        if backend_name == "dir":  # a first plan: the same manifest over a root of empty namespaces
            empty = catalogs.Dir(scratch / f"first-{tables}")
            empty.start()
            empty.create_namespaces(namespaces)
            first_paths = catalogs.write_manifest(empty, catalogs.tables_for(empty, tables),
                                                  empty.workdir / "lance-sync.yaml")
            first = [_estate_process(first_paths, {}) for _ in range(repeat)]
            rows.append(_median_row(backend_name, "first plan", tables, first, None))
        return rows
    finally:
        backend.stop()


def _median_row(backend: str, kind: str, tables: int, runs: list[dict[str, Any]], raw: float | None) -> dict[str, Any]:
    row: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    row["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    return {**row, "backend": backend, "kind": kind, "tables": tables, "raw": raw}


def print_estate(rows: list[dict[str, Any]], repeat: int) -> None:
    load = os.getloadavg()
    print(f"\nlance-sync estate bench: {os.cpu_count()} cores, load average at the end {load[0]:.2f} / "
          f"{load[1]:.2f} / {load[2]:.2f}; medians of {repeat} run(s), peak RSS the largest\n")
    print("| backend | plan | N | load s (CPU s here + children) | read s (CPU s) | raw read s (CPU s) | read / raw | SDK read s "
          "| plan s (CPU s) | plan / raw | actions | load peak RSS MB | read peak RSS MB | peak RSS MB |")
    print("| --- | --- |" + " ---: |" * 12)
    for r in rows:
        raw = f"{r['raw']:.2f} ({r['raw_cpu']:.2f})" if r["raw"] else "-"
        sdk = f"{r['sdk']:.2f}" if r.get("sdk") else "-"
        ratios = (f"{r['read'] / r['raw']:.2f}x", f"{r['plan'] / r['raw']:.2f}x") if r["raw"] else ("-", "-")
        print(f"| {r['backend']} | {r['kind']} | {r['tables']:,} | {r['load']:.1f} ({r['load_cpu']:.1f} + {r['load_children_cpu']:.1f}) | "
              f"{r['read']:.2f} ({r['read_cpu']:.2f}) | {raw} | {ratios[0]} | {sdk} | {r['plan']:.2f} ({r['plan_cpu']:.2f}) | "
              f"{ratios[1]} | {r['actions']:,} | {r['load_rss_mb']:.0f} | {r['read_rss_mb']:.0f} | "
              f"{r['peak_rss_mb']:.0f} |")


def estate(args: argparse.Namespace) -> None:
    import shutil
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    scratch = Path(tempfile.mkdtemp(prefix="bench-estate-"))
    rows: list[dict[str, Any]] = []
    try:
        for backend, sizes in (("dir", args.dir_sizes), ("glue", args.glue_sizes)):
            for size in (int(s) for s in sizes.split(",") if int(s)):
                print(f"{backend}: {size:,} tables ...", file=sys.stderr)
                rows += estate_rows(backend, size, args.repeat, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_estate(rows, args.repeat)


# --- loading alone (--load) -------------------------------------------------------------------------

def load_child(paths: list[str]) -> dict[str, Any]:
    """In a fresh process: load_manifest's wall time, this process's and its workers' CPU, peak RSS."""
    import gc

    from lance_sync.manifest import load_manifest
    gc.disable()  # as lance-sync's commands run
    began = time.perf_counter()
    state = load_manifest(paths)
    seconds = time.perf_counter() - began
    own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"tables": len(state.tables), "seconds": seconds, "cpu": own.ru_utime + own.ru_stime,
            "workers_cpu": workers.ru_utime + workers.ru_stime, "peak_rss_mb": _peak_rss_mb()}


def load_rows(sizes: list[int], repeat: int) -> None:
    import shutil
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import bench_catalogs as catalogs
    project = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": project, "LANCE_SYNC_CACHE": "off"}
    scratch = Path(tempfile.mkdtemp(prefix="bench-load-"))
    rows = []
    try:
        for size in sizes:
            backend = catalogs.Dir(scratch / f"dir-{size}")
            tables = catalogs.tables_for(backend, size)
            files = {kind: catalogs.write_manifest(backend, tables, backend.workdir / "lance-sync.yaml",
                                                   as_json=kind == "JSON") for kind in ("YAML", "JSON")}
            runs: dict[str, list[dict[str, Any]]] = {"YAML": [], "JSON": []}
            for _ in range(repeat):
                for kind, paths in files.items():
                    output = subprocess.run([sys.executable, __file__, "--load-child", *map(str, paths)], env=env,
                                            check=True, capture_output=True, text=True).stdout
                    runs[kind].append(json.loads(output.strip().splitlines()[-1]))
                    if runs[kind][-1]["tables"] != size:
                        raise SystemExit(f"{kind}: loaded {runs[kind][-1]['tables']} tables, not {size}")
            for kind, measured in runs.items():
                mib = sum(p.stat().st_size for p in files[kind]) / 2**20
                totals = [r["cpu"] + r["workers_cpu"] for r in measured]
                rows.append({"kind": kind, "tables": size, "files": len(files[kind]), "mib": mib,
                             **{k: statistics.median(r[k] for r in measured) for k in measured[0] if k != "tables"},
                             "total_cpu": statistics.median(totals), "each_total": totals,
                             "peak_rss_mb": max(r["peak_rss_mb"] for r in measured)})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nmanifest load: {os.cpu_count()} cores, load average at the end {load[0]:.2f} / {load[1]:.2f} / "
          f"{load[2]:.2f}; medians of {repeat} run(s), YAML and JSON alternately, peak RSS the largest\n")
    print("| files | N | files, MiB | load s | CPU s, this process | CPU s, child processes | CPU s, all | peak RSS MB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['kind']} | {r['tables']:,} | {r['files']}, {r['mib']:.0f} | {r['seconds']:.2f} | {r['cpu']:.2f} | "
              f"{r['workers_cpu']:.2f} | {r['total_cpu']:.2f} | {r['peak_rss_mb']:.0f} |")
    print("\neach run's CPU in all processes: " + "; ".join(
        f"{r['kind']} {r['tables']:,}: " + ", ".join(f"{total:.2f}" for total in r["each_total"]) for r in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated table counts")
    parser.add_argument("--estate", action="store_true", help="large estates instead: see above")
    parser.add_argument("--dir-sizes", default="100000,500000,1000000", help="--estate: table counts on dir")
    parser.add_argument("--glue-sizes", default="100000", help="--estate: table counts on Glue (moto); 0: none")
    parser.add_argument("--repeat", type=int, default=1, help="--estate, --load: runs per size (medians)")
    parser.add_argument("--load", help="loading alone, YAML and JSON files: comma-separated table counts")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--load-child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--estate-child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.estate_child:
        print(json.dumps(estate_child(args.estate_child)))
        return
    if args.load_child:
        print(json.dumps(load_child(args.load_child)))
        return
    if args.estate:
        estate(args)
        return
    if args.load:
        load_rows([int(n) for n in args.load.split(",")], args.repeat)
        return
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"running {size} tables ...", file=sys.stderr)
        output = subprocess.run([sys.executable, __file__, "--one", str(size)], check=True,
                                capture_output=True, text=True).stdout
        rows.append(json.loads(output.strip().splitlines()[-1]))
    header = (f"{'tables':>7} {'actions':>8} {'load s':>7} {'plan s':>7} {'calls':>6} {'apply s':>8} "
              f"{'calls':>7} {'replan s':>9} {'calls':>6} {'peak RSS MB':>12}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['tables']:>7} {r['actions']:>8} {r['load_s']:>7.2f} {r['plan_s']:>7.2f} {r['plan_calls']:>6} "
              f"{r['apply_s']:>8.2f} {r['apply_calls']:>7} {r['replan_s']:>9.2f} {r['replan_calls']:>6} "
              f"{r['peak_rss_mb']:>12.0f}")


if __name__ == "__main__":
    main()
