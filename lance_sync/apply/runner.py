"""How each action changes a backend: the backend calls of each (kind, verb), a transient
failure retried, and a retried create that meets "already exists" (a removal that meets "not
found", a rename whose old id is gone) checked against the live object and counted as done
when it matches."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DropNamespaceRequest,
    RenameTableRequest,
)
from lance_namespace.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
)

from lance_sync.apply.live import live_state, read_object
from lance_sync.apply.options import ApplyOptions
from lance_sync.apply.report import Outcome
from lance_sync.drivers.base import Drivers, SyncNamespace
from lance_sync.drivers.support.retry import (
    backoff_seconds,
    is_transient,
    is_transient_store_error,
    log_retry,
)
from lance_sync.model.actions import Action, Kind, ObjectState, Plan, Verb, project
from lance_sync.model.arrow_types import schema_from_columns
from lance_sync.model.errors import LanceSyncError, PlanError
from lance_sync.model.grants import Securable
from lance_sync.model.marks import TABLE_TYPE_KEY, owner_of

if TYPE_CHECKING:
    import pyarrow as pa

    from lance_sync.data.spark_session import SparkSettings

#: declares sent in one request to a backend that takes them in bulk
DECLARE_BATCH_SIZE = 1000


logger = logging.getLogger(__name__)


class GrantNotKept(LanceSyncError):
    """A backend accepted a grant or revoke that its own listing then does not show."""


class ActionRunner:
    """The backend calls of each (kind, verb); a retried write checked against the live object."""

    def __init__(self, plan: Plan, drivers: Drivers, options: ApplyOptions, apply: str = ""):
        self.plan = plan
        self.drivers = drivers
        self.options = options
        #: this apply, as its journal names it: recorded in the intent record of each dataset it writes
        self.apply = apply
        self._bulk_backends: dict[str, bool] = {}
        #: one lock per object whose grants change: its grants and revokes run in turn (a
        #: metastore that reads and writes one object's privilege rows at once can fail the
        #: request: HMS 2.3 answers list_privileges with an internal error); objects in parallel
        self._grant_locks: defaultdict[tuple[str, str, tuple[str, ...]], threading.Lock] = defaultdict(threading.Lock)
        self._grant_locks_lock = threading.Lock()
        #: one lock per place that holds grants records: records of several objects may share one
        #: (Unity keeps a table's on its schema), written read-modify-write
        self._record_locks: defaultdict[tuple[str, str, tuple[str, ...]], threading.Lock] = defaultdict(threading.Lock)
        #: one lock per dataset whose parts change: Lance takes one schema change of a dataset at
        #: a time (two at once fail with a commit conflict); datasets in parallel
        self._dataset_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self._handlers: dict[tuple[Kind, Verb], Callable[[Action, SyncNamespace], int | None]] = {
            (Kind.NAMESPACE, Verb.CREATE): self._create_namespace,
            (Kind.NAMESPACE, Verb.UPDATE): self._update_properties,
            (Kind.NAMESPACE, Verb.DELETE): self._delete_namespace,
            (Kind.TABLE, Verb.CREATE): self._declare,
            (Kind.TABLE, Verb.UPDATE): self._update_properties,
            (Kind.TABLE, Verb.RENAME): self._rename,
            (Kind.TABLE, Verb.REPLACE): self._replace,
            (Kind.TABLE, Verb.FORGET): self._forget,
            (Kind.DATASET, Verb.CREATE): self._write_data,
            (Kind.DATASET, Verb.REPLACE): self._write_data,
            (Kind.DATASET, Verb.DELETE): self._delete_data,
            (Kind.NAMESPACE, Verb.GRANT): self._change_grants,
            (Kind.NAMESPACE, Verb.REVOKE): self._change_grants,
            (Kind.TABLE, Verb.GRANT): self._change_grants,
            (Kind.TABLE, Verb.REVOKE): self._change_grants,
            (Kind.NAMESPACE, Verb.RECORD): self._record_grants,
            (Kind.TABLE, Verb.RECORD): self._record_grants,
            (Kind.COLUMN, Verb.CREATE): self._add_column,
            (Kind.COLUMN, Verb.UPDATE): self._alter_column,
            (Kind.COLUMN, Verb.DELETE): self._drop_column,
            (Kind.INDEX, Verb.CREATE): self._change_part,
            (Kind.INDEX, Verb.REPLACE): self._change_part,
            (Kind.INDEX, Verb.UPDATE): self._change_part,
            (Kind.INDEX, Verb.DELETE): self._change_part,
            (Kind.DATASET, Verb.UPDATE): self._change_part,
            (Kind.TAG, Verb.CREATE): self._change_part,
            (Kind.TAG, Verb.UPDATE): self._change_part,
            (Kind.TAG, Verb.DELETE): self._change_part,
            (Kind.VERSIONS, Verb.DELETE): self._change_part,
        }

    def run(self, action: Action) -> Outcome:
        """Run one action; transient failures are retried, each retry reconciled with the live
        object. Never raises: a failure, reconciling included, is the action's outcome."""
        driver = self.drivers[action.backend]
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("start: %s", action.headline)
        attempt = 0
        while True:
            try:
                return self._attempt(action, driver)
            except Exception as error:  # noqa: BLE001 - reported per action; the run goes on
                if not _worth_retrying(error) or attempt >= self.options.action_retries:
                    return _failed(action, error)
                wait = backoff_seconds(attempt)
                log_retry(action.backend, action.headline, attempt + 1, self.options.action_retries, error, wait)
                time.sleep(wait)
                attempt += 1

    def _attempt(self, action: Action, driver: SyncNamespace) -> Outcome:
        """One try; a create that meets its object, or a removal that misses it, is checked
        against the live object (a read that may itself fail transiently and be tried again)."""
        try:
            version = self._handlers[(action.kind, action.verb)](action, driver)
            return Outcome(action, "succeeded", version=version)
        except (TableAlreadyExistsError, NamespaceAlreadyExistsError) as error:
            # a create whose first answer was lost and that was sent again (by us or the
            # driver's client) meets its own object; so does a replace under a new id
            creates = action.verb == Verb.CREATE or action.renamed_from is not None
            if (creates and self._matches_after(action, driver)) or self._renamed_already(action, driver):
                return Outcome(action, "succeeded")
            return _failed(action, error)
        except (TableNotFoundError, NamespaceNotFoundError) as error:
            if action.verb in (Verb.FORGET, Verb.DELETE) and live_state(action, driver) is None:
                return Outcome(action, "succeeded")
            if self._renamed_already(action, driver):
                return Outcome(action, "succeeded")
            return _failed(action, error)

    def batches(self, ready: list[Action]) -> list[list[Action]]:
        """Ready actions as units of work: declares for a bulk-capable backend go together."""
        units: list[list[Action]] = []
        bulk: dict[str, list[Action]] = defaultdict(list)
        for action in ready:
            if action.kind == Kind.TABLE and action.verb == Verb.CREATE and self._bulk(action.backend):
                bulk[action.backend].append(action)
            else:
                units.append([action])
        for actions in bulk.values():
            units += [actions[i:i + DECLARE_BATCH_SIZE] for i in range(0, len(actions), DECLARE_BATCH_SIZE)]
        return units

    def run_batch(self, actions: list[Action]) -> list[Outcome]:
        """One bulk declare; an action whose part failed transiently is run again on its own."""
        if len(actions) == 1:
            return [self.run(actions[0])]
        requests = [_declare_request(a) for a in actions]
        logger.debug("start: declare %d tables in %s at once", len(actions), actions[0].backend)
        try:
            errors: list[Exception | None] = list(self.drivers[actions[0].backend].declare_tables(requests))
        except Exception as error:  # noqa: BLE001 - reported per action
            errors = [error] * len(actions)
        return [Outcome(a, "succeeded") if e is None else (self.run(a) if _worth_retrying(e) else _failed(a, e))
                for a, e in zip(actions, errors, strict=True)]

    def _bulk(self, backend: str) -> bool:
        if backend not in self._bulk_backends:
            self._bulk_backends[backend] = self.drivers[backend].capabilities().bulk_declare
        return self._bulk_backends[backend]

    def _matches_after(self, action: Action, driver: SyncNamespace) -> bool:
        """A create that met an existing object: done when that object is what it would have made."""
        live = read_object(action, driver, action.id)
        return live is not None and action.after is not None and \
            project(live[1], live[0], action.compared_keys) == \
            project(action.after.properties, action.after.location, action.compared_keys)

    def _renamed_already(self, action: Action, driver: SyncNamespace) -> bool:
        """A rename sent again after its first answer was lost: done when the old id is gone and
        the new one holds this owner's table at the planned location (the property changes that
        come with the rename are made then)."""
        if action.verb != Verb.RENAME or read_object(action, driver) is not None:
            return False
        renamed = read_object(action, driver, action.id)
        if renamed is None or renamed[0] != state_after(action).location or owner_of(renamed[1]) != self.plan.owner:
            return False
        self._update_renamed(action, driver)
        return True

    # --- handlers ------------------------------------------------------------------------------------

    def _create_namespace(self, action: Action, driver: SyncNamespace) -> None:
        driver.create_namespace(CreateNamespaceRequest(id=action.id, mode="Create",
                                                       properties=state_after(action).properties))

    def _update_properties(self, action: Action, driver: SyncNamespace) -> None:
        location = state_after(action).location
        if action.kind == Kind.TABLE and location is not None and state_before(action).location != location:
            driver.update_table_location(tuple(action.id), location)
        before, after = state_before(action).properties, state_after(action).properties
        updates = {k: v for k, v in after.items() if before.get(k) != v}
        removals = sorted(k for k in before if k not in after)
        update = driver.update_namespace_properties if action.kind == Kind.NAMESPACE else \
            driver.update_table_properties
        update(tuple(action.id), updates, removals)

    def _delete_namespace(self, action: Action, driver: SyncNamespace) -> None:
        driver.drop_namespace(DropNamespaceRequest(id=action.id, mode="Fail", behavior="Restrict"))

    def _declare(self, action: Action, driver: SyncNamespace) -> None:
        driver.declare_table(_declare_request(action))

    def _rename(self, action: Action, driver: SyncNamespace) -> None:
        """Rename the registration in place (into another namespace, for a move), then make the
        property changes that come with it."""
        driver.rename_table(RenameTableRequest(id=action.current_id, new_table_name=action.id[-1],
                                               new_namespace_id=action.id[:-1]))
        self._update_renamed(action, driver)

    def _update_renamed(self, action: Action, driver: SyncNamespace) -> None:
        if state_before(action).properties != state_after(action).properties:
            self._update_properties(action, driver)

    def _replace(self, action: Action, driver: SyncNamespace) -> None:
        """Deregister and declare again (under its new id, for a rename the backend cannot make),
        carrying the properties lance-sync does not manage; if the declare fails, the table is
        put back as it was."""
        current = driver.get_table_info(tuple(action.current_id))
        if current is None:
            self._declare(action, driver)
            return
        carried = {k: v for k, v in current.properties.items()
                   if k not in action.compared_keys and k != TABLE_TYPE_KEY}
        driver.deregister_table(DeregisterTableRequest(id=action.current_id))
        after = state_after(action)
        try:
            driver.declare_table(DeclareTableRequest(id=action.id, location=after.location,
                                                     properties={**carried, **after.properties}))
        except Exception:
            driver.declare_table(DeclareTableRequest(id=action.current_id, location=current.location,
                                                     properties=current.properties))
            raise

    def _change_grants(self, action: Action, driver: SyncNamespace) -> None:
        """Grant (revoke) what the principal lacks (holds) of the action's privileges, then read
        them back: a backend that accepts a change and keeps none (Unity with authorization off)
        fails the action instead of passing for done. Sent again, it sends only what is left."""
        kind: Securable = "namespace" if action.kind == Kind.NAMESPACE else "table"
        id, principal, privileges = tuple(action.id), action.principal or "", frozenset(action.privileges)
        with self._grant_lock(action.backend, kind, id):
            self._change_grants_now(action, driver, kind, id, principal, privileges)

    def _record_grants(self, action: Action, driver: SyncNamespace) -> None:
        """Record the action's principals as the ones lance-sync manages on the object, and keep
        any recorded one that still holds privileges (its revoke was not run or failed: it is
        revoked by a later apply). Idempotent: sent again, it writes the same record."""
        kind: Securable = "namespace" if action.kind == Kind.NAMESPACE else "table"
        id = tuple(action.id)
        wanted = action.after.principals if action.after is not None else None
        place = driver.grants_record_place(kind, id)
        with self._grant_lock(action.backend, kind, id), \
                self._lock(self._record_locks, (action.backend, place.kind, place.id)):
            recorded = driver.grants_record(kind, id)
            if wanted is None:
                if recorded is not None:
                    driver.write_grants_record(kind, id, None)
                return
            held = driver.list_grants(kind, id)
            keep = frozenset(wanted) | {p for p in (recorded or frozenset()) - set(wanted) if held.get(p)}
            if keep != recorded:
                driver.write_grants_record(kind, id, keep)

    def _grant_lock(self, backend: str, kind: Securable, id: tuple[str, ...]) -> threading.Lock:
        return self._lock(self._grant_locks, (backend, kind, id))

    def _lock(self, locks: defaultdict[tuple[str, str, tuple[str, ...]], threading.Lock],
              key: tuple[str, str, tuple[str, ...]]) -> threading.Lock:
        with self._grant_locks_lock:
            return locks[key]

    def _change_grants_now(self, action: Action, driver: SyncNamespace, kind: Securable, id: tuple[str, ...],
                           principal: str, privileges: frozenset[str]) -> None:
        granting = action.verb == Verb.GRANT
        held = driver.list_grants(kind, id).get(principal, frozenset())
        grant, revoke = (privileges - held, frozenset()) if granting else (frozenset(), privileges & held)
        if grant or revoke:
            driver.change_grants(kind, id, principal, grant, revoke)
        now = driver.list_grants(kind, id).get(principal, frozenset())
        left = privileges - now if granting else privileges & now
        if left:
            raise GrantNotKept(f"{action.headline}: the backend accepted the change but lists {principal} with "
                               f"{', '.join(sorted(now)) or 'no privileges'}; is its authorization enabled?")

    def _forget(self, action: Action, driver: SyncNamespace) -> None:
        driver.deregister_table(DeregisterTableRequest(id=action.id))

    def _write_data(self, action: Action, driver: SyncNamespace) -> int:
        """Write the dataset all or nothing (create, or overwrite on a schema mismatch, see
        lance_sync.data.datasets); returns its new version."""
        from lance_sync.data.datasets import write_dataset

        location = _dataset_location(action)
        after = state_after(action)
        mode: Literal["create", "overwrite"] = "overwrite" if action.verb == Verb.REPLACE else "create"
        options = driver.storage_options() or None
        schema = schema_from_columns(after.columns) if after.columns else None
        if not after.source and schema is None:
            raise PlanError(f"{action.name} {location}: the plan gives neither a schema nor a source")
        source = after.source

        def write(at: str, write_mode: Literal["create", "overwrite"], target: pa.Schema | None) -> None:
            if source:
                from lance_sync.data.materialize import materialize

                settings = self._spark_for(action, source)
                materialize(source, at, target, write_mode, settings, storage_options=options, owner=self.plan.owner)
            else:
                import lance

                assert target is not None
                lance.write_dataset(target.empty_table(), at, mode=write_mode, storage_options=options)

        return write_dataset(location, mode=mode, owner=self.plan.owner, apply=self.apply, schema=schema,
                             write=write, storage_options=options)

    def _change_part(self, action: Action, driver: SyncNamespace) -> int:
        """Change the dataset's own state in place (an index, its fragments, a tag, its old
        versions: lance_sync.data.table_state); returns the dataset's version after it."""
        from lance_sync.data.table_state import change_part

        return change_part(action, self.plan.owner, driver.storage_options() or None)

    def _spark_for(self, action: Action, source: dict) -> SparkSettings:
        """The Spark settings of a write from `source`, once it is known Spark can start here;
        the step it waits for is told (`ApplyOptions.on_step`)."""
        from lance_sync.data.spark_session import (
            SPARK_LOG,
            SparkUnavailableError,
            resolve_spark_settings,
            spark_started,
        )
        from lance_sync.model.engines import missing_engine

        settings = resolve_spark_settings(self.options.spark, self.plan.spark,
                                          log_file=self.options.state_dir / SPARK_LOG)
        problem = missing_engine(settings.effective_master)
        if problem:
            raise SparkUnavailableError(problem)
        if self.options.on_step is not None:
            name = action.table or action.shown_id
            writing = f"writing {name} from {source.get('format')} {source.get('path')} with Spark"
            engine = "Spark Connect" if settings.is_connect else f"Spark {settings.effective_master}"
            self.options.on_step(action, writing if spark_started(settings) else
                                 f"starting {engine} for {name} (first start takes ~20 s)")
        return settings

    def _delete_data(self, action: Action, driver: SyncNamespace) -> None:
        from lance_sync.data.datasets import delete_dataset

        delete_dataset(_dataset_location(action), owner=self.plan.owner,
                       storage_options=driver.storage_options() or None)


    def _dataset_lock(self, action: Action) -> threading.Lock:
        with self._grant_locks_lock:
            return self._dataset_locks[_dataset_location(action)]

    def _add_column(self, action: Action, driver: SyncNamespace) -> int:
        from lance_sync.data.evolution import add_column

        with self._dataset_lock(action):
            return add_column(_dataset_location(action), _definition(state_after(action)),
                              driver.storage_options() or None)

    def _alter_column(self, action: Action, driver: SyncNamespace) -> int:
        from lance_sync.data.evolution import alter_column

        with self._dataset_lock(action):
            return alter_column(_dataset_location(action), _definition(state_before(action)),
                                _definition(state_after(action)), driver.storage_options() or None)

    def _drop_column(self, action: Action, driver: SyncNamespace) -> int:
        from lance_sync.data.evolution import drop_column

        with self._dataset_lock(action):
            return drop_column(_dataset_location(action), _definition(state_before(action))["name"],
                               self.plan.owner, driver.storage_options() or None)


def _definition(state: ObjectState) -> dict[str, Any]:
    """A dataset part's definition, which every state of a part action has."""
    if state.definition is None:
        raise PlanError("a column action's state gives no definition")
    return state.definition


def _declare_request(action: Action) -> DeclareTableRequest:
    after = state_after(action)
    return DeclareTableRequest(id=action.id, location=after.location, properties=after.properties)


def state_after(action: Action) -> ObjectState:
    """The state the action leads to, which every create, update and replace has."""
    if action.after is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no state to reach")
    return action.after


def _dataset_location(action: Action) -> str:
    """A dataset action's address: the location it writes or deletes."""
    if action.location is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no location")
    return action.location


def state_before(action: Action) -> ObjectState:
    """The state the action starts from, which every update, replace and removal has."""
    if action.before is None:
        raise PlanError(f"{action.name} {action.display_id}: the plan gives no state to start from")
    return action.before


def _worth_retrying(error: BaseException) -> bool:
    """A catalog's transient failure, or a store's (a dataset write or read whose request
    failed on the way: retried by the store client first, then here)."""
    return is_transient(error) or is_transient_store_error(error)


def _failed(action: Action, error: Exception) -> Outcome:
    transient = _worth_retrying(error)
    return Outcome(action, "failed", f"{type(error).__name__}: {error}", transient=transient)

