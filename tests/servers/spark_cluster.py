"""A Spark standalone cluster from the pyspark package: one master and N workers on 127.0.0.1.

`start(workdir, workers=2)` is what the `spark_cluster` fixture calls. Everything binds to
loopback (SPARK_LOCAL_IP, --host), web UIs are off, and each worker has its own work
directory, where Spark puts each executor's stdout and stderr (`app-*/<n>/stderr`): the
proof that a job ran in executor processes. A driver that connects to `master_url` must bind
to loopback too (`spark.driver.host` / `spark.driver.bindAddress` = 127.0.0.1).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers.base import free_port, log_tail, stop_process, wait_until

STARTUP_TIMEOUT_SECONDS = 120
WORKER_CORES = 1
WORKER_MEMORY = "1g"


@dataclass
class SparkCluster:
    master_url: str
    work_dirs: list[Path]
    logs: list[Path]
    startup_seconds: float
    processes: list[subprocess.Popen] = field(default_factory=list)

    def executor_logs(self) -> list[Path]:
        """Every executor's stderr so far, over all workers (`<work dir>/app-*/<n>/stderr`)."""
        return sorted(path for work_dir in self.work_dirs for path in work_dir.glob("app-*/*/stderr"))

    def applications(self) -> list[str]:
        """The ids of the applications the workers ran executors for."""
        return sorted({path.name for work_dir in self.work_dirs for path in work_dir.glob("app-*")})

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_process(process)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def start(workdir: Path, workers: int = 2) -> SparkCluster:
    """Start the master, then `workers` workers, and wait until every worker registered."""
    home = spark_home()
    environment = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
                   "SPARK_NO_DAEMONIZE": "1",
                   # no REST submission server: it would take the fixed port 6066
                   "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    spark_class = [str(home / "bin" / "spark-class")]
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    began = time.monotonic()
    cluster = SparkCluster(master_url, [], [], 0.0)
    try:
        master_log = workdir / "master.log"
        cluster.processes.append(_launch(
            [*spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(free_port())], master_log, environment))
        cluster.logs.append(master_log)
        wait_until(lambda: "ALIVE" in master_log.read_text(errors="replace"), STARTUP_TIMEOUT_SECONDS,
                   "Spark master", master_log, cluster.processes[0])
        for index in range(workers):
            work_dir = workdir / f"worker-{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            log = workdir / f"worker-{index}.log"
            cluster.processes.append(_launch(
                [*spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--webui-port", str(free_port()),
                 "--work-dir", str(work_dir), master_url], log, environment))
            cluster.work_dirs.append(work_dir)
            cluster.logs.append(log)
        wait_until(lambda: _registered_workers(master_log) >= workers, STARTUP_TIMEOUT_SECONDS,
                   f"{workers} Spark workers", master_log, cluster.processes[0])
    except BaseException:
        cluster.stop()
        raise
    cluster.startup_seconds = time.monotonic() - began
    return cluster


def _launch(command: list[str], log_path: Path, environment: dict[str, str]) -> subprocess.Popen:
    with log_path.open("ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=environment, start_new_session=True)


def _registered_workers(master_log: Path) -> int:
    return len(re.findall(r"Registering worker", master_log.read_text(errors="replace")))


def describe(cluster: SparkCluster) -> str:
    """The tail of each of the cluster's logs, for a failing test's report."""
    return "\n".join(f"--- {path}\n{log_tail(path)}" for path in cluster.logs)
