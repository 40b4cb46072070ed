"""A scripted HTTP server on loopback: each route answers what a test scripts (a JSON body, an
HTML page, a body cut short), for the drivers' answer checks."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API = "/api/2.1/unity-catalog"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    cut_at: int | None = None  # send only this many bytes of the body, then close
    drop: bool = False  # read the request, then close without answering
    delay: float = 0.0


def js(body: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, json.dumps(body).encode(), headers=tuple(headers.items()))


def cut(body: Any, size: int = 4096, at: int = 1200) -> Reply:
    """A good JSON body padded to `size` bytes, of which only the first `at` arrive."""
    return Reply(body=json.dumps(body).encode().ljust(size), cut_at=at)


HTML = Reply(body=b"<html><body><h1>502 Bad Gateway</h1>proxy</body></html>", content_type="text/html")


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up before its answer (a test's read timeout, a delayed reply) is what
    these tests script: its broken pipe is not printed. Printed, it lands in whatever stderr is
    at that moment, such as another test's in-process CLI run, which then fails on a traceback
    that is not its own."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """Answers each "METHOD /path" with its scripted replies in order (the last one repeats),
    others with `defaults`; counts the requests per route."""

    def __init__(self, defaults: dict[str, Reply]):
        self.defaults = dict(defaults)
        self.scripts: dict[str, list[Reply]] = {}
        self.seen: Counter[str] = Counter()
        self.bodies: list[bytes] = []
        lock = threading.Lock()
        script = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                route = f"{self.command} {self.path.split('?')[0]}"
                with lock:
                    script.seen[route] += 1
                    script.bodies.append(body)
                    replies = script.scripts.get(route)
                    reply = (replies.pop(0) if len(replies) > 1 else replies[0]) if replies \
                        else script.defaults.get(route, js({"error": "no such route"}, 404))
                time.sleep(reply.delay)
                self.close_connection = True
                if reply.drop:
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body if reply.cut_at is None else reply.body[:reply.cut_at])

            do_GET = do_POST = do_DELETE = do_PATCH = do_CONNECT = answer

            def log_message(self, *args: Any) -> None:
                pass

        self.http = _QuietServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.http.server_address[1]}"
        # a short poll interval: shutdown() waits for one
        threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def script(self, route: str, *replies: Reply) -> None:
        self.scripts[route] = list(replies)

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


UNITY_TABLE = {"name": "t", "catalog_name": "main", "schema_name": "s", "table_type": "EXTERNAL",
               "data_source_format": "TEXT", "storage_location": "file:///data/t",
               "properties": {"table_type": "lance"}, "columns": []}


UNITY_ROUTES = {
    f"GET {API}/catalogs/main": js({"name": "main", "properties": {}, "owner": None}),
    f"GET {API}/schemas": js({"schemas": [{"name": "s", "catalog_name": "main", "properties": {}}],
                              "next_page_token": None}),
    f"GET {API}/schemas/main.s": js({"name": "s", "catalog_name": "main", "properties": {"a": "1"}}),
    f"GET {API}/tables": js({"tables": [UNITY_TABLE], "next_page_token": None}),
    f"GET {API}/tables/main.s.t": js(UNITY_TABLE),
}
