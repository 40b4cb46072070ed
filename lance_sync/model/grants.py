"""Grants: who holds which privileges on a namespace or a table, in the backend's own terms.

A manifest declares grants on an object as a mapping from principal to privileges. What the
principal and privilege names mean is the backend's (`BackendRules.grant_privileges`,
`check_principal`); here is only the vocabulary every layer shares:

- `GrantMap`: principal -> privileges, privileges in the backend's canonical spelling;
- the two modes: `named` (the default) manages exactly the privileges of the principals the
  manifest names on the object and leaves everyone else's grants alone; `authoritative` also
  revokes the grants of every principal it does not name;
- `ParentNeed`: a privilege on a parent namespace without which a grant is of no use (Unity's
  USE SCHEMA, Lake Formation's DESCRIBE on the database);
- `RecordPlace`: where a backend keeps the record of the principals lance-sync manages on an
  object (lance_sync.model.marks.GRANTS_KEY). In mode named, a principal that the record names
  and the manifest no longer does is revoked: lance-sync granted it. An object without a
  record (managed before records were kept) revokes only what the manifest names, until its
  next apply records it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

#: principal -> privileges held or declared (canonical spelling)
GrantMap = dict[str, frozenset[str]]

#: the kinds of object grants are declared on
Securable = Literal["namespace", "table"]

GrantsMode = Literal["named", "authoritative"]
NAMED: Final = "named"
AUTHORITATIVE: Final = "authoritative"
GRANTS_MODES: Final = (NAMED, AUTHORITATIVE)


@dataclass(frozen=True)
class DeclaredGrants:
    """What a manifest declares of one object's grants."""

    grants: GrantMap
    mode: GrantsMode = NAMED
    #: where `grants:` is written (file:line:column), for messages; not part of what it declares
    where: str | None = field(default=None, compare=False)

    def changes(self, live: GrantMap, recorded: frozenset[str] | None = None
                ) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """principal -> (to grant, to revoke): the declared principals' differences, and every
        privilege to revoke of the principals `left(recorded)` names (in authoritative mode,
        every other principal's). Principals without a difference are left out."""
        principals = set(self.grants) | (set(live) if self.mode == AUTHORITATIVE else self.left(recorded))
        found = {p: grant_changes(live.get(p, frozenset()), self.grants.get(p, frozenset()))
                 for p in sorted(principals)}
        return {p: change for p, change in found.items() if change[0] or change[1]}

    def others(self, live: GrantMap, recorded: frozenset[str] | None = None) -> GrantMap:
        """The live grants this declaration leaves alone: those of principals neither declared
        nor recorded as managed (mode named)."""
        if self.mode == AUTHORITATIVE:
            return {}
        left = self.left(recorded)
        return {p: privileges for p, privileges in live.items()
                if p not in self.grants and p not in left and privileges}

    def left(self, recorded: frozenset[str] | None) -> frozenset[str]:
        """The principals lance-sync managed here (`recorded`) that the manifest no longer names."""
        return frozenset(recorded or ()) - set(self.grants)


@dataclass(frozen=True)
class ParentNeed:
    """A grant on an object is of no use unless the principal also holds one of `any_of` on
    the namespace `id` (a parent of the object)."""

    id: tuple[str, ...]
    any_of: frozenset[str]

    @property
    def shown(self) -> str:
        return " or ".join(sorted(self.any_of))


@dataclass(frozen=True)
class RecordPlace:
    """Where a backend keeps an object's record of managed principals: the property `key` of
    the namespace or table `id` (the object itself, or a parent where the object's own
    properties cannot be changed in place)."""

    kind: Securable
    id: tuple[str, ...]
    key: str


def grant_changes(held: frozenset[str], declared: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(to grant, to revoke) to take one principal from `held` to exactly `declared`."""
    return declared - held, held - declared


def format_privileges(privileges: frozenset[str] | list[str]) -> str:
    return ", ".join(sorted(privileges))
