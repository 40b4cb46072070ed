"""Plan and apply N tables on the embedded `dir` backend; print time, API calls and peak memory.

    python bench/bench_plan.py                 # 1,000 and 10,000 tables
    python bench/bench_plan.py --sizes 500

Each size runs in a fresh subprocess (so peak RSS is that run's own) through the same code
the CLI uses: load the manifest, plan, apply, then plan again (which must find no change).
Tables are declared without data, spread over 10 namespaces.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated table counts")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
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
