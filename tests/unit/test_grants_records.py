"""The record of the principals lance-sync manages on an object, offline: what a declaration
revokes given a record, how a record is spelled, and the record action's key, inverse and place
in a policy check. The backends are in tests/e2e/test_grants_left_manifest.py.

Fails on the code before records (602d6a3): none of this existed.
"""

from __future__ import annotations

from lance_sync.model.actions import (
    Action,
    Kind,
    ObjectState,
    Plan,
    Reason,
    Verb,
    action_key,
    fingerprint,
)
from lance_sync.model.grants import NAMED, DeclaredGrants
from lance_sync.model.marks import GRANTS_KEY, grants_record, grants_record_value, unmanaged
from lance_sync.model.policy import action_subjects

SELECT, MODIFY = frozenset({"SELECT"}), frozenset({"MODIFY"})


def test_a_recorded_principal_the_manifest_no_longer_names_is_revoked_and_no_one_else():
    declared = DeclaredGrants({"alice": SELECT}, NAMED)
    live = {"alice": SELECT, "bob": SELECT | MODIFY, "carol": SELECT}
    assert declared.changes(live, frozenset({"alice", "bob"})) == {"bob": (frozenset(), SELECT | MODIFY)}
    assert declared.others(live, frozenset({"alice", "bob"})) == {"carol": SELECT}
    # without a record: only the named principals, as before records
    assert declared.changes(live, None) == {}
    assert declared.others(live, None) == {"bob": SELECT | MODIFY, "carol": SELECT}


def test_a_record_is_a_json_list_and_an_unreadable_one_is_no_record():
    value = grants_record_value({"role:b", "user:a"})
    assert value == '["role:b","user:a"]'
    assert grants_record(value) == {"role:b", "user:a"}
    assert grants_record("[]") == frozenset()
    assert grants_record(None) is None
    assert grants_record("not json") is None
    assert grants_record('{"a": 1}') is None
    # never a user's property: import leaves records out, Unity's per-table ones included
    assert unmanaged({GRANTS_KEY: "[]", f"{GRANTS_KEY}.orders": "[]", "team": "sales"}) == {"team": "sales"}


def record(before: list[str] | None, after: list[str]) -> Action:
    state = ObjectState(principals=before)
    return Action(verb=Verb.RECORD, kind=Kind.TABLE, reason=Reason.CHANGED, backend="b", id=["db", "t"],
                  display_id="db.t", detail="records", before=state, after=ObjectState(principals=after),
                  fingerprint=fingerprint(state, []))


def test_a_record_action_has_its_own_key_and_is_undone_by_restoring_the_record():
    action = record(["alice", "bob"], ["alice"])
    assert action.key != action_key(Kind.TABLE, "b", ["db", "t"])  # beside the table's own action
    assert action.destroys is None and action.about_grants and not action.is_grant
    undo = action.inverse()
    assert undo is not None and undo.verb == Verb.RECORD
    assert undo.before == ObjectState(principals=["alice"]) and undo.after == ObjectState(principals=["alice", "bob"])
    assert fingerprint(ObjectState(principals=["alice"]), []) != fingerprint(ObjectState(principals=["bob"]), [])


def test_a_record_is_no_subject_of_policy_rules_on_properties():
    plan = Plan(tool_version="0", created_at="2026-12-05T00:00:00+00:00", owner="o", manifest_files=[],
                backends={}, actions=[record(None, ["alice"])])
    assert list(action_subjects(plan)) == []
