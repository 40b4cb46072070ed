"""The manifest's pydantic models: the single source of `schemas/manifest.schema.json`.

Backend entries are built from each driver's configuration model plus the two keys the
manifest adds (`type` and `scope`), so a driver's configuration and the manifest schema
cannot disagree.
"""

from __future__ import annotations

import copy
import functools
from typing import Annotated, Any, Literal, Protocol, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model

from lance_sync.drivers import available_drivers, backend_rules
from lance_sync.model.actions import ActionType
from lance_sync.model.arrow_types import TypeSyntaxError, parse_type
from lance_sync.model.config_types import TextValue

SCHEMA_ID = "https://lance-sync.dev/schemas/manifest.schema.json"
POLICY_SCHEMA_ID = "https://lance-sync.dev/schemas/policy.schema.json"
OVERLAY_SCHEMA_ID = "https://lance-sync.dev/schemas/overlay.schema.json"
NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
OWNER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@/-]*$"


#: catalog properties, reader options and Spark settings are text: the loader keeps each value
#: as written (`loader.TEXT_MAPS`), `010` as "010" and `off` as "off"
PropertyValue = TextValue
Properties = Annotated[
    dict[str, PropertyValue],
    Field(description="Properties to set; only these keys are compared with the live object"),
]
IdentifierInput = Annotated[
    str | Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)],
    Field(description="An identifier in the backend's own syntax ('main$sales', 'wh.db') or a "
          "list of names (always accepted; needed when a name contains the delimiter)"),
]

#: principal -> privileges, in the backend's own terms
GrantsEntry = Annotated[
    dict[Annotated[str, Field(min_length=1)], list[Annotated[str, Field(min_length=1)]]],
    Field(description="Who holds which privileges on the object: principal -> privileges, in the "
          "backend's own terms (docs/grants.md). Only these principals' grants are managed, unless "
          "grants_mode is authoritative; an empty list takes every privilege from that principal"),
]
GrantsModeEntry = Annotated[
    Literal["named", "authoritative"],
    Field(description="named (default): manage only the principals `grants` names; authoritative: also "
          "revoke every other principal's grants on the object (needs --allow-revoke)"),
]

#: a table's former names: one, or a list (where an id written as a list of names is a list inside it)
RenamedFrom = str | Annotated[list[IdentifierInput], Field(min_length=1)]


def _arrow_type(value: Any) -> Any:
    if isinstance(value, str):
        try:
            parse_type(value)
        except TypeSyntaxError as error:
            raise ValueError(str(error)) from None
    return value


ArrowTypeName = Annotated[
    str, BeforeValidator(_arrow_type),
    Field(description="Arrow type, e.g. int64, string, timestamp[ms], fixed_size_list<float32>[128]"),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Column(_Strict):
    """A column of a table's schema. Against an existing dataset a change is made in place
    (Lance schema evolution, docs/table-state.md): a new nullable column is added, a renamed one
    renamed, nullability relaxed and a type widened; a column declared removed is dropped."""

    name: str = Field(min_length=1)
    type: ArrowTypeName | None = Field(None, description="Arrow type; required unless the column is removed")
    nullable: bool = True
    renamed_from: str | None = Field(
        None, min_length=1, description="The column's former name: a dataset column of that name is renamed "
        "in place instead of a new column being added")
    removed: bool = Field(False, description="The column is dropped from the dataset (needs --allow-drop; only "
                          "on a dataset lance-sync created for this owner); its type may be left out")


class Source(_Strict):
    """Where to read a table's data when its location holds no Lance dataset yet."""

    format: Literal["parquet", "csv", "json", "lance"]
    path: str = Field(min_length=1, description="File, directory or glob; relative to the manifest file")
    options: dict[str, PropertyValue] = Field(default_factory=dict,
                                              description="Spark reader options, e.g. header: true")
    casts: dict[str, ArrowTypeName] = Field(default_factory=dict,
                                            description="Column -> Arrow type to cast to")
    on_mismatch: Literal["fail", "overwrite"] = Field(
        "fail", description="An existing dataset whose schema differs: fail the plan (default) or "
        "rewrite it from the source")


class IndexEntry(_Strict):
    # the schema keeps the name users see in their editors
    model_config = ConfigDict(title="Index")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="The index's name in the dataset")
    column: str = Field(min_length=1, description="The column it indexes")
    type: str = Field(min_length=1, description="A Lance index type: BTREE, BITMAP, LABEL_LIST, INVERTED (FTS), "
                      "NGRAM, ZONEMAP, BLOOMFILTER, IVF_FLAT, IVF_SQ, IVF_PQ, IVF_HNSW_FLAT, IVF_HNSW_SQ, "
                      "IVF_HNSW_PQ")
    params: dict[str, int | float | bool | str] = Field(
        default_factory=dict, description="Build parameters of the type (num_partitions, num_sub_vectors, "
        "metric, ...); compared, so a change rebuilds the index")


class MaintenanceEntry(_Strict):
    model_config = ConfigDict(title="Maintenance")

    unindexed_rows: int | None = Field(None, ge=1, description="Bring an index up to date (optimize_indices) "
                                       "once this many rows are not in it")
    small_fragments: int | None = Field(None, ge=1, description="Compact the data files (compact_files) once "
                                        "this many fragments hold fewer rows than target_rows_per_fragment")
    target_rows_per_fragment: int = Field(1024 * 1024, ge=1, description="The rows a fragment is compacted to")


class RetentionEntry(_Strict):
    model_config = ConfigDict(title="Retention")

    keep_versions: int | None = Field(None, ge=1, description="Keep the newest N versions")
    older_than: str | None = Field(None, pattern=r"^\s*\d+\s*[smhdw]\s*$",
                                   description="Remove only versions older than this: 7d, 12h, 30m, 2w")


class RegistrationEntry(_Strict):
    # the schema keeps the name users see in their editors
    model_config = ConfigDict(title="Registration")

    backend: str = Field(pattern=NAME_PATTERN)
    namespace: IdentifierInput
    name: str | None = Field(None, min_length=1,
                             description="Table name in this backend (default: the table's name)")
    grants: GrantsEntry | None = None
    grants_mode: GrantsModeEntry | None = None


class Table(_Strict):
    name: str = Field(min_length=1, description="The table's name, unique in the manifest")
    location: str = Field(min_length=1, description="Root of the Lance dataset; relative paths are "
                          "taken from the manifest file's folder")
    registrations: list[RegistrationEntry] = Field(alias="register", min_length=1,
                                              description="Where the table is registered: backend and namespace")
    properties: Properties = Field(default_factory=dict)
    columns: list[Column] | None = Field(
        None, alias="schema", min_length=1,
        description="Arrow schema; with no dataset at the location an empty dataset is created")
    source: Source | None = None
    on_remove: Literal["deregister", "drop"] = Field(
        "deregister", description="When the entry leaves the manifest: deregister (keep data) or "
        "drop (delete data; needs --allow-drop)")
    protect: bool = Field(False, description="Never deregistered or dropped, even after the entry "
                          "leaves the manifest")
    renamed_from: RenamedFrom | None = Field(
        None, description="The table's former names, newest first: a name (registered under it in the same "
        "namespaces) or a whole table id in the backend's syntax ('sales$orders': a move); a list gives "
        "several, and an id written as a list of names is a list inside it. A registration found under "
        "exactly one of them, with this owner's mark and at this location, is renamed in place instead of "
        "declared again")
    indexes: list[IndexEntry] | None = Field(
        None, description="Lance indexes of the dataset, compared by name, column, type and params; an index "
        "lance-sync made and the manifest no longer declares is dropped, others are left alone")
    maintenance: MaintenanceEntry | None = None
    tags: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")], Annotated[int, Field(ge=1)]] | None = \
        Field(None, description="Lance tags: tag -> version. lance-sync moves and deletes only the tags it made")
    retention: RetentionEntry | None = Field(
        None, description="Old versions to clean up (tagged versions are always kept); only on datasets "
        "lance-sync created, and it deletes data: apply needs --allow-drop")


class Namespace(_Strict):
    backend: str = Field(pattern=NAME_PATTERN)
    id: IdentifierInput
    properties: Properties = Field(default_factory=dict)
    protect: bool = False
    grants: GrantsEntry | None = None
    grants_mode: GrantsModeEntry | None = None


class SparkEntry(_Strict):
    # the schema keeps the name users see in their editors
    model_config = ConfigDict(title="SparkSettings")

    master: str | None = Field(None, description="Spark master URL (local[4], spark://...) or a Spark "
                               "Connect URL sc://host:port; default: embedded local[*]")
    conf: dict[str, PropertyValue] = Field(default_factory=dict, description="Extra Spark configuration")


#: the keys of which a policy rule states exactly one: what it checks
RULE_CHECKS = ("allowed_locations", "required_properties", "name_pattern", "forbidden_actions", "max_removals",
               "forbidden_privileges", "allowed_principals", "forbidden_index_types", "required_indexes")


class RequiredIndexesEntry(_Strict):
    model_config = ConfigDict(title="RequiredIndexes")

    min_rows: int = Field(0, ge=0, description="Tables whose dataset holds at least this many rows need one "
                          "(0: every table, checked offline too)")
    types: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Lance index types of which one declared index is enough "
        "(default: any vector type)")


class PolicyRule(_Strict):
    """One named check. A rule states exactly one of allowed_locations, required_properties,
    name_pattern, forbidden_actions, max_removals, forbidden_privileges, allowed_principals,
    forbidden_index_types and required_indexes."""

    name: str = Field(pattern=NAME_PATTERN, description="The rule's name, shown with every violation")
    backends: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Backends the rule covers: names or globs (default: every backend)")
    objects: list[Literal["namespace", "table"]] | None = Field(
        None, min_length=1, description="For required_properties and name_pattern: the kinds of declared "
        "objects checked (default: namespaces and tables)")
    allowed_locations: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Tables registered in these backends lie under one of these "
        "location prefixes (relative paths: from the file's folder)")
    required_properties: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Property keys every declared object must set")
    name_pattern: str | None = Field(
        None, min_length=1, description="A regular expression every declared name (the id's last level) "
        "matches as a whole")
    forbidden_actions: list[ActionType] | None = Field(
        None, min_length=1, description="Action types the plan may not hold in these backends: a verb "
        "(create, update, rename, replace, forget, delete) or a verb and a kind ('delete dataset')")
    max_removals: int | None = Field(
        None, ge=0, description="At most this many forget and delete actions in one plan")
    forbidden_privileges: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Privileges no grant in these backends may give (case and '_' "
        "or ' ' do not matter: use_schema is USE SCHEMA)")
    allowed_principals: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Grants in these backends go only to principals matching one of "
        "these globs ('role:*', '*@example.com')")
    forbidden_index_types: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="Lance index types no table registered in these backends may build "
        "(IVF_FLAT, BITMAP, ...)")
    required_indexes: RequiredIndexesEntry | None = Field(
        None, description="Every table registered in these backends whose dataset holds at least min_rows "
        "rows declares an index of one of these types")


class PolicyFile(_Strict):
    """Rules every plan is checked against before apply; a violation refuses the plan (exit 4)."""

    # the schema keeps the name users see in their editors
    model_config = ConfigDict(title="Policy")

    rules: list[PolicyRule] = Field(default_factory=list)
    unattended: list[Literal["create", "update", "rename", "replace", "forget", "grant", "revoke",
                             "delete versions"]] | None = Field(
        None, description="What `lance-sync reconcile` applies without a person (default: create, "
        "update, rename, grant). Deleting data or namespaces never runs unattended; a table's retention "
        "cleanup (delete versions) only when listed")


class ValidatedBackend(Protocol):
    """A validated backend entry as the checks read it: its driver's configuration fields
    plus `type`, `scope` and `grants_mode` (the model is built at run time, see `backend_models`)."""

    type: str
    scope: list[str | list[str]]
    grants_mode: str | None

    def model_dump(self, *, by_alias: bool = ..., exclude: set[str] | None = ...,
                   exclude_unset: bool = ...) -> dict[str, Any]: ...


class ValidatedManifest(Protocol):
    """A validated manifest as the checks read it (the model is built at run time, see
    `manifest_model`)."""

    owner: str
    backends: dict[str, ValidatedBackend]
    namespaces: list[Namespace]
    tables: list[Table]
    storage: dict[str, str]
    spark: SparkEntry | None
    policy: PolicyFile | None


@functools.cache
def backend_model(backend_type: str) -> type[BaseModel]:
    """The manifest model of one backend type: the driver's config plus `type` and `scope`."""
    return create_model(
        f"{backend_type.capitalize()}Backend",
        __base__=backend_rules(backend_type).config_model,
        __doc__=f"A '{backend_type}' backend.",
        type=(Literal[backend_type], ...),
        scope=(list[IdentifierInput], Field(
            default_factory=list,
            description="More namespaces to scan for objects this owner created (their "
            "children are scanned too); declared namespaces and their parents always are")),
        grants_mode=(GrantsModeEntry | None, Field(
            None, description="The grants_mode of every object of this backend that declares `grants` "
            "and no grants_mode of its own (default: named)")),
    )


def backend_models() -> dict[str, type[BaseModel]]:
    """One manifest model per backend type."""
    return {backend_type: backend_model(backend_type) for backend_type in sorted(available_drivers())}


@functools.cache
def manifest_model(backend_types: tuple[str, ...] | None = None) -> type[BaseModel]:
    """The manifest model; with `backend_types`, one whose backends may only be of those
    types (which builds only their models and imports only their config modules)."""
    models = [backend_model(t) for t in backend_types] if backend_types else list(backend_models().values())
    # a union of the models built at run time: no static type describes it
    backend = Annotated[Union[tuple(models)], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
    return create_model(
        "Manifest",
        __base__=_Strict,
        __doc__="A lance-sync manifest: the namespaces and Lance tables that should exist.",
        version=(Literal[1], Field(description="Manifest format version")),
        owner=(str, Field(pattern=OWNER_PATTERN, description="Stamped as lance_sync.owner on what "
                          "lance-sync creates; only objects with this mark are ever removed")),
        backends=(dict[Annotated[str, Field(pattern=NAME_PATTERN)], backend],  # type: ignore[valid-type]
                  Field(min_length=1)),
        namespaces=(list[Namespace], Field(default_factory=list)),
        tables=(list[Table], Field(default_factory=list)),
        storage=(dict[str, TextValue], Field(
            default_factory=dict,
            description="Storage options every backend uses unless its own `storage` sets the same "
            "setting, e.g. {aws_region: eu-west-1}; unset settings come from the standard environment "
            "(AWS_ENDPOINT_URL, AWS_REGION...) as pylance takes them. Keys that look secret must come "
            "from ${VAR}.")),
        spark=(SparkEntry | None, None),
        policy=(PolicyFile | None, None),
    )


def policy_json_schema() -> dict[str, Any]:
    """The schema of a policy file (`--policy FILE`): the manifest's `policy:` section on its own."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": POLICY_SCHEMA_ID,
            **PolicyFile.model_json_schema()}


def manifest_json_schema() -> dict[str, Any]:
    schema = manifest_model().model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


#: What an overlay (every -f file after the first) must still say, per definition of the
#: manifest schema: the keys that match an entry up with the base's (a table's name, a
#: namespace's backend and id), and every key of entries in lists an overlay replaces whole
#: (a table's registrations and columns). Everything else is optional: an overlay only says
#: what it changes, and a backend entry need not repeat its `type`.
_OVERLAY_REQUIRED = {"Table": ["name"], "Namespace": ["backend", "id"],
                     "RegistrationEntry": ["backend", "namespace"], "Column": ["name", "type"]}


def overlay_json_schema() -> dict[str, Any]:
    """The schema of an overlay file: any part of a manifest (see _OVERLAY_REQUIRED)."""
    schema = copy.deepcopy(manifest_json_schema())
    schema["$id"] = OVERLAY_SCHEMA_ID
    schema["description"] = ("A lance-sync overlay: laid over a base manifest (lance-sync plan -f base.yaml "
                             "-f overlay.yaml), it sets only what it changes.")
    schema.pop("required", None)
    for name, definition in schema["$defs"].items():
        definition.pop("required", None)
        if name in _OVERLAY_REQUIRED:
            definition["required"] = _OVERLAY_REQUIRED[name]
    backend = schema["properties"]["backends"]["patternProperties"]
    for pattern, entry in backend.items():
        # without `type` the entry cannot pick its branch: it must fit one backend's keys
        backend[pattern] = {"anyOf": entry["oneOf"]}
    return schema
