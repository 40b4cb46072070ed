"""Serve the Glue test server on 127.0.0.1 until killed (or until its parent process dies)."""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from pathlib import Path

from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import make_server

from tests.servers.glue_server.app import GlueFrontend
from tests.servers.glue_server.catalogs import CatalogTree

log = logging.getLogger("glue_server")


class NoDelayRequestHandler(MotoRequestHandler):
    """moto's request handler with Nagle's algorithm off, so small answers are not held back.

    Per-request access lines are left to GlueFrontend, which logs the Glue operation.
    """

    disable_nagle_algorithm = True

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.servers.glue_server", description=__doc__
    )
    parser.add_argument("--account-id", default="123456789012")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="exit when the process that started the server is gone",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    frontend = GlueFrontend(CatalogTree(args.account_id, args.region))
    server = make_server(
        "127.0.0.1", args.port, frontend, threaded=True, request_handler=NoDelayRequestHandler
    )
    log.info(
        "account %s, region %s, listening on http://127.0.0.1:%d",
        args.account_id,
        args.region,
        server.server_port,
    )
    if args.exit_with_parent:
        threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    if args.port_file:
        _write_atomically(args.port_file, str(server.server_port))
    server.serve_forever()


def _exit_with_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    log.info("parent process %d is gone; exiting", parent_pid)
    os._exit(0)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


if __name__ == "__main__":
    main()
