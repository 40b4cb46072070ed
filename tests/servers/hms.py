"""A real Hive Metastore 2.3 (the jars inside the pyspark wheel), on 127.0.0.1 only.

Embedded Derby and a `file:` warehouse live in the session's work directory. The
stock HiveMetaStore main binds every interface, so java/LoopbackMetastore.java
builds the stock handler and serves it on a loopback socket; it is compiled with
the machine's javac once per source and jar set, and cached under CACHE_DIR.

Given an S3 endpoint, the metastore reaches `s3://` and `s3a://` table locations there
through java/LoopbackS3FileSystem.java, configured with S3A's own settings: the wheel
has no S3 connector and hadoop-aws cannot be downloaded here (see that file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from tests.servers.base import CACHE_DIR, RunningServer
from tests.servers.hive_support import launch

LAUNCHER_SOURCE = Path(__file__).parent / "java" / "LoopbackMetastore.java"
LAUNCHER_CLASS = "LoopbackMetastore"
#: the launcher's flag that leaves out the transaction tables (see LoopbackMetastore.java)
WITHOUT_TRANSACTION_TABLES = "--without-transaction-tables"
#: the metastore's Hadoop file system for s3:// and s3a:// (in place of hadoop-aws's S3A), and
#: the S3 client it shares with the Iceberg REST server
S3_FILE_SYSTEM_SOURCE = Path(__file__).parent / "java" / "LoopbackS3FileSystem.java"
S3_CLIENT_SOURCE = Path(__file__).parent / "java" / "s3" / "LoopbackS3Client.java"
S3_FILE_SYSTEM_CLASS = "LoopbackS3FileSystem"
STARTUP_TIMEOUT_SECONDS = 180
#: connections of each of the metastore's JDBC pools (see write_configuration)
LOCK_POOL_SIZE = 256
#: Java 17 closes these packages; Hive 2.3 and DataNucleus reach into them.
OPENED_PACKAGES = ("java.lang", "java.net", "java.util", "java.nio", "sun.nio.ch",
                   "java.lang.reflect", "java.util.concurrent", "java.io")
JVM_OPTIONS = (
    "-Xmx512m",
    "-XX:TieredStopAtLevel=1",  # halves start-up; the metastore does little CPU work
    "-XX:+UseSerialGC",
    "-Dderby.system.durability=test",  # no fsync: test data only
    # Derby looks for a deadlock after a lock wait this long (20 s by default): concurrent
    # claimants of one HMS object deadlock now and then on a loaded machine, and the metastore
    # retries the victim's call (`hive.hmshandler.retry.interval`); only the time before the
    # victim is chosen changes
    "-Dderby.locks.deadlockTimeout=1",
    "-Dsun.net.httpserver.nodelay=true",  # else the counter answers a delayed ACK late
)
#: Variables that would let a developer's own Hive or Hadoop set-up leak into the server.
FOREIGN_CONFIGURATION = ("HIVE_CONF_DIR", "HIVE_HOME", "HADOOP_CONF_DIR", "HADOOP_HOME")
LOG4J2_PROPERTIES = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %-5p %c{1}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
"""


def start(workdir: Path, s3_endpoint: str | None = None, transaction_tables: bool = True) -> RunningServer:
    """Start the metastore; with `s3_endpoint`, its S3 table locations are on that store. Without
    `transaction_tables` its schema is DataNucleus' autoCreateAll alone, as quick set-ups make
    it: every call of the lock API fails."""
    java, javac = jdk_tools()
    jars = pyspark_jars()
    classes = compiled_launcher(javac, jars)
    conf = write_configuration(workdir, s3_endpoint)
    ports_file = workdir / "ports"
    argv = [
        java,
        *(f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in OPENED_PACKAGES),
        *JVM_OPTIONS,
        f"-Dderby.stream.error.file={workdir / 'derby.log'}",
        f"-Dlog4j2.configurationFile={conf / 'log4j2.properties'}",
        "-cp", os.pathsep.join([str(conf), str(classes), str(jars / "*")]),
        LAUNCHER_CLASS, str(ports_file), *([] if transaction_tables else [WITHOUT_TRANSACTION_TABLES]),
    ]
    env = {name: value for name, value in os.environ.items() if name not in FOREIGN_CONFIGURATION}
    return launch("hms", argv, workdir, ports_file, STARTUP_TIMEOUT_SECONDS, env)


def jdk_tools() -> tuple[str, str]:
    """java and javac from JAVA_HOME, else from PATH; a clear error if either is missing."""
    java_home = os.environ.get("JAVA_HOME")
    search_path = str(Path(java_home) / "bin") if java_home else None
    tools = {tool: shutil.which(tool, path=search_path) or shutil.which(tool)
             for tool in ("java", "javac")}
    missing = [tool for tool, found in tools.items() if found is None]
    if missing:
        raise RuntimeError(
            f"The hms test server needs a Java 17 JDK; not on PATH nor in JAVA_HOME/bin: "
            f"{', '.join(missing)}. Install openjdk-17-jdk-headless (scripts/install.sh does), "
            "or set LANCE_SYNC_TEST_HMS_URI to use a Hive Metastore of your own.")
    return tools["java"], tools["javac"]


def pyspark_jars() -> Path:
    """The jar directory of the installed pyspark wheel, which carries Hive Metastore 2.3."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("hive-metastore-*.jar")):
        raise RuntimeError(f"No hive-metastore jar in {jars}: install pyspark (the 'test' extra).")
    return jars


def compiled_launcher(javac: str, jars: Path) -> Path:
    """The launcher's class directory, compiled once per (sources, jar set)."""
    sources = [LAUNCHER_SOURCE, S3_FILE_SYSTEM_SOURCE, S3_CLIENT_SOURCE]
    key = hashlib.sha256(b"".join(source.read_bytes() for source in sources))
    key.update("\n".join(sorted(jar.name for jar in jars.glob("*.jar"))).encode())
    classes = CACHE_DIR / "hms-launcher" / key.hexdigest()[:16]
    if all((classes / f"{name}.class").exists() for name in (LAUNCHER_CLASS, S3_FILE_SYSTEM_CLASS)):
        return classes
    classes.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="building-", dir=classes.parent))
    compiled = subprocess.run(
        [javac, "-nowarn", "-encoding", "UTF-8", "-cp", str(jars / "*"), "-d", str(building),
         *map(str, sources)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if compiled.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise RuntimeError(f"javac failed for {', '.join(map(str, sources))}:\n{compiled.stderr}")
    try:
        building.rename(classes)
    except OSError:  # another session finished the same build first
        shutil.rmtree(building, ignore_errors=True)
    return classes


def write_configuration(workdir: Path, s3_endpoint: str | None = None) -> Path:
    """hive-site.xml and log4j2.properties for a metastore living entirely in `workdir`
    (its S3 locations on `s3_endpoint`, with the store's test credentials)."""
    conf = workdir / "conf"
    conf.mkdir(exist_ok=True)
    settings = {
        "javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": (workdir / "warehouse").as_uri(),
        "hive.async.log.enabled": "false",  # else NoClassDefFoundError com/lmax/disruptor
        "datanucleus.connectionPoolingType": "HikariCP",  # BoneCP is not in the wheel
        # also the size of the lock API's pool (TxnHandler): on Derby each lock call may hold two
        # connections while it waits for the JVM-wide Derby lock, so 10 (the default) deadlock
        # for 30 s as soon as a few dozen lock calls arrive at once
        "datanucleus.connectionPool.maxPoolSize": str(LOCK_POOL_SIZE),
        # a call Derby chose as a deadlock's victim is retried by the metastore after this
        # (2 s by default: `-Dderby.locks.deadlockTimeout` above)
        "hive.hmshandler.retry.interval": "100ms",
    }
    if s3_endpoint:
        from tests.servers import s3

        settings |= {
            "fs.s3.impl": S3_FILE_SYSTEM_CLASS, "fs.s3a.impl": S3_FILE_SYSTEM_CLASS,
            "fs.s3a.endpoint": s3_endpoint, "fs.s3a.endpoint.region": s3.REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.access.key": s3.ACCESS_KEY_ID, "fs.s3a.secret.key": s3.SECRET_ACCESS_KEY,
        }
    properties = "".join(
        f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>\n"
        for name, value in settings.items())
    (conf / "hive-site.xml").write_text(
        f'<?xml version="1.0"?>\n<configuration>\n{properties}</configuration>\n')
    (conf / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
    return conf
