"""The rollback plan of an apply: the inverses of what succeeded, written beside its journal as
a plan that `lance-sync apply` checks like any other."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from lance_sync.apply.journal import now
from lance_sync.apply.report import ApplyReport
from lance_sync.apply.runner import state_before
from lance_sync.model.actions import Action, Kind, Plan, Verb, fingerprint
from lance_sync.model.secrets import mask


def rollback_plan(plan: Plan, report: ApplyReport) -> Plan:
    """The inverses of the succeeded actions, ordered so that undoing runs opposite to doing."""
    succeeded = [o for o in report.outcomes if o.status == "succeeded"]
    # the version of each dataset after the apply: a rollback that forgets or deletes it is
    # stale once newer data is written
    versions = {o.action.location: o.version for o in succeeded if o.action.kind == Kind.DATASET}
    keyed = [(o.action.key, o) for o in succeeded]  # each key computed once
    inverses: dict[str, Action | None] = {}
    for key, outcome in keyed:
        inverse = outcome.action.inverse()
        if inverse is not None and inverse.verb in (Verb.FORGET, Verb.DELETE) and inverse.kind != Kind.NAMESPACE:
            known = outcome.action.dataset.version if outcome.action.dataset is not None else None
            before, version = state_before(inverse), versions.get(inverse.location, known)
            if version != before.version:  # else the fingerprint inverse() computed stands
                before.version = version
                inverse.fingerprint = fingerprint(before, inverse.compared_keys)
        inverses[key] = inverse
    dependents: dict[str, list[str]] = defaultdict(list)
    for key, outcome in keyed:
        for need in outcome.action.depends_on:
            dependents[need].append(key)
    actions, notes = [], []
    for key, outcome in reversed(keyed):
        action, inverse = outcome.action, inverses[key]
        if inverse is None:
            notes.append(f"{action.headline} cannot be undone")
            continue
        needed = (inverses.get(k) for k in dependents[key])
        inverse.depends_on = sorted(need.key for need in needed if need is not None)
        actions.append(inverse)
    return plan.model_copy(update={
        "actions": actions, "left_alone": [], "adopted_unmarked": [], "notes": [], "warnings": notes,
        "api_calls": {}, "created_at": now(), "policy_violations": [], "partial": None})


def write_rollback(plan: Plan, report: ApplyReport, path: Path) -> Path | None:
    """The rollback plan, masked like a saved plan (its secrets are `${VAR}` references)."""
    rollback = rollback_plan(plan, report)
    if not rollback.actions and not rollback.warnings:
        return None
    path.write_text(mask(rollback.model_dump_json(indent=2)) + "\n", encoding="utf-8")
    return path

