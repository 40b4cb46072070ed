"""What the two Hive Metastore test servers (`hms`, `hive3`) share.

Both run as a subprocess that binds 127.0.0.1 on ports it picks itself (no race
with other processes for a "free" port), publishes "THRIFT_PORT COUNTER_PORT" in a
ports file, counts the Thrift calls it serves (GET/POST /requests on the counter
port), and exits when its standard input closes, so a killed test session leaves
no server behind.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from pymetastore.hive_metastore import ThriftHiveMetastore
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAccelerated
from thrift.transport.TSocket import TSocket
from thrift.transport.TTransport import TBufferedTransport

from tests.servers.base import RunningServer, stop_process, wait_until

CLIENT_TIMEOUT_SECONDS = 60


@contextmanager
def hive_client(endpoint: str, timeout: float = CLIENT_TIMEOUT_SECONDS
                ) -> Iterator[ThriftHiveMetastore.Client]:
    """pymetastore's generated Hive client on `thrift://host:port`, binary protocol over a
    buffered transport as HMS expects, with a socket timeout."""
    address = urlsplit(endpoint)
    socket = TSocket(address.hostname, address.port)
    socket.setTimeout(timeout * 1000)
    transport = TBufferedTransport(socket)
    transport.open()
    try:
        yield ThriftHiveMetastore.Client(TBinaryProtocolAccelerated(transport))
    finally:
        transport.close()


def launch(name: str, argv: list[str], workdir: Path, ports_file: Path, timeout: float,
           env: dict[str, str] | None = None) -> RunningServer:
    """Start `argv` in `workdir`, wait for its ports and a real Thrift answer."""
    log_path = workdir / f"{name}.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.PIPE,
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(ports_file.exists, timeout, f"{name} server ports", log_path, process)
        thrift_port, counter_port = (int(port) for port in ports_file.read_text().split())
        endpoint = f"thrift://127.0.0.1:{thrift_port}"
        wait_until(lambda: _answers(endpoint), timeout, f"{name} server", log_path, process)
    except BaseException:
        _stop(process)
        raise
    counter_url = f"http://127.0.0.1:{counter_port}/requests"
    return RunningServer(
        name=name, endpoint=endpoint, startup_seconds=time.monotonic() - started,
        log_path=log_path,
        count_requests=lambda: _post_or_get(counter_url, post=False),
        reset_requests=lambda: _post_or_get(counter_url, post=True),
        stop=lambda: _stop(process), extra={"pid": process.pid})


def _answers(endpoint: str) -> bool:
    with hive_client(endpoint, timeout=5) as client:
        client.get_all_databases()
    return True


def _post_or_get(url: str, post: bool) -> int:
    request = urllib.request.Request(url, data=b"" if post else None)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return int(answer.read())


def _stop(process: subprocess.Popen) -> None:
    stop_process(process)
    if process.stdin is not None:
        process.stdin.close()
