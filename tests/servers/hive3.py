"""The project's Hive Metastore 3.x test server (catalogs; see hive3_server/), as a
subprocess so it neither shares the test process's GIL nor outlives the session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.servers.base import RunningServer
from tests.servers.hive_support import launch

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_SECONDS = 60


def start(workdir: Path) -> RunningServer:
    ports_file = workdir / "ports"
    argv = [sys.executable, "-m", "tests.servers.hive3_server",
            "--dir", str(workdir), "--ports-file", str(ports_file)]
    python_path = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": python_path}
    return launch("hive3", argv, workdir, ports_file, STARTUP_TIMEOUT_SECONDS, env)
