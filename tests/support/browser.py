"""Pages as a person sees them: rendered in headless Chromium, the DOM after the scripts ran and a
screenshot.

`render_page(target, screenshot)` opens a `file://` path (or a Path) or an `http://127.0.0.1:...`
URL, waits for the page's load event and then for the page to be ready, writes a PNG of the
window to `screenshot` and returns the document's HTML (`document.documentElement.outerHTML`).

A page that opens a dialog (`alert(...)`: a script that should not have run, such as markup
from a catalog) fails at once with a BrowserError that says so.

Ready, by a marker in the DOM, never a sleep: a page whose script fills it in after the load
event (a fetch of /api/status, say) marks what is unfinished with the attribute `data-pending`
and removes it when done; `render_page` waits until no element carries it. A page without the
attribute is ready at its load event.

Chromium is Debian's (`scripts/install.sh` installs it: `apt-get install -y chromium`), driven
through the DevTools protocol over a pipe (`--remote-debugging-pipe`: no port, no websocket
library). A test takes the session fixture `browser`, which puts it in the slow lane
(tests/support/lanes.py) and skips it when Chromium is missing, naming the install command; in CI
(`CI=true`) a missing Chromium fails the test instead.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

#: the names Chromium's binary has on Debian, Ubuntu and others
BINARIES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_COMMAND = "apt-get install -y chromium (scripts/install.sh does it)"
#: how long a page may take to load and get ready before the test fails (a failure, never a wait)
DEADLINE_SECONDS = 60.0
#: the attribute a page keeps on what its scripts have not filled in yet
PENDING_ATTRIBUTE = "data-pending"
#: set to 1, the tests that take the docs' pictures copy their screenshots to docs/images
DOCS_IMAGES_VARIABLE = "LANCE_SYNC_DOCS_IMAGES"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

#: resolves once no element carries the pending attribute (a MutationObserver: no polling)
_READY_SCRIPT = f"""new Promise(resolve => {{
  const done = () => !document.querySelector("[{PENDING_ATTRIBUTE}]");
  if (done()) return resolve(true);
  new MutationObserver((_, observer) => {{ if (done()) {{ observer.disconnect(); resolve(true); }} }})
    .observe(document, {{subtree: true, childList: true, attributes: true}});
}})"""


def keep_for_the_docs(screenshot: Path, name: str) -> None:
    """With LANCE_SYNC_DOCS_IMAGES=1, `screenshot` becomes docs/images/`name`, the picture the docs
    show; otherwise it stays only under the test's folder."""
    if os.environ.get(DOCS_IMAGES_VARIABLE) == "1":
        shutil.copyfile(screenshot, DOCS_IMAGES / name)


class BrowserError(RuntimeError):
    """Chromium could not render the page: it failed to load, or did not get ready in time."""


def chromium_binary() -> Path | None:
    """Chromium's executable on PATH, or None."""
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def render_page(target: str | Path, screenshot: Path, *, width: int = 1280, height: int = 900) -> str:
    """The DOM of `target` once it is loaded and ready, with a PNG screenshot of the window
    (`width` x `height` CSS pixels) written to `screenshot`."""
    binary = chromium_binary()
    if binary is None:
        raise BrowserError(f"Chromium is not installed: {INSTALL_COMMAND}")
    url = target.resolve().as_uri() if isinstance(target, Path) else target
    with (tempfile.TemporaryDirectory(prefix="lance-sync-chromium-") as work,
          open(Path(work, "chromium.log"), "w+b") as log,
          _Chromium(binary, Path(work, "profile"), log) as chromium):
        session = chromium.open_tab(width, height)
        chromium.navigate(session, url)
        chromium.call("Runtime.evaluate", {"expression": _READY_SCRIPT, "awaitPromise": True}, session)
        shot = chromium.call("Page.captureScreenshot", {"format": "png"}, session)
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        dom = chromium.call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                                 "returnByValue": True}, session)
        return str(dom["result"]["value"])


class _Chromium:
    """One headless Chromium and its DevTools pipe: it reads commands on fd 3, writes on fd 4, each
    message a JSON document ended by a NUL byte."""

    def __init__(self, binary: Path, profile: Path, log: BinaryIO):
        self.deadline = time.monotonic() + DEADLINE_SECONDS
        to_child, self.commands = os.pipe()
        self.replies, from_child = os.pipe()
        self.log = log
        # bash (dash takes no fd above 9) gives Chromium the pipe's ends as fds 3 and 4 and execs it;
        # a preexec_fn would run the at-fork handlers of loaded libraries in the child (lance warns)
        self.process = subprocess.Popen(
            ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{to_child} 4>&{from_child} {to_child}<&- {from_child}>&-',
             str(binary), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, pass_fds=(to_child, from_child))
        os.close(to_child)
        os.close(from_child)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> _Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close", {})
            self.process.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self.commands)
            os.close(self.replies)

    def open_tab(self, width: int, height: int) -> str:
        """A new tab of the given size, its session id (commands to the page go there)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})
        session = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        self.call("Page.enable", {}, session)
        self.call("Page.setLifecycleEventsEnabled", {"enabled": True}, session)
        return str(session)

    def navigate(self, session: str, url: str) -> None:
        """Opens `url` and returns at the load event of the document it loads (told apart from any
        other document's by its loader id, whichever order the events come in)."""
        answer = self.call("Page.navigate", {"url": url}, session)
        if answer.get("errorText"):
            raise BrowserError(f"Chromium cannot open {url}: {answer['errorText']}")
        loader = answer.get("loaderId")
        self.wait_for(lambda event: event.get("method") == "Page.lifecycleEvent" and event.get("sessionId") == session
                      and event["params"].get("name") == "load" and event["params"].get("loaderId") == loader,
                      f"the load event of {url}")

    def send(self, method: str, params: dict[str, Any], session: str | None = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        return self.next_id

    def call(self, method: str, params: dict[str, Any], session: str | None = None) -> dict[str, Any]:
        """Sends a command and returns its result; an error answer raises."""
        number = self.send(method, params, session)
        answer = self.wait_for(lambda message: message.get("id") == number, f"the answer to {method}")
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message')}")
        result = answer.get("result", {})
        if result.get("exceptionDetails"):
            raise BrowserError(f"{method}: the page's script failed: {result['exceptionDetails']}")
        return dict(result)

    def wait_for(self, wanted: Any, what: str) -> dict[str, Any]:
        """The first message (an answer or an event, seen earlier or arriving now) that `wanted` accepts."""
        for message in self.events:
            if wanted(message):
                self.events.remove(message)
                return message
        for message in self._messages(what):
            if message.get("method") == "Page.javascriptDialogOpening":
                # a dialog stops the page until someone answers it: a script the page should not run
                raise BrowserError(f"the page opened a dialog before {what}: {message['params'].get('type')} "
                                   f"{message['params'].get('message')!r}")
            if wanted(message):
                return message
            self.events.append(message)
        raise AssertionError("unreachable: _messages raises when Chromium stops")

    def _messages(self, what: str) -> Iterator[dict[str, Any]]:
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                yield json.loads(raw)
            left = self.deadline - time.monotonic()
            readable, _, _ = select.select([self.replies], [], [], max(left, 0))
            if not readable:
                raise BrowserError(f"Chromium did not send {what} within {DEADLINE_SECONDS:.0f} s{self._log_tail()}")
            chunk = os.read(self.replies, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium exited before {what}{self._log_tail()}")
            self.buffer += chunk

    def _log_tail(self) -> str:
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip().splitlines()[-5:]
        return ("; its log ends:\n" + "\n".join(tail)) if tail else ""


@pytest.fixture(scope="session")
def browser() -> Path:
    """Chromium's executable, for a test that renders pages (`render_page`): the test is slow by
    rule (tests/support/lanes.py); without Chromium it is skipped, and in CI it fails."""
    return require_chromium()


def require_chromium() -> Path:
    """Chromium's executable; without it the test skips, naming the install command, and in CI
    (`CI=true`, where scripts/install.sh ran) it fails."""
    binary = chromium_binary()
    if binary is None:
        message = f"Chromium is not installed: {INSTALL_COMMAND}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI installs it and runs every browser test", pytrace=False)
        pytest.skip(message)
    return binary
