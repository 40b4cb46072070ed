"""Where Spark runs, and whether it can start here: checked without importing pyspark, so that
`validate` and `plan` can say what to install before anything needs Spark."""

from __future__ import annotations

import importlib.util
import os
import shutil

DEFAULT_MASTER = "local[*]"
CONNECT_SCHEME = "sc://"


def missing_engine(master: str | None) -> str | None:
    """Why Spark cannot start here for `master` (what to install); None when it can be tried."""
    connect = (master or DEFAULT_MASTER).startswith(CONNECT_SCHEME)
    extra = "connect" if connect else "spark"
    needed = ("pyspark", "grpc", "pandas") if connect else ("pyspark", "pandas")
    absent = [name for name in needed if importlib.util.find_spec(name) is None]
    if absent:
        return f"Spark is not installed here ({', '.join(absent)} missing): pip install 'lance-sync[{extra}]'"
    if not connect and not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "Spark needs Java 17 or newer, which is not installed here (scripts/install.sh installs it)"
    return None
