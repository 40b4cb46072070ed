"""Renderers: text symbols, JSON against the shipped schema, markdown size limits."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
from pydantic import TypeAdapter

from lance_sync.model.actions import Action, Kind, ObjectState, Plan, Reason, Verb, fingerprint
from lance_sync.plan.render import MARKDOWN_LIMIT, render_json, render_markdown, render_text

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json").read_text())

#: an action validated and dumped as a plan file's actions are (a dataclass, not a model)
ACTION = TypeAdapter(Action)


def declare(i: int) -> Action:
    after = ObjectState(location=f"s3://bucket/warehouse/sales/table_{i:05d}.lance",
                        properties={"lance_sync.owner": "platform", "tier": "gold", "team": "sales"})
    return Action(verb=Verb.CREATE, kind=Kind.TABLE, reason=Reason.ABSENT, backend="uc",
                  id=["main", "sales", f"table_{i:05d}"], display_id=f"main$sales$table_{i:05d}", after=after,
                  detail="declared in the manifest, absent",
                  compared_keys=["lance_sync.owner", "team", "tier"], fingerprint=fingerprint(None, []))


def plan_of(actions: list[Action]) -> Plan:
    return Plan(tool_version="0", created_at="2026-01-01T00:00:00+00:00", owner="platform",
                manifest_files=["lance-sync.yaml"], backends={"uc": {"type": "unity"}}, actions=actions)


def test_markdown_for_ten_thousand_actions_stays_under_the_limit_and_says_so():
    text = render_markdown(plan_of([declare(i) for i in range(10_000)]))
    assert len(text) < MARKDOWN_LIMIT
    assert "Truncated:" in text and "of 10000 actions not shown" in text
    assert text.index("| change | count |") < text.index("<details>")
    assert text.rstrip().endswith("</details>") or "Truncated" in text.splitlines()[-1]


def test_small_markdown_is_not_truncated():
    text = render_markdown(plan_of([declare(i) for i in range(3)]))
    assert "Truncated" not in text and text.count("+ create table ") == 3


def test_user_text_cannot_close_the_code_fence():
    action = declare(1)
    action.after.properties["note"] = "```\n# injected"
    assert render_markdown(plan_of([action])).count("```") == 2


def test_json_validates_against_the_shipped_schema():
    document = json.loads(render_json(plan_of([declare(i) for i in range(5)])))
    jsonschema.validate(document, SCHEMA)


def test_text_has_terraform_like_symbols_and_no_colour_unless_asked():
    plan = plan_of([declare(1)])
    plain = render_text(plan)
    assert "  + create table" in plain and "\x1b[" not in plain
    assert "\x1b[" in render_text(plan, colour=True)
    assert plain.rstrip().endswith("Plan: 1 to create, 0 to update, 0 to adopt, 0 to replace, 0 to remove.")


def test_every_action_has_an_inverse_except_data_loss():
    action = declare(1)
    inverse = action.inverse()
    assert (inverse.verb, inverse.kind) == (Verb.FORGET, Kind.TABLE) and inverse.before == action.after
    assert inverse.inverse().verb == Verb.CREATE
    written = Action(verb=Verb.CREATE, kind=Kind.DATASET, reason=Reason.ABSENT, backend="uc", id=[],
                     display_id="/d.lance", detail="write", after=ObjectState(location="/d.lance"),
                     fingerprint=fingerprint(None, []))
    deleted = written.inverse()
    assert (deleted.verb, deleted.kind, deleted.destroys) == (Verb.DELETE, Kind.DATASET, "data")
    assert deleted.inverse() is None


def test_replace_and_destruction_are_said_in_the_head():
    replace = dataclasses.replace(declare(1), verb=Verb.REPLACE, before=declare(1).after, drops_grants=True)
    replace = ACTION.validate_python(ACTION.dump_python(replace))
    text = render_text(plan_of([replace]))
    assert "-/+ replace table" in text and "[new table id, grants are lost]" in text
    assert "needs --allow-replace" in text
    without_grants = ACTION.validate_python({**ACTION.dump_python(replace), "drops_grants": False})
    assert "[new table id]\n" in render_text(plan_of([without_grants]))  # a backend without grants loses none


def test_adopt_is_an_update_with_its_reason_never_a_replace():
    adopt = ACTION.validate_python({**ACTION.dump_python(declare(1)), "verb": "update", "reason": "adopt",
                                   "before": {"properties": {}, "location": declare(1).after.location}})
    head = render_text(plan_of([adopt])).splitlines()[2]
    assert head.startswith("  ~ update table") and "(adopt)" in head


def test_an_impossible_action_is_refused_by_the_model():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="cannot be"):
        ACTION.validate_python({**ACTION.dump_python(declare(1)), "kind": "namespace", "verb": "forget"})
