"""Wall time of short CLI commands, each a fresh process, as a user or CI step sees them.

    python bench/bench_cli.py               # 10 runs of each command
    python bench/bench_cli.py --runs 20

Runs `python -m lance_sync ...` from this checkout (it goes first on PYTHONPATH) and prints
the median, fastest and slowest wall time per command, next to its goal where there is one.
Start-up is mostly imports, so this is where a heavy import creeping into a light command
shows up. `plan` runs on a copy of the quickstart (the `dir` backend, nothing written), as a
new user's first plan finds it (no root yet), and on a copy applied once without its Spark
source table (a root with its manifest table, which pylance reads).
CPU time (user+sys of the process) is printed beside the wall time: on a shared machine it
moves much less.

lance_sync is byte-compiled first (`compile_sources`), as an install compiles it: with
PYTHONDONTWRITEBYTECODE set and no `__pycache__` in the checkout, every process would compile
each module it imports again (about 0.1 s of CPU of a `plan`), which no user pays.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "examples" / "quickstart" / "lance-sync.yaml"

#: label, arguments, goal in seconds (None: measured only)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("lance-sync --help", ["--help"], 0.3),
    ("lance-sync plan --help", ["plan", "--help"], 0.3),
    ("completion script (bash)", [], 0.3),
    ("validate quickstart", ["validate", "-f", str(QUICKSTART)], 0.8),
    ("plan quickstart (dir), before its first apply", ["plan", "-f", "{copy}"], 0.6),
    ("plan quickstart (dir), applied", ["plan", "-f", "{applied}"], None),
]


def compile_sources() -> None:
    """Byte-compile lance_sync into its `__pycache__` directories (git ignores them), as
    installing the package does, so that a measured process does not compile it."""
    compileall.compile_dir(ROOT / "lance_sync", quiet=1)


def measure(arguments: list[str], runs: int, environ: dict[str, str]) -> tuple[list[float], list[float]]:
    """Wall and CPU (user+sys) seconds of each run."""
    times, cpus = [], []
    for _ in range(runs):
        with tempfile.TemporaryFile() as err:
            started = time.perf_counter()
            process = subprocess.Popen([sys.executable, "-m", "lance_sync", *arguments], env=environ,
                                       stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(process.pid, 0)
            times.append(time.perf_counter() - started)
            cpus.append(usage.ru_utime + usage.ru_stime)
            if os.waitstatus_to_exitcode(status) not in (0, 2):
                err.seek(0)
                raise SystemExit(f"lance-sync {' '.join(arguments)} failed ({os.waitstatus_to_exitcode(status)}):\n"
                                 f"{err.read().decode(errors='replace')}")
    return times, cpus


def quickstart_copies(tmp: Path, environ: dict[str, str]) -> dict[str, Path]:
    """The quickstart's manifest as a new user finds it (`copy`), and one applied (`applied`):
    without its table written from a source, whose write would start Spark."""
    copies = {}
    for name in ("copy", "applied"):
        shutil.copytree(QUICKSTART.parent, tmp / name, ignore=shutil.ignore_patterns("lakehouse", ".lance-sync"))
        copies[name] = tmp / name / "lance-sync.yaml"
    manifest = yaml.safe_load(copies["applied"].read_text())
    manifest["tables"] = [table for table in manifest["tables"] if "source" not in table]
    copies["applied"].write_text(yaml.safe_dump(manifest, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "lance_sync", "apply", "-f", str(copies["applied"]), "--auto-approve"],
                          env=environ, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"apply of the quickstart failed ({done.returncode}):\n{done.stderr}")
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    compile_sources()
    base_environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        copies = quickstart_copies(Path(tmp), base_environ)
        for label, arguments, goal in COMMANDS:
            environ = dict(base_environ)
            if not arguments:  # click's completion: the script printed by _LANCE_SYNC_COMPLETE
                environ["_LANCE_SYNC_COMPLETE"] = "bash_source"
            for name, path in copies.items():
                arguments = [a.replace(f"{{{name}}}", str(path)) for a in arguments]
            times, cpus = measure(arguments, runs, environ)
            rows.append((label, statistics.median(times), min(times), max(times), statistics.median(cpus), goal))
    print(f"{runs} runs each, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| command | median | fastest | slowest | CPU (median) | goal |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, median, fastest, slowest, cpu, goal in rows:
        verdict = "" if goal is None else f"< {goal:g} s {'ok' if median < goal else 'MISSED'}"
        print(f"| {label} | {median:.2f} s | {fastest:.2f} s | {slowest:.2f} s | {cpu:.2f} s | {verdict} |")


if __name__ == "__main__":
    main()
