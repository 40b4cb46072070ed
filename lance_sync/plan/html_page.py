"""The page the HTML reports share (`plan`, `show` and `drift` with `--format html`): one
self-contained file, its style and script inline (no CDN, opens offline), readable on a phone.

Every text a catalog or a manifest provides goes through `escaper` (or `html.escape`) before it
is placed in the page: a property value `<img src=x onerror=alert(1)>` shows as that text. The
items (actions, differences) are collapsed `<details>`, so a report of thousands opens at once
and the browser lays out only what a reader opens; a filter box and expand/collapse buttons
appear when the script runs.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

from lance_sync.model.locations import with_manifest_relative_paths
from lance_sync.model.secrets import mask

STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa;
  --line: #d1d9e0; --create: #1a7f37; --update: #9a6700; --remove: #cf222e; --replace: #8250df;
  --rename: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117;
  --panel: #151b23; --line: #3d444d; --create: #3fb950; --update: #d29922; --remove: #f85149;
  --replace: #ab7df8; --rename: #4493f8; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif;
  color: var(--fg); background: var(--bg); }
main { max-width: 1100px; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, "Liberation Mono", monospace; font-size: .9em; }
.meta { color: var(--muted); margin: 0; overflow-wrap: anywhere; }
.summary-line { font-weight: 600; margin: .75rem 0; }
.counts { display: flex; flex-wrap: wrap; gap: .5rem; padding: 0; margin: .5rem 0 1rem; list-style: none; }
.counts li { border: 1px solid var(--line); border-radius: 6px; padding: .35rem .75rem; background: var(--panel); }
.counts b { font-size: 1.2rem; margin-right: .3rem; }
.attention { border-left: 4px solid var(--update); background: var(--panel); padding: .5rem .75rem; margin: .5rem 0; }
.attention.danger { border-left-color: var(--remove); }
.attention ul { margin: .25rem 0; padding-left: 1.25rem; }
.toolbar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 1rem 0; }
.toolbar input { flex: 1 1 14rem; min-width: 0; padding: .4rem .6rem; font: inherit; color: inherit;
  background: var(--bg); border: 1px solid var(--line); border-radius: 6px; }
.toolbar button { font: inherit; padding: .4rem .8rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--panel); color: inherit; cursor: pointer; }
details.item { border: 1px solid var(--line); border-radius: 6px; margin: .35rem 0; background: var(--bg);
  content-visibility: auto; contain-intrinsic-size: auto 2.6rem; }
details.item > summary { cursor: pointer; padding: .45rem .6rem; overflow-wrap: anywhere; }
details.item[open] > summary { border-bottom: 1px solid var(--line); background: var(--panel); }
.item .body { padding: .5rem .75rem; overflow-x: auto; }
.sym { display: inline-block; min-width: 2.2em; font-weight: 700; font-family: ui-monospace, monospace; }
.v-create .sym, .v-grant .sym { color: var(--create); }
.v-update .sym { color: var(--update); }
.v-rename .sym { color: var(--rename); }
.v-replace .sym { color: var(--replace); }
.v-delete .sym, .v-forget .sym, .v-revoke .sym { color: var(--remove); }
.badge { display: inline-block; font-size: .78rem; border-radius: 999px; padding: 0 .5rem; margin-left: .3rem;
  border: 1px solid var(--line); color: var(--muted); white-space: nowrap; }
.badge.danger { color: var(--remove); border-color: var(--remove); }
table.diff { width: 100%; border-collapse: collapse; table-layout: fixed; margin: .5rem 0; }
table.diff th, table.diff td { text-align: left; vertical-align: top; padding: .25rem .4rem;
  border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
table.diff th:first-child { width: 28%; }
tr.changed td { background: color-mix(in srgb, var(--update) 14%, transparent); }
tr.added td:last-child { background: color-mix(in srgb, var(--create) 14%, transparent); }
tr.removed td:nth-child(2) { background: color-mix(in srgb, var(--remove) 14%, transparent); }
.none { color: var(--muted); font-style: italic; }
.note { color: var(--muted); }
ul.plain { padding-left: 1.25rem; overflow-wrap: anywhere; }
@media (max-width: 600px) {
  main { padding: .6rem; }
  body { font-size: 14px; }
  table.diff th:first-child { width: 34%; }
}
"""

#: the filter box and the buttons: shown only where the script runs (the page reads without it)
SCRIPT = """
(() => {
  const bar = document.querySelector(".toolbar");
  if (!bar) return;
  bar.hidden = false;
  const input = bar.querySelector("input");
  const groups = [...document.querySelectorAll("section.group")];
  const items = [...document.querySelectorAll("details.item")];
  let texts = null;
  input.addEventListener("input", () => {
    texts = texts || new Map(items.map(item => [item, item.querySelector("summary").textContent.toLowerCase()]));
    const words = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let total = 0;
    for (const group of groups) {
      let shown = 0;
      for (const item of group.querySelectorAll("details.item")) {
        item.hidden = !words.every(word => texts.get(item).includes(word));
        if (!item.hidden) shown++;
      }
      group.hidden = shown === 0;
      group.querySelector(".shown").textContent = shown;
      total += shown;
    }
    bar.querySelector(".total").textContent = total;
  });
  const open = state => () => items.forEach(item => { if (!item.hidden) item.open = state; });
  bar.querySelector(".expand").addEventListener("click", open(true));
  bar.querySelector(".collapse").addEventListener("click", open(false));
})();
"""


def escaper(base_dir: str | None) -> Callable[[object], str]:
    """Text for the page: paths below the manifest's folder written ./..., as the text and
    markdown renderers write them, secrets masked, then HTML-escaped. Masked before escaping: a
    secret with an apostrophe and a `<` escapes to a form the masking of the whole page does
    not know. The double quote is escaped too, so the text is safe in an attribute (the page
    quotes every attribute with it); the apostrophe stays, for the source to read as the text
    plan does."""
    def escape(value: object) -> str:
        text = mask(with_manifest_relative_paths(str(value), base_dir))
        return html.escape(text, quote=False).replace('"', "&quot;")
    return escape


def html_page(title: str, body: str) -> str:
    """The whole document: `body` (HTML made of escaped text) in the shared shell."""
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"color-scheme\" content=\"light dark\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n"
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n")


def report_head(report: str, owner: str, files: str, created_at: str, tool_version: str, summary: str,
                escape: Callable[[object], str]) -> str:
    """The top of a report: what it is, whose and from which files, and its one-line summary."""
    return (f"<header><h1>lance-sync {html.escape(report)}</h1><p class=\"meta\">owner <code>{escape(owner)}</code>"
            f" · {escape(files)} · {escape(created_at)} · lance-sync {escape(tool_version)}</p></header>\n"
            f"<p class=\"summary-line\">{escape(summary)}</p>\n")


def counts_list(counts: dict[str, int]) -> str:
    """The counts a reader sees first: '<b>2000</b> create', one box each."""
    items = "".join(f"<li class=\"count\" data-count=\"{html.escape(name)}\"><b>{count:,}</b>{html.escape(name)}</li>"
                    for name, count in counts.items() if count)
    return f"<ul class=\"counts\">{items}</ul>\n" if items else ""


def toolbar(total: int, what: str) -> str:
    """The filter box over the items, hidden until the script shows it."""
    return (f"<div class=\"toolbar\" hidden><input type=\"search\" placeholder=\"Filter {what} by name, kind, "
            f"verb\" aria-label=\"Filter {what}\"><span><span class=\"total\">{total:,}</span> {what}</span>"
            "<button type=\"button\" class=\"expand\">Expand all</button>"
            "<button type=\"button\" class=\"collapse\">Collapse all</button></div>\n")


def group_section(name: str, items: list[str], what: str) -> str:
    """One backend's items under its name, with how many there are (and how many the filter shows)."""
    return (f"<section class=\"group\" data-group=\"{html.escape(name)}\"><h2>{html.escape(name)} "
            f"<span class=\"note\">(<span class=\"shown\">{len(items):,}</span> {what})</span></h2>\n"
            + "".join(items) + "</section>\n")


def attention(lines: Iterable[str], danger: bool = False) -> str:
    """A box of escaped lines that need a reader's attention."""
    shown = list(lines)
    if not shown:
        return ""
    items = "".join(f"<li>{line}</li>" for line in shown)
    return f"<div class=\"attention{' danger' if danger else ''}\"><ul>{items}</ul></div>\n"


def collapsed_list(title: str, lines: list[str]) -> str:
    """A collapsed section of escaped lines (left alone, scanned namespaces)."""
    if not lines:
        return ""
    items = "".join(f"<li>{line}</li>" for line in lines)
    return (f"<details class=\"section\"><summary><h2 style=\"display:inline\">{html.escape(title)}</h2></summary>"
            f"<ul class=\"plain\">{items}</ul></details>\n")
