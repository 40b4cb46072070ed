"""The reconcile loop without a server: backoff and stop with a fake clock, the metrics text,
the loopback-only endpoint, and single cycles against a directory catalog."""

from __future__ import annotations

import http.client
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from lance_sync.apply.lease import Leases, lease_stores
from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.reconcile import (
    CycleReport,
    Metrics,
    MetricsServer,
    Reconciler,
    Settings,
    exposure_warning,
    parse_duration,
    run_cycle,
)
from lance_sync.cli.app import main
from lance_sync.drivers.dir.driver import DirNamespace

# --- the loop, with a fake clock -----------------------------------------------------------------


class FakeStop(threading.Event):
    """A stop event whose waits return at once and are recorded: no time passes in these tests."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        return self.is_set()


def loop(outcomes: list[str], jitter: float = 1.0, interval: float = 10.0,
         max_backoff: float = 100.0) -> tuple[FakeStop, list[dict[str, Any]], Metrics]:
    """Cycles with these outcomes; the stop comes during the last one."""
    stop = FakeStop()
    remaining = list(outcomes)
    lines: list[dict[str, Any]] = []
    metrics = Metrics("team")

    def cycle() -> CycleReport:
        outcome = remaining.pop(0)
        if not remaining:
            stop.set()
        return CycleReport(outcome, 1000.0, 1001.5, drift=3, applied=2 if outcome == "applied" else 0)  # type: ignore[arg-type]

    Reconciler(cycle, interval, max_backoff, metrics, lines.append, stop, jitter=lambda: jitter).run()
    return stop, lines, metrics


def test_the_interval_between_good_cycles():
    stop, lines, _ = loop(["applied", "in_sync", "pending"])
    assert stop.waits == [10.0, 10.0]  # the third wait never happens: stopped
    assert [line["outcome"] for line in lines] == ["applied", "in_sync", "pending"]
    assert lines[-1]["next_run_in_seconds"] is None


def test_failures_back_off_exponentially_up_to_the_cap_and_a_good_cycle_resets():
    stop, _, metrics = loop(["error", "error", "partly_failed", "error", "error", "applied", "error", "in_sync"])
    assert stop.waits == [20.0, 40.0, 80.0, 100.0, 100.0, 10.0, 20.0]
    assert metrics.failures_in_a_row == 0


def test_jitter_takes_up_to_half_of_the_backoff_but_never_goes_below_the_interval():
    stop, _, _ = loop(["error", "error", "error"], jitter=0.0)
    assert stop.waits == [10.0, 20.0]
    capped, _, _ = loop(["error", "error"], jitter=0.0, interval=10.0, max_backoff=5.0)
    assert capped.waits == [10.0]


def test_refusals_and_a_held_lease_do_not_back_off():
    stop, _, _ = loop(["refused", "lease_held", "refused"])
    assert stop.waits == [10.0, 10.0]


def samples(text: str) -> dict[str, float]:
    """'name{labels}' -> value of every sample line of a Prometheus text document."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_the_metrics_count_cycles_actions_and_errors():
    _, _, metrics = loop(["applied", "error", "applied", "pending"])
    text = metrics.render()
    values = samples(text)
    assert values['lance_sync_reconcile_cycles_total{outcome="applied"}'] == 2
    assert values['lance_sync_reconcile_cycles_total{outcome="error"}'] == 1
    assert values['lance_sync_reconcile_last_outcome{outcome="pending"}'] == 1
    assert values['lance_sync_reconcile_last_outcome{outcome="applied"}'] == 0
    assert values["lance_sync_reconcile_actions_applied_total"] == 4
    assert values["lance_sync_reconcile_errors_total"] == 1
    assert values["lance_sync_reconcile_drift_actions"] == 3
    assert values["lance_sync_reconcile_last_run_timestamp_seconds"] == 1001.5
    assert "# TYPE lance_sync_reconcile_cycles_total counter" in text
    assert all(line.startswith(("# HELP ", "# TYPE ", "lance_sync_reconcile_")) for line in text.splitlines())


def test_the_metrics_endpoint_binds_what_it_is_given_and_warns_beyond_loopback():
    """The tests keep to loopback (no test binds another address); a user's 0.0.0.0 or pod
    address is bound as asked, with the warning checked here."""
    for host in ("0.0.0.0", "10.1.2.3", "example.com", "::"):
        assert "reachable from other machines" in (exposure_warning(host) or ""), host
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert exposure_warning(host) is None, host
    server = MetricsServer(Metrics("t"), "127.0.0.1", 0).start()
    assert server.exposure is None
    try:
        port = server.server.server_address[1]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/metrics")
        answer = connection.getresponse()
        assert answer.status == 200 and answer.getheader("Content-Type").startswith("text/plain; version=0.0.4")
        assert 'lance_sync_reconcile_info{owner="t"' in answer.read().decode()
        connection.request("GET", "/healthz")
        answer = connection.getresponse()
        assert (answer.status, answer.read()) == (200, b"ok\n")
        connection.request("GET", "/")
        assert connection.getresponse().status == 404
    finally:
        server.close()


def test_durations():
    assert [parse_duration(t) for t in ("5m", "30s", "1h", "250ms", "90", "1.5s")] == [300, 30, 3600, 0.25, 90, 1.5]
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("five minutes")


# --- single cycles against a directory catalog ---------------------------------------------------


class Lake:
    def __init__(self, root: Path):
        self.root = root
        self.path = root / "lance-sync.yaml"
        self.manifest: dict[str, Any] = {
            "version": 1, "owner": "reconcile-test",
            "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "sales"}],
            "tables": [{"name": name, "location": f"./lake/data/{name}.lance", "properties": {"tier": "gold"},
                        "register": [{"backend": "lake", "namespace": "sales"}],
                        "schema": [{"name": "id", "type": "int64"}]} for name in ("orders", "returns")]}

    def cycle(self, stop: threading.Event | None = None) -> CycleReport:
        self.path.write_text(yaml.safe_dump(self.manifest, sort_keys=False))
        settings = Settings(files=[str(self.path)], options=ApplyOptions(state_dir=self.root / "state"))
        return run_cycle(settings, stop or threading.Event())


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


def test_a_cycle_applies_creates_and_updates_and_leaves_removals_pending(lake: Lake):
    first = lake.cycle()
    assert (first.outcome, first.drift, first.applied, first.pending) == ("applied", 5, 5, [])
    assert lake.cycle().outcome == "in_sync"
    lake.manifest["tables"][0]["properties"]["tier"] = "silver"
    lake.manifest["tables"].pop(1)
    changed = lake.cycle()
    assert (changed.outcome, changed.drift, changed.applied) == ("applied", 2, 1)
    assert [(p.action, p.display_id) for p in changed.pending] == [("forget table", "sales$returns")]
    assert "needs approval: forget is not in policy.unattended" in changed.pending[0].why
    again = lake.cycle()
    assert (again.outcome, again.applied, len(again.pending)) == ("pending", 0, 1)


def test_unattended_removals_run_when_the_policy_lets_them(lake: Lake):
    assert lake.cycle().outcome == "applied"
    lake.manifest["tables"].pop(1)
    lake.manifest["policy"] = {"unattended": ["create", "update", "forget"]}
    removed = lake.cycle()
    assert (removed.outcome, removed.applied, removed.pending) == ("applied", 1, [])


def test_an_action_a_rule_forbids_is_left_pending_and_the_rest_applied(lake: Lake):
    lake.manifest["policy"] = {"rules": [{"name": "no-new-tables", "forbidden_actions": ["create table"]}]}
    partial = lake.cycle()
    assert partial.outcome == "applied" and partial.applied == 3  # the namespace and both datasets
    assert {p.display_id for p in partial.pending} == {"sales$orders", "sales$returns"}
    assert all("blocked: policy rule 'no-new-tables'" in p.why for p in partial.pending)
    lake.manifest["policy"] = {"rules": [{"name": "no-returns", "name_pattern": "(?!returns$).*",
                                          "objects": ["table"]}]}
    named = lake.cycle()
    assert (named.outcome, named.applied) == ("applied", 1)
    assert [(p.display_id, p.why.split(":")[0:2]) for p in named.pending] == [
        ("sales$returns", ["blocked", " policy rule 'no-returns'"])]
    assert lake.cycle().outcome == "pending"


def test_a_rule_about_the_whole_plan_refuses_the_cycle(lake: Lake):
    assert lake.cycle().outcome == "applied"
    lake.manifest["tables"].pop(1)
    lake.manifest["policy"] = {"rules": [{"name": "needs-cost-center", "required_properties": ["cost_center"],
                                          "objects": ["table"]}]}
    refused = lake.cycle()
    assert refused.outcome == "refused" and refused.applied == 0
    assert [v.rule for v in refused.violations] == ["needs-cost-center"]


def test_another_apply_holding_the_lease_is_waited_for_by_the_next_cycle(lake: Lake):
    lake.cycle()
    stores = lease_stores({"lake": DirNamespace(root=str(lake.root / "lake"))}, {"lake": [()]}, "reconcile-test")
    holder = Leases(stores, "reconcile-test")
    with holder.holding():
        held = lake.cycle()
    assert held.outcome == "lease_held" and "another apply holds" in (held.error or "")
    assert held.exit_code == 4


def test_a_bad_manifest_in_a_later_cycle_is_an_error_not_a_crash(lake: Lake):
    lake.manifest["tables"][0]["schema"][0]["type"] = "int65"
    broken = lake.cycle()
    assert broken.outcome == "error" and "int65" in (broken.error or "") and broken.failed_cycle


def test_a_stop_before_the_cycle_applies_nothing(lake: Lake):
    stop = threading.Event()
    stop.set()
    assert lake.cycle(stop).outcome == "stopped"
    assert not (lake.root / "lake" / "data").exists()


def test_reconcile_once_logs_json_lines_and_exits_with_the_cycle_code(lake: Lake):
    lake.path.write_text(yaml.safe_dump(lake.manifest))
    result = CliRunner().invoke(main, ["reconcile", "-f", str(lake.path), "--once"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["event"] for line in lines] == ["start", "cycle", "stop"]
    assert lines[1]["outcome"] == "applied" and lines[1]["applied"] == 5
    # the tests bind loopback only: a name for it is served, without the exposure warning
    served = CliRunner().invoke(main, ["reconcile", "-f", str(lake.path), "--once", "--metrics-host", "localhost",
                                       "--metrics-port", "0"], catch_exceptions=False)
    events = [json.loads(line) for line in served.stdout.splitlines()]
    assert served.exit_code == 0 and events[0]["metrics"].endswith("/metrics"), served.output
    assert "warning" not in [event["event"] for event in events]
