"""A dataset's own state through pylance: read for the planner (only the parts a table
declares, one open per dataset, in a thread pool) and changed by apply (indexes, their
maintenance, tags, a retention cleanup). See lance_sync.model.table_state for the records
lance-sync keeps of what it made."""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import lance
from lance.dataset import Version

from lance_sync.drivers.support.retry import backoff_seconds
from lance_sync.model.actions import Action, Kind, ObjectState, Verb
from lance_sync.model.errors import PlanError
from lance_sync.model.table_state import (
    INDEX_RECORD_PREFIX,
    TAG_OWNER_KEY,
    Cleanup,
    LiveIndex,
    LiveTableState,
    LiveTag,
    index_definition_of,
    index_record,
    is_vector,
    live_type,
    read_index_record,
    refreshes_index,
    reported_params,
)

#: tries of a part action whose commit another writer preempted or whose storage request failed
COMMIT_ATTEMPTS = 4
#: what Lance's error says when the same change may succeed if made again: every part action
#: is made again safely (an index rebuilt under its record, a tag set, named versions removed)
_TRY_AGAIN = ("Retryable commit conflict", "LanceError(IO)")
#: (location, storage options, the table's declared state)
Wanted = tuple[str, dict[str, str] | None, dict[str, Any]]


def read_table_states(wanted: Iterable[Wanted], parallelism: int) -> dict[str, LiveTableState]:
    """Each dataset's state, by location: what its table declares is read, nothing else."""
    wanted = list(wanted)
    if not wanted:
        return {}
    with ThreadPoolExecutor(max(1, min(parallelism, len(wanted))), thread_name_prefix="table-state") as pool:
        states = list(pool.map(lambda item: read_table_state(*item), wanted))
    return {location: state for (location, _, _), state in zip(wanted, states, strict=True)}


def read_table_state(location: str, options: dict[str, str] | None, declared: dict[str, Any]) -> LiveTableState:
    """One dataset's state; what cannot be read is the state's `error` (the plan warns and
    plans nothing of that table's own state)."""
    try:
        dataset = lance.dataset(location, storage_options=options)
    except (OSError, ValueError, RuntimeError) as error:
        return LiveTableState(version=0, row_count=0, error=f"{type(error).__name__}: {error}")
    return read_opened_state(dataset, declared)


def read_opened_state(dataset: lance.LanceDataset, declared: dict[str, Any]) -> LiveTableState:
    """read_table_state of a dataset opened already (by the plan's inspection of its location)."""
    try:
        state = LiveTableState(version=dataset.version, row_count=dataset.count_rows())
    except (OSError, ValueError, RuntimeError) as error:
        return LiveTableState(version=0, row_count=0, error=f"{type(error).__name__}: {error}")
    try:
        if "indexes" in declared or "maintenance" in declared:
            state.indexes, state.records = _indexes(dataset, with_stats=True)
        if "maintenance" in declared and declared["maintenance"].get("small_fragments"):
            target = declared["maintenance"]["target_rows_per_fragment"]
            state.small_fragments = sum(1 for f in dataset.get_fragments() if f.metadata.num_rows < target)
        if "tags" in declared or "retention" in declared:
            state.tags = _tags(dataset)
        # listing the versions reads every version's manifest: only for a retention, or a tag to create or move
        if "retention" in declared or _tag_to_set(declared.get("tags") or {}, state.tags):
            versions = dataset.versions()
            state.versions = tuple(v["version"] for v in versions)
        if "retention" in declared:
            kept = {tag.version for tag in state.tags.values()} | set((declared.get("tags") or {}).values())
            state.cleanup = _cleanup(dataset, versions, declared["retention"], kept)
    except (OSError, ValueError, RuntimeError) as error:
        state.error = f"{type(error).__name__}: {error}"
    return state


def _indexes(dataset: lance.LanceDataset, with_stats: bool) -> tuple[dict[str, LiveIndex], dict[str, dict]]:
    # the statistics are read for the unindexed rows only: a vector index's centroids are not needed
    os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
    indexes = {}
    for index in dataset.describe_indices():
        unindexed = dataset.stats.index_stats(index.name).get("num_unindexed_rows") if with_stats else None
        index_type = live_type(index.index_type)
        indexes[index.name] = LiveIndex(index.name, index.field_names[0] if index.field_names else "", index_type,
                                        unindexed, reported_params(index_type, index.details or {}))
    records = {}
    for key, value in dataset.config().items():
        if key.startswith(INDEX_RECORD_PREFIX) and (record := read_index_record(value)) is not None:
            records[key.removeprefix(INDEX_RECORD_PREFIX)] = record
    return indexes, records


def _tags(dataset: lance.LanceDataset) -> dict[str, LiveTag]:
    return {name: LiveTag(tag["version"], (tag.get("metadata") or {}).get(TAG_OWNER_KEY))
            for name, tag in dataset.tags.list().items()}


def _tag_to_set(declared: dict[str, int], tags: dict[str, LiveTag]) -> bool:
    """Whether a declared tag is absent or names another version: the plan then checks that the
    declared version exists."""
    return any(name not in tags or tags[name].version != version for name, version in declared.items())


def _cleanup(dataset: lance.LanceDataset, versions: list[Version], retention: dict[str, Any],
             kept: set[int]) -> Cleanup:
    """The versions the policy removes now (beyond the newest `keep_versions` and older than
    `older_than`; never one in `kept`, the tagged and the declared tags' versions, nor the
    latest), and what Lance says removing exactly those deletes: apply removes these, no more.
    `versions`: the dataset's, oldest first."""
    older_than, keep = _policy(retention)
    candidates = versions[:-max(keep or 1, 1)]
    if older_than is not None:
        cutoff = datetime.datetime.now() - older_than
        candidates = [v for v in candidates if _naive(v["timestamp"]) < cutoff]  # type: ignore[arg-type]
    removed = tuple(v["version"] for v in candidates if v["version"] not in kept)
    if not removed:
        return Cleanup((), 0, 0, 0)
    stats = dataset.explain_cleanup_old_versions(versions=list(removed), error_if_tagged_old_versions=False).stats
    files = (stats.data_files_removed + stats.transaction_files_removed + stats.index_files_removed
             + stats.deletion_files_removed)
    return Cleanup(removed, stats.old_versions, files, stats.bytes_removed)


def _naive(moment: datetime.datetime) -> datetime.datetime:
    """Lance gives version times as naive local times; compare them as such."""
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo else moment


def _policy(retention: dict[str, Any]) -> tuple[datetime.timedelta | None, int | None]:
    seconds = retention.get("older_than")
    return (datetime.timedelta(seconds=seconds) if seconds is not None else None), retention.get("keep_versions")


# --- the live state of one part, for the guards -------------------------------------------------

def live_part_state(action: Action, options: dict[str, str] | None) -> ObjectState | None:
    """The live counterpart of a part action's `before` (None: the part is absent)."""
    location = action.location or ""
    dataset = lance.dataset(location, storage_options=options)
    if action.kind == Kind.INDEX:
        definition = index_definition_of(action.part or "", *_indexes(dataset, with_stats=False))
    elif action.kind == Kind.TAG:
        tag = _tags(dataset).get(action.part or "")
        definition = None if tag is None else {"version": tag.version, "owner": tag.owner}
    else:  # the dataset's old versions: its version is what a cleanup was planned at
        policy = action.before.definition if action.before else None
        return ObjectState(location=location, version=dataset.version, definition=policy)
    return None if definition is None else ObjectState(location=location, definition=definition)


# --- apply ----------------------------------------------------------------------------------------

def change_part(action: Action, owner: str, options: dict[str, str] | None) -> int:
    """Run a part action on the dataset at its location; the dataset's version after it. A
    commit another writer preempted, or a storage request that failed, is tried again on the
    dataset's newest version."""
    location = action.location
    if location is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no location")
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            _change(lance.dataset(location, storage_options=options), action, owner)
            break
        except OSError as error:
            if not any(sign in str(error) for sign in _TRY_AGAIN) or attempt == COMMIT_ATTEMPTS - 1:
                raise
            time.sleep(backoff_seconds(attempt))
    return lance.dataset(location, storage_options=options).version


def _change(dataset: lance.LanceDataset, action: Action, owner: str) -> None:
    if action.kind == Kind.INDEX:
        _change_index(dataset, action, owner)
    elif action.kind == Kind.TAG:
        _change_tag(dataset, action, owner)
    elif action.kind == Kind.VERSIONS:
        # exactly the versions the plan named; Lance never removes a tagged one nor the latest
        versions = ((action.before.definition if action.before else None) or {}).get("versions") or []
        dataset.cleanup_old_versions(versions=list(versions), error_if_tagged_old_versions=False)
    else:  # the dataset's small fragments
        target = ((action.after.definition if action.after else None) or {}).get("target_rows_per_fragment")
        dataset.optimize.compact_files(**({"target_rows_per_fragment": target} if target else {}))


def _change_index(dataset: lance.LanceDataset, action: Action, owner: str) -> None:
    name = action.part or ""
    if action.verb == Verb.DELETE:
        if name in {index.name for index in dataset.describe_indices()}:
            dataset.drop_index(name)
        # the record goes last: an index whose drop was cut off is still this owner's
        if INDEX_RECORD_PREFIX + name in dataset.config():
            dataset.delete_config_keys([INDEX_RECORD_PREFIX + name])
        return
    if refreshes_index(action):
        dataset.optimize.optimize_indices(index_names=[name])
        return
    definition = _definition(action)
    if action.verb == Verb.UPDATE:  # an adoption: built as declared by someone else, recorded as is
        dataset.update_config({INDEX_RECORD_PREFIX + name: index_record(owner, definition, built=True)})
        return
    # recorded as unbuilt first: a build cut off is this owner's, and built again by the next apply
    dataset.update_config({INDEX_RECORD_PREFIX + name: index_record(owner, definition, built=False)})
    column, index_type, params = definition["column"], definition["type"], definition.get("params") or {}
    if is_vector(index_type):
        dataset = dataset.create_index(column, index_type, name=name, replace=True, **params)
    else:
        dataset.create_scalar_index(column, index_type, name=name, replace=True, **params)
    dataset.update_config({INDEX_RECORD_PREFIX + name: index_record(owner, definition, built=True)})


def _definition(action: Action) -> dict[str, Any]:
    definition = action.after.definition if action.after else None
    if not definition:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no definition to build")
    return {"column": definition["column"], "type": definition["type"], "params": definition.get("params") or {}}


def _change_tag(dataset: lance.LanceDataset, action: Action, owner: str) -> None:
    name = action.part or ""
    tags = dataset.tags.list()
    if action.verb == Verb.DELETE:
        if name in tags:
            dataset.tags.delete(name)
        return
    version = int(((action.after.definition if action.after else None) or {})["version"])
    if name in tags:
        dataset.tags.update(name, version)
    else:
        try:
            dataset.tags.create(name, version)
        except ValueError:
            # a create whose answer was lost and that the store client sent again meets its own tag
            made = _tags(dataset).get(name)
            if made is None or made.version != version:
                raise
    dataset.tags.replace_metadata(name, {TAG_OWNER_KEY: owner})
