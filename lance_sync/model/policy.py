"""Policies: named rules every plan is checked against before apply.

A manifest's `policy:` section (and a file given with `--policy`) lists rules. Each rule is
one check, limited to some backends (names or globs; default: all), and every violation
names its rule:

- allowed_locations: a table registered in these backends lies under one of these prefixes;
- required_properties: declared namespaces and tables carry these property keys;
- name_pattern: declared names (the last level of the id) match this regular expression whole;
- forbidden_actions: the plan holds no action of these types in these backends;
- max_removals: the plan removes (forget, delete) at most this many objects (a rename removes
  nothing);
- forbidden_privileges: no grant in these backends gives these privileges;
- allowed_principals: grants in these backends go only to principals matching these globs;
- forbidden_index_types: no index of these Lance types is built on a table of these backends;
- required_indexes: every table of these backends whose dataset holds at least `min_rows` rows
  declares an index of one of these types (by default, a vector index).

The last two check the grants a manifest declares (`validate`) and each grant a plan holds.
The first three are about what a manifest declares: they run offline (`validate`) and on
every plan, against the objects the plan creates or changes and against the declared objects
already in sync. The last two are about the plan itself. required_indexes is about declared
tables and the rows their datasets hold: offline it checks the tables it covers whatever their
size (`min_rows: 0`), on a plan those whose dataset the plan read holds at least `min_rows`.
A violation tied to an action blocks that action; any violation refuses the plan (exit 4),
saved plans included.

`unattended` lists what `lance-sync reconcile` applies without a person: by default creates,
in-place updates, renames (a rename removes nothing: the table keeps its id, data and
grants, and the manifest asks for it by name with `renamed_from`) and grants (restoring the
declared privileges), never removals nor revokes unless listed. Actions that destroy data never
run unattended, but for a table's retention cleanup when `delete versions` is listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, ClassVar

from lance_sync.model.action_rows import Actions
from lance_sync.model.actions import (
    DATASET_PARTS,
    Action,
    Kind,
    Plan,
    PolicyViolation,
    Verb,
    action_key,
)
from lance_sync.model.errors import Position
from lance_sync.model.locations import is_within

if TYPE_CHECKING:
    from lance_sync.model.desired import DesiredState

#: what reconcile applies unattended when the policy does not say
DEFAULT_UNATTENDED: tuple[str, ...] = ("create", "update", "rename", "grant")
#: the verbs `unattended` may list; `delete` destroys data or a namespace and always needs a person,
#: except a table's retention cleanup when `delete versions` is listed
RETENTION_CLEANUP = "delete versions"
UNATTENDED_VERBS: tuple[str, ...] = ("create", "update", "rename", "replace", "forget", "grant", "revoke",
                                     RETENTION_CLEANUP)
REMOVALS = (Verb.FORGET, Verb.DELETE)


@dataclass(frozen=True)
class Subject:
    """A namespace or a table registration as a rule sees it: declared, or an action's result."""

    kind: Kind
    backend: str
    id: tuple[str, ...]
    display_id: str
    properties: dict[str, str]
    location: str | None
    #: where it is declared (file:line:column), when known
    where: str | None = None
    #: the key of the action that creates or changes it, if any
    action: str | None = None
    #: the grants the manifest declares on it (validate checks them; a plan checks its grant actions)
    grants: dict[str, frozenset[str]] | None = None

    @property
    def label(self) -> str:
        return f"{self.kind.value} {self.backend}: {self.display_id}"


@dataclass(frozen=True)
class TableFacts:
    """A declared table as a rule about its dataset sees it."""

    name: str
    #: the backends that register it, and its first registration as shown
    backends: tuple[str, ...]
    display_id: str
    location: str
    #: the types of the indexes it declares
    index_types: tuple[str, ...]
    #: the rows its dataset holds as the plan read them; None: not known (offline, or no dataset yet)
    rows: int | None
    where: str | None = None


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One named check; subclasses say what it looks at."""

    check: ClassVar[str]
    name: str
    #: backend names or globs the rule covers
    backends: tuple[str, ...] = ("*",)
    #: where the rule is written (not part of what it checks)
    where: Position | None = field(default=None, compare=False)

    def covers(self, backend: str) -> bool:
        return any(fnmatchcase(backend, pattern) for pattern in self.backends)

    def subject_problem(self, subject: Subject) -> str | None:
        """What is wrong with a declared object, or None."""
        return None

    def action_problem(self, action: Action) -> str | None:
        """What is wrong with one action of a plan, or None."""
        return None

    def plan_problem(self, actions: Sequence[Action]) -> str | None:
        """What is wrong with the plan as a whole, or None."""
        return None

    def table_problem(self, table: TableFacts) -> str | None:
        """What is wrong with a declared table and its dataset, or None."""
        return None

    @property
    def needs_rows(self) -> bool:
        """The rule reads the rows of the tables' datasets (the plan keeps them then)."""
        return False


@dataclass(frozen=True, kw_only=True)
class AllowedLocations(Rule):
    check: ClassVar[str] = "allowed_locations"
    #: normalized location prefixes
    prefixes: tuple[str, ...]

    def subject_problem(self, subject: Subject) -> str | None:
        if subject.kind != Kind.TABLE or subject.location is None or not self.covers(subject.backend):
            return None
        if self._allowed(subject.location):
            return None
        return f"{subject.label}: location {subject.location} is not under {' or '.join(self.prefixes)}"

    def action_problem(self, action: Action) -> str | None:
        """Data is not written outside the prefixes either (a dataset's registrations say where)."""
        writes = action.kind == Kind.DATASET and action.after is not None and action.location is not None
        if not writes or not any(self.covers(b) for b in action.backends) or self._allowed(action.location):
            return None
        return f"{action.name} {action.display_id}: writes data outside {' or '.join(self.prefixes)}"

    def _allowed(self, location: str | None) -> bool:
        return location is not None and any(is_within(location, prefix) for prefix in self.prefixes)


@dataclass(frozen=True, kw_only=True)
class RequiredProperties(Rule):
    check: ClassVar[str] = "required_properties"
    keys: tuple[str, ...]
    objects: tuple[Kind, ...] = (Kind.NAMESPACE, Kind.TABLE)

    def subject_problem(self, subject: Subject) -> str | None:
        if subject.kind not in self.objects or not self.covers(subject.backend):
            return None
        missing = [key for key in self.keys if key not in subject.properties]
        return f"{subject.label} lacks the required properties {', '.join(missing)}" if missing else None


@dataclass(frozen=True, kw_only=True)
class NamePattern(Rule):
    check: ClassVar[str] = "name_pattern"
    pattern: str
    objects: tuple[Kind, ...] = (Kind.NAMESPACE, Kind.TABLE)

    def subject_problem(self, subject: Subject) -> str | None:
        if subject.kind not in self.objects or not self.covers(subject.backend) or not subject.id:
            return None
        name = subject.id[-1]
        if re.fullmatch(self.pattern, name):
            return None
        return f"{subject.label}: the name '{name}' does not match {self.pattern}"


@dataclass(frozen=True, kw_only=True)
class ForbiddenActions(Rule):
    check: ClassVar[str] = "forbidden_actions"
    #: action types: a verb ('delete') or a verb and a kind ('delete dataset')
    types: tuple[str, ...]

    def action_problem(self, action: Action) -> str | None:
        covered = sorted(b for b in action.backends if self.covers(b))
        if not covered or not any(action.is_a(t) for t in self.types):
            return None
        return f"{action.headline} is forbidden in backend '{covered[0]}'"


@dataclass(frozen=True, kw_only=True)
class ForbiddenIndexTypes(Rule):
    check: ClassVar[str] = "forbidden_index_types"
    #: index types as lance-sync compares them (upper case, FTS as INVERTED)
    types: tuple[str, ...]

    def action_problem(self, action: Action) -> str | None:
        """An index built (created or replaced) with a forbidden type."""
        definition = action.after.definition if action.after is not None else None
        if action.kind != Kind.INDEX or action.verb not in (Verb.CREATE, Verb.REPLACE) or not definition:
            return None
        covered = sorted(b for b in [action.backend, *(r.backend for r in action.registrations)] if self.covers(b))
        if not covered or definition.get("type") not in self.types:
            return None
        return f"{action.headline}: index type {definition['type']} is forbidden in backend '{covered[0]}'"


@dataclass(frozen=True, kw_only=True)
class RequiredIndexes(Rule):
    check: ClassVar[str] = "required_indexes"
    #: the size from which a table needs one; 0: every table (checked offline too)
    min_rows: int = 0
    #: index types as lance-sync compares them; one declared index of one of them is enough
    types: tuple[str, ...]

    def table_problem(self, table: TableFacts) -> str | None:
        if not any(self.covers(b) for b in table.backends) or any(t in self.types for t in table.index_types):
            return None
        if self.min_rows and (table.rows is None or table.rows < self.min_rows):
            return None
        size = f" holds {table.rows} rows (at least {self.min_rows}) and" if self.min_rows else ""
        return (f"table '{table.name}' at {table.location}{size} declares no index of type "
                f"{' or '.join(self.types)}: declare one under its indexes")

    @property
    def needs_rows(self) -> bool:
        return self.min_rows > 0


@dataclass(frozen=True, kw_only=True)
class MaxRemovals(Rule):
    check: ClassVar[str] = "max_removals"
    limit: int

    def plan_problem(self, actions: Sequence[Action]) -> str | None:
        removals = [a for a in actions if a.verb in REMOVALS and any(self.covers(b) for b in a.backends)]
        if len(removals) <= self.limit:
            return None
        return f"the plan removes {len(removals)} objects; at most {self.limit} may be removed in one apply"


def _same_privilege(privilege: str) -> str:
    """'use_schema', 'USE SCHEMA' and 'Use Schema' are one privilege to a rule."""
    return privilege.upper().replace("_", " ").strip()


@dataclass(frozen=True, kw_only=True)
class _GrantRule(Rule):
    """A rule about grants: each declared one, and each grant action of a plan."""

    def subject_problem(self, subject: Subject) -> str | None:
        if not subject.grants or not self.covers(subject.backend):
            return None
        problems = [p for principal, privileges in sorted(subject.grants.items())
                    if (p := self.grant_problem(principal, privileges))]
        return f"{subject.label}: {'; '.join(problems)}" if problems else None

    def action_problem(self, action: Action) -> str | None:
        if action.verb != Verb.GRANT or not self.covers(action.backend):
            return None
        problem = self.grant_problem(action.principal or "", frozenset(action.privileges))
        return f"{action.headline}: {problem}" if problem else None

    def grant_problem(self, principal: str, privileges: frozenset[str]) -> str | None:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class ForbiddenPrivileges(_GrantRule):
    check: ClassVar[str] = "forbidden_privileges"
    privileges: tuple[str, ...]

    def grant_problem(self, principal: str, privileges: frozenset[str]) -> str | None:
        forbidden = {_same_privilege(p) for p in self.privileges}
        found = sorted(p for p in privileges if _same_privilege(p) in forbidden)
        return f"{', '.join(found)} may not be granted (to {principal})" if found else None


@dataclass(frozen=True, kw_only=True)
class AllowedPrincipals(_GrantRule):
    check: ClassVar[str] = "allowed_principals"
    patterns: tuple[str, ...]

    def grant_problem(self, principal: str, privileges: frozenset[str]) -> str | None:
        if not privileges or any(fnmatchcase(principal, pattern) for pattern in self.patterns):
            return None
        return f"{principal} matches none of the allowed principals {', '.join(self.patterns)}"


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    #: the verbs reconcile applies unattended, as written (None: not stated)
    unattended: tuple[str, ...] | None = None

    @property
    def unattended_verbs(self) -> tuple[str, ...]:
        return self.unattended if self.unattended is not None else DEFAULT_UNATTENDED

    def __bool__(self) -> bool:
        return bool(self.rules) or self.unattended is not None

    @property
    def needs_rows(self) -> bool:
        """A plan keeps the rows of each dataset it read (`Plan.dataset_rows`) for these rules."""
        return any(rule.needs_rows for rule in self.rules)


def combine(first: Policy, second: Policy) -> Policy:
    """Both policies' rules; `unattended` allows only what both allow. Rule names must differ
    (the caller checks, since it knows where each rule is written)."""
    if first.unattended is None or second.unattended is None:
        unattended = first.unattended if second.unattended is None else second.unattended
    else:
        unattended = tuple(verb for verb in first.unattended if verb in second.unattended)
    return Policy(rules=first.rules + second.rules, unattended=unattended)


# --- checking ------------------------------------------------------------------------------------

def declared_subjects(state: DesiredState, with_grants: bool = True) -> Iterator[Subject]:
    """Every namespace and table registration the manifest declares, as it declares it (its
    grants too, unless not `with_grants`)."""
    for namespace in state.namespaces:
        grants = namespace.grants.grants if with_grants and namespace.grants else None
        yield Subject(Kind.NAMESPACE, namespace.backend, namespace.id,
                      state.backends[namespace.backend].format_id(namespace.id), namespace.properties, None,
                      str(namespace.position) if namespace.position else None, grants=grants)
    for table in state.tables:
        for registration in table.registrations:
            grants = registration.grants.grants if with_grants and registration.grants else None
            yield Subject(Kind.TABLE, registration.backend, registration.id,
                          state.backends[registration.backend].format_id(registration.id), table.properties,
                          table.location, str(table.position) if table.position else None, grants=grants)


def declared_tables(state: DesiredState, rows: Mapping[str, int] | None = None) -> Iterator[TableFacts]:
    """Every table the manifest registers, with the rows of its dataset where `rows` (by
    location) gives them."""
    for table in state.tables:
        if not table.registrations:
            continue
        first = table.registrations[0]
        indexes = (table.table_state or {}).get("indexes") or []
        yield TableFacts(table.name, tuple(r.backend for r in table.registrations),
                         state.backends[first.backend].format_id(first.id), table.location,
                         tuple(index["type"] for index in indexes), (rows or {}).get(table.location),
                         str(table.position) if table.position else None)


def action_subjects(plan: Plan) -> Iterator[Subject]:
    """The namespaces and tables a plan creates or changes, as they will be."""
    for action in plan.actions:
        if action.kind == Kind.DATASET or action.kind in DATASET_PARTS or action.after is None or action.about_grants:
            continue
        yield Subject(action.kind, action.backend, tuple(action.id), action.display_id, action.after.properties,
                      action.after.location, action=action.key)


def check_declared(policy: Policy, state: DesiredState) -> list[PolicyViolation]:
    """The offline rules against what the manifest declares (`validate`)."""
    return [*_subject_violations(policy, declared_subjects(state)), *_table_violations(policy, declared_tables(state))]


def check_plan(policy: Policy, plan: Plan, state: DesiredState | None = None) -> list[PolicyViolation]:
    """Every rule against a plan: its actions, the objects it creates or changes, the plan as a
    whole, and (given the desired state) the declared objects it leaves as they are and the
    declared tables with the rows the plan read. Grants are checked as the plan's grant actions
    (validate checks every declared one)."""
    subjects = list(action_subjects(plan))
    if state is not None:
        changed = {a.key for a in plan.actions}
        subjects += [s for s in declared_subjects(state, with_grants=False)
                     if action_key(s.kind, s.backend, s.id) not in changed]
    found = list(_subject_violations(policy, subjects))
    if state is not None:
        found += _table_violations(policy, declared_tables(state, plan.dataset_rows))
    for rule in policy.rules:
        for action in plan.actions:
            problem = rule.action_problem(action)
            if problem:
                found.append(_violation(rule, problem, action.backend, action.display_id, None, action.key))
        problem = rule.plan_problem(plan.actions)
        if problem:
            found.append(_violation(rule, problem))
    return found


def enforce(policy: Policy, plan: Plan, state: DesiredState | None = None) -> None:
    """Check the plan and record what breaks the policy on it: each violation in
    `plan.policy_violations`, and on the action it concerns as `blocked` (apply refuses both)."""
    violations = check_plan(policy, plan, state)
    reasons: dict[str, list[str]] = {}
    for violation in violations:
        if violation.action is not None:
            reasons.setdefault(violation.action, []).append(f"policy rule '{violation.rule}': {violation.message}")
    actions = plan.actions
    for index, action in enumerate(actions if reasons else ()):
        if action.key in reasons:
            action.blocked = "; ".join([action.blocked, *reasons[action.key]] if action.blocked else reasons[action.key])
            if isinstance(actions, Actions):  # one made of a row is made anew on each read: keep this one
                actions[index] = action
    plan.policy_violations = [*plan.policy_violations, *violations]


def _subject_violations(policy: Policy, subjects: Iterable[Subject]) -> Iterator[PolicyViolation]:
    for subject in subjects:
        for rule in policy.rules:
            problem = rule.subject_problem(subject)
            if problem:
                yield _violation(rule, problem, subject.backend, subject.display_id, subject.where, subject.action)


def _table_violations(policy: Policy, tables: Iterable[TableFacts]) -> Iterator[PolicyViolation]:
    for table in tables:
        for rule in policy.rules:
            problem = rule.table_problem(table)
            if problem:
                yield _violation(rule, problem, table.backends[0], table.display_id, table.where)


def _violation(rule: Rule, message: str, backend: str | None = None, display_id: str | None = None,
               where: str | None = None, action: str | None = None) -> PolicyViolation:
    return PolicyViolation(rule=rule.name, check=rule.check, message=message, backend=backend,
                           display_id=display_id, where=where, action=action)

