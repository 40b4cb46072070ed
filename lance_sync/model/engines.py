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
    # py4j: pyspark's bridge to the JVM, without which `import pyspark` fails
    needed = ("pyspark", "grpc", "pandas") if connect else ("pyspark", "py4j", "pandas")
    absent = [name for name in needed if importlib.util.find_spec(name) is None]
    if absent:
        return f"Spark is not installed here ({', '.join(absent)} missing): pip install 'lance-sync[{extra}]'"
    return None if connect else missing_java()


def missing_java() -> str | None:
    """Why a JVM cannot start here, as pyspark looks for it ($JAVA_HOME/bin/java, else java on
    the PATH); None when one can be tried."""
    java_home = os.environ.get("JAVA_HOME")
    install = "install a JRE (for example the Debian package openjdk-17-jre-headless; scripts/install.sh does)"
    if java_home:
        if os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
            return None
        return f"Spark needs Java 17 or newer: JAVA_HOME is {java_home}, which has no bin/java: set it right or {install}"
    if shutil.which("java"):
        return None
    return f"Spark needs Java 17 or newer, which is not installed here: {install}"
