"""tests/support/browser.py: a page rendered in headless Chromium gives the DOM its scripts made and
a screenshot of the size asked for; a test that takes `browser` is in the slow lane."""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.browser import PENDING_ATTRIBUTE, BrowserError, render_page, require_chromium
from tests.support.lanes import lane_marks

#: fills its list in a task after the load event, then drops the pending mark: read before that
#: task ran, the DOM has no item (checked by removing the wait for the mark)
LATE_PAGE = f"""<!doctype html><html><head><meta charset="utf-8"><title>late</title></head>
<body><ul id="items" {PENDING_ATTRIBUTE}></ul><script>
window.addEventListener("load", () => setTimeout(() => {{
  const list = document.getElementById("items");
  for (const name of ["orders", "customers"]) {{
    const item = document.createElement("li"); item.textContent = name; list.append(item);
  }}
  list.removeAttribute("{PENDING_ATTRIBUTE}");
}}, 200));
</script></body></html>"""


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_render_page_waits_for_the_pending_mark(browser: Path, tmp_path: Path):
    """The DOM is read once the page's script removed `data-pending`, not at the load event."""
    page = tmp_path / "late.html"
    page.write_text(LATE_PAGE, encoding="utf-8")
    dom = render_page(page, tmp_path / "late.png", width=640, height=480)
    assert "<li>orders</li><li>customers</li>" in dom
    assert PENDING_ATTRIBUTE not in dom.split("<script>")[0]
    assert png_size(tmp_path / "late.png") == (640, 480)


#: a page served on 127.0.0.1 that fills itself in from its own JSON, as a status page does
SERVED_PAGE = f"""<!doctype html><html><body><p id="state" {PENDING_ATTRIBUTE}>loading</p><script>
fetch("/api/status").then(r => r.json()).then(status => {{
  const state = document.getElementById("state");
  state.textContent = status.health;
  state.removeAttribute("{PENDING_ATTRIBUTE}");
}});
</script></body></html>"""


@pytest.fixture
def served() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 with the page at / and its JSON at /api/status."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, kind = ((SERVED_PAGE.encode(), "text/html") if self.path == "/"
                          else (json.dumps({"health": "Healthy"}).encode(), "application/json"))
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_render_page_reads_a_served_page_once_its_fetch_filled_it_in(browser: Path, served: str, tmp_path: Path):
    dom = render_page(served, tmp_path / "served.png")
    assert '<p id="state">Healthy</p>' in dom


def test_render_page_fails_on_a_page_it_cannot_open(browser: Path, tmp_path: Path):
    with pytest.raises(BrowserError, match="cannot open"):
        render_page("http://127.0.0.1:9/nothing-listens-here", tmp_path / "none.png")


def test_a_test_that_takes_the_browser_is_slow():
    class Item:
        fixturenames = ("browser", "tmp_path")

        def iter_markers(self) -> list[pytest.Mark]:
            return []

    assert lane_marks(Item()) == ["slow"]  # type: ignore[arg-type]


def test_without_chromium_a_browser_test_skips_and_names_the_install(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        require_chromium()


def test_without_chromium_in_ci_a_browser_test_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        require_chromium()


def test_a_page_that_opens_a_dialog_fails_at_once(browser: Path, tmp_path: Path):
    """A script that should not run (markup from a catalog) is told, not waited on until the deadline."""
    page = tmp_path / "alert.html"
    page.write_text("<!doctype html><p>hi</p><script>alert('injected')</script>", encoding="utf-8")
    with pytest.raises(BrowserError, match="opened a dialog .*'injected'"):
        render_page(page, tmp_path / "alert.png")
