"""The one way lance-sync obtains a SparkSession.

Where Spark runs is chosen once (`resolve_spark_settings`): the `--spark` CLI value, then the
environment variable LANCE_SYNC_SPARK, then the manifest's `spark:` block, else an embedded
`local[*]` session. A master starting with `sc://` is a Spark Connect server; anything else
(`local[2]`, `spark://host:7077`, `yarn`, ...) is a classic master.

pyspark is an optional extra: it is imported inside `get_spark`, never at module import.

No line of Spark's or the JVM's reaches the user's terminal: a classic session's JVM (the
embedded one included) is started with its stdout and stderr sent to a log file
(`SparkSettings.log_file`; the CLI puts it at `.lance-sync/spark.log` next to the manifest),
and Spark's log4j configuration writes there too. Errors from Spark name that file.

The JVM writes into a pipe, not into the file: a daemon thread copies each line into the
log with every registered secret masked (`lance_sync.model.secrets`), and Spark's own redaction
(REDACTION_CONF) hides the values of secret-looking options and settings in the plans and
configuration it prints.

Spark's Python workers (the executors' and the driver's) run `worker_python`: the conf's
`spark.pyspark.python`, else on a cluster $PYSPARK_PYTHON, else this interpreter. In local mode
they inherit this process's PYTHONPATH, which gets lance_sync's parent directory; on a cluster
the package itself is shipped (`SparkContext.addPyFile` of a zip of it) unless the conf says
how executors import it (IMPORT_CONF). docs/spark.md says what executors need installed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import time
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lance_sync.model.engines import CONNECT_SCHEME, DEFAULT_MASTER, missing_java
from lance_sync.model.secrets import SECRET_KEY, copy_masked, mask
from lance_sync.model.shared import STATE_DIRECTORY, is_loopback

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

ENV_VARIABLE = "LANCE_SYNC_SPARK"
#: the log's name in lance-sync's state directory (`.lance-sync` next to the manifest)
SPARK_LOG = "spark.log"
#: where the JVM's output goes when the caller names no file (relative to the working directory)
DEFAULT_LOG_FILE = os.path.join(STATE_DIRECTORY, SPARK_LOG)

#: Spark's log4j2 configuration: warnings and errors, to the JVM's stderr (which is the log file)
LOG4J2_PROPERTIES = """\
# Written by lance-sync: Spark's log goes to the JVM's stderr, which lance-sync sends to spark.log
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yyyy-MM-dd HH:mm:ss} %p %c{1}: %m%n%ex
"""

#: Applied to every session unless the user's conf sets the same key. UTC keeps timestamps
#: read from text sources independent of the machine's time zone.
DEFAULT_CONF = {"spark.sql.session.timeZone": "UTC"}

#: Applied to classic sessions unless the user's conf sets the same key: Spark redacts the
#: values of settings and of DataFrame options whose names look secret wherever it prints
#: them (the storage options a Lance read or write carries among them), with the names
#: lance-sync itself takes for secrets.
REDACTION_CONF = {
    "spark.redaction.regex": f"(?i){SECRET_KEY.pattern}|access[.]key",
    "spark.sql.redaction.options.regex": f"(?i){SECRET_KEY.pattern}|url",
}

#: The driver on loopback: where a local session and a master on loopback reach it.
LOOPBACK_DRIVER_CONF = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}

#: Applied to embedded (local-mode) sessions only: loopback only, no UI, no progress bars.
LOCAL_CONF = {
    **LOOPBACK_DRIVER_CONF,
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

#: The interpreter of Spark's Python workers (see worker_python)
PYTHON_CONF = "spark.pyspark.python"
#: Settings by which the user says how a cluster's executors import lance_sync; with neither,
#: lance-sync ships its package to them (see ships_package)
IMPORT_CONF = ("spark.submit.pyFiles", "spark.executorEnv.PYTHONPATH")
#: the zip of the lance_sync package shipped to a cluster, next to Spark's log
PACKAGE_ZIP = "lance_sync.zip"


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here; the message says what to install or configure."""


@dataclass(frozen=True)
class SparkSettings:
    """Where Spark runs: a classic master URL (`local[2]`, `spark://...`) or `sc://host:port`."""

    master: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    #: where a classic session's JVM output and Spark's log go (default DEFAULT_LOG_FILE);
    #: not part of what makes two settings the same session
    log_file: str | None = field(default=None, compare=False)

    @property
    def effective_master(self) -> str:
        return self.master or DEFAULT_MASTER

    @property
    def log_path(self) -> Path:
        return Path(self.log_file or DEFAULT_LOG_FILE).absolute()

    @property
    def is_connect(self) -> bool:
        return self.effective_master.startswith(CONNECT_SCHEME)

    @property
    def is_local(self) -> bool:
        return self.effective_master.startswith("local")

    def key(self) -> tuple:
        return (self.effective_master, tuple(sorted(self.conf.items())))


def resolve_spark_settings(cli_value: str | None, manifest_block: dict | None,
                           log_file: str | os.PathLike | None = None) -> SparkSettings:
    """Pick the master (CLI, then $LANCE_SYNC_SPARK, then manifest, then local[*]).

    The manifest's `conf` applies whichever master wins; `log_file` receives Spark's output.
    """
    block = dict(manifest_block or {})
    unknown = set(block) - {"master", "conf"}
    if unknown:
        raise ValueError(f"unknown key(s) in the spark block: {', '.join(sorted(unknown))}")
    conf = block.get("conf") or {}
    if not isinstance(conf, dict):
        raise ValueError("spark.conf must be a mapping of configuration keys to values")
    master = cli_value or os.environ.get(ENV_VARIABLE) or block.get("master") or None
    return SparkSettings(master=master, conf={str(k): spark_text(v) for k, v in conf.items()},
                         log_file=str(log_file) if log_file is not None else None)


def spark_text(value: Any) -> str:
    """A setting's or option's value as Spark spells it (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_sessions: dict[tuple, SparkSession] = {}
#: the log file each classic session's JVM writes to (the first settings' log_file)
_session_logs: dict[tuple, Path] = {}
#: held while a session starts: apply's workers may ask for one at the same time
_starting = threading.Lock()


def get_spark(settings: SparkSettings | None = None) -> SparkSession:
    """The SparkSession for these settings, created on first use and cached for the process.

    The `lance` format is installed on it (`lance_sync.spark.install`). A process holds either
    one classic session or Spark Connect sessions (PySpark's Connect mode is process-wide);
    asking for anything else raises SparkUnavailableError. Threads asking at once get the
    one session the first of them starts.
    """
    settings = settings or SparkSettings()
    with _starting:
        session = _sessions.get(settings.key())
        if session is None:
            _check_can_add(settings)
            # a Connect URL may hold a token: only a classic master is named
            started, kind = time.monotonic(), "Spark Connect" if settings.is_connect else settings.effective_master
            logger.info("starting a Spark session (%s; its log: %s)", kind, settings.log_path)
            session = _connect(settings) if settings.is_connect else _start_classic(settings)
            logger.info("Spark session started in %.1f s", time.monotonic() - started)
            _session_logs[settings.key()] = settings.log_path
            from lance_sync.data.lance_source import install_lance_format

            install_lance_format(session)
            _sessions[settings.key()] = session
    if not settings.is_connect:
        activate_in_this_thread(session)
    return session


def spark_started(settings: SparkSettings) -> bool:
    """This process has the session for these settings already (no start to wait for)."""
    return settings.key() in _sessions


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
    key = (settings or SparkSettings()).key()
    session = _sessions.pop(key, None)
    _session_logs.pop(key, None)
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
    """A classic session whose JVM writes to `settings.log_path`, never to this terminal."""
    pyspark_sql = _import_pyspark("spark")
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    problem = missing_java()
    if problem:
        raise SparkUnavailableError(problem)
    conf = session_conf(settings)
    _prepare_environment(settings, conf)
    log_path = settings.log_path
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log4j = log_path.with_name("spark-log4j2.properties")
    log4j.write_text(LOG4J2_PROPERTIES, encoding="utf-8")
    java_options = conf.get("spark.driver.extraJavaOptions", "")
    conf["spark.driver.extraJavaOptions"] = f"{java_options} -Dlog4j.configurationFile={log4j.as_uri()}".strip()
    spark_conf = SparkConf().setMaster(settings.effective_master).setAppName("lance-sync").setAll(
        list(conf.items()))
    with log_path.open("ab") as log:
        log.write(f"--- lance-sync starts Spark ({settings.effective_master})\n".encode())
    with warnings.catch_warnings():
        # pylance warns before any fork; launching the JVM is fork + exec, which is safe.
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        try:
            # a JVM this process started before (for a session since stopped) is used again
            gateway = SparkContext._gateway or _launch_gateway(launch_gateway, spark_conf, log_path)
            context = SparkContext(conf=spark_conf, gateway=gateway)
            if ships_package(settings):
                context.addPyFile(str(package_zip(log_path.with_name(PACKAGE_ZIP))))
        except Exception as error:
            raise SparkUnavailableError(f"Spark did not start: {root_cause(error)} (Spark's log: "
                                        f"{_shown(log_path)})") from error
    return pyspark_sql.SparkSession.builder.getOrCreate()


def session_conf(settings: SparkSettings, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The conf of a classic session: lance-sync's defaults, then the user's conf over them.

    The driver binds to loopback in local mode and when the master is a standalone master on
    loopback; the Python workers' interpreter is `worker_python`.
    """
    on_loopback = settings.is_local or is_loopback_master(settings.effective_master)
    return {
        **DEFAULT_CONF,
        **REDACTION_CONF,
        **(LOOPBACK_DRIVER_CONF if on_loopback else {}),
        **(LOCAL_CONF if settings.is_local else {}),
        PYTHON_CONF: worker_python(settings, environ),
        **settings.conf,
    }


def worker_python(settings: SparkSettings, environ: Mapping[str, str] = os.environ) -> str:
    """The interpreter of Spark's Python workers: the conf's spark.pyspark.python; else, on a
    cluster, $PYSPARK_PYTHON; else this interpreter (which has lance-sync's dependencies; on a
    cluster its path must exist on every host)."""
    if PYTHON_CONF in settings.conf:
        return settings.conf[PYTHON_CONF]
    if not settings.is_local and environ.get("PYSPARK_PYTHON"):
        return environ["PYSPARK_PYTHON"]
    return sys.executable


def ships_package(settings: SparkSettings) -> bool:
    """Whether lance-sync ships its own package to the executors: on a cluster, unless the conf
    says how they import it (IMPORT_CONF). Local workers import it from this process's path."""
    return not settings.is_local and not any(key in settings.conf for key in IMPORT_CONF)


def is_loopback_master(master: str) -> bool:
    """Whether a master is a standalone master (`spark://host:port[,host:port...]`) whose
    every host is a loopback address or localhost."""
    if not master.startswith("spark://"):
        return False
    hosts = [address.rsplit(":", 1)[0].strip("[]") for address in master[len("spark://"):].split(",")]
    return all(is_loopback(host) for host in hosts)


def package_zip(target: Path) -> Path:
    """A zip of the lance_sync package this process runs, at `target` (replaced whole, so that
    a process shipping it meanwhile reads either the old zip or the new one)."""
    package = Path(__file__).resolve().parents[1]
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, path.relative_to(package.parent).as_posix())
    os.replace(partial, target)
    return target


def _launch_gateway(launch_gateway: Any, spark_conf: Any, log_path: Path) -> Any:
    """PySpark's `launch_gateway`, with the JVM's stdout and stderr sent to `masked_log_pipe`."""
    output, _ = masked_log_pipe(log_path)
    try:
        return launch_gateway(spark_conf, popen_kwargs={"stdout": output, "stderr": output})
    finally:
        os.close(output)  # the JVM holds its own copy: the pipe ends when the JVM does


def masked_log_pipe(log_path: Path) -> tuple[int, threading.Thread]:
    """The write end of a pipe whose every line a daemon thread copies, masked, to the end of
    `log_path` (`lance_sync.model.secrets.copy_masked`) until the last writer closes it; and the
    thread. The JVM writes its stdout and stderr there from its first line (a JVM that fails
    to start explains why in the log) to its last."""
    read_end, write_end = os.pipe()
    source, log = os.fdopen(read_end, "rb"), log_path.open("ab")

    def copy() -> None:
        with source, log:
            copy_masked(source, log)

    thread = threading.Thread(target=copy, name="spark-log", daemon=True)
    thread.start()
    return write_end, thread


@contextlib.contextmanager
def spark_errors(settings: SparkSettings, doing: str) -> Iterator[None]:
    """Turn an error raised by Spark (a JVM stack trace, several screens long) into one line
    saying what failed, that names the log file where the whole story is."""
    try:
        yield
    except Exception as error:
        if not type(error).__module__.startswith(("pyspark", "py4j")):
            raise
        log = _session_logs.get(settings.key(), settings.log_path)
        where = "" if settings.is_connect else f" (Spark's log: {_shown(log)})"
        raise SparkJobError(mask(f"{doing}: {root_cause(error)}{where}")) from error


class SparkJobError(RuntimeError):
    """A Spark job failed; the message is one line and names Spark's log."""


#: Java causes followed at most (a cycle or a runaway chain ends there)
MAX_CAUSES = 32
_TRACEBACK = "Traceback (most recent call last):"
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")


def root_cause(error: BaseException) -> str:
    """One line for a Spark error: the deepest message in the chain of Java throwables behind
    it (Py4JJavaError.java_exception, or a captured PySpark error's origin, then each getCause),
    else the error's own. A message holding a Python traceback (a failed Python worker) gives
    the exception line of its last traceback."""
    message = _summary(str(error)) or type(error).__name__
    with contextlib.suppress(Exception):  # the JVM may be gone: keep what Python has
        for throwable in _java_causes(error):
            raw = throwable.getMessage() or ""
            text = _summary(raw)
            if not text:
                continue
            # Spark's error classes ([PATH_NOT_FOUND] ...) and Python exceptions name themselves
            named = text.startswith("[") or _TRACEBACK in raw
            message = text if named else f"{throwable.getClass().getSimpleName()}: {text}"
    return message


def _java_causes(error: BaseException) -> Iterator[Any]:
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    for _ in range(MAX_CAUSES):
        if throwable is None:
            return
        yield throwable
        throwable = throwable.getCause()


def _summary(text: str) -> str:
    """The exception line of the text's last Python traceback, else its first line; without
    Spark's trailing SQLSTATE."""
    if _TRACEBACK in text:
        tail = text.rsplit(_TRACEBACK, 1)[1].splitlines()
        lines = [line for line in tail if line.strip() and not line[0].isspace()]
    else:
        lines = [line for line in text.splitlines() if line.strip()]
    return _SQLSTATE.sub("", lines[0].strip()) if lines else ""


def _shown(path: Path) -> str:
    """The path relative to the working directory when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _prepare_environment(settings: SparkSettings, conf: dict[str, str]) -> None:
    """What the JVM and PySpark take from the environment: the Python workers' interpreter
    (PySpark reads $PYSPARK_PYTHON, not the conf); SPARK_LOCAL_IP on loopback when the driver
    binds there (Spark's other services, its UI among them, bind to that address); in local
    mode, lance_sync's parent directory on PYTHONPATH (local workers inherit it)."""
    os.environ["PYSPARK_PYTHON"] = conf[PYTHON_CONF]
    if conf.get("spark.driver.bindAddress") == LOOPBACK_DRIVER_CONF["spark.driver.bindAddress"]:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if settings.is_local:
        _put_package_on_python_path()


def _put_package_on_python_path() -> None:
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
