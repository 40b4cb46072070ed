"""`lance-sync import`: write a manifest from what a backend already holds.

Applying the written manifest adopts every object (stamps the owner mark) and changes
nothing else, which is how an existing catalog comes under lance-sync's management. So the
manifest says what `plan` will find: each table's schema where its dataset exists, local
paths relative to the manifest's folder (as they are read back), and nothing another owner
manages (that would be a conflict): those objects are left out and listed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lance_namespace.errors import NamespaceNotFoundError

from lance_sync.drivers.base import STORAGE_PREFIX, Identifier, SyncNamespace
from lance_sync.manifest.yaml_core import dump_yaml
from lance_sync.model.errors import LanceSyncError
from lance_sync.model.locations import is_local, manifest_relative, normalize_location
from lance_sync.model.marks import is_lease_namespace, is_protected, owner_of, unmanaged
from lance_sync.model.shared import Progress

#: why an import from a backend no manifest defines needs to be told the owner
OWNER_NEEDED = ("applying the manifest stamps it on every object, and objects another owner manages "
                "are left out")


def backend_template(backend_type: str, properties: Mapping[str, str]) -> dict[str, Any]:
    """A backend entry as the manifest writes it, from `--set` properties: `storage.x` keys go
    under `storage`, values written ${VAR} stay references."""
    template: dict[str, Any] = {"type": backend_type}
    for key, value in properties.items():
        if key.startswith(STORAGE_PREFIX):
            template.setdefault("storage", {})[key.removeprefix(STORAGE_PREFIX)] = value
        else:
            template[key] = value
    return template


@dataclass
class Imported:
    """The manifest's text, and the objects left out because another owner manages them."""

    text: str
    left_out: list[str] = field(default_factory=list)


def import_manifest(backend_name: str, driver: SyncNamespace, template: dict[str, Any],
                    namespaces: Iterable[str], owner: str, base_dir: str,
                    progress: Progress | None = None) -> Imported:
    """The manifest for everything under `namespaces` (default: the root) of one backend that
    `owner` may adopt, read through `driver`; `template` is the backend's entry as the manifest
    writes it; local paths below `base_dir` (where the manifest goes) are written relative."""
    cls = type(driver)
    roots = [cls.parse_identifier(n) for n in namespaces] or [()]
    found_namespaces: list[dict[str, Any]] = []
    found_tables: list[dict[str, Any]] = []
    left_out: list[str] = []

    def adoptable(kind: str, id: Identifier, properties: dict[str, str]) -> bool:
        other = owner_of(properties)
        if other is not None and other != owner:
            left_out.append(f"{kind} {cls.format_identifier(id)} (owned by '{other}')")
        return other is None or other == owner

    for root in roots:
        for namespace, properties in _walk(driver, root, progress):
            if _declarable(cls, namespace) and adoptable("namespace", namespace, properties):
                found_namespaces.append(_namespace_entry(backend_name, cls, namespace, properties))
            if _holds_tables(cls, namespace):
                found_tables.extend(_table_entries(driver, backend_name, namespace, adoptable, progress))
    found_tables = _merge_shared_locations(found_tables)
    _unique_names(found_tables)
    _add_schemas(found_tables, driver, progress)
    for table in found_tables:
        table["location"] = manifest_relative(table["location"], base_dir)
    manifest = {
        "version": 1,
        "owner": owner,
        "backends": {backend_name: _written_template(template, base_dir)},
        "namespaces": found_namespaces,
        "tables": found_tables,
    }
    header = (f"# Written by `lance-sync import` from backend '{backend_name}'.\n"
              "# `lance-sync plan` on this file shows one adopt per object and no other change.\n")
    if left_out:
        header += f"# Left out, managed by another owner: {', '.join(left_out)}\n"
    text = header + dump_yaml(manifest, sort_keys=False, allow_unicode=True, width=120)
    return Imported(text, left_out)


def _written_template(template: dict[str, Any], base_dir: str) -> dict[str, Any]:
    """The backend entry without empty values, a local root relative to the manifest's folder
    (a root given on the command line is taken from the working directory)."""
    written = {k: v for k, v in template.items() if v not in (None, {}, [])}
    if isinstance(written.get("root"), str) and is_local(written["root"]):
        written["root"] = manifest_relative(normalize_location(written["root"]), base_dir)
    return written


def _add_schemas(tables: list[dict[str, Any]], driver: SyncNamespace, progress: Progress | None) -> None:
    """Each table's `schema:` from its dataset, where one exists and every type has a manifest name."""
    from lance_sync.data.inspection import inspect_locations
    from lance_sync.model.arrow_types import TypeSyntaxError, parse_type

    if not tables:
        return
    if progress:
        progress(f"reading the schemas of {len(tables)} table(s)")
    reports = inspect_locations([t["location"] for t in tables], driver.storage_options() or None,
                                engine="threads")
    for table, report in zip(tables, reports, strict=True):
        if report.status != "valid" or not report.columns:
            continue
        try:
            for column in report.columns:
                parse_type(column["type"])
        except TypeSyntaxError:
            continue  # a type the manifest cannot spell (a dictionary, say): no schema, no mismatch
        table["schema"] = report.columns


def _walk(driver: SyncNamespace, root: Identifier, progress: Progress | None) -> Iterable[tuple[Identifier, dict]]:
    """The root (when it is a namespace) and every namespace below it, parents first."""
    if root:
        info = driver.get_namespace_info(root)
        if info is None:
            raise LanceSyncError(f"namespace '{driver.format_identifier(root)}' does not exist")
        yield root, info.properties
    pending = [root]
    while pending:
        parent = pending.pop(0)
        if progress:
            progress(f"listing namespaces under {driver.format_identifier(parent) or '(root)'}")
        try:
            children = list(driver.list_namespace_infos(parent))
        except NamespaceNotFoundError:
            continue
        for child in children:
            if is_lease_namespace(child.id):
                continue
            yield child.id, child.properties
            high = max(type(driver).namespace_levels[1] or 0, type(driver).table_namespace_levels[1] or 0)
            if not high or len(child.id) < high:
                pending.append(child.id)


def _declarable(cls: type[SyncNamespace], id: Identifier) -> bool:
    low, high = cls.namespace_levels
    return len(id) >= low and (high is None or len(id) <= high)


def _holds_tables(cls: type[SyncNamespace], id: Identifier) -> bool:
    low, high = cls.table_namespace_levels
    return len(id) >= low and (high is None or len(id) <= high)


def _written_id(cls: type[SyncNamespace], id: Identifier) -> str | list[str]:
    return list(id) if any(cls.id_delimiter in p for p in id) else cls.id_delimiter.join(id)


def _namespace_entry(backend: str, cls: type[SyncNamespace], id: Identifier, properties: dict) -> dict:
    entry: dict[str, Any] = {"backend": backend, "id": _written_id(cls, id)}
    if unmanaged(properties):
        entry["properties"] = unmanaged(properties)
    if is_protected(properties):
        entry["protect"] = True
    return entry


def _table_entries(driver: SyncNamespace, backend: str, namespace: Identifier,
                   adoptable: Callable[[str, Identifier, dict[str, str]], bool],
                   progress: Progress | None) -> list[dict[str, Any]]:
    if progress:
        progress(f"listing tables in {driver.format_identifier(namespace)}")
    entries = []
    for info in driver.list_table_infos(namespace):
        if not info.is_lance or not info.location or not adoptable("table", info.id, info.properties):
            continue
        entry: dict[str, Any] = {
            "name": info.id[-1],
            "location": info.location,
            "register": [{"backend": backend, "namespace": _written_id(type(driver), namespace)}],
        }
        if unmanaged(info.properties):
            entry["properties"] = unmanaged(info.properties)
        if is_protected(info.properties):
            entry["protect"] = True
        entries.append(entry)
    return entries


def _merge_shared_locations(tables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One manifest table per location: several registrations of one location become one entry."""
    by_location: dict[str, dict[str, Any]] = {}
    for table in tables:
        first = by_location.get(table["location"])
        if first is None:
            by_location[table["location"]] = table
        else:
            first["register"].append({**table["register"][0], "name": table["name"]})
    return list(by_location.values())


def _unique_names(tables: list[dict[str, Any]]) -> None:
    """Manifest table names must be unique: qualify clashing names with their namespace."""
    counts: dict[str, int] = {}
    for table in tables:
        counts[table["name"]] = counts.get(table["name"], 0) + 1
    for table in tables:
        if counts[table["name"]] > 1:
            namespace = table["register"][0]["namespace"]
            prefix = "_".join(namespace) if isinstance(namespace, list) else namespace.replace("$", "_").replace(".", "_")
            table["register"][0]["name"] = table["name"]
            table["name"] = f"{prefix}_{table['name']}"
