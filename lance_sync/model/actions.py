"""The plan: an ordered list of actions, each with before/after, and what was left alone.

Like Terraform's plans package, an action says three things apart: the *verb* (create,
update, rename, replace, forget, delete; grant and revoke for one principal's privileges on a
namespace or table, record for the principals whose grants lance-sync manages there), the *address* of the object (its kind, backend and id; a rename's also
the id it had, like Terraform's `moved`; a grant's also its principal),
and the *reason* it is planned (absent, changed, adopt, ...). Everything else follows from
those: the symbol a renderer prints, whether the action destroys data or an object's
identity, its execution phase, and its inverse for a rollback plan. Nothing here is
backend-specific.

The pydantic models (and dataclasses) are the single source of `schemas/plan.schema.json`; a saved plan
(`plan --out`) and `--format json` are the same document.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass

PLAN_FORMAT_VERSION: Final = 2
SCHEMA_ID = "https://lance-sync.dev/schemas/plan.schema.json"


class Verb(str, Enum):
    CREATE = "create"
    UPDATE = "update"
    #: give a table registration another name (or namespace) in place: same table id, data and grants
    RENAME = "rename"
    #: delete, then create: the object comes back as a new one (a new table id; rewritten data)
    REPLACE = "replace"
    #: remove the catalog entry, keep the data (deregister)
    FORGET = "forget"
    #: remove the object and what it holds (a namespace; a dataset's data)
    DELETE = "delete"
    #: give one principal privileges on a namespace or table (the object is not touched)
    GRANT = "grant"
    #: take privileges away from one principal (destructive: --allow-revoke)
    REVOKE = "revoke"
    #: write on a namespace or table which principals lance-sync manages there, so that one
    #: leaving the manifest is revoked (neither the object nor any privilege changes)
    RECORD = "record"


class Kind(str, Enum):
    NAMESPACE = "namespace"
    #: one registration of a table in one catalog
    TABLE = "table"
    #: the Lance data at a location, shared by every registration of a table
    DATASET = "dataset"
    # The parts of a dataset the manifest declares (`Action.part` names the one): they change
    # the dataset in place and are addressed by its location and the part's name.
    #: a column of the dataset's schema
    COLUMN = "column"
    #: a Lance index
    INDEX = "index"
    #: a Lance tag (a name for one version)
    TAG = "tag"
    #: the dataset's old versions, which a retention cleanup removes
    VERSIONS = "versions"


class Reason(str, Enum):
    ABSENT = "absent"                  # declared, not there
    CHANGED = "changed"                # declared values differ from the live ones
    ADOPT = "adopt"                    # exists without an owner mark: take ownership
    UNDECLARED = "undeclared"          # a grant the manifest does not declare (grants_mode: authoritative)
    LEFT_GRANTS = "left_grants"        # a principal lance-sync granted, no longer in the object's grants:
    RENAMED = "renamed"                # registered under a name the manifest's renamed_from gives
    SCHEMA_MISMATCH = "schema_mismatch"  # the dataset's columns differ and on_mismatch: overwrite
    LEFT_MANIFEST = "left_manifest"    # owned, no longer declared
    UNDO = "undo"                      # a rollback plan's inverse


class Destruction(str, Enum):
    """What an action destroys, and so which flag apply needs for it."""

    DATA = "data"          # --allow-drop: data or a namespace is deleted
    IDENTITY = "identity"  # --allow-replace: the table gets a new id; its grants are lost
    ACCESS = "access"      # --allow-revoke: a principal loses privileges


#: the action types a policy rule can name: a verb (every kind), or a verb and a kind
ActionType = Literal[
    "create", "update", "rename", "replace", "forget", "delete", "grant", "revoke", "record",
    "record namespace", "record table", "create namespace", "update namespace", "delete namespace", "grant namespace", "revoke namespace",
    "create dataset", "replace dataset", "delete dataset",
    "create table", "update table", "rename table", "replace table", "forget table", "grant table",
    "revoke table", "update dataset",
    "create column", "update column", "delete column",
    "create index", "replace index", "update index", "delete index",
    "create tag", "update tag", "delete tag", "delete versions",
]


#: the dataset parts whose deletion loses nothing that cannot be made again: an index is built from
#: the data, a tag only names a version
_DERIVED = {Kind.INDEX, Kind.TAG}

#: the kinds an action on a dataset's part has: addressed by location and `Action.part`
DATASET_PARTS = frozenset({Kind.COLUMN, Kind.INDEX, Kind.TAG, Kind.VERSIONS})


def destruction(kind: Kind, verb: Verb) -> Destruction | None:
    if kind in _DERIVED:
        return None
    if verb == Verb.DELETE or (kind == Kind.DATASET and verb == Verb.REPLACE):
        return Destruction.DATA
    if kind == Kind.TABLE and verb == Verb.REPLACE:
        return Destruction.IDENTITY
    if verb == Verb.REVOKE:
        return Destruction.ACCESS
    return None


@dataclass(frozen=True)
class _Operation:
    #: execution and display order: namespaces parent-first, data, registrations, then removals
    phase: int
    #: the verb that undoes it; None: it cannot be undone (the data is gone)
    inverse: Verb | None


#: every (kind, verb) an action can be, and what follows from it
_OPERATIONS: dict[tuple[Kind, Verb], _Operation] = {
    (Kind.NAMESPACE, Verb.CREATE): _Operation(0, Verb.DELETE),
    (Kind.NAMESPACE, Verb.UPDATE): _Operation(1, Verb.UPDATE),
    (Kind.NAMESPACE, Verb.GRANT): _Operation(1, Verb.REVOKE),
    (Kind.NAMESPACE, Verb.REVOKE): _Operation(1, Verb.GRANT),
    (Kind.NAMESPACE, Verb.RECORD): _Operation(1, Verb.RECORD),
    (Kind.DATASET, Verb.CREATE): _Operation(2, Verb.DELETE),
    (Kind.DATASET, Verb.REPLACE): _Operation(2, None),
    (Kind.TABLE, Verb.CREATE): _Operation(3, Verb.FORGET),
    (Kind.TABLE, Verb.RENAME): _Operation(3, Verb.RENAME),
    (Kind.TABLE, Verb.UPDATE): _Operation(4, Verb.UPDATE),
    (Kind.TABLE, Verb.REPLACE): _Operation(4, Verb.REPLACE),
    (Kind.TABLE, Verb.GRANT): _Operation(4, Verb.REVOKE),
    (Kind.TABLE, Verb.REVOKE): _Operation(4, Verb.GRANT),
    (Kind.TABLE, Verb.RECORD): _Operation(4, Verb.RECORD),
    (Kind.DATASET, Verb.DELETE): _Operation(5, None),
    (Kind.TABLE, Verb.FORGET): _Operation(6, Verb.CREATE),
    (Kind.NAMESPACE, Verb.DELETE): _Operation(7, Verb.CREATE),
    # a dataset's parts change once the dataset is written and before it is registered; what
    # removes something waits for the removals' phase
    (Kind.COLUMN, Verb.CREATE): _Operation(2, Verb.DELETE),
    (Kind.COLUMN, Verb.UPDATE): _Operation(2, Verb.UPDATE),
    (Kind.COLUMN, Verb.DELETE): _Operation(5, None),
    (Kind.INDEX, Verb.CREATE): _Operation(2, Verb.DELETE),
    (Kind.INDEX, Verb.REPLACE): _Operation(2, Verb.REPLACE),
    (Kind.INDEX, Verb.UPDATE): _Operation(2, None),
    (Kind.INDEX, Verb.DELETE): _Operation(5, Verb.CREATE),
    (Kind.TAG, Verb.CREATE): _Operation(2, Verb.DELETE),
    (Kind.TAG, Verb.UPDATE): _Operation(2, Verb.UPDATE),
    (Kind.TAG, Verb.DELETE): _Operation(5, Verb.CREATE),
    (Kind.VERSIONS, Verb.DELETE): _Operation(5, None),
    (Kind.DATASET, Verb.UPDATE): _Operation(2, None),
}


def operation_phase(kind: Kind, verb: Verb) -> int:
    """An action's execution and display phase, by what it is (`Action.phase`)."""
    return _OPERATIONS[(kind, verb)].phase


#: the actions that may take a table registration to a new id (`Action.renamed_from`): a rename,
#: or a replace where the backend cannot rename
_RENAMING = {(Kind.TABLE, Verb.RENAME), (Kind.TABLE, Verb.REPLACE)}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WriteIntent(_Model):
    """The intent record of a dataset write lance-sync began (see lance_sync.data.intents)."""

    #: None: the record cannot be read
    owner: str | None = None
    #: the location it was written for: a record found anywhere else was copied or moved there
    location: str | None = None
    #: the apply that wrote it (its journal's stamp)
    apply: str | None = None
    started: str | None = None

    def is_for(self, owner: str, location: str) -> bool:
        """Written by `owner`'s apply for this very location."""
        return self.owner == owner and self.location == location

    def describe(self) -> str:
        if self.owner is None:
            return "an unreadable lance-sync intent record"
        return (f"owner '{self.owner}', for {self.location or '?'}, apply {self.apply or '?'}, "
                f"started {self.started or '?'}")


class DatasetStatus(_Model):
    """What the planner found at a table location."""

    #: interrupted: a lance-sync write that did not commit (an intent record, no version)
    status: Literal["valid", "missing", "not_lance", "corrupt", "interrupted", "unreachable"]
    version: int | None = None
    row_count: int | None = None
    columns: list[dict[str, Any]] | None = None
    error: str | None = None
    #: the lance-sync owner recorded in the dataset itself (its schema metadata): the owner whose
    #: apply created it. Only a dataset with this plan's owner is ever deleted or rewritten
    owner: str | None = None
    #: an intent record at the location: an interrupted write's, or a finished one's not cleared
    intent: WriteIntent | None = None
    #: bytes its latest version takes, where the plan asks (a location a table moves away from)
    bytes: int | None = None


def _kept_when_valid(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A dict or list of texts as it is, not a copy: the actions of a large plan share them (the
    comparer builds one properties' dict and one list of compared keys for each distinct
    declaration), and a million creates then hold one of each, not a million; anything else is
    validated (and copied) as usual."""
    if type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items()):
        return value
    if type(value) is list and all(type(item) is str for item in value):
        return value
    return handler(value)


# never changed in place: the dict or list an action holds may be another's too
#: a state's properties
Properties = Annotated[dict[str, str], WrapValidator(_kept_when_valid)]
#: an action's compared keys
Keys = Annotated[list[str], WrapValidator(_kept_when_valid)]


# A plan holds an action and its states for each object to change (a million on a large first
# plan): slotted, validated dataclasses take a fifth of a model's memory (no instance dict, no
# set of the fields given); they validate, serialize and describe themselves in the schema as
# models do (see TypeAdapter for one of them alone).
@pydantic_dataclass(slots=True, kw_only=True, config=ConfigDict(extra="forbid"))
class ObjectState:
    """The compared part of an object: properties and location; for a dataset its version,
    and for a dataset to write its schema and where the data comes from."""

    properties: Properties = Field(default_factory=dict)
    location: str | None = None
    columns: list[dict[str, Any]] | None = None
    source: dict[str, Any] | None = None
    #: a dataset's Lance version (None: no dataset)
    version: int | None = None
    #: a grant or revoke: the principal's privileges on the object (None: not a grant's state)
    privileges: list[str] | None = None
    #: a record: the principals lance-sync records as managing the object's grants (None: no
    #: record, or not a record's state)
    principals: list[str] | None = None
    #: a dataset's part: what the manifest declares of it and what was read back (a column's
    #: {name, type, nullable}, an index's {column, type, params}, a tag's {version}, ...)
    definition: dict[str, Any] | None = None


class Address(_Model):
    """A registration of a table in one backend."""

    backend: str
    id: list[str]
    #: the id in the backend's own syntax (empty in plans saved before it was recorded)
    display_id: str = ""


@pydantic_dataclass(slots=True, kw_only=True, config=ConfigDict(extra="forbid"))
class Action:
    verb: Verb
    kind: Kind
    reason: Reason
    #: the backend whose catalog (or, for a dataset, whose storage options) the action uses
    backend: str
    #: the object's id in the backend; empty for a dataset (its address is its location)
    id: list[str]
    #: the identifier in the backend's own syntax (a dataset's location), for people
    display_id: str
    #: why, in words
    detail: str
    before: ObjectState | None = None
    after: ObjectState | None = None
    #: what the action destroys; derived from kind and verb
    destroys: Destruction | None = None
    #: a replaced table's backend keeps grants on it: they are lost with its id (optional field:
    #: plans of format 2 without it load)
    drops_grants: bool = False
    #: property keys the plan compared; the fingerprint covers exactly these
    compared_keys: Keys = Field(default_factory=list)
    #: hash of the compared live state (or of absence); apply refuses when it no longer matches
    fingerprint: str
    #: keys of actions that must finish first
    depends_on: list[str] = Field(default_factory=list)
    #: set when a guard forbids this action (e.g. "protected"); apply refuses the plan
    blocked: str | None = None
    warnings: list[str] = Field(default_factory=list)
    #: the manifest table this action serves, if any
    table: str | None = None
    #: what the planner found at the table's location
    dataset: DatasetStatus | None = None
    #: a dataset action: the registrations of its location, checked for protection at apply time
    registrations: list[Address] = Field(default_factory=list)
    #: a rename, or a replace under a new name: the registration's address before the action
    #: (optional field: plans of format 2 without it load)
    renamed_from: Address | None = None
    #: a grant or revoke: whose privileges change, and which (before/after hold all of theirs)
    principal: str | None = None
    privileges: list[str] = Field(default_factory=list)
    #: an action on a dataset's part (a column, an index, a tag): the part's name
    part: str | None = None

    @model_validator(mode="after")
    def _derived(self) -> Action:
        if (self.kind, self.verb) not in _OPERATIONS:
            raise ValueError(f"a {self.kind.value} cannot be {self.verb.value}d")
        if (self.part is not None) != (self.kind in DATASET_PARTS - {Kind.VERSIONS}):
            raise ValueError("an action on a column, an index or a tag, and only one, names the part")
        if self.verb == Verb.RENAME and self.renamed_from is None:
            raise ValueError("a rename names the id the table had (renamed_from)")
        if self.renamed_from is not None and (self.kind, self.verb) not in _RENAMING:
            raise ValueError(f"a {self.name} names no id the object had (renamed_from)")
        if self.renamed_from is not None and self.renamed_from.backend != self.backend:
            raise ValueError("a rename stays in its backend")
        if self.is_grant != (self.principal is not None) or self.is_grant != bool(self.privileges):
            raise ValueError("a grant or revoke, and only one, names a principal and its privileges")
        self.destroys = destruction(self.kind, self.verb)
        return self

    @property
    def key(self) -> str:
        """Unique within a plan: the object's address (a dataset's is its location)."""
        if self.kind == Kind.DATASET:
            return dataset_key(self.location or "")
        if self.kind in DATASET_PARTS:
            return part_key(self.kind, self.location or "", self.part)
        if self.is_grant:
            return grant_key(self.verb, self.kind, self.backend, self.id, self.principal or "")
        if self.verb == Verb.RECORD:  # beside the object's own action
            return f"{self.verb.value}:{action_key(self.kind, self.backend, self.id)}"
        return action_key(self.kind, self.backend, self.id)

    @property
    def is_grant(self) -> bool:
        """A grant or a revoke: one principal's privileges on the object, not the object."""
        return self.verb in (Verb.GRANT, Verb.REVOKE)

    @property
    def about_grants(self) -> bool:
        """A grant, a revoke or a record: who may use the object, not the object itself."""
        return self.verb in (Verb.GRANT, Verb.REVOKE, Verb.RECORD)

    @property
    def location(self) -> str | None:
        state = self.after or self.before
        return state.location if state else None

    @property
    def current_id(self) -> list[str]:
        """Where the object is before the action: the id it had for a rename, else `id`."""
        return self.renamed_from.id if self.renamed_from is not None else self.id

    @property
    def shown_id(self) -> str:
        """The display id, for a rename with the one it had: 'sales.orders -> sales.orders_v2'."""
        if self.renamed_from is None:
            return self.display_id
        return f"{self.renamed_from.display_id} -> {self.display_id}"

    @property
    def headline(self) -> str:
        """'rename table lake: sales$orders -> sales$orders_v2', 'grant SELECT to analysts on table
        lake: sales$orders': how messages name the action."""
        if self.is_grant:
            to = "to" if self.verb == Verb.GRANT else "from"
            return (f"{self.verb.value} {', '.join(self.privileges)} {to} {self.principal} on "
                    f"{self.kind.value} {self.backend}: {self.shown_id}")
        return f"{self.name} {self.backend}: {self.shown_id}"

    @property
    def phase(self) -> int:
        return operation_phase(self.kind, self.verb)

    @property
    def removes(self) -> bool:
        """The action takes an object away that exists (guards check these against live state)."""
        return self.verb in (Verb.FORGET, Verb.DELETE, Verb.REPLACE)

    @property
    def name(self) -> str:
        """'create table', 'delete dataset': how messages name the action."""
        return f"{self.verb.value} {self.kind.value}"

    @property
    def backends(self) -> set[str]:
        """Every backend the action concerns: its own, and for a dataset, its registrations'."""
        return {self.backend} | {r.backend for r in self.registrations}

    def is_a(self, action_type: str) -> bool:
        """Whether the action is of a policy's action type: 'forget', or 'forget table'."""
        return action_type in (self.verb.value, self.name)

    @property
    def irreversible(self) -> str | None:
        """Why an action whose operation has an inverse cannot be undone here: Lance widens a
        column's type in place, and narrowing it back could lose values."""
        before = self.before.definition if self.before is not None else None
        after = self.after.definition if self.after is not None else None
        if self.kind == Kind.COLUMN and before and after and before.get("type") != after.get("type"):
            return f"a column widened from {before.get('type')} to {after.get('type')} is not narrowed back"
        return None

    def inverse(self) -> Action | None:
        """The action that undoes this one, or None when it cannot be undone (data deleted). A
        rename is undone by renaming back: from the new id to the one it had."""
        verb = _OPERATIONS[(self.kind, self.verb)].inverse
        if verb is None or self.irreversible is not None:
            return None
        id, display_id, renamed_from = self.id, self.display_id, None
        if self.renamed_from is not None:
            id, display_id = self.renamed_from.id, self.renamed_from.display_id
            renamed_from = Address(backend=self.backend, id=self.id, display_id=self.display_id)
        before = _undo_state(self.after, self.kind)
        return Action(
            verb=verb, kind=self.kind, reason=Reason.UNDO, backend=self.backend, id=id,
            display_id=display_id, detail=f"undo: {self.headline}",
            before=before, after=_undo_state(self.before, self.kind), compared_keys=self.compared_keys,
            fingerprint=fingerprint(before, self.compared_keys), table=self.table,
            registrations=self.registrations, renamed_from=renamed_from, principal=self.principal,
            privileges=self.privileges, part=self.part)


def _undo_state(state: ObjectState | None, kind: Kind) -> ObjectState | None:
    """A state to restore or to expect: never a source to read again."""
    if state is None:
        return None
    if kind == Kind.DATASET:
        return ObjectState(location=state.location, version=state.version)
    if kind in DATASET_PARTS:
        return ObjectState(location=state.location, version=state.version, definition=state.definition)
    if state.privileges is not None:
        return ObjectState(privileges=state.privileges)
    if state.principals is not None:
        return ObjectState(principals=state.principals)
    return ObjectState(properties=state.properties, location=state.location)


#: json.dumps(..., ensure_ascii=False, sort_keys=True) without building an encoder per call
#: (fingerprints are computed for each action of an apply's rollback plan)
_SORTED_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
#: one JSON string, as json.dumps(..., ensure_ascii=False) writes it
_encode_string = json.encoder.encode_basestring


def action_key(kind: Kind | str, backend: str, id: list[str] | tuple[str, ...]) -> str:
    """'table:lake:["sales", "orders"]': the id as json.dumps(list(id), ensure_ascii=False)
    writes it, each part encoded directly (a third of the time through the encoder: an apply
    computes each action's key several times)."""
    kind = kind.value if isinstance(kind, Kind) else kind
    return f"{kind}:{backend}:[{', '.join(map(_encode_string, id))}]"


def grant_key(verb: Verb, kind: Kind, backend: str, id: list[str] | tuple[str, ...], principal: str) -> str:
    """A grant's or revoke's key: the object's, with the verb and the principal."""
    return f"{verb.value}:{action_key(kind, backend, id)}:{principal}"


def dataset_key(location: str) -> str:
    return f"dataset:{location}"


def part_key(kind: Kind, location: str, part: str | None) -> str:
    """'index:s3://lake/orders.lance#id_idx': a dataset part's key ('versions:...' has no name)."""
    return f"{kind.value}:{location}" + (f"#{part}" if part is not None else "")


def project(properties: dict[str, str], location: str | None, keys: list[str]) -> ObjectState:
    """The compared part of a live namespace or table."""
    return ObjectState(properties={k: properties[k] for k in keys if k in properties}, location=location)


def fingerprint(state: ObjectState | None, keys: list[str]) -> str:
    """A short stable hash of an object's compared state; absence has its own value.

    A dataset's state is its location and version, so an action planned before newer data
    was written no longer matches.
    """
    if state is None:
        return ABSENT  # every create's: one string for all of them
    if state.privileges is not None:
        return _digest({"privileges": sorted(state.privileges)})
    if state.principals is not None:
        return _digest({"principals": sorted(state.principals)})
    payload: dict[str, Any] = {"location": state.location, "version": state.version,
                               "properties": {k: state.properties.get(k) for k in keys}}
    if state.definition is not None:  # a dataset part's; other states hash as they always have
        payload["definition"] = state.definition
    return _digest(payload)  # the encoder sorts keys


def _digest(payload: Any) -> str:
    return hashlib.sha256(_SORTED_JSON.encode(payload).encode()).hexdigest()[:16]


#: every create's fingerprint (`fingerprint` of no state)
ABSENT: Final = _digest({"absent": True})


def _actions_as_they_are(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """`Actions` (rows among them) as they are: validating them would make every action."""
    from lance_sync.model.action_rows import Actions

    return value if isinstance(value, Actions) else handler(value)


def _as_list(value: Sequence[Action]) -> list[Action]:
    return value if isinstance(value, list) else list(value)


#: a plan's actions: a list (a saved plan's, a selection's), or Actions (a planned one's: see
#: lance_sync.model.action_rows)
PlanActions = Annotated[Sequence[Action], WrapValidator(_actions_as_they_are),
                        PlainSerializer(_as_list, return_type=list[Action])]


class LeftAlone(_Model):
    """An object seen in scope that lance-sync will not touch, and why."""

    kind: Kind
    backend: str
    id: list[str]
    display_id: str
    reason: str


class PolicyViolation(_Model):
    """A rule of the manifest's policy that the plan (or a declared object) breaks."""

    #: the rule's name, as the policy gives it
    rule: str
    #: what kind of rule: allowed_locations, required_properties, name_pattern, forbidden_actions,
    #: max_removals
    check: str
    message: str
    backend: str | None = None
    display_id: str | None = None
    #: where the object is declared (file:line:column), when it is a declared object
    where: str | None = None
    #: the key of the action it blocks; None when it is about the plan as a whole or an object in sync
    action: str | None = None


class OmittedAction(_Model):
    """An action a partial plan leaves out, and why."""

    key: str
    #: 'forget table', 'create namespace'
    action: str
    backend: str
    display_id: str
    why: str


class ResolvedVariable(_Model):
    """A variable the manifest resolved."""

    name: str
    #: its value; None for a secret, never shown
    value: str | None = None
    secret: bool = False


class Partial(_Model):
    """Set on a plan that holds only some of the changes the manifest needs."""

    #: target: limited with --target; unattended: reconcile left out what needs a person;
    #: changed_since: limited to the manifest entries changed since a git revision
    by: Literal["target", "unattended", "changed_since"]
    #: the --target patterns
    targets: list[str] = Field(default_factory=list)
    omitted: list[OmittedAction] = Field(default_factory=list)
    #: changed_since: the revision as given, and the commit it named
    since: str | None = None
    revision: str | None = None
    #: changed_since: why the plan covers more than the entries that changed
    widened: list[str] = Field(default_factory=list)
    #: changed_since: the `${VAR}` references the manifest resolved (the revision keeps no
    #: record of the environment: under another one, only a full plan shows what it changes)
    variables: list[ResolvedVariable] = Field(default_factory=list)


class Scope(_Model):
    """What the plan read in one backend: where an owned object outside it is not seen."""

    backend: str
    #: namespaces whose tables were listed, in the backend's syntax
    namespaces: list[str] = Field(default_factory=list)
    #: every namespace of the backend was listed (plan --scan-all)
    complete: bool = False
    #: tables of this owner seen outside those namespaces (a backend read in one snapshot shows
    #: them): a plan with --scan-all would plan them
    owned_elsewhere: list[str] = Field(default_factory=list)


class Plan(_Model):
    format_version: Literal[2] = PLAN_FORMAT_VERSION
    tool_version: str
    created_at: str
    owner: str
    #: as given, relative to the working directory when below it
    manifest_files: list[str]
    #: the first manifest's folder: locations stay absolute here, and text and markdown show
    #: those below this folder relative to it (./lakehouse/orders.lance), as the manifest does
    base_dir: str | None = None
    #: backend configurations; secrets appear only as their ${VAR} reference
    backends: dict[str, dict[str, Any]]
    spark: dict[str, Any] | None = None
    actions: PlanActions = Field(default_factory=list)
    left_alone: list[LeftAlone] = Field(default_factory=list)
    #: grants the manifest does not manage on objects it declares grants for (grants_mode: named):
    #: the reason lists each principal and privileges (optional field, as below)
    grants_left_alone: list[LeftAlone] = Field(default_factory=list)
    #: objects declared and in sync that carry no owner mark, because their backend cannot stamp them
    adopted_unmarked: list[LeftAlone] = Field(default_factory=list)
    #: facts worth knowing that need no action (e.g. columns a writer added to a dataset)
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    scope: list[Scope] = Field(default_factory=list)
    #: API calls made while reading live state, per backend
    api_calls: dict[str, int] = Field(default_factory=dict)
    #: the policy rules it breaks; any refuses the plan (optional field: plans of format 2 without it load)
    policy_violations: list[PolicyViolation] = Field(default_factory=list)
    #: set when the plan leaves out some of the changes the manifest needs (optional field, as above)
    partial: Partial | None = None
    #: location -> the rows of the dataset there as the plan read it, kept only when a policy rule
    #: needs them (required_indexes with min_rows; optional field, as above)
    dataset_rows: dict[str, int] = Field(default_factory=dict)
    #: the plan undoes an apply: a rollback plan (optional field, as above)
    rollback: bool = False

    @property
    def has_changes(self) -> bool:
        return bool(self.actions)

    def blocked(self) -> list[Action]:
        from lance_sync.model.action_rows import Actions

        if isinstance(self.actions, Actions):  # its rows are not made to be asked
            return self.actions.blocked()
        return [a for a in self.actions if a.blocked]

    @property
    def refused(self) -> bool:
        """Apply refuses this plan whatever its flags: blocked actions or policy violations."""
        return bool(self.blocked() or self.policy_violations)

    def destroying(self, what: Destruction) -> list[Action]:
        from lance_sync.model.action_rows import Actions

        actions = self.actions.kept() if isinstance(self.actions, Actions) else self.actions  # a create destroys nothing
        return [a for a in actions if a.destroys == what]


def plan_json_schema() -> dict[str, Any]:
    schema = Plan.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
