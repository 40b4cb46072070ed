"""The estate as a person sees it: `lance-sync status` and the reconcile loop's page rendered in
headless Chromium, for an estate with one table dropped out of band.

Each case keeps its screenshots under its tmp_path. With LANCE_SYNC_DOCS_IMAGES=1 the first
case also writes docs/images/status-page.png, the picture docs/status.md shows:

    LANCE_SYNC_DOCS_IMAGES=1 .venv/bin/pytest tests/e2e/test_status_page_browser.py -k dropped
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from lance_namespace_urllib3_client.models import DeregisterTableRequest

from lance_sync import api
from lance_sync.drivers.dir.driver import DirNamespace
from tests.support.browser import keep_for_the_docs, render_page
from tests.support.cli import cli_env, describe, run_cli

DECOY = "<img src=x onerror=alert(1)>"
PHONE = {"width": 390, "height": 844}


class Cells(HTMLParser):
    """The text of each row of the element with id `within`: a tbody's rows cell by cell (a
    cell's text with that of what it holds), or a list's blocks by their child blocks."""

    def __init__(self, within: str):
        super().__init__()
        self.within, self.depth = within, 0
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None
        self.cell_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self.depth:
            self.depth = 1 if dict(attrs).get("id") == self.within else 0
            return
        self.depth += 1
        if tag == "tr" or (tag == "div" and self.depth == 2):
            self.rows.append([])
        elif self.cell is None and self.rows and (tag == "td" or (tag == "div" and self.depth == 3)):
            self.cell, self.cell_depth = [], self.depth

    def handle_endtag(self, tag: str) -> None:
        if not self.depth:
            return
        if self.cell is not None and self.depth == self.cell_depth:
            self.rows[-1].append("".join(self.cell))
            self.cell = None
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def cells(dom: str, within: str) -> list[list[str]]:
    parser = Cells(within)
    parser.feed(dom)
    return [row for row in parser.rows if row]


def estate(folder: Path, markup: bool) -> Path:
    """orders and returns applied; then returns deregistered behind lance-sync's back (and, with
    `markup`, a property of orders set to markup). The policy leaves creates for a person."""
    manifest: dict[str, Any] = {
        "version": 1, "owner": "estate", "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": [{"name": name, "location": f"./lake/data/{name}.lance", "properties": {"note": "fine"},
                    "register": [{"backend": "lake", "namespace": "sales"}],
                    "schema": [{"name": "id", "type": "int64"}, {"name": "amount", "type": "double"}]}
                   for name in ("orders", "returns")]}
    path = folder / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    applied = run_cli(path, "apply", "--auto-approve", env=cli_env())
    assert applied.returncode == 0, describe(applied)
    lake = DirNamespace(root=str(folder / "lake"))
    lake.deregister_table(DeregisterTableRequest(id=["sales", "returns"]))
    if markup:
        lake.update_table_properties(("sales", "orders"), {"note": DECOY}, [])
    unattended = ["rename"] if markup else ["update", "rename"]
    path.write_text(yaml.safe_dump({**manifest, "policy": {"unattended": unattended}}, sort_keys=False))
    return path


@pytest.fixture
def serving(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The status page's address, once the loop's first cycle has run (the next waits 5 minutes);
    run from the manifest's folder, as a service would be."""
    path = estate(tmp_path, markup=request.param)
    monkeypatch.chdir(tmp_path)
    stop, cycled, records = threading.Event(), threading.Event(), []

    def record(line: dict[str, Any]) -> None:
        records.append(line)
        if line["event"] == "cycle":
            cycled.set()

    loop = threading.Thread(target=api.reconcile, args=([path],), daemon=True,
                            kwargs={"interval": 300, "metrics_port": 0, "on_record": record, "stop": stop})
    loop.start()
    try:
        assert cycled.wait(120), records
        yield records[0]["status_page"]
    finally:
        stop.set()
        loop.join(60)


@pytest.mark.parametrize("serving", [False], indirect=True)
def test_a_table_dropped_out_of_band_shows_out_of_sync_with_its_create_pending(browser: Path, serving: str,
                                                                           tmp_path: Path):
    dom = render_page(serving, tmp_path / "status-page.png", height=1000)
    rows = {row[1]: row for row in cells(dom, "objects")}
    assert rows["lake: sales$returns"][:4] == ["table", "lake: sales$returns", "OutOfSync", "Missing"]
    assert "declared in the manifest, absent from backend 'lake'" in rows["lake: sales$returns"][4]
    others = [row[2:4] for name, row in rows.items() if name != "lake: sales$returns"]
    assert len(others) == 8 and all(states == ["Synced", "Healthy"] for states in others), rows
    assert "lake: sales" in rows and "lake: sales$orders" in rows
    assert cells(dom, "pending") == [["+ create table lake: sales$returns",
                                      "needs approval: create is not in policy.unattended (update, rename)"]]
    assert cells(dom, "cycles")[0][:2] == ["1", "pending"]
    assert "No errors." in dom
    keep_for_the_docs(tmp_path / "status-page.png", "status-page.png")

    only_missing = render_page(f"{serving}#sync=OutOfSync", tmp_path / "filtered.png")
    assert [row[1] for row in cells(only_missing, "objects")] == ["lake: sales$returns"]
    phone = render_page(serving, tmp_path / "phone.png", **PHONE)
    assert [row[2:4] for row in cells(phone, "objects") if row[1] == "lake: sales$returns"] == [
        ["OutOfSync", "Missing"]]


@pytest.mark.parametrize("serving", [True], indirect=True)
def test_markup_a_catalog_holds_shows_as_text(browser: Path, serving: str, tmp_path: Path):
    dom = render_page(serving, tmp_path / "markup.png")
    rows = {row[1]: row for row in cells(dom, "objects")}
    assert rows["lake: sales$orders"][2:4] == ["OutOfSync", "Healthy"]
    assert f"note = '{DECOY}'; the manifest says 'fine'" in rows["lake: sales$orders"][4]
    body = dom.split('<script id="document"', 1)[0]
    assert "<img" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body
    assert sorted(row[0] for row in cells(dom, "pending")) == [
        "+ create table lake: sales$returns", "~ update table lake: sales$orders"]


def test_status_names_the_same_states_as_the_page(tmp_path: Path):
    """The command's reading of the estate of the first case (quick: no browser)."""
    path = estate(tmp_path, markup=False)
    result = run_cli(path, "status", env=cli_env())
    assert result.returncode == 2, describe(result)
    flagged = [line.split() for line in result.stdout.splitlines() if line.startswith("! ")]
    assert flagged == [["!", "table", "lake:", "sales$returns", "OutOfSync", "Missing"]], result.stdout
    assert "9 object(s): sync 8 Synced, 1 OutOfSync; health 8 Healthy, 1 Missing." in result.stdout
