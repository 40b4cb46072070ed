"""The plan: an ordered list of actions, each with before/after, and what was left alone.

Like Terraform's plans package: an action enum plus before/after states, nothing
backend-specific. The pydantic models are the single source of `schemas/plan.schema.json`;
a saved plan (`plan --out`) and `--format json` are the same document.
"""

from __future__ import annotations

import hashlib
import json
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PLAN_FORMAT_VERSION = 1
SCHEMA_ID = "https://lance-sync.dev/schemas/plan.schema.json"

OWNER_KEY = "lance_sync.owner"
PROTECT_KEY = "lance_sync.protect"
ON_REMOVE_KEY = "lance_sync.on_remove"
MANAGED_KEYS = (OWNER_KEY, PROTECT_KEY, ON_REMOVE_KEY)


class ActionType(str, Enum):
    CREATE_NAMESPACE = "create_namespace"
    UPDATE_NAMESPACE = "update_namespace"
    DROP_NAMESPACE = "drop_namespace"
    DECLARE_TABLE = "declare_table"
    CREATE_TABLE = "create_table"
    UPDATE_TABLE = "update_table"
    REPLACE_TABLE = "replace_table"
    DEREGISTER_TABLE = "deregister_table"
    DROP_TABLE = "drop_table"
    ADOPT = "adopt"


#: execution phases: creates parent-first, then changes, then removals child-first
PHASES = {
    ActionType.CREATE_NAMESPACE: 0,
    ActionType.UPDATE_NAMESPACE: 1,
    ActionType.CREATE_TABLE: 2,
    ActionType.DECLARE_TABLE: 3,
    ActionType.UPDATE_TABLE: 4,
    ActionType.REPLACE_TABLE: 4,
    ActionType.ADOPT: 1,
    ActionType.DEREGISTER_TABLE: 5,
    ActionType.DROP_TABLE: 6,
    ActionType.DROP_NAMESPACE: 7,
}
DATA_LOSS = {ActionType.DROP_TABLE, ActionType.DROP_NAMESPACE}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetStatus(_Model):
    """What the planner found at a table location."""

    status: Literal["valid", "missing", "not_lance", "corrupt", "unreachable"]
    version: int | None = None
    row_count: int | None = None
    columns: list[dict[str, Any]] | None = None
    error: str | None = None


class ObjectState(_Model):
    """The compared part of a namespace or table: properties, and for tables the location."""

    properties: dict[str, str] = Field(default_factory=dict)
    location: str | None = None
    #: create_table only: the schema to write and where the data comes from
    columns: list[dict[str, Any]] | None = None
    source: dict[str, Any] | None = None


class Action(_Model):
    action: ActionType
    object: Literal["namespace", "table"]
    backend: str
    id: list[str]
    #: the identifier in the backend's own syntax, for people
    display_id: str
    before: ObjectState | None = None
    after: ObjectState | None = None
    reason: str
    data_loss: bool = False
    #: property keys the plan compared; the fingerprint covers exactly these
    compared_keys: list[str] = Field(default_factory=list)
    #: hash of `before` (or of absence): apply refuses when the live object no longer matches
    fingerprint: str
    #: keys of actions that must finish first
    depends_on: list[str] = Field(default_factory=list)
    #: set when a guard forbids this action (e.g. "protected"); apply refuses the plan
    blocked: str | None = None
    warnings: list[str] = Field(default_factory=list)
    #: adopt only: stamp in place, or re-declare where the backend cannot update in place
    method: Literal["in_place", "replace"] | None = None
    #: create_table: "create" or "overwrite" the dataset; register after writing or not
    write_mode: Literal["create", "overwrite"] | None = None
    registers: bool | None = None
    #: the manifest table this action serves, if any
    table: str | None = None
    dataset: DatasetStatus | None = None

    @property
    def key(self) -> str:
        """Unique within a plan: the object, or for a data write the location it writes."""
        if self.action == ActionType.CREATE_TABLE and self.after is not None:
            return f"data:{self.after.location}"
        return action_key(self.object, self.backend, self.id)

    def inverse(self) -> Action | None:
        """The action that undoes this one, or None when it cannot be undone (data deleted)."""
        mirror = {
            ActionType.CREATE_NAMESPACE: ActionType.DROP_NAMESPACE,
            ActionType.DROP_NAMESPACE: ActionType.CREATE_NAMESPACE,
            ActionType.UPDATE_NAMESPACE: ActionType.UPDATE_NAMESPACE,
            ActionType.DECLARE_TABLE: ActionType.DEREGISTER_TABLE,
            ActionType.DEREGISTER_TABLE: ActionType.DECLARE_TABLE,
            ActionType.UPDATE_TABLE: ActionType.UPDATE_TABLE,
            ActionType.REPLACE_TABLE: ActionType.REPLACE_TABLE,
            ActionType.CREATE_TABLE: ActionType.DROP_TABLE,
        }
        if self.action == ActionType.ADOPT:
            undo = ActionType.UPDATE_NAMESPACE if self.object == "namespace" else (
                ActionType.UPDATE_TABLE if self.method == "in_place" else ActionType.REPLACE_TABLE)
        elif self.action in mirror and not (self.action == ActionType.CREATE_TABLE
                                            and self.write_mode == "overwrite"):
            undo = mirror[self.action]
        else:
            return None
        before = _without_data(self.after)
        return Action(
            action=undo, object=self.object, backend=self.backend, id=self.id,
            display_id=self.display_id, before=before, after=_without_data(self.before),
            reason=f"undo {self.action.value}", data_loss=undo in DATA_LOSS,
            compared_keys=self.compared_keys, fingerprint=fingerprint(before, self.compared_keys),
            table=self.table, registers=self.registers)


def _without_data(state: ObjectState | None) -> ObjectState | None:
    return None if state is None else ObjectState(properties=state.properties, location=state.location)


def action_key(kind: str, backend: str, id: list[str] | tuple[str, ...]) -> str:
    return f"{kind}:{backend}:{json.dumps(list(id), ensure_ascii=False)}"


def project(properties: dict[str, str], location: str | None, keys: list[str]) -> ObjectState:
    """The compared part of a live object."""
    return ObjectState(properties={k: properties[k] for k in keys if k in properties}, location=location)


def fingerprint(state: ObjectState | None, keys: list[str]) -> str:
    """A short stable hash of an object's compared state; absence has its own value."""
    if state is None:
        payload: Any = {"absent": True}
    else:
        payload = {"location": state.location,
                   "properties": {k: state.properties.get(k) for k in sorted(keys)}}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return digest[:16]


class LeftAlone(_Model):
    """An object seen in scope that lance-sync will not touch, and why."""

    object: Literal["namespace", "table"]
    backend: str
    id: list[str]
    display_id: str
    reason: str


class Plan(_Model):
    format_version: Literal[1] = PLAN_FORMAT_VERSION
    tool_version: str
    created_at: str
    owner: str
    manifest_files: list[str]
    #: backend configurations; secrets appear only as their ${VAR} reference
    backends: dict[str, dict[str, Any]]
    spark: dict[str, Any] | None = None
    actions: list[Action] = Field(default_factory=list)
    left_alone: list[LeftAlone] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    #: API calls made while reading live state, per backend
    api_calls: dict[str, int] = Field(default_factory=dict)

    @property
    def has_changes(self) -> bool:
        return bool(self.actions)

    def summary(self) -> dict[str, int]:
        counts = {t.value: 0 for t in ActionType}
        for action in self.actions:
            counts[action.action.value] += 1
        return counts

    def blocked(self) -> list[Action]:
        return [a for a in self.actions if a.blocked]

    def data_loss(self) -> list[Action]:
        return [a for a in self.actions if a.data_loss]


def plan_json_schema() -> dict[str, Any]:
    schema = Plan.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
