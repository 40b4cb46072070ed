"""A table's declared indexes against the dataset's: build what is absent, rebuild what
changed (a replace), drop what lance-sync made and the manifest no longer declares, adopt one
made elsewhere as declared (a conflict when it is not), leave everything else alone; and the `maintenance:` thresholds that bring indexes up to date
(optimize_indices) and compact small fragments (compact_files)."""

from __future__ import annotations

from typing import Any

from lance_sync.model.actions import Kind, ObjectState, Reason, Verb
from lance_sync.model.table_state import (
    LiveIndex,
    index_definition_of,
    is_vector,
    rows_to_train,
    same_definition,
)
from lance_sync.plan.table_state.context import TableContext


def plan(context: TableContext) -> None:
    declared: list[dict[str, Any]] | None = context.declared.get("indexes")
    maintenance: dict[str, Any] | None = context.declared.get("maintenance")
    if declared is None and maintenance is None:
        return
    if context.write is not None:
        _on_new_data(context, declared or [])
        return
    if not context.readable:
        if declared and (context.status is None or context.status.status == "missing"):
            context.note(f"indexes {', '.join(spec['name'] for spec in declared)} wait: no dataset at the location yet")
        return
    in_sync = [spec["name"] for spec in declared or [] if _declared(context, spec)]
    if declared is not None:
        wanted = {spec["name"] for spec in declared}
        for name in sorted(context.live.indexes if context.live else ()):
            if name not in wanted:
                _undeclared(context, name)
    if maintenance is not None:
        _maintenance(context, maintenance, in_sync)


def wanted_definition(spec: dict[str, Any], owner: str) -> dict[str, Any]:
    """The state a declared index is in once lance-sync built it: its definition, recorded as this owner's."""
    return {"column": spec["column"], "type": spec["type"], "params": spec.get("params") or {}, "owner": owner,
            "built": True}


def _shown(definition: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in (definition.get("params") or {}).items())
    return f"{definition['type']} on {definition['column']}" + (f" ({params})" if params else "")


def _on_new_data(context: TableContext, declared: list[dict[str, Any]]) -> None:
    """The plan writes the dataset: its indexes are built after it, except a vector index on a
    dataset written empty, which waits for rows to train on."""
    for spec in declared:
        if is_vector(spec["type"]) and not context.table.source:
            context.note(f"index '{spec['name']}' waits: the dataset is written empty, and a vector index is "
                         f"built once it holds {rows_to_train(spec)} row(s) to train on")
            continue
        context.action(Verb.CREATE, Kind.INDEX, Reason.ABSENT, spec["name"], before=None,
                       after=context.state(wanted_definition(spec, context.owner)),
                       detail=f"declared, absent: build {_shown(spec)} once the dataset is written")


def _declared(context: TableContext, spec: dict[str, Any]) -> bool:
    """Plan one declared index; True when it is in sync."""
    assert context.live is not None
    name, live = spec["name"], context.live
    want = wanted_definition(spec, context.owner)
    have = index_definition_of(name, live.indexes, live.records)
    columns = {column["name"] for column in (context.status.columns if context.status else None) or []}
    if have is None and columns and spec["column"] not in columns:
        context.out.conflicts.append((f"table '{context.table.name}': index '{name}' is on column '{spec['column']}', "
                                      f"which the dataset at {context.location} does not have", context.table.name))
        return False
    if have is None:
        needed = rows_to_train(spec)
        if live.row_count < needed:
            context.note(f"index '{name}' waits: {_shown(spec)} trains on {needed} row(s) at least; the "
                         f"dataset has {live.row_count}")
            return False
        context.action(Verb.CREATE, Kind.INDEX, Reason.ABSENT, name, before=None, after=context.state(want),
                       detail=f"declared, absent: build {_shown(spec)}")
        return False
    built = live.indexes[name]
    rebuilt_elsewhere = (built.column, built.type) != (have["column"], have["type"])
    if have == want and not rebuilt_elsewhere:
        unindexed = built.unindexed_rows
        if unindexed:
            context.note(f"index '{name}': {unindexed} row(s) not indexed yet")
        return True
    owner = have.get("owner")
    if owner is None:
        _made_elsewhere(context, spec, built, have, want)
        return False
    if owner != context.owner:
        context.out.conflicts.append((f"table '{context.table.name}': index '{name}' at {context.location} was "
                                      f"made by lance-sync owner '{owner}', not '{context.owner}'", context.table.name))
        return False
    context.action(Verb.REPLACE, Kind.INDEX, Reason.CHANGED, name, before=context.state(have),
                   after=context.state(want),
                   detail=_replace_detail(have, want, f"{built.type} on {built.column}", rebuilt_elsewhere))
    return False


def _made_elsewhere(context: TableContext, spec: dict[str, Any], built: LiveIndex, have: dict[str, Any],
                    want: dict[str, Any]) -> None:
    """An index made outside lance-sync under a declared name: adopted as it is (recorded, never
    rebuilt) when it is as declared; else a conflict, since rebuilding it would take someone
    else's index away."""
    told = _shown({"type": built.type, "column": built.column, "params": built.params})
    if same_definition(spec, built):
        context.action(Verb.UPDATE, Kind.INDEX, Reason.ADOPT, spec["name"], before=context.state(have),
                       after=context.state(want),
                       detail=f"made outside lance-sync as declared ({told}): adopt it (record it as this "
                       "owner's; no rebuild)")
        return
    context.out.conflicts.append((
        f"table '{context.table.name}': index '{spec['name']}' at {context.location} was made outside lance-sync "
        f"as {told}; the manifest declares {_shown(spec)}: drop that index, or give yours another name",
        context.table.name))


def _replace_detail(have: dict[str, Any], want: dict[str, Any], built: str, rebuilt_elsewhere: bool) -> str:
    if rebuilt_elsewhere:
        return f"the dataset's index is {built}, not what lance-sync built: rebuild it as {_shown(want)}"
    if not have.get("built"):
        return f"an earlier apply did not finish building it: build {_shown(want)} again"
    return f"changed: {_shown(have)} -> {_shown(want)}: rebuild it"


def _undeclared(context: TableContext, name: str) -> None:
    assert context.live is not None
    have = index_definition_of(name, context.live.indexes, context.live.records)
    owner = have.get("owner") if have else None
    if have is not None and owner == context.owner:
        context.action(Verb.DELETE, Kind.INDEX, Reason.LEFT_MANIFEST, name, before=context.state(have), after=None,
                       detail="lance-sync made it and the manifest no longer declares it: drop it")
        return
    context.left_alone(Kind.INDEX, name, f"made by lance-sync owner '{owner}'" if owner
                       else "made outside lance-sync")


def _maintenance(context: TableContext, maintenance: dict[str, Any], in_sync: list[str]) -> None:
    """optimize_indices for each declared index in sync with more unindexed rows than the
    threshold; compact_files when more fragments than the threshold are small."""
    assert context.live is not None
    live = context.live
    threshold: int | None = maintenance.get("unindexed_rows")
    for name in in_sync if threshold is not None else ():
        unindexed = live.indexes[name].unindexed_rows or 0
        if threshold is not None and unindexed >= threshold:
            state = context.state(index_definition_of(name, live.indexes, live.records))
            context.action(Verb.UPDATE, Kind.INDEX, Reason.CHANGED, name, before=state, after=state,
                           detail=f"{unindexed} row(s) are not in the index (maintenance.unindexed_rows: "
                           f"{threshold}): bring it up to date (optimize_indices)")
    small, target = maintenance.get("small_fragments"), maintenance["target_rows_per_fragment"]
    if small and live.small_fragments >= small:
        context.action(Verb.UPDATE, Kind.DATASET, Reason.CHANGED, None,
                       before=ObjectState(location=context.location, version=live.version),
                       after=ObjectState(location=context.location,
                                         definition={"target_rows_per_fragment": target}),
                       detail=f"{live.small_fragments} fragment(s) hold fewer than {target} rows "
                       f"(maintenance.small_fragments: {small}): compact them (compact_files)")
