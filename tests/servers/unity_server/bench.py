"""Measure the Unity Catalog test server: start-up time, memory, table creation with threads.

Run: `.venv/bin/python -m tests.servers.unity_server.bench [--tables 2000] [--threads 8]`.
Prints one JSON object. Not part of the test suite (numbers depend on the machine).
"""

from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from tests.servers import unity
from tests.servers.base import RunningServer
from tests.servers.unity_server.app import API_ROOT

TYPE_JSON = json.dumps({"name": "id", "type": "long", "nullable": False, "metadata": {}})


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.servers.unity_server.bench")
    parser.add_argument("--tables", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="unity-bench-") as workdir:
        server = unity.start(Path(workdir))
        try:
            print(json.dumps(_measure(server, arguments.tables, arguments.threads), indent=2))
        finally:
            server.stop()


def _measure(server: RunningServer, table_count: int, threads: int) -> dict:
    pid = server.extra["pid"]
    address = urlsplit(server.endpoint).netloc
    rss_idle = _rss_mib(pid)
    with _Client(address) as client:
        client.call("POST", "/catalogs", {"name": "bench"})
        client.call("POST", "/schemas", {"name": "s", "catalog_name": "bench"})
    names = [f"t{index:06d}" for index in range(table_count)]
    began = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(_create_tables, [address] * threads, [names[i::threads] for i in range(threads)]))
    create_seconds = time.perf_counter() - began
    began = time.perf_counter()
    pages = _list_all(address)
    list_seconds = time.perf_counter() - began
    return {
        "startup_seconds": round(server.startup_seconds, 3),
        "rss_mib_idle": rss_idle,
        "rss_mib_after": _rss_mib(pid),
        "threads": threads,
        "tables": table_count,
        "tables_per_second": round(table_count / create_seconds),
        "list_all_pages": pages,
        "list_all_seconds": round(list_seconds, 3),
    }


def _create_tables(address: str, names: list[str]) -> None:
    with _Client(address) as client:
        for name in names:
            client.call("POST", "/tables", {
                "name": name, "catalog_name": "bench", "schema_name": "s", "table_type": "EXTERNAL",
                "data_source_format": "TEXT", "storage_location": f"s3://bucket/lake/{name}.lance",
                "properties": {"table_type": "lance", "lance_sync.owner": "bench"},
                "columns": [{"name": "id", "type_name": "LONG", "type_text": "bigint",
                             "type_json": TYPE_JSON, "position": 0, "nullable": False}],
            })


def _list_all(address: str) -> int:
    pages, token = 0, ""
    with _Client(address) as client:
        while True:
            page = client.call("GET", f"/tables?catalog_name=bench&schema_name=s&page_token={token}")
            pages += 1
            token = page.get("next_page_token")
            if not token:
                return pages


class _Client:
    """One keep-alive connection, as a driver's HTTP session holds one per thread."""

    def __init__(self, address: str) -> None:
        self._connection = http.client.HTTPConnection(address, timeout=30)

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *_: object) -> None:
        self._connection.close()

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        payload = None if body is None else json.dumps(body)
        self._connection.request(method, API_ROOT + path, body=payload,
                                 headers={"Content-Type": "application/json"})
        response = self._connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
        return json.loads(data)


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for process {pid}")


if __name__ == "__main__":
    main()
