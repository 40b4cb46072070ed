"""Serve the handler over Hive's wire protocol: Thrift binary protocol, buffered
transport, one thread per connection, on 127.0.0.1 only.

Run as `python -m tests.servers.hive3_server --dir DIR --ports-file FILE`. Once both
sockets are bound, FILE holds "THRIFT_PORT COUNTER_PORT". The counter port answers
GET /requests with the number of Thrift calls served and POST /requests by resetting
it. The process exits when its standard input closes, so it never outlives the test
session that started it.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pymetastore.hive_metastore import ThriftHiveMetastore
from thrift.protocol.TBinaryProtocol import TBinaryProtocolAcceleratedFactory
from thrift.protocol.TProtocol import TProtocolBase
from thrift.server.TServer import TThreadedServer
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport.TSocket import TServerSocket
from thrift.transport.TTransport import TBufferedTransportFactory

from tests.servers.hive3_server.handler import HiveMetastoreHandler

LOOPBACK = "127.0.0.1"


class RequestCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def increment(self) -> None:
        with self._lock:
            self._count += 1

    def read(self) -> int:
        with self._lock:
            return self._count

    def reset(self) -> int:
        with self._lock:
            self._count = 0
            return 0


class HiveProcessor(ThriftHiveMetastore.Processor):
    """The generated processor, limited to the calls the handler implements.

    Every call is counted; any other call gets the answer a Java Thrift server (HMS)
    gives for a method it does not have: TApplicationException "Invalid method name".
    """

    def __init__(self, handler: HiveMetastoreHandler, counter: RequestCounter) -> None:
        super().__init__(handler)
        self._processMap = {name: call for name, call in self._processMap.items()
                            if hasattr(handler, name)}
        self._counter = counter

    def process(self, iprot: TProtocolBase, oprot: TProtocolBase) -> None:
        name, _, seqid = iprot.readMessageBegin()
        self._counter.increment()
        if name in self._processMap:
            self._processMap[name](self, seqid, iprot, oprot)
            return
        iprot.skip(TType.STRUCT)
        iprot.readMessageEnd()
        error = TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                      f"Invalid method name: '{name}'")
        oprot.writeMessageBegin(name, TMessageType.EXCEPTION, seqid)
        error.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()


class _BoundServerSocket(TServerSocket):
    """A server socket bound before serving starts, so its port can be published first."""

    def listen(self) -> None:
        if self.handle is None:
            super().listen()

    @property
    def bound_port(self) -> int:
        return self.handle.getsockname()[1]


def _counter_server(counter: RequestCounter) -> ThreadingHTTPServer:
    class CounterHandler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # else small answers wait for a delayed ACK

        def do_GET(self) -> None:
            self._answer(counter.read())

        def do_POST(self) -> None:
            self._answer(counter.reset())

        def _answer(self, count: int) -> None:
            if self.path != "/requests":
                self.send_error(404)
                return
            body = str(count).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass  # the test log is for the metastore, not for polls of this counter

    server = ThreadingHTTPServer((LOOPBACK, 0), CounterHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="request-counter", daemon=True).start()
    return server


def _write_ports(ports_file: Path, thrift_port: int, counter_port: int) -> None:
    partial = ports_file.with_name(ports_file.name + ".partial")
    partial.write_text(f"{thrift_port} {counter_port}\n")
    partial.replace(ports_file)


def _exit_when_stdin_closes() -> None:
    def watch() -> None:
        while os.read(0, 4096):
            pass
        os._exit(0)

    threading.Thread(target=watch, name="stdin-watchdog", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="state directory (warehouse)")
    parser.add_argument("--ports-file", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")

    counter = RequestCounter()
    handler = HiveMetastoreHandler(args.dir / "warehouse")
    transport = _BoundServerSocket(host=LOOPBACK, port=0)
    transport.listen()
    thrift_server = TThreadedServer(HiveProcessor(handler, counter), transport,
                                    TBufferedTransportFactory(),
                                    TBinaryProtocolAcceleratedFactory(), daemon=True)
    counter_server = _counter_server(counter)
    _write_ports(args.ports_file, transport.bound_port, counter_server.server_address[1])
    _exit_when_stdin_closes()
    thrift_server.serve()
