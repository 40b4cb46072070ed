"""Partial plans: only some objects (`--target`), or without what needs a person (reconcile).

Either way the actions kept can run on their own: a kept action keeps every action it depends
on (a table keeps the namespace it is created in and the data it points at), and a left-out
action takes every action that depends on it along. Deleting a dataset always comes with
forgetting every registration of it, so data is never deleted under a registration that stays.
The plan records what it left out and why (`Plan.partial`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from lance_sync.model.actions import DATASET_PARTS, Action, Kind, OmittedAction, Partial, Plan, Verb
from lance_sync.model.errors import LanceSyncError

if TYPE_CHECKING:
    from lance_sync.model.desired import DesiredState


@dataclass(frozen=True)
class Target:
    """`backend:id`, each side a glob: `lake:sales$orders`, `uc:main$sales$*`, `*:sales`."""

    text: str
    backend: str
    id: str

    def matches(self, backend: str, display_id: str) -> bool:
        return fnmatchcase(backend, self.backend) and fnmatchcase(display_id, self.id)


def parse_targets(texts: Iterable[str], state: DesiredState) -> list[Target]:
    """Each --target as the addresses it names: `BACKEND:ID` (ID in the backend's own syntax, or
    its levels joined by `/`, which no shell expands as it does `$`), or the name of a manifest
    table (every registration of it)."""
    targets: list[Target] = []
    for text in texts:
        backend, sep, id = text.partition(":")
        if not sep:
            targets += _table_targets(text, state)
            continue
        if not backend or not id:
            raise LanceSyncError(f"--target takes BACKEND:ID or a table's name, not '{text}' "
                                 f"(e.g. lake:sales/orders or 'lake:sales$orders'; globs allowed)")
        matched = [name for name in state.backends if fnmatchcase(name, backend)]
        if not matched:
            raise LanceSyncError(f"--target {text}: '{backend}' names no backend of the manifest "
                                 f"(defined: {', '.join(sorted(state.backends))})")
        if "/" not in id:
            targets.append(Target(text, backend, id))
            continue
        targets += [Target(text, name, state.backends[name].format_id(tuple(id.split("/")))) for name in matched]
    return targets


def _table_targets(text: str, state: DesiredState) -> list[Target]:
    """Every registration of the manifest tables named `text` (a glob)."""
    found = [Target(text, r.backend, _literal(state.backends[r.backend].format_id(r.id)))
             for table in state.tables if fnmatchcase(table.name, text) for r in table.registrations]
    if not found:
        raise LanceSyncError(f"--target takes BACKEND:ID or the name of a manifest table, not '{text}' "
                             f"(e.g. lake:sales/orders or 'lake:sales$orders'; globs allowed)")
    return found


def _literal(text: str) -> str:
    """`text` as a glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def select_targets(plan: Plan, targets: list[Target], declared: Iterable[tuple[str, str]] = (),
                   contents: Mapping[tuple[str, str], list[str]] | None = None) -> Plan:
    """The plan limited to the actions on targeted objects and what they depend on.

    `declared`: (backend, display id) of every object the manifest declares, so that a target
    that names nothing at all is told apart from one whose objects are in sync. `contents`:
    per declared namespace (backend, display id), the display ids of the tables declared in it,
    so that a target that names a namespace whose tables are left out says so (an unquoted
    `lake:sales$orders` reaches lance-sync as `lake:sales`).
    """
    chosen = {a.key for a in plan.actions if any(t.matches(*address) for t in targets for address in _addresses(a))}
    keep = _with_dependencies(plan.actions, chosen)
    known = [address for a in plan.actions for address in _addresses(a)] + list(declared)
    warnings = [f"--target {t.text} matches nothing the manifest declares or the plan changes"
                for t in targets if not any(t.matches(*pair) for pair in known)]
    omitted = [_omitted(a, "not targeted") for a in plan.actions if a.key not in keep]
    warnings += _namespace_warnings(targets, contents or {}, {(o.backend, o.display_id) for o in omitted})
    return plan.model_copy(update={
        "actions": [a for a in plan.actions if a.key in keep], "warnings": plan.warnings + warnings,
        "partial": Partial(by="target", targets=[t.text for t in targets], omitted=omitted)})


def _namespace_warnings(targets: list[Target], contents: Mapping[tuple[str, str], list[str]],
                        omitted: set[tuple[str, str]]) -> list[str]:
    warnings = []
    for (backend, namespace), tables in contents.items():
        named = next((t for t in targets if t.matches(backend, namespace)), None)
        left = [table for table in tables if (backend, table) in omitted]
        if named is not None and left:
            warnings.append(
                f"--target {named.text} names the namespace {backend}:{namespace}, not its tables; left out: "
                f"{', '.join(left)}. To plan a table, name it: --target {backend}:{namespace}/TABLE, or quote "
                f"a '$', which the shell otherwise expands: --target '{backend}:{left[0]}'")
    return warnings


def leave_out(plan: Plan, why: Callable[[Action], str | None]) -> Plan:
    """The plan without each action `why` gives a reason for, nor anything that depends on one."""
    reasons = {a.key: reason for a in plan.actions if (reason := why(a)) is not None}
    by_key = {a.key: a for a in plan.actions}
    dependents = _dependents(plan.actions)
    pending = list(reasons)
    while pending:
        key = pending.pop()
        for dependent in dependents[key]:
            if dependent not in reasons:
                reasons[dependent] = f"depends on {by_key[key].name} {by_key[key].shown_id}, which is left out"
                pending.append(dependent)
    if not reasons:
        return plan
    partial = plan.partial or Partial(by="unattended")
    omitted = partial.omitted + [_omitted(a, reasons[a.key]) for a in plan.actions if a.key in reasons]
    return plan.model_copy(update={"actions": [a for a in plan.actions if a.key not in reasons],
                                   "partial": partial.model_copy(update={"omitted": omitted})})


def _addresses(action: Action) -> list[tuple[str, str]]:
    """(backend, display id) a target may name the action by: a rename's old id too, and a
    dataset part's (and a dataset's maintenance) table registrations (`--target lake:sales$orders`
    takes its columns and indexes along)."""
    addresses = [(action.backend, action.display_id)]
    if action.kind in DATASET_PARTS or (action.kind == Kind.DATASET and action.verb == Verb.UPDATE):
        addresses += [(r.backend, r.display_id) for r in action.registrations]
    if action.renamed_from is not None:
        addresses.append((action.renamed_from.backend, action.renamed_from.display_id))
    return addresses


def _with_dependencies(actions: Sequence[Action], chosen: set[str]) -> set[str]:
    """`chosen`, what they depend on, and the forgets that go with a dataset deletion."""
    by_key = {a.key: a for a in actions}
    dependents = _dependents(actions)
    keep: set[str] = set()
    pending = [key for key in chosen if key in by_key]
    while pending:
        key = pending.pop()
        if key in keep:
            continue
        keep.add(key)
        action = by_key[key]
        pending += [need for need in action.depends_on if need in by_key]
        if action.kind == Kind.DATASET and action.verb == Verb.DELETE:
            pending += dependents[key]
    return keep


def _dependents(actions: Sequence[Action]) -> dict[str, list[str]]:
    dependents: dict[str, list[str]] = defaultdict(list)
    for action in actions:
        for need in action.depends_on:
            dependents[need].append(action.key)
    return dependents


def _omitted(action: Action, why: str) -> OmittedAction:
    return OmittedAction(key=action.key, action=action.name, backend=action.backend,
                         display_id=action.shown_id, why=why)
