"""The vocabulary of a table's own state (issue 47): Lance's index types and their build
parameters, the record lance-sync keeps of the indexes and tags it made, a retention policy,
and the live state read from a dataset for the planner. Nothing here opens a dataset.

Which indexes lance-sync made is recorded in the dataset's config (one key per index, holding
the owner and the declared definition; `built` is false from the moment it is written until
the build finished), so an index someone else made is never dropped, a definition change is
seen even where Lance cannot tell a parameter back, and an apply cut off during a build
builds it again. A tag's owner is in the tag's own metadata.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

from lance_sync.model.actions import Action, Kind, ObjectState, Reason, Verb

#: a scalar index type -> the build parameters `create_scalar_index` takes for it
SCALAR_TYPES: Final[dict[str, frozenset[str]]] = {
    "BTREE": frozenset({"zone_size"}),
    "BITMAP": frozenset(),
    "LABEL_LIST": frozenset(),
    "INVERTED": frozenset({"with_position", "base_tokenizer", "language", "max_token_length", "lower_case",
                           "stem", "remove_stop_words", "ascii_folding"}),
    "NGRAM": frozenset(),
    "ZONEMAP": frozenset({"rows_per_zone"}),
    "BLOOMFILTER": frozenset({"number_of_items", "probability"}),
}
_IVF = frozenset({"metric", "num_partitions", "sample_rate", "max_iterations"})
_PQ = frozenset({"num_sub_vectors", "num_bits"})
_HNSW = frozenset({"m", "ef_construction"})
#: a vector index type -> the build parameters `create_index` takes for it
VECTOR_TYPES: Final[dict[str, frozenset[str]]] = {
    "IVF_FLAT": _IVF,
    "IVF_SQ": _IVF | {"num_bits"},
    "IVF_PQ": _IVF | _PQ,
    "IVF_HNSW_FLAT": _IVF | _HNSW,
    "IVF_HNSW_SQ": _IVF | _HNSW | {"num_bits"},
    "IVF_HNSW_PQ": _IVF | _HNSW | _PQ,
}
#: other spellings the manifest accepts, and the type each is
TYPE_ALIASES: Final = {"FTS": "INVERTED"}
INDEX_TYPES: Final = (*SCALAR_TYPES, *VECTOR_TYPES, *TYPE_ALIASES)
METRICS: Final = ("l2", "cosine", "dot", "hamming")
#: the types Lance requires these parameters of
REQUIRED_PARAMS: Final = {"IVF_PQ": ("num_partitions", "num_sub_vectors"),
                          "IVF_HNSW_PQ": ("num_partitions", "num_sub_vectors")}
#: rows a PQ codebook (2^8 centroids per sub-vector) needs to train
PQ_TRAINING_ROWS: Final = 256

#: the dataset config key of the record of index `name` lance-sync made
INDEX_RECORD_PREFIX: Final = "lance_sync.index."
#: the tag metadata key naming the lance-sync owner that made the tag
TAG_OWNER_KEY: Final = "lance_sync.owner"


def canonical_type(written: str) -> str:
    """The type as lance-sync compares it: upper case, aliases resolved ('fts' -> 'INVERTED')."""
    upper = written.upper()
    return TYPE_ALIASES.get(upper, upper)


def live_type(index_type: str) -> str:
    """Lance's own spelling of a built index's type ('BTree', 'LabelList', 'IVF_PQ') as a
    declared type, where one matches."""
    squashed = index_type.upper().replace("_", "")
    for name in (*SCALAR_TYPES, *VECTOR_TYPES):
        if name.replace("_", "") == squashed:
            return name
    return index_type


def is_vector(index_type: str) -> bool:
    return canonical_type(index_type) in VECTOR_TYPES


def rows_to_train(definition: dict[str, Any]) -> int:
    """The rows a vector index needs before it is built: one per IVF partition, and a PQ
    codebook's worth for a PQ type; 1 for the rest (an empty table is never indexed)."""
    index_type = canonical_type(definition["type"])
    if index_type not in VECTOR_TYPES:
        return 0
    params = definition.get("params") or {}
    needed = max(1, int(params.get("num_partitions") or 1))
    if index_type.endswith("PQ"):
        needed = max(needed, PQ_TRAINING_ROWS)
    return needed


def reported_params(index_type: str, details: dict[str, Any]) -> dict[str, Any]:
    """The build parameters Lance tells back of a built index (its `describe_indices` details),
    by the names the manifest declares them with. Not the IVF partitions: Lance trains fewer
    than asked for on few rows, and its statistics tell those."""
    if canonical_type(index_type) == "INVERTED":
        return {key: details[key] for key in sorted(SCALAR_TYPES["INVERTED"]) if key in details}
    compression, hnsw = details.get("compression") or {}, details.get("hnsw") or {}
    told = {"ef_construction": hnsw.get("construction_ef"), "m": hnsw.get("max_connections"),
            "metric": str(details["metric_type"]).lower() if details.get("metric_type") else None,
            "num_bits": compression.get("num_bits"), "num_sub_vectors": compression.get("num_sub_vectors")}
    return {key: value for key, value in told.items() if value is not None}


def same_definition(declared: dict[str, Any], live: LiveIndex) -> bool:
    """A built index is as declared: the same column and type, and each declared parameter
    Lance tells back has the declared value (one it does not tell cannot differ)."""
    if (declared["column"], canonical_type(declared["type"])) != (live.column, live.type):
        return False
    for key, value in (declared.get("params") or {}).items():
        told = live.params.get(key)
        if told is not None and (told.lower() if isinstance(told, str) else told) != \
                (value.lower() if isinstance(value, str) else value):
            return False
    return True


def refreshes_index(action: Action) -> bool:
    """The action brings a built index up to date (optimize_indices): not an adoption, which
    records an index someone else built."""
    return action.kind == Kind.INDEX and action.verb == Verb.UPDATE and action.reason != Reason.ADOPT


def index_definition(column: str, index_type: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """What an index is compared by besides its name: {column, type, params}."""
    return {"column": column, "type": canonical_type(index_type), "params": dict(sorted((params or {}).items()))}


def index_record(owner: str, definition: dict[str, Any], built: bool) -> str:
    """The config value recording an index lance-sync made (`built` false while it builds)."""
    return json.dumps({"owner": owner, **definition, "built": built}, sort_keys=True)


def read_index_record(value: str) -> dict[str, Any] | None:
    """A record as `index_record` wrote it; None when it is not one."""
    try:
        record = json.loads(value)
    except ValueError:
        return None
    if not isinstance(record, dict) or not {"owner", "column", "type"} <= record.keys():
        return None
    return record


_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration_seconds(text: str) -> int | None:
    """'7d', '12h', '30m', '2w', '90s' in seconds; None when it is not one of those."""
    match = _DURATION.match(text)
    return int(match.group(1)) * _SECONDS[match.group(2)] if match else None


@dataclass(frozen=True)
class LiveIndex:
    name: str
    column: str
    #: the declared spelling where one matches (see `live_type`)
    type: str
    unindexed_rows: int | None = None
    #: the build parameters Lance tells back (see `reported_params`)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LiveTag:
    version: int
    #: the lance-sync owner in the tag's metadata; None: made outside lance-sync
    owner: str | None = None


@dataclass(frozen=True)
class Cleanup:
    """What a retention cleanup would remove now (`explain_cleanup_old_versions`)."""

    #: the versions to remove; `count`: of those, the ones Lance would remove (not tagged since)
    versions: tuple[int, ...]
    count: int
    files: int
    bytes: int


@dataclass
class LiveTableState:
    """What the planner read of one dataset's own state: only for tables that declare some."""

    version: int
    row_count: int
    indexes: dict[str, LiveIndex] = field(default_factory=dict)
    #: index name -> the record lance-sync keeps of it (see `read_index_record`)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    tags: dict[str, LiveTag] = field(default_factory=dict)
    #: every version the dataset has, oldest first; read only where the plan needs them (a
    #: retention is declared, or a declared tag is absent or names another version), else empty
    versions: tuple[int, ...] = ()
    #: fragments with fewer rows than the table's maintenance target
    small_fragments: int = 0
    cleanup: Cleanup | None = None
    #: why the state could not be read (the dataset opened, a part of it did not)
    error: str | None = None


def index_definition_of(name: str, indexes: dict[str, LiveIndex], records: dict[str, dict]) -> dict[str, Any] | None:
    """An index's compared state: its record's definition and owner where lance-sync made it,
    else what Lance tells (column and type, no owner); None when the dataset has no such index."""
    live = indexes.get(name)
    if live is None:
        return None
    record = records.get(name)
    if record is None:
        return {"column": live.column, "type": live.type, "owner": None}
    return {"column": record["column"], "type": record["type"], "params": record.get("params") or {},
            "owner": record["owner"], "built": bool(record.get("built"))}


def part_owner(state: ObjectState | None) -> str | None:
    """The lance-sync owner an index's or tag's state names (None: made outside lance-sync)."""
    return (state.definition or {}).get("owner") if state is not None else None
