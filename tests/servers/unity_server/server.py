"""HTTP/1.1 server for `UnityApp` on 127.0.0.1, and the process entry point.

Run as `python -m tests.servers.unity_server --db FILE --port-file FILE
[--port N] [--parent-pid PID] [--authorization enable|disable]`. The bearer token, when wanted, comes from the
environment variable named by TOKEN_VARIABLE, never from the command line.
The process stops on SIGTERM, and on its own when its parent process is gone.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.servers.unity_server.app import Response, UnityApp
from tests.servers.unity_server.store import Store

TOKEN_VARIABLE = "LANCE_SYNC_UNITY_SERVER_TOKEN"
HOST = "127.0.0.1"

log = logging.getLogger("unity_server")


class UnityHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, port: int, app: UnityApp) -> None:
        super().__init__((HOST, port), UnityRequestHandler)
        self.app = app


class UnityRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as clients' connection pools expect
    timeout = 300  # an idle keep-alive connection frees its thread after this
    server: UnityHttpServer

    def setup(self) -> None:
        super().setup()
        # Without this, Nagle's algorithm and delayed ACKs hold small answers back ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        started = time.perf_counter()
        target = urllib.parse.urlsplit(self.path)
        body = self._read_body()
        response = self.server.app.respond(
            self.command, target.path, target.query, self.headers.get("Authorization"), body
        )
        self._send(response)
        log.info("%s %s -> %d (%.1f ms)", self.command, self.path, response.status,
                 (time.perf_counter() - started) * 1000)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = do_OPTIONS = _serve

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _read_chunked(self) -> bytes:
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():  # trailers
            pass
        return b"".join(chunks)

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        log.debug(format, *args)


def main(argv: list[str] | None = None) -> None:
    arguments = _parse_arguments(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    store = Store(arguments.db)
    app = UnityApp(store, token=os.environ.pop(TOKEN_VARIABLE, None) or None,
                   authorization=arguments.authorization == "enable")
    server = UnityHttpServer(arguments.port, app)
    port = server.server_address[1]
    _write_atomically(arguments.port_file, str(port))
    def stop() -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, lambda *_: stop())
    if arguments.parent_pid:
        threading.Thread(target=_stop_when_orphaned, args=(arguments.parent_pid, stop), daemon=True).start()
    log.info("Unity Catalog test server on http://%s:%d (db %s, token %s, authorization %s)", HOST, port,
             arguments.db, "on" if app.requires_token else "off", arguments.authorization)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        store.close()
        log.info("stopped")


def _parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.servers.unity_server")
    parser.add_argument("--db", type=Path, required=True, help="SQLite file (created if missing)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the bound port")
    parser.add_argument("--parent-pid", type=int, help="stop when this process is gone")
    parser.add_argument("--authorization", choices=("enable", "disable"), default="enable",
                        help="UC's server.authorization: with disable, grants are accepted and dropped")
    return parser.parse_args(argv)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def _stop_when_orphaned(parent_pid: int, stop: Callable[[], None]) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    log.info("parent process %d is gone; stopping", parent_pid)
    stop()
