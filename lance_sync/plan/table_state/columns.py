"""A table's declared columns against its dataset's: planned as Lance schema evolution.

A change is made in place, never by rewriting the data: a new nullable column is added (all
null), a column whose entry names `renamed_from` is renamed, a nullability the manifest states
is relaxed and a type widened (lance_sync.model.evolution says which). A column declared
`removed: true` is dropped (destroys its data: --allow-drop), only from a dataset that carries
this owner's record. Columns the manifest does not declare stay: a writer may add them.

What Lance cannot do in place (a new column that is not null, a narrowing, a type it does not
cast to, making a column not null) is a problem naming the table, the column and why: the
caller makes it a conflict, or a rewrite where the table's source says `on_mismatch: overwrite`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lance_sync.model.actions import (
    Action,
    Address,
    DatasetStatus,
    Kind,
    ObjectState,
    Reason,
    Verb,
    fingerprint,
)
from lance_sync.model.arrow_types import format_type, parse_type
from lance_sync.model.desired import DesiredTable
from lance_sync.model.evolution import definition, narrows, widens
from lance_sync.model.marks import describe_dataset_owner


@dataclass
class Evolution:
    """What bringing a dataset's columns to the manifest's takes."""

    actions: list[Action] = field(default_factory=list)
    #: what cannot be done in place, each naming the column and why
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Target:
    """Where the actions go: the dataset, its writer backend and registrations."""

    table: DesiredTable
    status: DatasetStatus
    backend: str
    registrations: Sequence[Address]


def plan_columns(table: DesiredTable, status: DatasetStatus, owner: str, backend: str,
                 registrations: Sequence[Address]) -> Evolution:
    """The column actions that bring a valid dataset to the table's declared columns, and what
    cannot be done in place. Each action waits for the one before it: one dataset's schema
    changes one commit at a time."""
    target = _Target(table, status, backend, registrations)
    found = {c["name"]: c for c in status.columns or []}
    evolution = Evolution()
    accounted: set[str] = set()
    for column in table.columns or []:
        source = column["name"] if column["name"] in found else column.get("renamed_from")
        have = found.get(source) if source is not None else None
        if have is None:
            _add(target, column, found, evolution)
            continue
        accounted.add(have["name"])
        _alter(target, column, have, evolution)
    for name in table.removed_columns:
        if name in found:
            accounted.add(name)
            evolution.actions.append(_drop(target, found[name], owner))
    declared = {c["name"] for c in table.columns or []}
    extra = [f"{c['name']}: {c['type']}" for c in status.columns or []
             if c["name"] not in accounted and c["name"] not in declared]
    if extra:
        evolution.notes.append(
            f"table '{table.name}': the dataset at {table.location} has columns beyond the manifest "
            f"({', '.join(extra)}); that is fine (schema evolution)")
    for earlier, later in zip(evolution.actions, evolution.actions[1:], strict=False):
        later.depends_on = [earlier.key]
    return evolution


def _found_definition(column: dict[str, Any]) -> dict[str, Any]:
    return definition(column["name"], column["type"], column.get("nullable", True) is not False)


def _add(target: _Target, column: dict[str, Any], found: dict[str, dict[str, Any]], evolution: Evolution) -> None:
    name, type_name = column["name"], format_type(parse_type(column["type"]))
    if column.get("nullable", True) is False:
        evolution.problems.append(
            f"column '{name}' is declared {type_name} not null and is missing from the dataset: Lance adds a "
            "column to existing rows only as nullable (all null); declare it nullable")
        return
    same_type = [other for other, c in found.items() if c["type"] == type_name
                 and other not in {d["name"] for d in target.table.columns or []}]
    hint = (f"; the dataset has {', '.join(same_type)} of this type (renamed out of band? `renamed_from: "
            f"{same_type[0]}` renames it back)") if same_type else ""
    evolution.actions.append(_action(
        target, Verb.CREATE, name, before=None, after=definition(name, type_name, True),
        detail=f"add column {name} {type_name}: nullable, null in every existing row (no data file is "
               f"rewritten){hint}"))


def _alter(target: _Target, column: dict[str, Any], have: dict[str, Any], evolution: Evolution) -> None:
    """Rename, relax and widen a column in place, or say why it cannot be done."""
    name = column["name"]
    want_type, have_type = format_type(parse_type(column["type"])), format_type(parse_type(have["type"]))
    have_nullable = have.get("nullable", True) is not False
    changes, problems = [], []
    if have["name"] != name:
        changes.append(f"rename {have['name']} to {name} (renamed_from)")
    if want_type != have_type:
        if widens(have_type, want_type):
            changes.append(f"widen {have_type} to {want_type}")
        else:
            why = "a narrowing, which can lose values" if narrows(have_type, want_type) else \
                "not a widening Lance makes in place"
            problems.append(f"column '{name}' is declared {want_type} but the dataset has {have_type}: {why}")
    nullable = column.get("nullable")
    if nullable is True and not have_nullable:
        changes.append("make it nullable")
    elif nullable is False and have_nullable:
        problems.append(f"column '{name}' is declared {want_type} not null but the dataset has {have_type} "
                        "nullable: Lance does not make a column not null in place (rows may hold nulls)")
    evolution.problems += problems
    if problems or not changes:
        return
    evolution.actions.append(_action(
        target, Verb.UPDATE, name, before=_found_definition(have),
        after=definition(name, want_type, have_nullable or nullable is True),
        detail=f"alter column {name} in place: {'; '.join(changes)}"))


def _drop(target: _Target, have: dict[str, Any], owner: str) -> Action:
    status = target.status
    blocked = None
    if target.table.protect:
        blocked = "the table is protected (protect: true): its columns are not dropped"
    elif status.owner != owner:
        blocked = (f"the dataset at {target.table.location} {describe_dataset_owner(status.owner)}: lance-sync "
                   f"drops columns only from the datasets it created for '{owner}'")
    return _action(target, Verb.DELETE, have["name"], before=_found_definition(have), after=None,
                   detail=f"drop column {have['name']} (declared removed: its data is lost)", blocked=blocked)


def _action(target: _Target, verb: Verb, part: str, *, before: dict[str, Any] | None,
            after: dict[str, Any] | None, detail: str, blocked: str | None = None) -> Action:
    """A column action: its fingerprint covers the column as found and the dataset's version."""
    location = target.table.location
    start = ObjectState(location=location, version=target.status.version, definition=before)
    return Action(verb=verb, kind=Kind.COLUMN, reason=Reason.ABSENT if verb == Verb.CREATE else Reason.CHANGED,
                  backend=target.backend, id=[], display_id=f"{location}#{part}", detail=detail,
                  before=start,
                  after=None if after is None else ObjectState(location=location, definition=after),
                  fingerprint=fingerprint(start, []), table=target.table.name, dataset=target.status,
                  registrations=list(target.registrations), blocked=blocked, part=part)


def schema_hint(table: DesiredTable) -> str:
    """What to do about columns Lance cannot change in place: a rewrite only where there is a source."""
    if table.source:
        return "change the manifest's schema, or set source.on_mismatch: overwrite to rewrite the data (destroys it)"
    return ("change the manifest's schema (the table has no source, so lance-sync cannot rewrite its data: "
            "rewrite it out of band)")
