"""The pull-request comment of the GitHub Action (scripts/ci_action.py): the link to the HTML
report, and a comment cut to fit GitHub's limit that says where the whole plan is."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
URL = "https://github.test/acme/catalogs/actions/runs/42/artifacts/9001"
NAME = "lance-sync-plan-catalog-lance-sync.yaml"


@pytest.fixture(scope="module")
def ci_action() -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module("ci_action")
    finally:
        sys.path.remove(str(SCRIPTS))


def test_a_comment_that_fits_links_the_report(ci_action: ModuleType):
    body = "<!-- marker -->\n### lance-sync plan\n\nPlan: 1 to create.\n"
    comment = ci_action.comment_with_report(body, URL, NAME)
    assert comment == (body + f"\n**The whole plan:** [HTML report]({URL}) (artifact `{NAME}`: download it and "
                              "open `plan.html`).\n")


def test_a_comment_cut_to_fit_says_the_whole_plan_is_in_the_linked_report(ci_action: ModuleType):
    body = "<!-- marker -->\n" + "x" * 2 * ci_action.COMMENT_LIMIT
    comment = ci_action.comment_with_report(body, URL, NAME)
    assert len(comment) == ci_action.COMMENT_LIMIT
    assert comment.startswith("<!-- marker -->\nxxx")
    assert comment.endswith(f"_(cut to fit a comment: the whole plan is in the HTML report)_\n\n"
                            f"**The whole plan:** [HTML report]({URL}) (artifact `{NAME}`: download it and open "
                            "`plan.html`).\n")


def test_without_a_report_a_cut_comment_says_it_was_cut(ci_action: ModuleType):
    body = "<!-- marker -->\n" + "x" * 2 * ci_action.COMMENT_LIMIT
    comment = ci_action.comment_with_report(body, "", "")
    assert len(comment) == ci_action.COMMENT_LIMIT and comment.endswith("_(cut to fit a comment)_\n")
    assert ci_action.comment_with_report("short\n", "", "") == "short\n"
