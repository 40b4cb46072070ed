"""The HTML plan report as a reviewer sees it: rendered in headless Chromium (tests/support/browser.py),
checked in the DOM after its script ran, with a screenshot of each case under the test's folder.

The README's screenshot is one of them; with LANCE_SYNC_DOCS_IMAGES=1 it is also written to
docs/images/plan-report.png:

    LANCE_SYNC_DOCS_IMAGES=1 .venv/bin/pytest tests/e2e/test_html_report.py -k reviewer
"""

from __future__ import annotations

from pathlib import Path

from lance_sync.plan.render_html import render_html
from tests.support.browser import keep_for_the_docs, render_page
from tests.support.project import Project
from tests.support.reports import first_plan, sample_plan

#: a phone's viewport, in CSS pixels
PHONE = {"width": 390, "height": 844}


def test_the_report_as_a_reviewer_sees_it(browser: Path, tmp_path: Path):
    """The summary, the counts, each backend's actions, the changed properties of the opened action,
    and a property value that is markup shown as text: no img element in the DOM (checked by
    rendering the value unescaped, which gives one)."""
    page = tmp_path / "plan.html"
    # the reviewer opened the update, as the README's screenshot shows it
    page.write_text(render_html(sample_plan()).replace('<details class="item v-update"',
                                                       '<details open class="item v-update"', 1), encoding="utf-8")
    dom = render_page(page, tmp_path / "plan-report.png")
    assert "Plan: 4 to create, 1 to update, 0 to adopt, 1 to replace, 1 to remove, 1 to grant." in dom
    assert '<li class="count" data-count="create"><b>4</b>create</li>' in dom
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom and "<img" not in dom
    assert '<div class="toolbar">' in dom  # the script ran: the filter is shown
    assert '<td>silver</td><td>gold</td>' in dom
    keep_for_the_docs(tmp_path / "plan-report.png", "plan-report.png")
    phone = render_page(page, tmp_path / "plan-report-phone.png", **PHONE)
    assert "&lt;img src=x onerror=alert(1)&gt;" in phone and "<img" not in phone


def test_a_plan_of_two_thousand_tables_opens_with_its_counts(browser: Path, tmp_path: Path):
    page = tmp_path / "plan.html"
    page.write_text(render_html(first_plan(2000)), encoding="utf-8")
    dom = render_page(page, tmp_path / "two-thousand.png")
    assert "Plan: 2000 to create, 0 to update" in dom and "<b>2,000</b>create" in dom
    assert '<span class="total">2,000</span> actions' in dom
    assert dom.count('<details class="item') == 2000 and "<details open" not in dom


def test_plan_and_drift_as_html_from_the_command_line(browser: Path, tmp_path: Path):
    """`plan --format html` and `drift --format html` of the quickstart, each opened in the browser."""
    (tmp_path / "project").mkdir()
    project = Project(tmp_path / "project")
    planned = project.plan("--format", "html")
    assert planned.exit_code == 0, planned.output
    (tmp_path / "plan.html").write_text(planned.stdout, encoding="utf-8")
    dom = render_page(tmp_path / "plan.html", tmp_path / "quickstart-plan.png")
    assert "Plan: 7 to create" in dom and "./lakehouse/data/orders.lance" in dom
    drifted = project.run("drift", "-f", str(project.manifest_path), "--format", "html")
    assert drifted.exit_code == 2, drifted.output
    (tmp_path / "drift.html").write_text(drifted.stdout, encoding="utf-8")
    dom = render_page(tmp_path / "drift.html", tmp_path / "quickstart-drift.png")
    assert "lance-sync drift" in dom and "declared in the manifest, absent from backend" in dom
