"""Semantic checks that a schema cannot express, and the desired state they produce.

Checks: backends that are referenced but not defined; identifiers of the wrong depth or
shape for their backend; duplicates; table locations that are equal or nest (one asset
per path); a table's former names (`renamed_from`) that are valid in its backends, no longer
declared and claimed by one registration only (lance_sync.manifest.renames); reserved property
keys; grants the backend cannot hold (`_grants`); secrets written inline instead of `${VAR}`;
the policy's rules (lance_sync.manifest.policy_rules).

A large manifest's tables are built in two processes at once (`_tables_in_two`), and those of
a manifest split over files of tables in a process per file (`_tables_of_files`). A table
whose entry is, but for its name and location, one checked before without problems (its
shape) is checked only where its name and location matter (`_first_of_shape`).
"""

from __future__ import annotations

import logging
import marshal
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, starmap
from operator import attrgetter
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError

from lance_sync.drivers import backend_rules
from lance_sync.manifest.columns import declared_columns
from lance_sync.manifest.loader import DataPath, Document, format_path
from lance_sync.manifest.location_checks import location_problems
from lance_sync.manifest.policy_rules import policy_of
from lance_sync.manifest.renames import with_former_ids
from lance_sync.manifest.schema_models import (
    Namespace,
    PolicyFile,
    RegistrationEntry,
    Table,
    ValidatedBackend,
    ValidatedManifest,
)
from lance_sync.manifest.strategy import FastPathUnavailable, TablesInFiles
from lance_sync.manifest.table_state import desired_table_state
from lance_sync.manifest.validate import StrictTables, TableEntry, table_entries
from lance_sync.manifest.workers import Workers, forking_pays
from lance_sync.model.backend_config import BackendRules, Identifier
from lance_sync.model.desired import (
    BackendSpec,
    DesiredNamespace,
    DesiredState,
    DesiredTable,
    Registration,
    UnsetValue,
)
from lance_sync.model.errors import ManifestError, ManifestErrors, Position
from lance_sync.model.grants import NAMED, DeclaredGrants, Securable, format_privileges
from lance_sync.model.locations import is_local, normalize_location
from lance_sync.model.marks import RESERVED_PREFIX, TABLE_TYPE_KEY
from lance_sync.model.policy import Policy
from lance_sync.model.secrets import SECRET_KEY, url_password
from lance_sync.model.storage_options import layered
from lance_sync.model.variables import is_whole_reference

logger = logging.getLogger(__name__)


class _Checker:
    def __init__(self, document: Document, base_dir: str):
        self.document = document
        self.base_dir = base_dir
        self.problems: list[ManifestError] = []
        #: table name -> index in the manifest's tables list, for positions
        self.table_index: dict[str, int] = {}
        #: index in the manifest's tables list -> the table's `renamed_from`, where it has one
        self.renamed_from: dict[int, Any] = {}
        #: the properties of tables, by their items: one copy of each, and whether it sets a
        #: reserved key (`table_properties`)
        self._properties: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], bool]] = {}
        #: (backend, namespace as written) -> `_table_namespace`
        self.table_namespaces: dict[tuple[str, Any], tuple[Identifier | None, str | None]] = {}
        #: backends with a setting whose variable is not set that their identifier and location
        #: checks read (BackendRules.checks_read): those checks cannot be made for them
        self.unsettled: set[str] = set()
        self.notices: list[str] = []
        #: id of a table's shape without problems -> the shape and its fields (`_first_of_shape`)
        self.shape_fields: dict[int, tuple[Table, _ShapeFields]] = {}

    def table_properties(self, properties: dict[str, str], path: DataPath) -> dict[str, str]:
        """A copy of the properties of the table at `path`, one for all tables with equal ones
        (most of a large estate's tables carry a few sets: a desired table's properties are
        read, never changed), checked once per set for keys that lance-sync manages."""
        key = tuple(properties.items())
        found = self._properties.get(key)
        if found is None:
            reserved = any(_is_reserved(name, (TABLE_TYPE_KEY,)) for name in properties)
            found = self._properties[key] = (dict(properties), reserved)
        if found[1]:
            _check_properties(self, properties, path, reserved=(TABLE_TYPE_KEY,))
        return found[0]

    def for_more_tables(self) -> _Checker:
        """A checker of other tables in the same context (backends, caches), with nothing of
        the tables checked so far: a worker's, for the tables of a file."""
        checker = _Checker(self.document, self.base_dir)
        checker._properties, checker.table_namespaces = self._properties, self.table_namespaces
        checker.unsettled = self.unsettled
        return checker

    def notice(self, message: str, path: DataPath) -> None:
        self.notices.append(str(ManifestError(message, self.document.key_position(path), format_path(path))))

    def settled(self, backend: str) -> bool:
        return backend not in self.unsettled

    def fail(self, message: str, path: DataPath, key: bool = False) -> None:
        position = self.document.key_position(path) if key else self.document.position(path)
        self.problems.append(ManifestError(message, position, format_path(path)))


def build_desired_state(model: ValidatedManifest, document: Document, base_dir: str,
                        tables: Iterable[TableEntry] | TablesInFiles | None = None) -> DesiredState:
    """Check a validated manifest and turn it into the desired state; ManifestErrors if not.

    The tables are `model.tables`, or `tables` when given (validated as they are read, see
    validate.validate_strictly, or files of tables, lance_sync.manifest.strategy): each is
    read once, and not kept."""
    checker = _Checker(document, base_dir)
    default_storage = _default_storage(checker, model)
    checked = {name: _backend(checker, name, entry, default_storage) for name, entry in model.backends.items()}
    backends = {name: spec for name, spec in checked.items() if spec is not None}
    state = DesiredState(owner=model.owner, files=list(document.files), base_dir=base_dir,
                         backends=backends, storage=dict(model.storage),
                         spark=model.spark.model_dump(exclude_none=True) if model.spark else None,
                         unset=[UnsetValue(name, format_path(path), document.position(path))
                                for path, names in document.unset.items() for name in names])
    state.namespaces = _namespaces(checker, model, backends)
    state.notices = checker.notices
    state.tables = _all_tables(checker, model, table_entries(model.tables) if tables is None else tables,
                               backends)
    _check_duplicate_registrations(checker, state)
    state.tables = with_former_ids(checker, state)
    _check_locations(checker, state)
    if model.policy is not None:
        state.policy = policy_of(checker, model.policy, ("policy",), model.backends)
    if checker.problems:
        raise ManifestErrors(checker.problems)
    return state


def build_policy(model: PolicyFile, document: Document, base_dir: str, backends: Collection[str]) -> Policy:
    """Check a policy file (`--policy`) against the manifest's backends; ManifestErrors if not."""
    checker = _Checker(document, base_dir)
    policy = policy_of(checker, model, (), backends)
    if checker.problems:
        raise ManifestErrors(checker.problems)
    return policy


# --- backends ----------------------------------------------------------------------------------

def _default_storage(checker: _Checker, model: ValidatedManifest) -> dict[str, str] | None:
    """The manifest's `storage:` (every backend's default), None if a credential in it is
    written inline."""
    problems_before = len(checker.problems)
    _check_storage_secrets(checker, ("storage",))
    return dict(model.storage) if len(checker.problems) == problems_before else None


def _backend(checker: _Checker, name: str, entry: ValidatedBackend,
             default_storage: dict[str, str] | None) -> BackendSpec | None:
    """The backend's spec, its storage options laid over the manifest's default ones."""
    path: DataPath = ("backends", name)
    cls = backend_rules(entry.type)
    secrets = _secret_fields(cls.config_model)
    if any(unset[:2] == path and unset[2] in cls.checks_read for unset in checker.document.unset if len(unset) > 2):
        checker.unsettled.add(name)
    _note_renamed_keys(checker, cls, path)
    problems_before = len(checker.problems)
    _check_secrets(checker, secrets, path)
    if len(checker.problems) > problems_before or default_storage is None:
        return None
    values = entry.model_dump(by_alias=True, exclude={"type", "scope", "grants_mode"}, exclude_unset=True)
    values = {k: (v.get_secret_value() if isinstance(v, SecretStr) else v) for k, v in values.items()}
    if default_storage:
        values["storage"] = layered(default_storage, values.get("storage"))
    if isinstance(values.get("root"), str) and is_local(values["root"]):
        values["root"] = normalize_location(values["root"], checker.base_dir)
    try:
        config = cls.config_model.model_validate(values)
    except ValidationError as error:
        for problem in error.errors():
            checker.fail(problem["msg"].removeprefix("Value error, "), path)
        return None
    scope = []
    for index, raw in enumerate(entry.scope):
        parts = _identifier(checker, cls, raw, (*path, "scope", index), levels=(1, None))
        if parts is not None:
            scope.append(parts)
    return BackendSpec(name=name, type=entry.type, config=config, scope=tuple(scope),
                       template=_template(checker, entry.type, secrets, path, values), rules=cls,
                       grants_mode=entry.grants_mode)  # type: ignore[arg-type]  # the schema allows only the modes


def _note_renamed_keys(checker: _Checker, cls: type[BackendRules], path: DataPath) -> None:
    for old, renamed in cls.renamed_keys.items():
        value = _value_at(checker.document.data, (*path, old))
        if value is None:
            continue
        new_value = f"{value * renamed.factor:g}" if isinstance(value, int | float) else "..."
        checker.notice(f"'{old}' is deprecated in manifests: backends count it in different units "
                       f"({renamed.old_unit} here); write {renamed.key}: {new_value}", (*path, old))


def _secret_fields(config_model: type[BaseModel]) -> list[str]:
    fields = config_model.model_fields
    return [info.alias or name for name, info in fields.items() if SecretStr in _types_of(info.annotation)]


def _types_of(annotation: Any) -> tuple[Any, ...]:
    return getattr(annotation, "__args__", None) or (annotation,)


def _check_secrets(checker: _Checker, secrets: list[str], path: DataPath) -> None:
    data = checker.document
    for field in secrets:
        field_path = (*path, field)
        if _value_at(data.data, field_path) is not None and not _from_variable(data, field_path):
            checker.fail("secrets are only taken from the environment: write ${VARIABLE_NAME}", field_path)
    _check_storage_secrets(checker, (*path, "storage"))
    for field in _settings_with_url_password(data.data, path):
        if not _from_variable(data, (*path, field)):
            checker.fail("a URL with a password holds a secret: write the whole value as ${VARIABLE_NAME}",
                         (*path, field))


def _check_storage_secrets(checker: _Checker, path: DataPath) -> None:
    data = checker.document
    for key in _value_at(data.data, path) or {}:
        if SECRET_KEY.search(key) and not _from_variable(data, (*path, key)):
            checker.fail(f"storage option '{key}' looks like a credential: write ${{VARIABLE_NAME}}",
                         (*path, key))


def _settings_with_url_password(data: Any, path: DataPath) -> list[str]:
    """The backend settings whose value is a URL with a password (http://user:password@host)."""
    entry = _value_at(data, path)
    return [key for key, value in (entry or {}).items() if isinstance(value, str) and url_password(value)]


def _from_variable(document: Document, path: DataPath) -> bool:
    return is_whole_reference(document.templates.get(path, ""))


def _template(checker: _Checker, backend_type: str, secrets: list[str], path: DataPath,
              values: dict[str, Any]) -> dict[str, Any]:
    """The backend as a saved plan stores it: each secret replaced by its ${VAR} reference."""
    template = {"type": backend_type, **values}
    templates = checker.document.templates
    for field in [*secrets, *_settings_with_url_password(checker.document.data, path)]:
        if field in template:
            field_path = (*path, field)
            template[field] = templates[field_path]
    own_storage = _value_at(checker.document.data, (*path, "storage")) or {}
    storage = dict(template.get("storage") or {})
    for key in storage:
        if SECRET_KEY.search(key):
            # the key is the backend's own or comes from the manifest's default (`storage:`)
            key_path = (*path, "storage", key) if key in own_storage else ("storage", key)
            storage[key] = templates[key_path]
    if storage:
        template["storage"] = storage
    return template


def _value_at(data: Any, path: DataPath) -> Any:
    for element in path:
        if isinstance(data, dict):
            data = data.get(element)
        elif isinstance(data, list) and isinstance(element, int) and 0 <= element < len(data):
            data = data[element]
        else:
            return None
    return data


# --- identifiers -------------------------------------------------------------------------------

def _identifier(checker: _Checker, cls: type[BackendRules], raw: str | list[str], path: DataPath,
                levels: tuple[int, int | None] | None = None) -> Identifier | None:
    parts, problem = _parsed_identifier(cls, raw, levels)
    if problem is not None:
        checker.fail(problem, path)
    return parts


def _parsed_identifier(cls: type[BackendRules], raw: str | list[str],
                       levels: tuple[int, int | None] | None = None) -> tuple[Identifier | None, str | None]:
    """The identifier's names, or None and what is wrong with it."""
    parts = cls.parse_identifier(raw)
    if any(not p for p in parts) or not parts:
        return None, f"'{raw}' has an empty name; identifiers are written name{cls.id_delimiter}name"
    low, high = levels or cls.namespace_levels
    if len(parts) < low or (high is not None and len(parts) > high):
        expected = f"{low}" if low == high else f"{low} or more" if high is None else f"{low} to {high}"
        return None, (f"'{cls.format_identifier(parts)}' has {len(parts)} level(s); a {cls.backend_type} "
                      f"namespace here needs {expected}")
    return parts, None


def _table_namespace(checker: _Checker, spec: BackendSpec, raw: str | list[str]) -> tuple[Identifier | None, str | None]:
    """A registration's namespace: its names, or None and what is wrong with it (the names or
    the backend's rules for a table's namespace). Worked out once per backend and namespace: a
    large manifest registers many tables in each."""
    key = (spec.name, raw if isinstance(raw, str) else tuple(raw))
    found = checker.table_namespaces.get(key)
    if found is None:
        cls = spec.rules
        parts, problem = _parsed_identifier(cls, raw, cls.table_namespace_levels)
        if parts is not None and checker.settled(spec.name):
            problem = cls.check_table_namespace(parts, spec.config)
        found = checker.table_namespaces[key] = (parts, problem)
    return found


def _namespaces(checker: _Checker, model: ValidatedManifest,
                backends: dict[str, BackendSpec]) -> list[DesiredNamespace]:
    result: list[DesiredNamespace] = []
    seen: dict[tuple[str, Identifier], Position | None] = {}
    for index, entry in enumerate(model.namespaces):
        path: DataPath = ("namespaces", index)
        spec = _backend_ref(checker, backends, model, entry.backend, path)
        if spec is None:
            continue
        parts = _identifier(checker, spec.rules, entry.id, (*path, "id"))
        if parts is None:
            continue
        problem = spec.rules.check_namespace_id(parts, spec.config) if checker.settled(spec.name) else None
        if problem:
            checker.fail(problem, (*path, "id"))
            continue
        key = (entry.backend, parts)
        if key in seen:
            checker.fail(f"namespace '{spec.format_id(parts)}' is declared twice in backend "
                         f"'{entry.backend}' (first at {seen[key]})", (*path, "id"))
            continue
        seen[key] = checker.document.position((*path, "id"))
        _check_properties(checker, entry.properties, path)
        grants = _grants(checker, spec, "namespace", parts, entry, path)
        result.append(DesiredNamespace(entry.backend, parts, dict(entry.properties), entry.protect,
                                       checker.document.position(path), grants))
    return result


def _grants(checker: _Checker, spec: BackendSpec, kind: Securable, id: Identifier,
            entry: Namespace | RegistrationEntry, path: DataPath) -> DeclaredGrants | None:
    """The grants of an entry that declares `grants` or a `grants_mode`, checked offline
    against the backend's rules (privileges it has on that object, principals it can name), in
    canonical spelling; None when it declares none (its grants are left alone) or the backend
    has none to give (a backend with no grants, Iceberg REST or dir, refuses them by name)."""
    if entry.grants is None and entry.grants_mode is None:  # most entries
        return None
    allowed = spec.rules.grant_privileges(kind, id, spec.config)
    if not allowed:
        what = "grants" if entry.grants is not None else "grants_mode"
        checker.fail(f"backend '{spec.name}' ({spec.type}) has no grants on a {kind} like "
                     f"'{spec.format_id(id)}': {what} cannot be declared here", (*path, what), True)
        return None
    checked: dict[str, frozenset[str]] = {}
    for principal, privileges in (entry.grants or {}).items():
        problem = spec.rules.check_principal(principal, spec.config)
        if problem:
            checker.fail(f"principal '{principal}': {problem}", (*path, "grants", principal), True)
            continue
        canonical = []
        for index, privilege in enumerate(privileges):
            name = spec.rules.canonical_privilege(privilege)
            if name not in allowed:
                checker.fail(f"'{privilege}' is not a {spec.type} privilege on a {kind} (known: "
                             f"{format_privileges(allowed)})", (*path, "grants", principal, index))
            canonical.append(name)
        checked[principal] = frozenset(canonical)
    where = checker.document.position((*path, "grants")) if entry.grants is not None else None
    return DeclaredGrants(checked, entry.grants_mode or spec.grants_mode or NAMED, str(where) if where else None)


def _backend_ref(checker: _Checker, backends: dict[str, BackendSpec], model: ValidatedManifest, name: str,
                 entry_path: DataPath) -> BackendSpec | None:
    """The backend named by the `backend` of the entry at `entry_path`; None when it is unknown
    (a problem) or was not checked (its own problem is reported)."""
    if name in backends:
        return backends[name]
    if name not in model.backends:
        known = ", ".join(sorted(model.backends)) or "none"
        checker.fail(f"unknown backend '{name}' (defined: {known})", (*entry_path, "backend"))
    return None


def _check_properties(checker: _Checker, properties: dict[str, str], entry_path: DataPath,
                      reserved: tuple[str, ...] = ()) -> None:
    """The properties of the entry at `entry_path` set none that lance-sync manages."""
    for key in properties:
        if _is_reserved(key, reserved):
            checker.fail(f"property '{key}' is managed by lance-sync and cannot be set",
                         (*entry_path, "properties", key), key=True)


def _is_reserved(key: str, reserved: tuple[str, ...]) -> bool:
    """Whether lance-sync manages the property `key` (`reserved`: keys beside RESERVED_PREFIX's)."""
    return key.startswith(RESERVED_PREFIX) or key in reserved


# --- tables ------------------------------------------------------------------------------------

#: Tables from which a strict load (validate.StrictTables) builds them in two processes at once
#: (`_tables_in_two`), where forking pays (lance_sync.manifest.workers)
FORK_TABLES = 50_000


def _all_tables(checker: _Checker, model: ValidatedManifest, entries: Iterable[TableEntry] | TablesInFiles,
                backends: dict[str, BackendSpec]) -> list[DesiredTable]:
    if isinstance(entries, TablesInFiles):
        return _tables_of_files(checker, model, entries, backends)
    if isinstance(entries, StrictTables) and len(entries) >= FORK_TABLES and not checker.document.positions \
            and forking_pays():
        return _tables_in_two(checker, model, entries, backends)
    return _tables(checker, model, entries, backends)


def _tables_in_two(checker: _Checker, model: ValidatedManifest, entries: StrictTables,
                   backends: dict[str, BackendSpec]) -> list[DesiredTable]:
    """`_tables`, the first half in this process while a forked child builds the second half:
    this process takes the child's rows (`_rows`) for a fraction of the cost of building
    them. When the child cannot answer, or its half has a problem or a name of the first
    half, this process builds that half too, and says what is wrong."""
    middle, end = len(entries) // 2, len(entries)
    with Workers([lambda: _rows(checker, model, entries.read(middle, end), backends, middle)]) as child:
        tables = _tables(checker, model, entries.read(0, middle), backends)
        answer = child.answer(0)
    # the child validated its entries: each is a mapping with a text name
    names = [entry["name"] for entry in entries.raw[middle:end]] if answer is not None else []
    if answer is None or not checker.table_index.keys().isdisjoint(names):
        logger.debug("tables %d to %d: built here (the forked child has %s)", middle, end,
                     "no answer" if answer is None else "a name of the first half")
        return tables + _tables(checker, model, entries.read(middle, end), backends, middle)
    entries.let_go(middle, end)  # before the rows arrive: what they take, the raw entries gave back
    del names
    return tables + _tables_of_rows(checker, answer, middle)


def _tables_of_files(checker: _Checker, model: ValidatedManifest, files: TablesInFiles,
                     backends: dict[str, BackendSpec]) -> list[DesiredTable]:
    """`_tables` of a manifest split over files of tables (lance_sync.manifest.strategy):
    the first file's here, while workers build each other file's and this process takes their
    rows in order. FastPathUnavailable when a file's table has the name of another file's (an overlay of
    it, which the usual road merges)."""
    with files.built_in_workers(lambda entries: _rows(checker.for_more_tables(), model, entries, backends, 0)) \
            as answers:
        tables = _tables(checker, model, files.first, backends)
        start = len(files.first)
        for answer in answers:
            declared = len(checker.table_index)
            more = _tables_of_rows(checker, answer, start)
            if len(checker.table_index) - declared != len(more):
                raise FastPathUnavailable("a file of tables declares a table another declares too")
            tables += more
            start += len(more)
    return tables


def _tables_of_rows(checker: _Checker, answer: bytes, start: int) -> list[DesiredTable]:
    """The desired tables of rows (`_rows`), the manifest's tables from index `start` on."""
    renamed_from, chunks = marshal.loads(answer)
    del answer
    checker.renamed_from.update((start + index, written) for index, written in renamed_from.items())
    tables: list[DesiredTable] = []
    for index, chunk in enumerate(chunks):
        chunks[index] = None  # a chunk's rows at a time: they live only while their tables are made
        # marshal keeps an object written twice as one: the child's tables share its properties still
        tables += [DesiredTable(name, location, tuple(starmap(Registration, registrations)), properties, columns,
                                source, on_remove, protect, removed_columns=removed, table_state=table_state)
                   for name, location, registrations, properties, columns, source, on_remove, protect, removed,
                   table_state
                   in marshal.loads(chunk)]
    checker.table_index.update(zip([table.name for table in tables], range(start, start + len(tables)), strict=True))
    return tables


#: the rows a child marshals at a time (`_rows`)
ROWS_CHUNK = 20_000


def _rows(checker: _Checker, model: ValidatedManifest, entries: Iterable[TableEntry],
          backends: dict[str, BackendSpec], start: int) -> bytes | None:
    """The desired tables of `entries` (the tables from `start` on) as rows of their fields,
    marshalled ROWS_CHUNK at a time, and their `renamed_from` by index from `start`; None when
    one has a problem or declares grants, which marshal cannot carry (made of the fields alone)."""
    rows = []
    for _, name, location, registrations, grants, *fields in _table_fields(checker, model, entries, backends, start):
        if grants is not None:
            return None
        rows.append((name, location, registrations, *fields))
    if checker.problems:
        return None
    try:
        renamed_from = {index - start: written for index, written in checker.renamed_from.items()}
        return marshal.dumps((renamed_from, [marshal.dumps(rows[begin:begin + ROWS_CHUNK])
                                             for begin in range(0, len(rows), ROWS_CHUNK)]))
    except ValueError:
        return None


def _tables(checker: _Checker, model: ValidatedManifest, entries: Iterable[TableEntry],
            backends: dict[str, BackendSpec], start: int = 0) -> list[DesiredTable]:
    """The desired tables of `entries`, the manifest's tables from index `start` on."""
    position = checker.document.position
    return [DesiredTable(name, location, tuple(starmap(Registration, registrations)) if grants is None else
                         tuple(Registration(backend, table_id, grants=declared)
                               for (backend, table_id), declared in zip(registrations, grants, strict=True)),
                         properties, columns, source, on_remove, protect, position=position(("tables", index)),
                         removed_columns=removed, table_state=table_state)
            for index, name, location, registrations, grants, properties, columns, source, on_remove, protect, removed,
            table_state in _table_fields(checker, model, entries, backends, start)]


def _table_fields(checker: _Checker, model: ValidatedManifest, entries: Iterable[TableEntry],
                  backends: dict[str, BackendSpec], start: int) -> Iterator[tuple[Any, ...]]:
    """The fields of the desired tables of `entries`, the manifest's tables from index `start` on:
    index, name, location, registrations (backend, table id), their grants (None when none declares
    any), properties, columns, source, on_remove, protect, removed columns, table state. Each
    problem is noted in `checker` (a table with one in its name, a registration with one, left out).
    What a table's shape gives is worked out once per shape (`_ShapeFields`): a table of a shape
    known without problems has only its name and location checked."""
    first_index = checker.table_index  # each name's entry
    known_shapes = checker.shape_fields
    for index, (name, written_location, shape) in enumerate(entries, start):
        path: DataPath = ("tables", index)
        if name in first_index:
            first = checker.document.position(("tables", first_index[name], "name"))
            checker.fail(f"table '{name}' is declared twice (first at {first})", (*path, "name"))
            continue
        first_index[name] = index
        location = normalize_location(written_location, checker.base_dir)
        known = known_shapes.get(id(shape))
        if known is None:
            fields, registrations, grants = _first_of_shape(checker, model, backends, (name, location, shape), path)
        else:
            fields, registrations, grants = known[1], [], []
            for r_index, where in enumerate(fields.registrations):
                _register(checker, where, (name, location), (*path, "register", r_index), registrations, grants)
        if fields.renamed_from is not None:
            checker.renamed_from[index] = fields.renamed_from
        yield (index, name, location, tuple(registrations), None if grants.count(None) == len(grants) else grants,
               fields.properties, fields.columns, fields.source, fields.on_remove, fields.protect,
               fields.removed_columns, fields.table_state)


@dataclass(frozen=True)
class _ShapeFields:
    """What a table's entry gives but for its name and location: the same for every table of its
    shape (lance_sync.manifest.validate: `TableEntry`), shared by their desired tables (which are
    read, never changed)."""

    properties: dict[str, str]
    columns: list[dict[str, Any]] | None
    removed_columns: tuple[str, ...]
    source: dict[str, Any] | None
    on_remove: str
    protect: bool
    table_state: dict[str, Any] | None
    renamed_from: Any
    #: each registration whose backend and namespace pass: its backend, the namespace's names, the entry
    registrations: tuple[tuple[BackendSpec, Identifier, RegistrationEntry], ...]


#: the shapes a checker keeps the fields of at most (`_first_of_shape`)
MAX_SHAPE_FIELDS = 1_024


def _first_of_shape(checker: _Checker, model: ValidatedManifest, backends: dict[str, BackendSpec],
                    table: tuple[str, str, Table], path: DataPath
                    ) -> tuple[_ShapeFields, list[tuple[str, Identifier]], list[DeclaredGrants | None]]:
    """The fields of the first table of its shape, every check made in the manifest's order;
    the shape's fields are kept for the next tables of the shape when it has no problem."""
    name, location, entry = table
    problems_before = len(checker.problems)
    properties = checker.table_properties(entry.properties, path)
    columns, removed_columns, problems = declared_columns(entry.columns, (*path, "schema")) \
        if entry.columns is not None else (None, (), ())
    for message, at in problems:
        checker.fail(message, at)
    registrations: list[tuple[str, Identifier]] = []
    grants: list[DeclaredGrants | None] = []
    passed = []
    for r_index, registration in enumerate(entry.registrations):
        r_path = (*path, "register", r_index)
        spec = _backend_ref(checker, backends, model, registration.backend, r_path)
        if spec is None:
            continue
        parts, problem = _table_namespace(checker, spec, registration.namespace)
        if problem or parts is None:  # no names without a problem that says why
            checker.fail(problem or "invalid namespace", (*r_path, "namespace"))
            continue
        passed.append((spec, parts, registration))
        _register(checker, passed[-1], (name, location), r_path, registrations, grants)
    fields = _ShapeFields(properties, columns, removed_columns, _source(checker, entry, path), entry.on_remove,
                          entry.protect, desired_table_state(entry, path, checker.fail), entry.renamed_from,
                          tuple(passed))
    if len(checker.problems) == problems_before:
        if len(checker.shape_fields) >= MAX_SHAPE_FIELDS:
            checker.shape_fields.clear()
        checker.shape_fields[id(entry)] = (entry, fields)  # the entry kept: its id is not reused meanwhile
    return fields, registrations, grants


def _register(checker: _Checker, where: tuple[BackendSpec, Identifier, RegistrationEntry], table: tuple[str, str],
              r_path: DataPath, registrations: list[tuple[str, Identifier]], grants: list[DeclaredGrants | None]
              ) -> None:
    """The registration at `r_path` of a table (its name and location) in a namespace that passes
    (`where`), appended with its grants when its location and name pass the backend's rules (else
    a problem)."""
    spec, parts, registration = where
    name, location = table
    cls = spec.rules
    settled = checker.settled(spec.name)
    problem = cls.check_location(location, spec.config) if settled else None
    if problem:
        checker.fail(problem, (*r_path, "namespace"))
        return
    table_name = registration.name or name
    problem = cls.check_table_name(table_name, spec.config) if settled else None
    if problem:
        table_path = r_path[:2]  # ("tables", index)
        checker.fail(f"table name '{table_name}': {problem}", (*r_path, "name") if registration.name else
                     (*table_path, "name"))
        return
    table_id = (*parts, table_name)
    registrations.append((spec.name, table_id))
    grants.append(_grants(checker, spec, "table", table_id, registration, r_path))


def _source(checker: _Checker, entry: Table, path: DataPath) -> dict[str, Any] | None:
    if entry.source is None:
        return None
    source = entry.source.model_dump()
    if is_local(source["path"]):
        source["path"] = normalize_location(source["path"], checker.base_dir)
    return source


def _check_duplicate_registrations(checker: _Checker, state: DesiredState) -> None:
    registrations = list(chain.from_iterable(map(attrgetter("registrations"), state.tables)))
    # the usual answer (each registered once), found without a Python step per table; the ids
    # alone where every registration is in one backend
    keys = map(attrgetter("id"), registrations) if len(set(map(attrgetter("backend"), registrations))) < 2 \
        else map(attrgetter("backend", "id"), registrations)
    if len(set(keys)) == len(registrations):
        return
    seen: dict[tuple[str, Identifier], str] = {}
    for table in state.tables:
        for registration in table.registrations:
            key = (registration.backend, registration.id)
            if key in seen:
                spec = state.backends[registration.backend]
                checker.fail(f"'{spec.format_id(registration.id)}' in backend '{registration.backend}' is "
                             f"registered by both '{seen[key]}' and '{table.name}'",
                             ("tables", checker.table_index[table.name], "register"))
            seen[key] = table.name


def _check_locations(checker: _Checker, state: DesiredState) -> None:
    """One asset per path, and no table in a backend's own folders (lance_sync.manifest.location_checks)."""
    settled = {name: spec for name, spec in state.backends.items() if checker.settled(name)}
    for index, problem in location_problems(state.tables, settled):
        checker.fail(problem, ("tables", checker.table_index[state.tables[index].name], "location"))
