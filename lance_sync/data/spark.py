"""The one way lance-sync obtains a SparkSession.

Where Spark runs is chosen once (`resolve_spark_settings`): the `--spark` CLI value, then the
environment variable LANCE_SYNC_SPARK, then the manifest's `spark:` block, else an embedded
`local[*]` session. A master starting with `sc://` is a Spark Connect server; anything else
(`local[2]`, `spark://host:7077`, `yarn`, ...) is a classic master.

pyspark is an optional extra: it is imported inside `get_spark`, never at module import.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ENV_VARIABLE = "LANCE_SYNC_SPARK"
DEFAULT_MASTER = "local[*]"
CONNECT_SCHEME = "sc://"

#: Applied to every session unless the user's conf sets the same key. UTC keeps timestamps
#: read from text sources independent of the machine's time zone.
DEFAULT_CONF = {"spark.sql.session.timeZone": "UTC"}

#: Applied to embedded (local-mode) sessions only: loopback only, no UI, quiet logs.
LOCAL_CONF = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "ERROR",
}


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here; the message says what to install or configure."""


@dataclass(frozen=True)
class SparkSettings:
    """Where Spark runs: a classic master URL (`local[2]`, `spark://...`) or `sc://host:port`."""

    master: str | None = None
    conf: dict[str, str] = field(default_factory=dict)

    @property
    def effective_master(self) -> str:
        return self.master or DEFAULT_MASTER

    @property
    def is_connect(self) -> bool:
        return self.effective_master.startswith(CONNECT_SCHEME)

    @property
    def is_local(self) -> bool:
        return self.effective_master.startswith("local")

    def key(self) -> tuple:
        return (self.effective_master, tuple(sorted(self.conf.items())))


def resolve_spark_settings(cli_value: str | None, manifest_block: dict | None) -> SparkSettings:
    """Pick the master (CLI, then $LANCE_SYNC_SPARK, then manifest, then local[*]).

    The manifest's `conf` applies whichever master wins.
    """
    block = dict(manifest_block or {})
    unknown = set(block) - {"master", "conf"}
    if unknown:
        raise ValueError(f"unknown key(s) in the spark block: {', '.join(sorted(unknown))}")
    conf = block.get("conf") or {}
    if not isinstance(conf, dict):
        raise ValueError("spark.conf must be a mapping of configuration keys to values")
    master = cli_value or os.environ.get(ENV_VARIABLE) or block.get("master") or None
    return SparkSettings(master=master, conf={str(k): _conf_value(v) for k, v in conf.items()})


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_sessions: dict[tuple, SparkSession] = {}


def get_spark(settings: SparkSettings | None = None) -> SparkSession:
    """The SparkSession for these settings, created on first use and cached for the process.

    The `lance` format is installed on it (`lance_sync.spark.install`). A process holds either
    one classic session or Spark Connect sessions (PySpark's Connect mode is process-wide);
    asking for anything else raises SparkUnavailableError.
    """
    settings = settings or SparkSettings()
    session = _sessions.get(settings.key())
    if session is None:
        _check_can_add(settings)
        session = _connect(settings) if settings.is_connect else _start_classic(settings)
        from lance_sync.data.lance_source import install_lance_format

        install_lance_format(session)
        _sessions[settings.key()] = session
    if not settings.is_connect:
        activate_in_this_thread(session)
    return session


def activate_in_this_thread(session: SparkSession) -> None:
    """Make the session the JVM thread's active one.

    PySpark pins each Python thread to its own JVM thread, and Spark looks Python data sources
    up through the thread's active session: without this, `format("lance")` is not found from
    an apply worker thread. PySpark's own getOrCreate does the same call.
    """
    jvm = session._jvm
    assert jvm is not None, "a classic (not Connect) session has a JVM"
    jvm.SparkSession.setActiveSession(session._jsparkSession)


def stop_spark(settings: SparkSettings | None = None) -> None:
    """Stop the cached session for these settings, if any (a Connect session just disconnects)."""
    session = _sessions.pop((settings or SparkSettings()).key(), None)
    if session is not None:
        session.stop()


def _check_can_add(settings: SparkSettings) -> None:
    if not _sessions:
        return
    if settings.is_connect and all(is_connect_session(s) for s in _sessions.values()):
        return
    raise SparkUnavailableError(
        f"cannot start a Spark session for {settings.effective_master}: this process already "
        "has one with other settings (one classic session, or Spark Connect sessions only)"
    )


def _start_classic(settings: SparkSettings) -> SparkSession:
    session_class = _import_pyspark("spark").SparkSession
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise SparkUnavailableError(
            "Spark needs Java 17 or newer: install a JRE (for example the Debian package "
            "openjdk-17-jre-headless) or set JAVA_HOME"
        )
    conf = {**DEFAULT_CONF, **(LOCAL_CONF if settings.is_local else {}), **settings.conf}
    if settings.is_local:
        _prepare_local_environment()
    builder = session_class.builder.master(settings.effective_master).appName("lance-sync")
    for key, value in conf.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # pylance warns before any fork; launching the JVM is fork + exec, which is safe.
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        return builder.getOrCreate()


def _prepare_local_environment() -> None:
    """Python workers run this interpreter and can import lance_sync; Spark binds to loopback."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    python_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_parent not in python_path:
        os.environ["PYTHONPATH"] = os.pathsep.join([package_parent, *python_path])


def _connect(settings: SparkSettings) -> SparkSession:
    session_class = _import_pyspark("connect").SparkSession
    builder = session_class.builder.remote(settings.effective_master)
    for key, value in {**DEFAULT_CONF, **settings.conf}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def is_connect_session(session: SparkSession) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


def _import_pyspark(extra: str) -> Any:
    """Import pyspark.sql, or explain which lance-sync extra provides it."""
    try:
        import pyspark.sql

        if extra == "connect":
            import pyspark.sql.connect.session  # noqa: F401  (needs grpcio and friends)
    except ImportError as e:
        raise SparkUnavailableError(
            f"this command needs Spark: pip install 'lance-sync[{extra}]' ({e})"
        ) from e
    return pyspark.sql
