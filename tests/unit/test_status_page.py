"""The reconcile loop's status page without a browser: the document a cycle builds, answers
during a cycle the test holds, unknown paths, the bearer token and the escaping of the page."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lance_namespace_urllib3_client.models import DeregisterTableRequest

from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.reconcile import (
    CycleReport,
    Metrics,
    MetricsServer,
    Reconciler,
    Settings,
    run_cycle,
)
from lance_sync.apply.status_page import StatusBoard, page
from lance_sync.drivers.dir.driver import DirNamespace
from tests.support.cli import cli_env, run_cli

DECOY = "<img src=x onerror=alert(1)>"


def get(server: MetricsServer, path: str, token: str | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.server.server_address[1], timeout=10)
    connection.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
    answer = connection.getresponse()
    return answer.status, answer.read()


class HeldLoop:
    """A reconcile loop whose first cycle is real and whose second waits until the test lets it go."""

    def __init__(self, settings: Settings, token: str | None = None):
        self.stop = threading.Event()
        self.holding, self.release = threading.Event(), threading.Event()
        self.cycles = 0
        self.board = StatusBoard("page-test", 0.01)
        self.server = MetricsServer(Metrics("page-test"), "127.0.0.1", 0, self.board, token).start()
        self.settings = settings
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _cycle(self) -> CycleReport:
        self.cycles += 1
        if self.cycles == 2:
            self.holding.set()
            assert self.release.wait(30), "the test never let the held cycle go"
            self.stop.set()
        return run_cycle(self.settings, threading.Event())

    def _run(self) -> None:
        Reconciler(self._cycle, 0.01, 0.01, Metrics("page-test"), lambda record: None, self.stop,
                   board=self.board).run()

    def __enter__(self) -> HeldLoop:
        self.thread.start()
        assert self.holding.wait(30), "the second cycle never started"
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.thread.join(30)
        self.server.close()


@pytest.fixture
def estate(tmp_path: Path) -> Settings:
    """Two tables applied; then `returns` deregistered behind lance-sync's back, and a property of
    `orders` set to markup; the policy leaves creates and updates for a person."""
    manifest: dict[str, Any] = {
        "version": 1, "owner": "page-test", "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": [{"name": name, "location": f"./lake/data/{name}.lance", "properties": {"note": "fine"},
                    "register": [{"backend": "lake", "namespace": "sales"}],
                    "schema": [{"name": "id", "type": "int64"}]} for name in ("orders", "returns")]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert run_cli(path, "apply", "--auto-approve", env=cli_env()).returncode == 0
    lake = DirNamespace(root=str(tmp_path / "lake"))
    lake.deregister_table(DeregisterTableRequest(id=["sales", "returns"]))
    lake.update_table_properties(("sales", "orders"), {"note": DECOY}, [])
    path.write_text(yaml.safe_dump({**manifest, "policy": {"unattended": ["rename"]}}))
    return Settings(files=[str(path)], interval=0.01, options=ApplyOptions(state_dir=tmp_path / ".lance-sync"))


@pytest.fixture
def held(estate: Settings) -> Iterator[HeldLoop]:
    with HeldLoop(estate) as loop:
        yield loop


def test_requests_during_a_running_cycle_are_answered_with_the_last_cycle_s_document(held: HeldLoop):
    status, body = get(held.server, "/api/status")
    assert status == 200
    document = json.loads(body)
    assert document["loop"]["cycle"] == 2 and document["loop"]["running_since"] is not None
    assert [(c["cycle"], c["outcome"]) for c in document["cycles"]] == [(1, "pending")]
    states = {(o["kind"], o["id"]): (o["sync"], o["health"]) for o in document["objects"]}
    assert states.pop(("table", "sales$returns")) == ("Missing", "Missing")
    assert states.pop(("table", "sales$orders")) == ("OutOfSync", "Healthy")
    assert set(states.values()) == {("Synced", "Healthy")}
    assert sorted((p["plan"], p["why"].split(":")[0]) for p in document["pending"]) == [
        ("+ create table lake: sales$returns", "needs approval"),
        ("~ update table lake: sales$orders", "needs approval")]
    status, html = get(held.server, "/")
    assert status == 200 and b"<title>lance-sync reconcile</title>" in html


def test_unknown_paths_get_404_and_healthz_answers(held: HeldLoop):
    assert get(held.server, "/nothing")[0] == 404
    assert get(held.server, "/api/status/x")[0] == 404
    assert get(held.server, "/healthz") == (200, b"ok\n")


def test_with_a_token_every_path_but_healthz_needs_it(estate: Settings):
    with HeldLoop(estate, token="t0ken-for-the-page") as loop:
        for path in ("/", "/api/status", "/metrics"):
            assert get(loop.server, path)[0] == 401, path
            assert get(loop.server, path, "wrong")[0] == 401, path
            assert get(loop.server, path, "t0ken-for-the-page")[0] == 200, path
        assert get(loop.server, "/healthz")[0] == 200


def test_markup_in_a_catalog_value_cannot_leave_the_embedded_document():
    """The page carries the document as JSON in a script element: `<`, `>` and `&` are escaped,
    so `</script>` in any string cannot close it, and the markup reaches the page's script intact."""
    html = page(json.dumps({"reason": f"note = '</script>{DECOY}'"}))
    embedded = html.split('<script id="document" type="application/json">', 1)[1].split("</script>", 1)[0]
    assert "<" not in embedded and json.loads(embedded) == {"reason": f"note = '</script>{DECOY}'"}
    assert DECOY not in html


def test_the_board_keeps_the_last_objects_when_a_cycle_fails_before_planning():
    board = StatusBoard("o", 60)
    board.cycle_started(1, 1000.0)
    assert json.loads(board.served.json)["loop"]["running_since"] is not None
    board.cycle_done(1, CycleReport("error", 1000.0, 1001.0, error="the catalog is down"), 1061.0)
    document = json.loads(board.served.json)
    assert document["errors"][0]["error"] == "the catalog is down" and document["objects"] == []
    assert document["loop"]["running_since"] is None and document["cycles"][0]["duration_seconds"] == 1.0


def test_a_cycle_that_applies_tells_what_it_applied_as_synced(estate: Settings):
    """With the default policy the cycle creates `returns` and updates `orders` itself: its
    status is the plan's, with what the apply then did."""
    path = Path(estate.files[0])
    manifest = yaml.safe_load(path.read_text())
    del manifest["policy"]
    path.write_text(yaml.safe_dump(manifest))
    report = run_cycle(estate, threading.Event())
    assert report.outcome == "applied" and report.status is not None
    assert {(o.sync.value, o.health.value) for o in report.status.objects} == {("Synced", "Healthy")}
    returns = next(o for o in report.status.objects if o.id == "sales$returns")
    assert returns.last_applied is not None and returns.reason is None
    assert (returns.last_applied.action, returns.last_applied.journal) == ("create table", report.journal)


def test_a_first_cycle_leaves_every_object_it_made_synced(tmp_path: Path):
    """Nothing exists yet: the cycle creates the namespace, both datasets (with their columns)
    and both registrations."""
    manifest = {"version": 1, "owner": "page-test", "backends": {"lake": {"type": "dir", "root": "./lake"}},
                "namespaces": [{"backend": "lake", "id": "sales"}],
                "tables": [{"name": "orders", "location": "./lake/data/orders.lance",
                            "register": [{"backend": "lake", "namespace": "sales"}],
                            "schema": [{"name": "id", "type": "int64"}]}]}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest))
    report = run_cycle(Settings(files=[str(path)], options=ApplyOptions(state_dir=tmp_path / "state")),
                       threading.Event())
    assert report.outcome == "applied" and report.status is not None
    assert [(o.kind, o.sync.value, o.health.value) for o in report.status.objects] == [
        ("namespace", "Synced", "Healthy"), ("table", "Synced", "Healthy"), ("dataset", "Synced", "Healthy"),
        ("column", "Synced", "Healthy")]
    assert all(o.last_applied is not None and o.last_applied.journal == report.journal
               for o in report.status.objects)
