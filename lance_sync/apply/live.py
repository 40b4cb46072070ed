"""The live counterpart of an action: what its object (or dataset) is now, read from the backend
and the storage, and its fingerprint. The guards compare it with the plan; the runner with what
a resent create or removal should have left."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lance_namespace.errors import NamespaceNotFoundError, TableNotFoundError

from lance_sync.drivers.base import SyncNamespace
from lance_sync.model.actions import Action, Kind, ObjectState, Verb, fingerprint, project
from lance_sync.model.errors import GuardRefusal
from lance_sync.model.grants import Securable
from lance_sync.model.locations import normalize_location

if TYPE_CHECKING:
    from lance_sync.data.inspection import LocationReport


#: the parts of a dataset's own state an action can change (lance_sync.data.table_state)
OWN_STATE = frozenset({Kind.INDEX, Kind.TAG, Kind.VERSIONS})


def current_fingerprint(action: Action, driver: SyncNamespace) -> str:
    return fingerprint(live_state(action, driver), action.compared_keys)


def live_state(action: Action, driver: SyncNamespace) -> ObjectState | None:
    """The live counterpart of `action.before`: what its fingerprint was computed from."""
    if action.kind in OWN_STATE:
        return live_part(action, driver)
    if action.kind == Kind.DATASET:
        version = dataset_version(action.location, driver)
        return None if version is None else ObjectState(location=action.location, version=version)
    if action.kind == Kind.COLUMN:
        return live_column_state(action, driver)
    if action.is_grant:
        return live_privileges(action, driver)
    if action.verb == Verb.RECORD:
        return live_record(action, driver)
    live = read_object(action, driver)
    if live is None:
        return None
    location, properties = live
    state = project(properties, location, action.compared_keys)
    if action.kind == Kind.TABLE and action.verb == Verb.FORGET:
        state.version = dataset_version(location, driver)
    return state


def live_column_state(action: Action, driver: SyncNamespace) -> ObjectState | None:
    """A column action's dataset: its version, and the column where the action finds it (the
    name it had before a rename) as {name, type, nullable}, None when absent; None without a dataset."""
    if dataset_version(action.location, driver) is None:
        return None
    from lance_sync.data.evolution import live_column

    before = action.before.definition if action.before is not None else None
    name = before["name"] if before else action.part or ""
    version, found = live_column(action.location or "", name, driver.storage_options() or None)
    return ObjectState(location=action.location, version=version, definition=found)


def live_part(action: Action, driver: SyncNamespace) -> ObjectState | None:
    """An index, tag or the old versions of a dataset, as the plan compared them; None when the
    part (or its dataset) is absent."""
    if dataset_version(action.location, driver) is None:
        return None
    from lance_sync.data.table_state import live_part_state

    return live_part_state(action, driver.storage_options() or None)


def live_privileges(action: Action, driver: SyncNamespace) -> ObjectState | None:
    """A grant's or revoke's object: its principal's privileges on it; None when it is absent."""
    kind: Securable = "namespace" if action.kind == Kind.NAMESPACE else "table"
    try:
        grants = driver.list_grants(kind, tuple(action.id))
    except (NamespaceNotFoundError, TableNotFoundError):
        return None
    return ObjectState(privileges=sorted(grants.get(action.principal or "", frozenset())))


def live_record(action: Action, driver: SyncNamespace) -> ObjectState | None:
    """A record's object: the principals recorded on it (none: no record); None when it is absent."""
    kind: Securable = "namespace" if action.kind == Kind.NAMESPACE else "table"
    if read_object(action, driver, action.id) is None:
        return None
    try:
        recorded = driver.grants_record(kind, tuple(action.id))
    except (NamespaceNotFoundError, TableNotFoundError):
        return None
    return ObjectState(principals=None if recorded is None else sorted(recorded))


def read_object(action: Action, driver: SyncNamespace,
                id: Sequence[str] | None = None) -> tuple[str | None, dict[str, str]] | None:
    """The live namespace or table of an action, where the action finds it (the id a rename
    starts from) unless `id` says where: its location (a table's) and properties; None when it
    is absent."""
    id = tuple(action.current_id if id is None else id)
    if action.kind == Kind.NAMESPACE:
        info = driver.get_namespace_info(id)
        return None if info is None else (None, info.properties)
    table = driver.get_table_info(id)
    if table is None:
        return None
    return (normalize_location(table.location) if table.location else None), table.properties


def dataset_version(location: str | None, driver: SyncNamespace) -> int | None:
    """The Lance version at a location; None when there is no dataset. Unreadable storage raises."""
    report = inspected(location, driver)
    return report.version if report is not None and report.status == "valid" else None


def inspected(location: str | None, driver: SyncNamespace) -> LocationReport | None:
    """What is at a location (None for no location); storage that cannot be read is a refusal."""
    if not location:
        return None
    from lance_sync.data.inspection import inspect_location

    report = inspect_location(location, driver.storage_options() or None)
    if report.status == "unreachable":
        raise GuardRefusal(f"cannot read {location} to check the plan against it: {report.error}")
    return report
