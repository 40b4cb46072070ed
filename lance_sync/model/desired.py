"""The desired state a manifest declares, after every check: what the planner compares."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from lance_sync.model.backend_config import BackendConfig, BackendRules, Identifier
from lance_sync.model.errors import Position
from lance_sync.model.grants import DeclaredGrants, GrantsMode
from lance_sync.model.policy import Policy


@dataclass(frozen=True)
class BackendSpec:
    name: str
    type: str
    config: BackendConfig
    #: namespaces to scan for owned objects beyond the declared ones
    scope: tuple[Identifier, ...]
    #: the configuration as a saved plan stores it: secrets as their ${VAR} reference
    template: dict[str, Any]
    #: the backend's identifier rules (checked offline); the driver class inherits them
    # builtins.type: the field `type` above shadows the builtin inside this class
    rules: builtins.type[BackendRules]
    #: the grants_mode of its objects that declare grants and no mode of their own (None: named)
    grants_mode: GrantsMode | None = None

    def format_id(self, id: Identifier) -> str:
        return self.rules.format_identifier(id)


@dataclass(frozen=True, slots=True)
class DesiredNamespace:
    backend: str
    id: Identifier
    properties: dict[str, str]
    protect: bool = False
    #: where it is declared; not part of what it is (equal entries on other lines are equal)
    position: Position | None = field(default=None, compare=False)
    #: None: the manifest says nothing of its grants (they are left alone)
    grants: DeclaredGrants | None = None


@dataclass(frozen=True, slots=True)
class Registration:
    backend: str
    #: the full table id: namespace plus table name
    id: Identifier
    #: ids this registration had, newest first (the table's `renamed_from`, resolved in this
    #: backend): one found live is renamed to `id` instead of declared again
    renamed_from: tuple[Identifier, ...] = ()
    #: None: the manifest says nothing of its grants (they are left alone)
    grants: DeclaredGrants | None = None


@dataclass(frozen=True, slots=True)
class DesiredTable:
    name: str
    #: normalized (see lance_sync.model.locations)
    location: str
    registrations: tuple[Registration, ...]
    properties: dict[str, str]
    #: manifest columns ({name, type}, with `nullable` and `renamed_from` where the manifest sets
    #: them) or None; the columns declared removed are in `removed_columns`
    columns: list[dict[str, Any]] | None = None
    #: the manifest's source block, its path resolved, or None
    source: dict[str, Any] | None = None
    on_remove: str = "deregister"
    protect: bool = False
    #: where it is declared; not part of what it is (equal entries on other lines are equal)
    position: Position | None = field(default=None, compare=False)
    #: the names of the columns the manifest declares removed (`removed: true`): dropped from the dataset
    removed_columns: tuple[str, ...] = ()
    #: the dataset's own state it declares (lance_sync.manifest.table_state.desired_table_state):
    #: indexes, maintenance, tags, retention; None: none of them
    table_state: dict[str, Any] | None = None


@dataclass(frozen=True)
class UnsetValue:
    """A manifest value that names an environment variable which is not set (validate only)."""

    variable: str
    field: str
    position: Position | None = None


@dataclass(frozen=True)
class Unbuilt:
    """The tables a load of some tables only left as written (`--changed-since`): checked
    across entries (names, registrations, locations), built when a plan turns one up."""

    #: (backend, table id) of each of their registrations -> the table's name
    registered: dict[tuple[str, Identifier], str]
    #: the desired tables of these names (ManifestError(s) when one does not pass its checks)
    build: Callable[[Collection[str]], list[DesiredTable]]


@dataclass
class DesiredState:
    owner: str
    files: list[str]
    base_dir: str
    backends: dict[str, BackendSpec]
    namespaces: list[DesiredNamespace] = field(default_factory=list)
    tables: list[DesiredTable] = field(default_factory=list)
    spark: dict[str, Any] | None = None
    #: the manifest's default storage options (each backend's `BackendConfig.storage` has
    #: them laid under its own already)
    storage: dict[str, str] = field(default_factory=dict)
    policy: Policy = field(default_factory=Policy)
    #: values whose variables are not set, when loaded for `validate` (otherwise an error)
    unset: list[UnsetValue] = field(default_factory=list)
    #: what the manifest should change but need not (deprecated keys), with file and line
    notices: list[str] = field(default_factory=list)
    #: when only some tables were built (`tables` holds those): the others; such a state is
    #: planned only against the baseline it was loaded for
    unbuilt: Unbuilt | None = None

    def ids_by_backend(self) -> dict[str, set[Identifier]]:
        """Per backend, every id the manifest names: declared namespaces, registrations and the
        ids they were renamed from, scope."""
        ids: dict[str, set[Identifier]] = {name: set(spec.scope) for name, spec in self.backends.items()}
        for namespace in self.namespaces:
            ids[namespace.backend].add(namespace.id)
        for table in self.tables:
            for registration in table.registrations:
                ids[registration.backend].add(registration.id)
                ids[registration.backend].update(registration.renamed_from)
        for backend, id in self.unbuilt.registered if self.unbuilt else ():
            ids[backend].add(id)
        return ids
