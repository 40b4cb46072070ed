"""The reconcile loop's status page: `/` (HTML) and `/api/status` (the same document as JSON).

The loop's thread builds the document when a cycle starts and when it ends, renders both
answers, and swaps them in as one object (`StatusBoard.served`); the HTTP server's threads only
read that reference. So serving never waits for a cycle, and a cycle never waits for a reader.

The page is one self-contained file (no CDN, no font, no image): the document travels inside
it as JSON, the inline script draws it with `textContent` only (a catalog's string is never
parsed as HTML), and fetches `api/status` again every few seconds. Everything served is masked
(`lance_sync.model.secrets`).
"""

from __future__ import annotations

import datetime
import json
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lance_sync import __version__
from lance_sync.model.actions import Verb
from lance_sync.model.secrets import mask
from lance_sync.plan.render import SYMBOLS

if TYPE_CHECKING:
    from lance_sync.apply.reconcile import CycleReport
    from lance_sync.check.status import StatusReport

#: cycles and errors the page lists, newest first
KEPT_CYCLES = 20
KEPT_ERRORS = 10
#: how often the page asks for the document again
REFRESH_SECONDS = 5


@dataclass(frozen=True)
class Served:
    """The two answers of one version of the document."""

    json: bytes
    html: bytes


class StatusBoard:
    """The document the status page shows, kept by the loop's thread."""

    def __init__(self, owner: str, interval: float):
        self.owner = owner
        self.interval = interval
        self.cycles: deque[dict[str, Any]] = deque(maxlen=KEPT_CYCLES)
        self.errors: deque[dict[str, Any]] = deque(maxlen=KEPT_ERRORS)
        self.status: StatusReport | None = None
        #: when the objects were read (the cycle that read them)
        self.read_at: str | None = None
        self.pending: list[dict[str, str]] = []
        self.running_since: str | None = None
        self.next_run: str | None = None
        self.cycle = 0
        self.served = self._render()

    def cycle_started(self, cycle: int, at: float) -> None:
        self.cycle, self.running_since, self.next_run = cycle, _iso(at), None
        self.served = self._render()

    def cycle_done(self, cycle: int, report: CycleReport, next_run: float | None) -> None:
        self.running_since = None
        self.next_run = _iso(next_run) if next_run is not None else None
        self.cycles.appendleft({
            "cycle": cycle, "outcome": report.outcome, "started": _iso(report.started),
            "duration_seconds": round(report.finished - report.started, 3), "drift": report.drift,
            "applied": report.applied, "failed": report.failed, "skipped": report.skipped,
            "pending": len(report.pending), "journal": report.journal})
        if report.error:
            self.errors.appendleft({"cycle": cycle, "time": _iso(report.finished), "outcome": report.outcome,
                                    "error": report.error})
        if report.status is not None:
            self.status, self.read_at = report.status, _iso(report.started)
        if report.outcome not in ("error", "lease_held", "stopped"):  # else the last plan's pending stands
            self.pending = [{"plan": _plan_words(p.action, p.backend, p.display_id), "action": p.action,
                             "backend": p.backend, "id": p.display_id, "why": p.why} for p in report.pending]
        self.served = self._render()

    def document(self) -> dict[str, Any]:
        status = self.status
        return {
            "owner": self.owner, "tool_version": __version__, "generated_at": _iso(None),
            "revision": status.revision if status else None,
            "manifest_files": status.manifest_files if status else [],
            "base_dir": status.base_dir if status else None,
            "loop": {"cycle": self.cycle, "running_since": self.running_since, "next_run": self.next_run,
                     "interval_seconds": self.interval, "refresh_seconds": REFRESH_SECONDS},
            "objects_read_at": self.read_at,
            "summary": status.summary.model_dump() if status else None,
            "objects": [o.model_dump(mode="json") for o in status.objects] if status else [],
            "pending": self.pending, "cycles": list(self.cycles), "errors": list(self.errors)}

    def _render(self) -> Served:
        text = mask(json.dumps(self.document(), ensure_ascii=False, indent=1))
        return Served(json=text.encode(), html=page(text).encode())


def _plan_words(action: str, backend: str, display_id: str) -> str:
    """'+ create table lake: sales$orders', as plan and drift word an action."""
    try:
        symbol = SYMBOLS[Verb(action.split(" ", 1)[0])]
    except ValueError:
        symbol = ""
    return f"{symbol} {action} {backend}: {display_id}".strip()


def _iso(moment: float | None) -> str:
    when = datetime.datetime.now(datetime.timezone.utc) if moment is None else \
        datetime.datetime.fromtimestamp(moment, datetime.timezone.utc)
    return when.isoformat(timespec="seconds")


def page(document_json: str) -> str:
    """The HTML page with the document inside: `<`, `>` and `&` written as JSON escapes, so no
    string in it can end the script element or open a tag."""
    embedded = document_json.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return _PAGE.replace("/*DOCUMENT*/", embedded)


_PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lance-sync reconcile</title>
<style>
:root { --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --mute: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; }
header { background: #24292f; color: #fff; padding: 12px 16px; }
header h1 { font-size: 18px; margin: 0; }
header p { margin: 4px 0 0; color: #d0d7de; font-size: 13px; overflow-wrap: anywhere; }
main { padding: 12px 16px; max-width: 1200px; }
section { margin-bottom: 20px; }
h2 { font-size: 16px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.counts span { display: inline-block; margin: 2px 8px 2px 0; }
.filters { display: flex; flex-wrap: wrap; gap: 8px; margin-bottom: 8px; }
.filters select, .filters input { font: inherit; padding: 4px 6px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-bottom: 1px solid var(--line); }
th { font-size: 13px; color: var(--mute); }
td.id, td.words { overflow-wrap: anywhere; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.Synced, .Healthy, .applied, .in_sync { color: var(--ok); font-weight: 600; }
.OutOfSync, .Degraded, .pending, .lease_held, .stopped, .refused { color: var(--warn); font-weight: 600; }
.Missing, .Unknown, .error, .partly_failed { color: var(--bad); font-weight: 600; }
.reason, .why { color: var(--mute); font-size: 13px; overflow-wrap: anywhere; }
.empty { color: var(--mute); }
header #stale { color: #ff8182; }
@media (max-width: 640px) {
  table.objects thead { display: none; }
  table.objects tr { display: block; border-bottom: 1px solid var(--line); padding: 6px 0; }
  table.objects td { display: block; border: 0; padding: 1px 0; }
  table.objects td.state { display: inline-block; margin-right: 12px; }
}
</style>
</head>
<body>
<header><h1 id="title">lance-sync reconcile</h1><p id="subtitle"></p><p id="stale"></p></header>
<main>
<noscript><p>This page draws itself with JavaScript; the same document is at <a href="api/status">api/status</a>.</p></noscript>
<section><h2>Objects</h2>
<p class="counts" id="counts"></p>
<div class="filters">
<label>Sync <select id="f-sync"><option value="">all</option><option>Synced</option><option>OutOfSync</option><option>Missing</option><option>Unknown</option></select></label>
<label>Health <select id="f-health"><option value="">all</option><option>Healthy</option><option>Degraded</option><option>Missing</option><option>Unknown</option></select></label>
<label>Kind <select id="f-kind"><option value="">all</option></select></label>
<input id="f-text" type="search" placeholder="filter by name" aria-label="filter by name">
</div>
<div class="scroll"><table class="objects"><thead><tr><th>Kind</th><th>Object</th><th>Sync</th><th>Health</th><th>Reason</th><th>Last applied</th></tr></thead><tbody id="objects"></tbody></table></div>
</section>
<section><h2>Waiting for approval</h2><div id="pending"></div></section>
<section><h2>Last cycles</h2><div class="scroll"><table><thead><tr><th>Cycle</th><th>Outcome</th><th>Started</th><th>Duration</th><th>Drift</th><th>Applied</th><th>Failed</th><th>Pending</th></tr></thead><tbody id="cycles"></tbody></table></div></section>
<section><h2>Recent errors</h2><div id="errors"></div></section>
</main>
<script id="document" type="application/json">/*DOCUMENT*/</script>
<script>
"use strict";
let doc = JSON.parse(document.getElementById("document").textContent);
const $ = (id) => document.getElementById(id);
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function row(cells) {
  const tr = el("tr");
  for (const [text, cls] of cells) tr.appendChild(el("td", text, cls));
  return tr;
}
function fill(id, nodes, emptyText) {
  const box = $(id);
  box.replaceChildren(...nodes);
  if (!nodes.length && emptyText) box.appendChild(el("p", emptyText, "empty"));
}
function shown(path) {  // a path below the manifest's folder, as the manifest writes it: ./lake/orders.lance
  const base = doc.base_dir ? doc.base_dir.replace(/\/+$/, "") + "/" : null;
  return base && path.startsWith(base) ? "./" + path.slice(base.length) : path;
}
function when(iso) {  // 2026-12-05 11:56:13 UTC
  return iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace(/\+00:00$/, " UTC") : "";
}
function name(o) {
  return (o.kind === "namespace" || o.kind === "table") && o.backend ? o.backend + ": " + o.id : shown(o.id);
}
function drawObjects() {
  const sync = $("f-sync").value, health = $("f-health").value, kind = $("f-kind").value;
  const text = $("f-text").value.toLowerCase();
  const shown = doc.objects.filter((o) => (!sync || o.sync === sync) && (!health || o.health === health)
    && (!kind || o.kind === kind) && (!text || (name(o) + " " + (o.table || "")).toLowerCase().includes(text)));
  const rows = shown.map((o) => {
    const tr = row([[o.kind], [name(o), "id"], [o.sync, o.sync + " state"], [o.health, o.health + " state"]]);
    const reason = el("td", o.reason || "", "reason");
    for (const repair of o.repairs || []) reason.appendChild(el("div", "repair: " + repair, "words"));
    tr.appendChild(reason);
    const last = o.last_applied;
    tr.appendChild(el("td", last ? last.action + " " + when(last.time) + (last.revision ? " at " + last.revision : "") : "", "reason"));
    return tr;
  });
  fill("objects", rows);
  if (!rows.length) $("objects").appendChild(row([[doc.objects.length ? "no object matches the filters" : "not read yet", "empty"]]));
}
function draw() {
  const loop = doc.loop;
  $("title").textContent = "lance-sync reconcile: " + doc.owner;
  $("subtitle").textContent = [
    doc.revision ? "revision " + doc.revision : "manifest not in git",
    (doc.manifest_files || []).join(", "),
    loop.running_since ? "cycle " + loop.cycle + " running since " + when(loop.running_since) : (loop.next_run ? "next cycle " + when(loop.next_run) : ""),
    doc.objects_read_at ? "objects read " + when(doc.objects_read_at) : "",
    "page " + when(doc.generated_at)].filter(Boolean).join(" \u00b7 ");
  const counts = [];
  if (doc.summary) {
    counts.push(el("span", doc.summary.objects + " objects"));
    for (const axis of ["sync", "health"]) {
      counts.push(el("span", "\u00b7 " + axis + ":"));
      for (const [k, v] of Object.entries(doc.summary[axis])) if (v) counts.push(el("span", v + " " + k, k));
    }
  }
  fill("counts", counts);
  const kinds = $("f-kind"), chosen = kinds.value;
  const options = [...new Set(doc.objects.map((o) => o.kind))].map((k) => { const o = el("option", k); o.value = k; return o; });
  const all = el("option", "all"); all.value = "";
  kinds.replaceChildren(all, ...options);
  kinds.value = chosen;
  drawObjects();
  fill("pending", doc.pending.map((p) => {
    const box = el("div");
    box.appendChild(el("div", p.plan, "words"));
    box.appendChild(el("div", p.why, "why"));
    return box;
  }), "Nothing waits for approval.");
  fill("cycles", doc.cycles.map((c) => row([[c.cycle], [c.outcome, c.outcome], [when(c.started)], [c.duration_seconds + " s"],
    [c.drift], [c.applied], [c.failed], [c.pending]])));
  fill("errors", doc.errors.map((e) => {
    const box = el("div");
    box.appendChild(el("div", "cycle " + e.cycle + " (" + e.outcome + ") " + when(e.time)));
    box.appendChild(el("div", e.error, "why"));
    return box;
  }), "No errors.");
}
// the filters live in the address too (#sync=Missing&kind=table): a view can be bookmarked or sent
const FILTERS = {sync: "f-sync", health: "f-health", kind: "f-kind", q: "f-text"};
function filtersChanged() {
  const chosen = new URLSearchParams();
  for (const [key, id] of Object.entries(FILTERS)) if ($(id).value) chosen.set(key, $(id).value);
  history.replaceState(null, "", chosen.toString() ? "#" + chosen.toString() : location.pathname);
  drawObjects();
}
for (const id of ["f-sync", "f-health", "f-kind"]) $(id).addEventListener("change", filtersChanged);
$("f-text").addEventListener("input", filtersChanged);
const given = new URLSearchParams(location.hash.slice(1));
async function refresh() {
  try {
    const answer = await fetch("api/status", {cache: "no-store"});
    if (!answer.ok) throw new Error("HTTP " + answer.status);
    doc = await answer.json();
    $("stale").textContent = "";
    draw();
  } catch (error) {
    $("stale").textContent = "cannot refresh (" + error.message + "); showing the document of " + doc.generated_at;
  }
}
draw();
for (const [key, id] of Object.entries(FILTERS)) if (given.get(key)) $(id).value = given.get(key);
drawObjects();
setInterval(refresh, doc.loop.refresh_seconds * 1000);
</script>
</body>
</html>
"""
