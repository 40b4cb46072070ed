"""The rollback plan of an apply: the inverses of what succeeded, in a file beside its journal
that `lance-sync apply` checks like any other plan.

The file holds what the inverses are made from (`RollbackRecord`: the actions that succeeded,
as the applied plan gives them, and the versions dataset writes committed); reading it
(`lance-sync show`, `lance-sync apply`) makes the rollback plan. Making every inverse at the
end of the apply (each built, validated and fingerprinted, then written as JSON) took about
47 µs of CPU an action; writing the actions as they are takes about 20.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lance_sync.apply.journal import now
from lance_sync.apply.live import OWN_STATE
from lance_sync.apply.report import ApplyReport, Outcome
from lance_sync.apply.runner import state_before
from lance_sync.model.actions import (
    DATASET_PARTS,
    PLAN_FORMAT_VERSION,
    Action,
    Kind,
    Plan,
    Verb,
    fingerprint,
)
from lance_sync.model.secrets import mask


class RollbackRecord(BaseModel):
    """A rollback plan as an apply writes it; `read_rollback` makes the rollback plan from it."""

    model_config = ConfigDict(extra="forbid")

    format_version: Literal[2] = PLAN_FORMAT_VERSION
    #: what the file is (a saved plan has no such field)
    document: Literal["rollback"] = "rollback"
    #: when the apply ended: the rollback plan's `created_at`
    created_at: str
    #: the applied plan with only the actions that succeeded, in the order they finished
    succeeded: Plan
    #: the version each dataset write committed, by its action's key
    versions: dict[str, int] = Field(default_factory=dict)

    def undoing(self) -> tuple[Plan, ApplyReport]:
        """The plan and the report `rollback_plan` makes the rollback plan from."""
        outcomes = [Outcome(a, "succeeded", version=self.versions.get(a.key) if _writes_version(a) else None)
                    for a in self.succeeded.actions]
        return self.succeeded, ApplyReport(outcomes=outcomes)


def rollback_plan(plan: Plan, report: ApplyReport, created_at: str | None = None) -> Plan:
    """The inverses of the succeeded actions, ordered so that undoing runs opposite to doing."""
    succeeded = [o for o in report.outcomes if o.status == "succeeded"]
    # the version of each dataset after the apply: a rollback that forgets or deletes it is
    # stale once newer data is written
    versions: dict[str | None, int | None] = {}
    for o in succeeded:  # a dataset's columns change one commit after another: the latest counts
        if _writes_version(o.action) and (o.version or 0) >= (versions.get(o.action.location) or 0):
            versions[o.action.location] = o.version
    keyed = [(o.action.key, o) for o in succeeded]  # each key computed once
    inverses: dict[str, Action | None] = {}
    for key, outcome in keyed:
        inverse = outcome.action.inverse()
        # an index's or tag's state is its definition alone: later commits to the dataset leave it be
        if inverse is not None and inverse.kind not in OWN_STATE and (
                (inverse.verb in (Verb.FORGET, Verb.DELETE) and inverse.kind != Kind.NAMESPACE)
                or inverse.kind in DATASET_PARTS):
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
            notes.append(f"{action.headline} cannot be undone" + (f": {action.irreversible}"
                                                                  if action.irreversible else ""))
            continue
        needed = (inverses.get(k) for k in dependents[key])
        inverse.depends_on = sorted(need.key for need in needed if need is not None)
        actions.append(inverse)
    return plan.model_copy(update={
        "actions": actions, "left_alone": [], "adopted_unmarked": [], "notes": [], "warnings": notes,
        "api_calls": {}, "created_at": created_at or now(), "policy_violations": [], "partial": None,
        "dataset_rows": {}, "rollback": True})


def write_rollback(plan: Plan, report: ApplyReport, path: Path) -> Path | None:
    """The rollback record of an apply, masked like a saved plan (its secrets are `${VAR}`
    references); None when nothing succeeded."""
    succeeded = report.with_status("succeeded")
    if not succeeded:
        return None
    record = RollbackRecord(
        created_at=now(), succeeded=plan.model_copy(update={"actions": [o.action for o in succeeded]}),
        versions={o.action.key: o.version for o in succeeded if _writes_version(o.action) and o.version is not None})
    path.write_text(mask(record.model_dump_json(indent=2)) + "\n", encoding="utf-8")
    return path


def read_rollback(document: dict[str, object]) -> Plan:
    """The rollback plan of a record `write_rollback` wrote (pydantic.ValidationError if it is not one)."""
    record = RollbackRecord.model_validate(document)
    return rollback_plan(*record.undoing(), created_at=record.created_at)


def _writes_version(action: Action) -> bool:
    """A dataset write or a change of a dataset's part: its outcome is the version it committed."""
    return action.kind == Kind.DATASET or action.kind in DATASET_PARTS
