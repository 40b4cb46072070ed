"""The HTML report of a plan and of drift, read as markup in this process: self-contained,
escaped, every action under its backend with its before/after, small enough for thousands.
How a browser shows it: tests/e2e/test_html_report.py."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from lance_sync import api
from lance_sync.check.drift import DriftItem, DriftKind, DriftReport, render_drift
from lance_sync.cli.app import main
from lance_sync.model.secrets import register
from lance_sync.plan.render_html import render_html, state_rows
from tests.support.reports import HOSTILE_VALUE, first_plan, sample_plan


def sections(page: str) -> dict[str, int]:
    """Each backend's section and the number of actions in it."""
    found = re.findall(r'<section class="group" data-group="([^"]+)">(.*?)</section>', page, re.DOTALL)
    return {name: body.count('<details class="item') for name, body in found}


def test_the_page_is_self_contained_and_reads_on_a_phone():
    page = render_html(sample_plan())
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert not re.search(r"""<[^>]*\s(?:src|href)\s*=|<link|@import|url\(""", page), "a resource from elsewhere"
    assert "@media (max-width: 600px)" in page


def test_catalog_text_is_escaped_everywhere():
    """A property value that is markup shows as text; checked by rendering it unescaped."""
    page = render_html(sample_plan())
    assert HOSTILE_VALUE not in page and "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_secret_is_masked_whatever_its_characters():
    """A value with an apostrophe and markup escapes to no form the masking of a whole text
    knows: it is masked before it is escaped (checked by masking only the whole page, as
    `api.render` does)."""
    secret = "pa'ss<w>rd-for-the-html-report"
    register(secret)
    plan = sample_plan()
    update = plan.actions[3].after
    assert update is not None
    update.properties["token"] = f"Bearer {secret}"
    page = api.render(plan, "html")
    assert "Bearer ***" in page
    assert "pa'ss" not in page and "&lt;w&gt;rd" not in page and "rd-for-the-html-report" not in page


def test_every_action_is_under_its_backend_with_the_summary_first():
    page = render_html(sample_plan())
    assert sections(page) == {"unity": 4, "lake": 4}
    assert page.index("Plan: 4 to create, 1 to update") < page.index('<section class="group"')
    assert '<li class="count" data-count="create"><b>4</b>create</li>' in page
    assert "action(s) destroy data: apply needs --allow-drop" in page
    assert "create column discount on ./lakehouse/sales/orders.lance" in page
    assert "replace index order_id_idx on ./lakehouse/sales/orders.lance" in page
    assert "grant SELECT to analysts on table unity: main.sales.orders" in page
    assert "/srv/catalog" not in page  # paths below the manifest's folder read ./, as in the text plan


def test_before_and_after_of_each_changed_field():
    update = sample_plan().actions[3]
    assert state_rows(update.before, update.after) == [
        ("location", "/srv/catalog/lakehouse/sales/customers.lance", "/srv/catalog/lakehouse/sales/customers.lance"),
        ("property lance_sync.owner", "platform", "platform"),
        ("property note", "old", HOSTILE_VALUE),
        ("property tier", "silver", "gold")]
    index = sample_plan().actions[5]
    assert ("definition type", "BTREE", "BITMAP") in state_rows(index.before, index.after)
    written = sample_plan().actions[1]
    assert ("column order_id", None, "int64, not null") in state_rows(written.before, written.after)
    assert ("source", None, "parquet ./data/orders.parquet") in state_rows(written.before, written.after)
    page = render_html(sample_plan())
    assert ('<tr class="changed"><th scope="row">property tier</th><td>silver</td><td>gold</td></tr>' in page)


def test_two_thousand_tables_are_collapsed_and_counted():
    plan = first_plan(2000)
    page = render_html(plan)
    assert sections(page) == {"unity": 2000}
    assert page.count("<details class=\"item") == 2000 and "<details open" not in page
    assert '<b>2,000</b>create' in page
    assert len(page) < 1000 * len(plan.actions), "a report of thousands of tables grew past what opens at once"


def test_show_prints_a_saved_plan_as_html(tmp_path: Path):
    saved = tmp_path / "plan.json"
    api.save_plan(sample_plan(), saved)
    shown = CliRunner().invoke(main, ["show", str(saved), "--format", "html"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == render_html(sample_plan())


def test_drift_as_html_groups_the_differences_and_escapes_them():
    report = DriftReport(tool_version="0.9.0", created_at="2026-12-05T12:00:00+00:00", owner="platform",
                         manifest_files=["lance-sync.yaml"], left_alone=3, items=[
                             DriftItem(kind=DriftKind.PROPERTIES, subject="table unity: main.sales.orders",
                                       backend="unity", display_id="main.sales.orders",
                                       detail=f"note = {HOSTILE_VALUE!r}; the manifest says 'ok'",
                                       repair="~ update table unity: main.sales.orders"),
                             DriftItem(kind=DriftKind.SCHEMA, subject="table 'orders'", table="orders",
                                       detail="the dataset lacks column 'discount'")])
    page = render_drift(report, "html")
    assert sections(page) == {"unity": 1, "manifest": 1}
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "Drift: 2 difference(s): 1 properties, 1 schema." in page
    assert "repair: none by apply: a person must act" in page and "3 object(s) in scope" in page
