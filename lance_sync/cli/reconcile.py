"""`reconcile`: plan and apply on a schedule, what the policy lets run unattended."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from lance_sync.cli.shared import (
    load,
    manifest_files,
    manifest_option,
    parallelism_option,
    policy_option,
    scan_all_option,
)

#: the environment variable of the bearer token the status page and metrics may require
STATUS_TOKEN_VARIABLE = "LANCE_SYNC_STATUS_TOKEN"


def _duration(context: click.Context, parameter: click.Parameter, value: str) -> float:
    from lance_sync.apply.reconcile import parse_duration

    try:
        seconds = parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    if seconds <= 0:
        raise click.BadParameter("must be more than 0")
    return seconds


@click.command()
@manifest_option
@click.option("--interval", default="5m", show_default=True, metavar="DURATION", callback=_duration,
              help="Time between cycles: 30s, 5m, 1h.")
@click.option("--max-backoff", default="1h", show_default=True, metavar="DURATION", callback=_duration,
              help="Longest wait after failed cycles (the wait doubles per failure in a row, with jitter).")
@click.option("--metrics-port", type=click.IntRange(0, 65535),
              help="Serve Prometheus metrics at http://HOST:PORT/metrics, a liveness probe at /healthz, the "
              "status page at / and its JSON at /api/status (0: a free port, logged at start); none without it.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Address to serve them on; one that is not loopback (0.0.0.0 in a container) is bound as "
                   "asked, with a warning. With LANCE_SYNC_STATUS_TOKEN set, all but /healthz need "
                   "`Authorization: Bearer <token>`.")
@click.option("--once", is_flag=True, help="Run one cycle and exit with its code (0, 1, 3 or 4).")
@click.option("--lock-timeout", type=click.FloatRange(0), default=0, show_default=True, metavar="SECONDS",
              help="How long a cycle waits for another apply's lease before leaving it to the next cycle.")
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Where journals and rollback plans go (default: .lance-sync next to the manifest).")
@click.option("--spark", "spark", help="Spark master or sc:// URL for tables written from a source.")
@policy_option
@scan_all_option
@parallelism_option
def reconcile(files: tuple[str, ...], interval: float, max_backoff: float, metrics_port: int | None,
              metrics_host: str, once: bool, lock_timeout: float, state_dir: str | None, spark: str | None,
              policy_file: str | None, scan_all: bool, parallelism: int) -> None:
    """Plan on a schedule and apply what the policy lets run unattended (`policy.unattended`;
    by default create, update, rename and grant: never a replace, a removal or a revoke); report
    the rest as pending approval.

    Each cycle takes the apply leases, plans, passes the same guards as apply and keeps a
    journal. One JSON line per cycle on stdout. SIGTERM (or Ctrl-C) ends the current cycle
    safely, releases the leases and exits 0.
    """
    import os
    import threading

    from lance_sync import api
    from lance_sync.apply.reconcile import stopping_on_signals

    paths = manifest_files(files)
    load(paths, policy_file=policy_file)  # its warnings now, and a bad manifest fails before any cycle
    stop = threading.Event()

    def log(record: dict[str, Any]) -> None:
        click.echo(json.dumps(record, ensure_ascii=False))

    with stopping_on_signals(stop):
        last = api.reconcile(paths, policy_file=policy_file, interval=interval,
                             max_backoff=max_backoff, once=once, lock_timeout=lock_timeout, scan_all=scan_all,
                             parallelism=parallelism, spark=spark, state_dir=state_dir, metrics_host=metrics_host,
                             metrics_port=metrics_port, status_token=os.environ.get(STATUS_TOKEN_VARIABLE) or None,
                             on_record=log, stop=stop)
    if once and last is not None and last.exit_code:
        sys.exit(last.exit_code)
