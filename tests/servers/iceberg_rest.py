"""Iceberg REST catalog for the tests: upstream Iceberg's request handling behind a small Java class.

`start(workdir)` builds the server once per machine (cached in CACHE_DIR under a hash of its
inputs) and runs it on a free port of 127.0.0.1:
  1. the Iceberg runtime jar comes from the PyPI package snowpark-connect-deps-iceberg;
  2. that jar ships without its shaded Jackson, so Debian's Jackson jars are relocated with
     jarjar into the package it expects;
  3. the server's sources in java/iceberg_rest/ are compiled against them with javac.
What it is faithful to, and what not: tests/servers/docs/iceberg_rest.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

from tests.servers.base import CACHE_DIR, RunningServer, free_port, stop_process, wait_until

#: The warehouse name clients pass to /v1/config (the first level of a Lance identifier).
WAREHOUSE = "lakehouse"
#: The path prefix /v1/config hands out. It differs from the warehouse name on purpose, so a
#: client that builds paths from the warehouse name instead of the config prefix fails.
PREFIX = "catalog-lakehouse"

MAIN_CLASS = "org.apache.iceberg.rest.IcebergRestServer"
#: the server, and the S3 client its FileIO shares with the HMS launcher (hms.py)
SOURCES = [*sorted((Path(__file__).parent / "java" / "iceberg_rest").glob("*.java")),
           Path(__file__).parent / "java" / "s3" / "LoopbackS3Client.java"]
ICEBERG_PACKAGE = "snowpark_connect_deps_iceberg"
ICEBERG_JAR_GLOB = "iceberg-spark-runtime-3.5_2.13-*.jar"
RELOCATION_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
STARTUP_TIMEOUT_S = 60
#: Talks to 127.0.0.1 directly, whatever proxy the environment names.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))

DEBIAN_JARS = Path("/usr/share/java")
#: jar in /usr/share/java -> the Debian package that provides it
JARJAR = ("jarjar.jar", "libjarjar-java")
JACKSON = [
    ("jackson-core.jar", "libjackson2-core-java"),
    ("jackson-databind.jar", "libjackson2-databind-java"),
    ("jackson-annotations.jar", "libjackson2-annotations-java"),
]
SLF4J = [("slf4j-api.jar", "libslf4j-java"), ("slf4j-simple.jar", "libslf4j-java")]
#: Needed only for catalog="jdbc".
SQLITE_JDBC = ("sqlite-jdbc.jar", "libxerial-sqlite-jdbc-java")

#: Short-lived or light JVMs start and run faster without the C2 compiler and with serial GC.
QUICK_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
JVM_OPTIONS = [
    "-Dsun.net.httpserver.nodelay=true",  # else small responses wait ~40 ms (Nagle + delayed ACK)
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    *QUICK_JVM,
    "-Xmx512m",
]


def start(workdir: Path, *, prefix: str | None = PREFIX, announce_prefix: bool = True,
          token: str | None = None, credential: str | None = None,
          catalog: str = "memory", s3_endpoint: str | None = None) -> RunningServer:
    """Start an Iceberg REST catalog on 127.0.0.1 and wait until GET /v1/config answers.

    prefix: the {prefix} path segment of every catalog route (None: routes without one).
    announce_prefix: whether /v1/config returns it in `defaults` (False makes clients fall back
        to their own idea of the prefix, such as the warehouse name).
    token / credential ("client_id:client_secret"): when either is set, every request except
        POST /v1/oauth/tokens needs `Authorization: Bearer` with `token` or a token issued for
        `credential`. When neither is set, no request needs a token (and any is accepted).
    catalog: "memory" (upstream InMemoryCatalog: exact names, metadata kept in memory) or
        "jdbc" (upstream JdbcCatalog on SQLite: metadata files written at the table location,
        but it mangles namespace names containing '.'; see the docs). "jdbc" needs the Debian
        package libxerial-sqlite-jdbc-java.
    s3_endpoint: with catalog="jdbc", the S3 store (tests/servers/s3.py, its test credentials)
        where metadata files of s3:// and s3a:// tables are written, as iceberg-aws's S3FileIO
        would write them (it needs the AWS SDK, which cannot be downloaded here); without it
        they stay in memory.
    """
    _check_catalog(catalog)
    if s3_endpoint and catalog != "jdbc":
        raise ValueError("s3_endpoint needs catalog='jdbc' (InMemoryCatalog keeps metadata in memory)")
    build = build_server()
    workdir.mkdir(parents=True, exist_ok=True)
    warehouse_dir = workdir / "warehouse"
    warehouse_dir.mkdir(exist_ok=True)
    port = free_port()
    options = {
        "port": port,
        "warehouse": WAREHOUSE,
        "warehouse-dir": warehouse_dir.as_uri(),
        "catalog": catalog,
        "jdbc-uri": f"jdbc:sqlite:{workdir / 'catalog.db'}" if catalog == "jdbc" else None,
        "prefix": prefix,
        "announce-prefix": str(announce_prefix).lower(),
        "token": token,
        "credential": credential,
        "exit-on-stdin-eof": "true",
    }
    if s3_endpoint:
        from tests.servers import s3

        options |= {"s3-endpoint": s3_endpoint, "s3-region": s3.REGION, "s3-access-key": s3.ACCESS_KEY_ID,
                    "s3-secret-key": s3.SECRET_ACCESS_KEY}
    command = [_tool("java"), *JVM_OPTIONS, "-cp", os.pathsep.join(map(str, build.classpath)),
               MAIN_CLASS, *(f"--{name}={value}" for name, value in options.items() if value is not None)]
    log_path = workdir / "iceberg-rest.log"
    endpoint = f"http://127.0.0.1:{port}"
    began = time.monotonic()
    with open(log_path, "ab") as log:
        # stdin stays open for the server's lifetime: if this process dies, the server sees EOF and exits.
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
    auth_required = token is not None or credential is not None
    try:
        wait_until(lambda: _config_answers(endpoint, token, auth_required), STARTUP_TIMEOUT_S,
                   "Iceberg REST server", log_path, process)
    except BaseException:
        _stop(process)
        raise
    startup_seconds = time.monotonic() - began
    return RunningServer(
        name="iceberg_rest",
        endpoint=endpoint,
        startup_seconds=startup_seconds,
        log_path=log_path,
        count_requests=lambda: _request_counts(endpoint)["total"],
        reset_requests=lambda: _reset_request_counts(endpoint),
        stop=lambda: _stop(process),
        extra={
            "warehouse": WAREHOUSE,
            "prefix": prefix if announce_prefix else None,
            "catalog": catalog,
            "s3_endpoint": s3_endpoint,
            "warehouse_dir": warehouse_dir,
            "token": token,
            "credential": credential,
            "pid": process.pid,
            "build_seconds": build.seconds,
            "requests_by_route": lambda: _request_counts(endpoint)["by_route"],
        },
    )


# ------------------------------------------------------------------------------------------ build


class Build(NamedTuple):
    """A compiled server: the classpath to run it, and how long building took (~0 when cached)."""

    classpath: list[Path]
    seconds: float


def build_server() -> Build:
    """Relocate Jackson and compile the server, unless an identical build is cached."""
    iceberg_jar = _iceberg_jar()
    jarjar = _debian_jar(*JARJAR)
    jackson = [_debian_jar(*jar) for jar in JACKSON]
    runtime = [_debian_jar(*jar) for jar in SLF4J]
    if sqlite_jdbc_available():
        runtime.append(DEBIAN_JARS / SQLITE_JDBC[0])
    javac = _tool("javac")
    key = _build_key([iceberg_jar, jarjar, *jackson, Path(javac).resolve()])
    target = CACHE_DIR / "iceberg-rest" / key
    began = time.monotonic()
    if not (target / "classes").is_dir():
        _build_into(target, iceberg_jar, jarjar, jackson, javac)
    shaded = sorted(target.glob("shaded-*.jar"))
    return Build([target / "classes", iceberg_jar, *shaded, *runtime], time.monotonic() - began)


def _build_into(target: Path, iceberg_jar: Path, jarjar: Path, jackson: list[Path], javac: str) -> None:
    """Build in a scratch directory and move it into place, so a half-done build is never used."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        rules = scratch / "jackson.rules"
        rules.write_text(RELOCATION_RULE)
        shaded = [scratch / f"shaded-{jar.name}" for jar in jackson]
        _run_all([[_tool("java"), *QUICK_JVM, "-jar", str(jarjar), "process", str(rules), str(jar), str(out)]
                  for jar, out in zip(jackson, shaded, strict=True)])
        classpath = os.pathsep.join(map(str, [iceberg_jar, *shaded]))
        _run_all([[javac, *(f"-J{option}" for option in QUICK_JVM), "-nowarn",
                   "-d", str(scratch / "classes"), "-cp", classpath, *map(str, SOURCES)]])
        with contextlib.suppress(OSError):  # another process finished the same build first
            scratch.rename(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _build_key(inputs: list[Path]) -> str:
    digest = hashlib.sha256(RELOCATION_RULE.encode())
    for source in SOURCES:
        digest.update(source.read_bytes())
    for path in inputs:
        digest.update(f"{path.resolve()}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def _iceberg_jar() -> Path:
    spec = importlib.util.find_spec(ICEBERG_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError("The Iceberg REST test server needs the PyPI package "
                           "snowpark-connect-deps-iceberg (pip install -e '.[test]').")
    jars = sorted((Path(spec.origin).parent / "jars").glob(ICEBERG_JAR_GLOB))
    if not jars:
        raise RuntimeError(f"No {ICEBERG_JAR_GLOB} inside {Path(spec.origin).parent}")
    return jars[-1]


def _debian_jar(name: str, package: str) -> Path:
    path = DEBIAN_JARS / name
    if not path.exists():
        packages = " ".join(sorted({JARJAR[1], *(p for _, p in JACKSON + SLF4J)}))
        raise RuntimeError(f"The Iceberg REST test server needs {path} (Debian package {package}). "
                           f"Install: apt-get install -y {packages}  (or run scripts/install.sh)")
    return path


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"The Iceberg REST test server needs `{name}` from a Java 17 JDK "
                           "(apt-get install -y openjdk-17-jdk-headless, or run scripts/install.sh)")
    return path


def _run_all(commands: list[list[str]]) -> None:
    """Run the commands side by side; fail with the output of the first that failed."""
    processes = [subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for command in commands]
    outputs = [process.communicate()[0] for process in processes]
    for command, process, output in zip(commands, processes, outputs, strict=True):
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:4])} ... failed ({process.returncode}):\n{output}")


def sqlite_jdbc_available() -> bool:
    return (DEBIAN_JARS / SQLITE_JDBC[0]).exists()


def _check_catalog(catalog: str) -> None:
    if catalog not in ("memory", "jdbc"):
        raise ValueError(f"catalog must be 'memory' or 'jdbc', not {catalog!r}")
    if catalog == "jdbc" and not sqlite_jdbc_available():
        raise RuntimeError(f"catalog='jdbc' needs {DEBIAN_JARS / SQLITE_JDBC[0]} "
                           f"(apt-get install -y {SQLITE_JDBC[1]})")


# ------------------------------------------------------------------------------------------ run


def _config_answers(endpoint: str, token: str | None, auth_required: bool) -> bool:
    """True once GET /v1/config is answered: 200, or 401 when auth is on and we hold no token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with _DIRECT.open(urllib.request.Request(f"{endpoint}/v1/config", headers=headers),
                          timeout=2) as response:
            return response.status == 200
    except urllib.error.HTTPError as error:
        return error.code == 401 and auth_required and token is None


def _request_counts(endpoint: str) -> dict:
    with _DIRECT.open(f"{endpoint}/__test/requests", timeout=10) as response:
        return json.load(response)


def _reset_request_counts(endpoint: str) -> None:
    request = urllib.request.Request(f"{endpoint}/__test/requests", method="DELETE")
    with _DIRECT.open(request, timeout=10):
        pass


def _stop(process: subprocess.Popen) -> None:
    if process.stdin is not None:
        process.stdin.close()
    stop_process(process)
