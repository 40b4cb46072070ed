"""The contract every lance-sync backend driver implements.

A driver is a `lance_namespace.LanceNamespace` (so pylance and any Lance Namespace client
can use it directly) plus what a reconciler needs beyond that interface:

- `capabilities()`: what the backend can change in place, so the planner picks update,
  replace, or a clear refusal;
- property updates for namespaces and tables;
- bulk reads (`list_namespace_infos`, `list_table_infos`) that return properties and
  locations with the fewest calls the backend allows, also as parts a caller can run on its
  own pool (`namespace_info_parts`, `table_info_parts`);
- point reads (`get_namespace_info`, `get_table_info`) that answer None for "absent", and
  `get_namespace_infos` for many namespaces at once where the backend reads them in fewer
  calls than one each (`bulk_namespace_reads`);
- `snapshot()`, where the backend keeps every namespace and table in one place that one call
  reads (`snapshot_reads`: the `dir` manifest table): a plan then reads nothing else.
- `lease_register()`: where an apply lease lives, with the best compare-and-swap the backend
  has (lance_sync.drivers.leases).
- `close()`: lets go of open connections when the command (an apply session) is done.

Requests are accepted as the generated models (pylance) or as any mapping of their fields
(lancedb's core passes dicts): every public operation is wrapped once, here, by
`lance_sync.drivers.support.requests`; an interface operation a driver lacks is UnsupportedOperation
naming the operations it has.

Request modes mean the same on every backend. `SyncNamespace` reads them once and each
driver supplies only the backend calls (`_create_namespace_object`,
`replace_namespace_properties`, `_drop_namespace_object`, `_overwrite_registration`; the
second is public: the generic apply lease, `leases.NamespaceLeaseRegister`, writes with it too):

- CreateNamespace `Create` answers NamespaceAlreadyExists (2) for a namespace that exists;
  `ExistOk` keeps it as it is and answers its properties; `Overwrite` replaces its properties
  with the requested ones and keeps the namespace itself, its tables, children and grants (it
  is never dropped: a namespace with tables cannot be, and dropping an empty one would lose
  its identity and grants). A namespace another writer drops after the create found it is
  created again.
- DropNamespace `Fail` answers NamespaceNotFound (1) for a missing namespace (unless the
  backend's spec says a missing namespace is dropped already, as Iceberg's does); `Skip`
  succeeds. `Restrict` answers NamespaceNotEmpty (3) while the namespace holds tables or
  child namespaces; `Cascade` drops it with its children and deregisters its tables (data
  kept), where the backend's spec has it (`drops_cascade`), and is UnsupportedOperation (0)
  elsewhere.
- RegisterTable `Create` answers TableAlreadyExists (5) for a name that is taken; `Overwrite`
  points the Lance table of that name at the new location with the new properties (a table
  that is not a Lance table is InvalidInput, 13, and is left alone).
- RenameTable, where `capabilities().rename_table` says so, renames a Lance table in place in
  one change of the backend: the table is registered under its old id or its new one, never
  both, never neither; its location, properties and data stay as they are. Before changing
  anything it answers TableNotFound (4) for a missing source (InvalidInput, 13, for a table
  that is not a Lance table), NamespaceNotFound (1) for a missing destination namespace and
  TableAlreadyExists (5) for a destination that is taken (by any table). `new_namespace_id`
  moves the table (`move_table`) to another namespace with the same first
  `move_fixed_levels` levels; a move beyond them is UnsupportedOperation (0). The source is
  checked first, so a rename sent again after its answer was lost meets TableNotFound: the
  caller tells "done already" from "never there" by finding the destination at the source's
  location (drivers never guess).

Grants, where `capabilities().grants` says so (lance_sync.model.grants): `list_grants` answers
every principal's privileges on a namespace or table in the backend's canonical spelling
(`canonical_privilege`; a privilege held with a grant option counts as held), principals
written as a manifest writes them; NamespaceNotFound (1) or TableNotFound (4) for a missing
object. `change_grants` grants and revokes privileges of one principal on one object: it
sends only what differs from what the backend holds (re-read first; some backends fail a
whole request that grants a privilege held or revokes one not held) and leaves other
principals and the object itself alone. Whether the backend stored the change is the
caller's to check by listing again (a Unity server with authorization off accepts grants
and keeps none). `grants_record` and `write_grants_record` read and write which principals
lance-sync manages on an object, a property of the object by default (`grants_record_place`
says where a backend keeps it otherwise).

Configuration: each driver has a pydantic `config_model` (a `BackendConfig`) whose field
names are the spec's property names. A driver is built from a configuration validated
already (`Driver(config)`: the manifest's, see `lance_sync.drivers.connect_backends`) or from
the flat string properties `lance_namespace.connect(name, properties)` passes
(`storage.region`, `client.pool-size`), which it validates with the same model. Its secret
values are registered for masking (`lance_sync.model.secrets`) as it is built.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
from lance_namespace import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropNamespaceResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListTablesRequest,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pydantic import SecretStr

from lance_sync.drivers.leases import LeaseRegister, NamespaceLeaseRegister
from lance_sync.drivers.support.paging import follow_pages
from lance_sync.drivers.support.requests import OPERATIONS, accepting_mappings, unsupported
from lance_sync.drivers.support.table_ops import TableOperations
from lance_sync.model import secrets

# the configuration and identifier rules live in a module that validation imports without
# the Lance Namespace client; drivers import them from here too
from lance_sync.model.backend_config import (  # noqa: F401 - re-exported
    STORAGE_PREFIX,
    BackendConfig,
    BackendRules,
    Identifier,
    default_root,
)
from lance_sync.model.grants import GrantMap, RecordPlace, Securable
from lance_sync.model.marks import GRANTS_KEY, grants_record, grants_record_value

#: Lance request modes as `request_mode` spells them; the first of each is the default
CREATE_MODES = ("create", "existok", "overwrite")
REGISTER_MODES = ("create", "overwrite")
DROP_MODES = ("fail", "skip")
DROP_BEHAVIORS = ("restrict", "cascade")

#: creates of a namespace that exists, then is gone before ExistOk or Overwrite reads it
NAMESPACE_RACE_ATTEMPTS = 3


def request_mode(value: str | None, allowed: tuple[str, ...], what: str = "mode") -> str:
    """A Lance request mode in any spelling (ExistOk, exist_ok, EXIST_OK); the first allowed when unset."""
    if value is None:
        return allowed[0]
    mode = value.lower().replace("_", "")
    if mode not in allowed:
        raise InvalidInputError(f"unknown {what} '{value}' (expected one of {', '.join(allowed)})")
    return mode


def patched_properties(current: dict[str, str], updates: dict[str, str],
                       removals: list[str]) -> dict[str, str]:
    """`current` with `removals` deleted and `updates` set: how property updates read-modify-write."""
    patched = {key: value for key, value in current.items() if key not in removals}
    patched.update(updates)
    return patched


def secret_value(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


@dataclass(frozen=True)
class Capabilities:
    """What a backend can change in place; the planner reads this, never the backend type."""

    update_namespace_properties: bool = True
    update_table_properties: bool = True
    #: an in-place location change (otherwise a location change is a replace)
    update_table_location: bool = False
    #: RenameTable renames a table in place, keeping its identity (the catalog's id, create
    #: time, grants); otherwise a rename is a replace (deregister, then declare)
    rename_table: bool = False
    #: RenameTable can also move a table to another namespace of the same catalog: one whose
    #: id keeps the first `move_fixed_levels` levels of the table's id
    move_table: bool = False
    #: levels at the start of a table id that a move cannot change (the Iceberg warehouse,
    #: the Hive catalog: 1; a directory root: 0); a move that changes them is a replace
    move_fixed_levels: int = 0
    #: namespace levels this instance can create (Hive without the 3.x catalog API: databases only)
    creatable_namespace_levels: tuple[int, int | None] = (1, None)
    #: declare_tables writes many tables in one request, so apply sends declares in batches
    bulk_declare: bool = False
    #: list_grants and change_grants work (on the objects `grant_privileges` allows)
    grants: bool = False


@dataclass(frozen=True, slots=True)
class NamespaceInfo:
    id: Identifier
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TableInfo:
    id: Identifier
    location: str | None
    properties: dict[str, str] = field(default_factory=dict)
    #: False for a table that exists under this name but is not a Lance table
    is_lance: bool = True
    #: columns the catalog records for the table ({name, type} in the catalog's own type names)
    columns: list[dict] | None = None


@dataclass(frozen=True)
class CatalogSnapshot:
    """Every namespace and table of a backend, read at once: one version of the catalog."""

    namespaces: dict[Identifier, NamespaceInfo]
    tables: dict[Identifier, list[TableInfo]]
    #: every table's location is normalized (lance_sync.model.locations) and its properties a
    #: dict shared with the tables read alike: a plan takes the tables as they are
    normalized: bool = False

    def children(self, parent: Identifier) -> list[NamespaceInfo]:
        """What `list_namespace_infos(parent)` answers."""
        self._check_exists(parent)
        return self._children.get(parent, [])

    @functools.cached_property
    def _children(self) -> dict[Identifier, list[NamespaceInfo]]:
        children: dict[Identifier, list[NamespaceInfo]] = {}
        for id, info in self.namespaces.items():
            children.setdefault(id[:-1], []).append(info)
        return children

    def tables_in(self, namespace: Identifier) -> list[TableInfo]:
        """What `list_table_infos(namespace)` answers."""
        self._check_exists(namespace)
        return self.tables.get(namespace, [])

    def _check_exists(self, id: Identifier) -> None:
        if id and id not in self.namespaces:
            raise NamespaceNotFoundError(f"Namespace not found: {list(id)}")


class SyncNamespace(BackendRules, TableOperations, LanceNamespace):
    """A Lance Namespace driver that lance-sync can plan and apply against; its backend's
    rules (configuration model, identifiers) come from `BackendRules`, the spec's table
    operations on the dataset at a table's location from `TableOperations`."""

    #: DropNamespace honours behavior Cascade (the backend's spec has it)
    drops_cascade: ClassVar[bool] = False
    #: get_namespace_infos reads many namespaces in fewer calls than one each (so a caller
    #: sends it all the namespaces it wants at once, instead of one point read each)
    bulk_namespace_reads: ClassVar[bool] = False
    #: snapshot() reads every namespace and table in one call
    snapshot_reads: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _adapt_operations(cls)

    def __init__(self, config: BackendConfig | None = None, /, **properties: Any) -> None:
        """From a validated `config`, or from `lance_namespace.connect()` properties."""
        if config is None:
            config = self.config_model.from_properties(properties)
        elif properties:
            raise TypeError("a driver takes a validated configuration or connect() properties, not both")
        elif not isinstance(config, self.config_model):
            raise TypeError(f"{type(self).__name__} takes a {self.config_model.__name__}, "
                            f"not a {type(config).__name__}")
        self.config = config
        secrets.register(*config.secret_values())
        secrets.register_environment()
        self._call_lock = threading.Lock()
        self._calls_made = 0

    # --- call accounting -----------------------------------------------------------------------

    def count_call(self) -> None:
        """Drivers call this once per request sent to the backend (thread-safe)."""
        with self._call_lock:
            self._calls_made += 1

    @property
    def api_calls(self) -> int:
        """Requests sent to the backend so far."""
        return self._calls_made

    # --- request modes: one meaning on every backend (see the module docstring) -----------

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        mode = request_mode(request.mode, CREATE_MODES)
        id = tuple(request.id or ())
        properties = dict(request.properties or {})
        for _ in range(NAMESPACE_RACE_ATTEMPTS):
            try:
                return CreateNamespaceResponse(properties=self._create_namespace_object(id, properties))
            except NamespaceAlreadyExistsError:
                if mode == "create":
                    raise
            try:
                if mode == "existok":
                    existing = self.describe_namespace(DescribeNamespaceRequest(id=list(id)))
                    return CreateNamespaceResponse(properties=dict(existing.properties or {}))
                self.replace_namespace_properties(id, properties)
                return CreateNamespaceResponse(properties=properties)
            except NamespaceNotFoundError:
                pass  # dropped since the create found it: create it again
        raise ConcurrentModificationError(
            f"{self.backend_type}: namespace {self.format_identifier(id)} was dropped each time a create "
            f"found it ({NAMESPACE_RACE_ATTEMPTS} attempts)")

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        mode = request_mode(request.mode, DROP_MODES)
        cascade = request_mode(request.behavior, DROP_BEHAVIORS, "behavior") == "cascade"
        if cascade and not self.drops_cascade:
            raise UnsupportedOperationError(f"{self.backend_type}: only Restrict drops are supported; "
                                            "drop the tables and child namespaces first")
        try:
            properties = self._drop_namespace_object(tuple(request.id or ()), cascade)
        except NamespaceNotFoundError:
            if mode == "fail":
                raise
            properties = None
        return DropNamespaceResponse(properties=properties)

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        """Declare an existing dataset's location as the table (see `declare_table`)."""
        mode = request_mode(request.mode, REGISTER_MODES)
        try:
            declared = self.declare_table(DeclareTableRequest(id=request.id, location=request.location,
                                                              properties=request.properties))
        except TableAlreadyExistsError:
            if mode == "create":
                raise
            declared = self._overwrite_registration(tuple(request.id or ()), request.location,
                                                    request.properties)
        return RegisterTableResponse(location=declared.location, properties=declared.properties)

    def _create_namespace_object(self, id: Identifier, properties: dict[str, str]) -> dict[str, str]:
        """Create the namespace; its properties as created. NamespaceAlreadyExists when it exists."""
        raise UnsupportedOperationError(f"{self.backend_type}: namespaces cannot be created")

    def replace_namespace_properties(self, id: Identifier, properties: dict[str, str]) -> None:
        """Make `properties` the namespace's properties (CreateNamespace mode Overwrite, and a
        `leases.NamespaceLeaseRegister`'s swap): by default, those it has and `properties` lacks
        are removed, the others set."""
        current = self.describe_namespace(DescribeNamespaceRequest(id=list(id))).properties or {}
        self.update_namespace_properties(id, properties, [key for key in current if key not in properties])

    def _drop_namespace_object(self, id: Identifier, cascade: bool) -> dict[str, str] | None:
        """Drop the namespace (with its children and tables, data kept, when `cascade`);
        NamespaceNotFound when it is missing, NamespaceNotEmpty when it is not empty and not
        `cascade`. The dropped namespace's properties where the backend answers them."""
        raise UnsupportedOperationError(f"{self.backend_type}: namespaces cannot be dropped")

    def _overwrite_registration(self, id: Identifier, location: str,
                                properties: dict[str, str] | None) -> DeclareTableResponse:
        """Point the Lance table `id` at `location` with `properties` (RegisterTable mode
        Overwrite): by default deregister it (InvalidInput for a table that is not a Lance
        table), then declare it again."""
        with contextlib.suppress(TableNotFoundError):  # deregistered meanwhile
            self.deregister_table(DeregisterTableRequest(id=list(id)))
        return self.declare_table(DeclareTableRequest(id=list(id), location=location, properties=properties))

    def _rename_ids(self, request: RenameTableRequest, fixed_levels: int) -> tuple[Identifier, Identifier]:
        """(source, destination) of a RenameTable request: the destination is `new_table_name`
        in `new_namespace_id`, or in the source's namespace. InvalidInput for a rename without a
        name or to the source itself; UnsupportedOperation for a move that changes the first
        `fixed_levels` levels of the id (see the module docstring)."""
        source = tuple(request.id or ())
        if not source or not request.new_table_name:
            raise InvalidInputError(f"{self.backend_type}: a rename needs the table id and the new "
                                    f"table name (got {list(source)} and {request.new_table_name!r})")
        namespace = source[:-1] if request.new_namespace_id is None else tuple(request.new_namespace_id)
        destination = (*namespace, request.new_table_name)
        if destination == source:
            raise InvalidInputError(f"{self.backend_type}: table {self.format_identifier(source)} "
                                    "cannot be renamed to itself")
        if destination[:fixed_levels] != source[:fixed_levels]:
            raise UnsupportedOperationError(
                f"{self.backend_type}: table {self.format_identifier(source)} cannot move to "
                f"{self.format_identifier(destination)}: a move keeps the first {fixed_levels} "
                "level(s) of the id; deregister it and declare it there instead")
        return source, destination

    # --- reconciler extensions ------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return Capabilities()

    def close(self) -> None:
        """Let go of what the driver holds open (connections, pools); by default there is
        nothing. A driver closed is still usable: what a later call needs is opened again."""

    def storage_options(self) -> dict[str, str]:
        return dict(self.config.storage)

    def table_location(self, id: Identifier) -> tuple[str, dict[str, str]]:
        """(location, storage options) of the Lance table `id`, as DescribeTable answers them
        (the configured storage options where it answers none): where `TableOperations` opens
        the dataset. DescribeTable's errors: TableNotFound, InvalidInput for a table that is not
        a Lance table."""
        described = self.describe_table(DescribeTableRequest(id=list(id)))
        if not described.location:
            raise TableNotFoundError(f"{self.backend_type}: table {self.format_identifier(id)} has no location")
        return described.location, dict(described.storage_options or self.storage_options())

    def catalog_columns(self, schema: pa.Schema) -> list[dict[str, str]] | None:
        """How this catalog records a dataset's columns ({name, type} in its own type names),
        for drift checks against `TableInfo.columns`; None for a catalog that records none."""
        return None

    def internal_locations(self) -> set[str]:
        """Lance datasets the backend keeps for itself (never offered as tables to adopt)."""
        return set()

    def lease_parents(self, touched: list[Identifier]) -> list[Identifier]:
        """Namespaces under which apply leases live for an apply that touches `touched`: by
        default the first level of each id (a catalog, a warehouse), which exists before any
        manifest creates something in it. See lance_sync.apply.lease."""
        return sorted({tuple(id[:1]) for id in touched if id})

    def lease_register(self, parent: Identifier, name: str, owner: str) -> LeaseRegister:
        """Where the apply lease `name` of `owner` under `parent` lives, with the best
        compare-and-swap the backend has (lance_sync.drivers.leases). By default a namespace of
        that name whose takeovers are made exclusive by claim namespaces."""
        return NamespaceLeaseRegister(self, (*parent, name))

    def update_namespace_properties(self, id: Identifier, updates: dict[str, str],
                                    removals: list[str]) -> None:
        """Set `updates` and delete `removals` on a namespace, leaving other properties alone."""
        raise UnsupportedOperationError(f"{self.backend_type}: namespace properties cannot be updated")

    def update_table_properties(self, id: Identifier, updates: dict[str, str],
                                removals: list[str]) -> None:
        """Set `updates` and delete `removals` on a table, leaving other properties alone."""
        raise UnsupportedOperationError(f"{self.backend_type}: table properties cannot be updated")

    def declare_tables(self, requests: list[DeclareTableRequest]) -> list[LanceNamespaceError | None]:
        """Declare several tables; one error (or None) per request, in order.

        Drivers whose backend can write many tables at once override this and say so in
        `capabilities().bulk_declare`; the default declares one at a time.
        """
        errors: list[LanceNamespaceError | None] = []
        for request in requests:
            try:
                self.declare_table(request)
            except LanceNamespaceError as error:
                errors.append(error)
            else:
                errors.append(None)
        return errors

    def list_grants(self, kind: Securable, id: Identifier) -> GrantMap:
        """Every principal's privileges on the namespace or table (see the module docstring)."""
        raise UnsupportedOperationError(f"{self.backend_type}: grants are not supported")

    def change_grants(self, kind: Securable, id: Identifier, principal: str,
                      grant: frozenset[str], revoke: frozenset[str]) -> None:
        """Grant `grant` and revoke `revoke` of `principal` on the object (see the module docstring)."""
        raise UnsupportedOperationError(f"{self.backend_type}: grants are not supported")

    def grants_record_place(self, kind: Securable, id: Identifier) -> RecordPlace:
        """Where the record of the principals lance-sync manages on the object lives: by
        default the object's own property `lance_sync.grants`."""
        return RecordPlace(kind, id, GRANTS_KEY)

    def grants_record(self, kind: Securable, id: Identifier) -> frozenset[str] | None:
        """The principals recorded as managed on the object; None where there is no record.
        NamespaceNotFound or TableNotFound when the record's place is missing."""
        place = self.grants_record_place(kind, id)
        info = self.get_namespace_info(place.id) if place.kind == "namespace" else self.get_table_info(place.id)
        if info is None:
            missing = NamespaceNotFoundError if place.kind == "namespace" else TableNotFoundError
            raise missing(f"{self.backend_type}: {place.kind} {self.format_identifier(place.id)} not found")
        return grants_record(info.properties.get(place.key))

    def write_grants_record(self, kind: Securable, id: Identifier, principals: frozenset[str] | None) -> None:
        """Record `principals` as managed on the object (None: remove the record), leaving every
        other property of its place alone."""
        place = self.grants_record_place(kind, id)
        updates = {} if principals is None else {place.key: grants_record_value(principals)}
        removals = [place.key] if principals is None else []
        if place.kind == "namespace":
            self.update_namespace_properties(place.id, updates, removals)
        else:
            self.update_table_properties(place.id, updates, removals)

    def update_table_location(self, id: Identifier, location: str) -> None:
        """Point a registered Lance table at another location in place, keeping the table itself
        (its identity, properties and create time), only where `capabilities()` says so.
        TableNotFound for a missing table, InvalidInput for one that is not a Lance table. The
        data is not moved: the new location holds it already, or will."""
        raise UnsupportedOperationError(f"{self.backend_type}: a table location cannot be changed in place")

    def list_namespace_infos(self, parent: Identifier) -> Iterator[NamespaceInfo]:
        """Child namespaces of `parent` with their properties, every page followed."""
        for name in self._paged_names(self.list_namespaces, ListNamespacesRequest, parent, "namespaces"):
            child = (*parent, name)
            response = self.describe_namespace(DescribeNamespaceRequest(id=list(child)))
            yield NamespaceInfo(child, dict(response.properties or {}))

    def list_table_infos(self, namespace: Identifier) -> Iterator[TableInfo]:
        """Tables of `namespace` with location and properties, every page followed."""
        for name in self._paged_names(self.list_tables, ListTablesRequest, namespace, "tables"):
            info = self.get_table_info((*namespace, name))
            if info is not None:
                yield info

    def namespace_info_parts(self, parent: Identifier) -> list[Callable[[], list[NamespaceInfo]]]:
        """`list_namespace_infos(parent)` as parts that a caller may run in parallel (see
        `table_info_parts`)."""
        return [lambda: list(self.list_namespace_infos(parent))]

    def table_info_parts(self, namespace: Identifier) -> list[Callable[[], list[TableInfo]]]:
        """`list_table_infos(namespace)` as parts that a caller may run in parallel: the tables
        are the parts' results joined in order. A driver that loads tables one by one lists the
        names here and gives each part a share of the loads, so that the caller's thread pool is
        the only one (no pool inside a pool, no task per table). By default, one part: the whole
        bulk read."""
        return [lambda: list(self.list_table_infos(namespace))]

    def snapshot(self) -> CatalogSnapshot | None:
        """Every namespace and table in one call, where `snapshot_reads` says the backend keeps
        them in one place; None when there is nothing to read them from that way (then the
        listings answer)."""
        return None

    def get_namespace_info(self, id: Identifier) -> NamespaceInfo | None:
        try:
            response = self.describe_namespace(DescribeNamespaceRequest(id=list(id)))
        except NamespaceNotFoundError:
            return None
        return NamespaceInfo(id, dict(response.properties or {}))

    def get_namespace_infos(self, ids: list[Identifier]) -> list[NamespaceInfo | None]:
        """`get_namespace_info` of each id, in order."""
        return [self.get_namespace_info(id) for id in ids]

    def get_table_info(self, id: Identifier) -> TableInfo | None:
        try:
            response = self.describe_table(DescribeTableRequest(id=list(id)))
        except (TableNotFoundError, NamespaceNotFoundError):  # no namespace: no table either
            return None
        except InvalidInputError:
            # the specs answer 13 for "exists but is not a Lance table"
            return TableInfo(id, None, {}, is_lance=False)
        return TableInfo(id, response.location, dict(response.properties or {}))

    @staticmethod
    def _paged_names(call, request_type, id: Identifier, attribute: str) -> Iterator[str]:
        def fetch(token: str | None) -> tuple[list[str], str | None]:
            response = call(request_type(id=list(id), page_token=token))
            return list(getattr(response, attribute) or []), response.page_token

        return follow_pages(fetch)


#: a command's drivers, by backend name
Drivers = dict[str, SyncNamespace]


def _adapt_operations(cls: type) -> None:
    """Each interface operation `cls` (a driver or a base of SyncNamespace) defines takes models
    or mappings (see the module docstring); on SyncNamespace itself, each one nobody implements
    is a clear refusal."""
    for name, request_type in OPERATIONS.items():
        function = cls.__dict__.get(name)
        if function is not None:
            setattr(cls, name, accepting_mappings(function, request_type))
        elif cls is SyncNamespace and getattr(cls, name) is getattr(LanceNamespace, name):
            setattr(cls, name, unsupported(name))


_adapt_operations(TableOperations)
_adapt_operations(SyncNamespace)
