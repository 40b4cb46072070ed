"""The checks of tables' former names (`renamed_from`) and the former ids they give each
registration: a former name or id is valid in the registration's backend, is not declared
still, and is claimed by one registration only."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from lance_sync.manifest.loader import DataPath
from lance_sync.manifest.policy_rules import Checks
from lance_sync.model.backend_config import Identifier
from lance_sync.model.desired import BackendSpec, DesiredState, DesiredTable, Registration


class RenameChecks(Checks, Protocol):
    """Where the checks report, and what they read of the tables checked before them
    (lance_sync.manifest.semantic's checker)."""

    #: table name -> index in the manifest's tables list
    table_index: dict[str, int]
    #: index in the manifest's tables list -> the table's `renamed_from`, where it has one
    renamed_from: dict[int, Any]

    def settled(self, backend: str) -> bool: ...


#: a `renamed_from` item as written: a name or an id in the backend's syntax, or a list of names
FormerName = str | list[str]


def with_former_ids(checker: RenameChecks, state: DesiredState) -> list[DesiredTable]:
    """The tables, each registration with the ids its table's `renamed_from` gives it in its
    backend (newest first). A former name or id must not be declared still, and one former id
    is claimed by one registration only."""
    if not checker.renamed_from:
        return state.tables
    declared = {(r.backend, r.id): t.name for t in state.tables for r in t.registrations}
    #: former id -> the table and registration that claimed it first
    claimed: dict[tuple[str, Identifier], tuple[str, Identifier]] = {}
    tables = []
    for table in state.tables:
        index = checker.table_index[table.name]
        written = checker.renamed_from.get(index)
        if written is None:
            tables.append(table)
            continue
        former: dict[Registration, list[Identifier]] = {r: [] for r in table.registrations}
        path: DataPath = ("tables", index, "renamed_from")
        items = [(written, path)] if isinstance(written, str) else [(w, (*path, i)) for i, w in enumerate(written)]
        for item, item_path in items:
            if _declared_name(checker, table.name, item, item_path):
                continue
            for registration, id in _former_ids(checker, table, item, item_path, state.backends).items():
                key = (registration.backend, id)
                shown = f"'{state.backends[registration.backend].format_id(id)}' in backend '{registration.backend}'"
                claimant = claimed.setdefault(key, (table.name, registration.id))
                if key in declared:
                    checker.fail(f"{shown} is still registered by table '{declared[key]}'; renamed_from names "
                                 "what a table was called before, which the manifest no longer declares", item_path)
                elif claimant != (table.name, registration.id):
                    format_id = state.backends[registration.backend].format_id
                    checker.fail(f"{shown} is a former id of two registrations ({format_id(claimant[1])} of table "
                                 f"'{claimant[0]}' and {format_id(registration.id)} of table '{table.name}'); one "
                                 "registration can be renamed from it", item_path)
                elif id not in former[registration]:
                    former[registration].append(id)
        registrations = tuple(replace(r, renamed_from=tuple(former[r])) for r in table.registrations)
        tables.append(replace(table, registrations=registrations))
    return tables


def _declared_name(checker: RenameChecks, table: str, item: FormerName, path: DataPath) -> bool:
    """Whether a former name (one level) is the name of a table the manifest declares (reported)."""
    name = item if isinstance(item, str) else item[0] if len(item) == 1 else None
    if name not in checker.table_index:
        return False
    if name == table:
        checker.fail(f"'{name}' is this table's own name; renamed_from names what it was called before", path)
        return True
    where = checker.document.position(("tables", checker.table_index[name], "name"))
    checker.fail(f"table '{name}' is still declared (at {where}); renamed_from names what this table "
                 "was called before, which the manifest no longer declares", path)
    return True


def _former_ids(checker: RenameChecks, table: DesiredTable, item: FormerName, path: DataPath,
                backends: dict[str, BackendSpec]) -> dict[Registration, Identifier]:
    """Per registration of `table`, the id `item` names in its backend: a name in the
    registration's own namespace, or a whole table id (a move) in each backend where it has
    the depth of one. An item that names nothing in any of them is reported."""
    found: dict[Registration, Identifier] = {}
    for registration in table.registrations:
        spec = backends[registration.backend]
        cls = spec.rules
        parts = cls.parse_identifier(item)
        if not parts or not all(parts):
            checker.fail(f"{_written(item)} has an empty name; a former name is written name or "
                         f"namespace{cls.id_delimiter}name", path)
            return {}
        low, high = cls.table_namespace_levels
        if len(parts) > 1 and (len(parts) - 1 < low or (high is not None and len(parts) - 1 > high)):
            continue  # an id of another depth: a table id of another backend of the table
        former = parts if len(parts) > 1 else (*registration.id[:-1], parts[0])
        problem = None
        if checker.settled(spec.name):
            problem = (cls.check_table_namespace(former[:-1], spec.config) if len(parts) > 1 else None) \
                or cls.check_table_name(former[-1], spec.config)
        if problem:
            checker.fail(f"renamed_from {_written(item)} in backend '{spec.name}': {problem}", path)
            return {}
        found[registration] = former
    if not found and table.registrations:
        backend_names = ", ".join(sorted({r.backend for r in table.registrations}))
        checker.fail(f"{_written(item)} is neither a table name nor a table id in the backends this table is "
                     f"registered in ({backend_names})", path)
    return found


def _written(item: FormerName) -> str:
    return f"'{item}'" if isinstance(item, str) else "[" + ", ".join(item) + "]"
