"""Client CPU per Glue CreateTable, in one process, against the Glue test server (issue 21).

    python bench/bench_glue_calls.py                      # 2,000 tables, 1 thread, 3 rounds
    python bench/bench_glue_calls.py --threads 16 --tables 5000

Three loops of the same CreateTable requests (a table of the manifest as lance-sync declares
it), each timed with `time.process_time` (every thread; the server is another process):

- driver: `GlueNamespace.declare_table`, lance-sync's own path (a SigV4-signed JSON POST
  through the shared HTTP client: its retries, the answer check, call counting and masking);
- raw: bench_raw.py's SigV4-signed urllib3 POST and `json.loads` of the answer (the lower
  bound of the apply rows of bench_catalogs.py);
- canned: the driver with its connection pool's `urlopen` answering `200 {}` itself, so no
  HTTP is sent: the CPU of lance-sync's per-request work (request, signing, check) without
  the transport.

Prints CPU per call (the median round), wall time and the load average. The Glue test server
closes every connection, so each request of both loops opens one (as in bench_catalogs.py).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "bench"))

DATABASE = "bench"
PROPERTIES = {"owner": "bench", "team": "a", "table_type": "lance"}
WARM_UP = 50


def driver_loop(server: Any, canned: bool) -> Callable[[str], None]:
    from lance_namespace import DeclareTableRequest

    from lance_sync.drivers.glue.driver import GlueNamespace
    account = server.extra["account_id"]
    driver = GlueNamespace(endpoint=server.endpoint, catalog_id=account, region=server.extra["region"],
                           access_key_id=server.extra["access_key_id"],
                           secret_access_key=server.extra["secret_access_key"])
    if canned:
        driver.client.glue.http.send = _canned_answer

    def create(name: str) -> None:
        driver.declare_table(DeclareTableRequest(id=[account, DATABASE, name], properties=PROPERTIES,
                                                 location=f"s3://bench/{DATABASE}/{name}.lance"))

    return create


def raw_loop(server: Any) -> Callable[[str], None]:
    import bench_raw
    call = bench_raw._glue_client({key: server.extra[key] for key in ("access_key_id", "secret_access_key", "region")}
                                  | {"endpoint": server.endpoint})
    account = server.extra["account_id"]

    def create(name: str) -> None:
        call("CreateTable", {"CatalogId": account, "DatabaseName": DATABASE,
                             "TableInput": {"Name": name, "TableType": "EXTERNAL_TABLE", "Parameters": PROPERTIES,
                                            "StorageDescriptor": {"Location": f"s3://bench/{DATABASE}/{name}.lance"}}})

    return create


def _canned_answer(method: str, target: str, **_: Any) -> Any:
    """The connection pool's `urlopen`: CreateTable's answer, without sending the request."""
    import urllib3
    return urllib3.HTTPResponse(body=io.BytesIO(b"{}"), status=200, preload_content=False,
                                headers={"Content-Type": "application/x-amz-json-1.1", "Content-Length": "2"})


def timed(create: Callable[[str], None], names: list[str], threads: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of creating `names`."""
    cpu, began = time.process_time(), time.perf_counter()
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(create, names))
    else:
        for name in names:
            create(name)
    return time.process_time() - cpu, time.perf_counter() - began


@contextmanager
def glue_server() -> Iterator[Any]:
    from tests.servers import glue
    server = glue.start(Path(tempfile.mkdtemp(prefix="bench-glue-calls-")))
    try:
        glue.glue_client(server).create_database(CatalogId=server.extra["account_id"],
                                                 DatabaseInput={"Name": DATABASE})
        yield server
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=2000, help="CreateTable calls per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--loops", default="driver,raw,canned")
    args = parser.parse_args()
    print("| loop | threads | calls | CPU per call | wall per round | load |\n| --- | ---: | ---: | ---: | ---: | ---: |")
    with glue_server() as server:
        for loop in args.loops.split(","):
            create = raw_loop(server) if loop == "raw" else driver_loop(server, canned=loop == "canned")
            timed(create, [f"{loop}_warm_{i}" for i in range(WARM_UP)], 1)
            rounds = [timed(create, [f"{loop}_{r}_{i}" for i in range(args.tables)], args.threads)
                      for r in range(args.rounds)]
            cpu = statistics.median(c for c, _ in rounds)
            wall = statistics.median(w for _, w in rounds)
            print(f"| {loop} | {args.threads} | {args.tables:,} | {cpu / args.tables * 1e3:.3f} ms | "
                  f"{wall:.2f} s | {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
