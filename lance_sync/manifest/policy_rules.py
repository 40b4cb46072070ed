"""The checks of a manifest's `policy:` section or a policy file (`--policy`): rules that state
one check each, with unique names, known backends and valid patterns."""

from __future__ import annotations

import re
from collections.abc import Collection
from fnmatch import fnmatchcase
from typing import Any, Protocol

from lance_sync.manifest.loader import DataPath, Document
from lance_sync.manifest.schema_models import RULE_CHECKS, PolicyFile, PolicyRule
from lance_sync.model.actions import Kind
from lance_sync.model.errors import ManifestError, Position
from lance_sync.model.locations import normalize_location
from lance_sync.model.policy import (
    AllowedLocations,
    AllowedPrincipals,
    ForbiddenActions,
    ForbiddenIndexTypes,
    ForbiddenPrivileges,
    MaxRemovals,
    NamePattern,
    Policy,
    RequiredIndexes,
    RequiredProperties,
    Rule,
)
from lance_sync.model.table_state import INDEX_TYPES, VECTOR_TYPES, canonical_type


class Checks(Protocol):
    """Where the checks report (lance_sync.manifest.semantic's checker)."""

    document: Document
    base_dir: str
    problems: list[ManifestError]

    def fail(self, message: str, path: DataPath, key: bool = False) -> None: ...


def policy_of(checker: Checks, model: PolicyFile, path: DataPath, backends: Collection[str]) -> Policy:
    rules: list[Rule] = []
    names: dict[str, Position | None] = {}
    for index, entry in enumerate(model.rules):
        rule_path = (*path, "rules", index)
        if entry.name in names:
            checker.fail(f"rule '{entry.name}' is defined twice (first at {names[entry.name]})",
                         (*rule_path, "name"))
            continue
        names[entry.name] = checker.document.position((*rule_path, "name"))
        rule = _rule(checker, entry, rule_path, backends)
        if rule is not None:
            rules.append(rule)
    unattended = tuple(dict.fromkeys(model.unattended)) if model.unattended is not None else None
    return Policy(rules=tuple(rules), unattended=unattended)


def _rule(checker: Checks, entry: PolicyRule, path: DataPath, backends: Collection[str]) -> Rule | None:
    """The rule an entry describes, or None after reporting why it cannot be one."""
    stated = [check for check in RULE_CHECKS if getattr(entry, check) is not None]
    if len(stated) != 1:
        checker.fail(f"a rule states exactly one of {', '.join(RULE_CHECKS)}; "
                     + (f"this one states {', '.join(stated)}" if stated else "this one states none"), path)
        return None
    check = stated[0]
    problems_before = len(checker.problems)
    patterns = tuple(entry.backends or ("*",))
    for index, pattern in enumerate(patterns if entry.backends else ()):
        if not any(fnmatchcase(name, pattern) for name in backends):
            known = ", ".join(sorted(backends))
            checker.fail(f"'{pattern}' names no backend of the manifest (defined: {known})",
                         (*path, "backends", index))
    if entry.objects is not None and check not in ("required_properties", "name_pattern"):
        checker.fail(f"objects applies to required_properties and name_pattern rules, not to {check}",
                     (*path, "objects"))
    for field, listed in (("forbidden_index_types", entry.forbidden_index_types or ()),
                          ("required_indexes", (entry.required_indexes and entry.required_indexes.types) or ())):
        for index, written in enumerate(listed):
            if canonical_type(written) not in INDEX_TYPES:
                checker.fail(f"unknown index type '{written}'; Lance's types are {', '.join(INDEX_TYPES)}",
                             (*path, field, *(("types",) if field == "required_indexes" else ()), index))
    if entry.name_pattern is not None:
        try:
            re.compile(entry.name_pattern)
        except re.error as error:
            checker.fail(f"not a regular expression: {error}", (*path, "name_pattern"))
    if len(checker.problems) > problems_before:
        return None
    common: dict[str, Any] = {"name": entry.name, "backends": patterns,
                              "where": checker.document.position(path)}
    objects = tuple(Kind(o) for o in entry.objects) if entry.objects else (Kind.NAMESPACE, Kind.TABLE)
    if entry.allowed_locations is not None:
        prefixes = tuple(normalize_location(p, checker.base_dir) for p in entry.allowed_locations)
        return AllowedLocations(prefixes=prefixes, **common)
    if entry.required_properties is not None:
        return RequiredProperties(keys=tuple(entry.required_properties), objects=objects, **common)
    if entry.name_pattern is not None:
        return NamePattern(pattern=entry.name_pattern, objects=objects, **common)
    if entry.forbidden_actions is not None:
        return ForbiddenActions(types=tuple(entry.forbidden_actions), **common)
    if entry.forbidden_privileges is not None:
        return ForbiddenPrivileges(privileges=tuple(entry.forbidden_privileges), **common)
    if entry.allowed_principals is not None:
        return AllowedPrincipals(patterns=tuple(entry.allowed_principals), **common)
    if entry.forbidden_index_types is not None:
        return ForbiddenIndexTypes(types=tuple(canonical_type(t) for t in entry.forbidden_index_types), **common)
    if entry.required_indexes is not None:
        required = entry.required_indexes
        types = tuple(dict.fromkeys(canonical_type(t) for t in required.types or VECTOR_TYPES))
        return RequiredIndexes(min_rows=required.min_rows, types=types, **common)
    assert entry.max_removals is not None  # one check is stated, and it is the last one
    return MaxRemovals(limit=entry.max_removals, **common)
