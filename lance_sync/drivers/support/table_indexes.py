"""A table's indexes through the Lance Namespace spec (see `table_ops`): built, described, dropped
on the dataset with pylance.

CreateTableIndex builds vector indexes (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ, IVF_HNSW_*) and scalar
ones; CreateTableScalarIndex scalar ones only (BTREE, BITMAP, LABEL_LIST, INVERTED or FTS, NGRAM,
ZONEMAP, BLOOMFILTER, RTREE). A request's build parameters must fit its type: vector parameters
(num_partitions, distance_type, ...) on a scalar index, or full-text ones (base_tokenizer,
stem, ...) on anything but INVERTED/FTS, are InvalidInput rather than ignored. An index name in
use is TableIndexAlreadyExists: a create never replaces an index (someone else's may carry the
name); drop it first.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from lance_namespace import (
    CreateTableIndexRequest,
    DescribeTableIndexStatsResponse,
)
from lance_namespace.errors import InvalidInputError, TableIndexNotFoundError
from lance_namespace_urllib3_client.models import IndexContent

if TYPE_CHECKING:
    from lance import LanceDataset

VECTOR_TYPES = frozenset({"IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ",
                          "IVF_HNSW_SQ"})
SCALAR_TYPES = frozenset({"BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP",
                          "BLOOMFILTER", "RTREE"})
FULL_TEXT_TYPES = frozenset({"INVERTED", "FTS"})
DISTANCE_TYPES = frozenset({"l2", "cosine", "dot", "hamming"})
#: request field -> pylance's create_index argument, for vector indexes
VECTOR_PARAMETERS = {"num_partitions": "num_partitions", "num_sub_vectors": "num_sub_vectors",
                     "num_bits": "num_bits", "max_iterations": "max_iters", "sample_rate": "sample_rate",
                     "target_partition_size": "target_partition_size", "m": "m",
                     "ef_construction": "ef_construction"}
#: request fields that are create_scalar_index arguments of the same name, for full-text indexes
FULL_TEXT_PARAMETERS = ("with_position", "base_tokenizer", "language", "max_token_length", "lower_case",
                        "stem", "remove_stop_words", "ascii_folding")
#: what every index that describe_indices lists has finished (Lance commits an index built)
BUILT = "SUCCEEDED"


def create(dataset: LanceDataset, request: CreateTableIndexRequest, *, vector: bool) -> str | None:
    """Build the index the request describes; the id of the transaction that committed it.
    `vector` False: scalar types only (CreateTableScalarIndex)."""
    index_type = request.index_type.upper()
    allowed = SCALAR_TYPES | (VECTOR_TYPES if vector else frozenset())
    if index_type not in allowed:
        what = "index type" if vector or index_type not in VECTOR_TYPES else "scalar index type"
        raise InvalidInputError(f"unknown {what} {request.index_type!r} (expected one of "
                                f"{', '.join(sorted(allowed))})")
    arguments = _arguments(request, index_type)
    if index_type in VECTOR_TYPES:
        dataset = dataset.create_index(request.column, index_type, name=request.name, replace=False,
                                       **arguments)
    else:
        dataset.create_scalar_index(request.column, cast(Any, index_type), name=request.name,
                                    replace=False, **arguments)
    return transaction_id(dataset)


def _arguments(request: CreateTableIndexRequest, index_type: str) -> dict[str, Any]:
    """pylance's build arguments for the request's parameters; InvalidInput for one that does
    not apply to `index_type`."""
    given = {field: value for field, value in request.model_dump().items() if value is not None}
    vector = {field: given[field] for field in (*VECTOR_PARAMETERS, "distance_type") if field in given}
    full_text = {field: given[field] for field in FULL_TEXT_PARAMETERS if field in given}
    misplaced = ([*vector] if index_type not in VECTOR_TYPES else []) + \
                ([*full_text] if index_type not in FULL_TEXT_TYPES else [])
    if misplaced:
        raise InvalidInputError(f"{', '.join(misplaced)} do(es) not apply to a {index_type} index")
    if index_type not in VECTOR_TYPES:
        return full_text
    arguments = {VECTOR_PARAMETERS[field]: value for field, value in vector.items() if field != "distance_type"}
    if "distance_type" in vector:
        metric = vector["distance_type"].lower()
        if metric not in DISTANCE_TYPES:
            raise InvalidInputError(f"unknown distance_type {vector['distance_type']!r} (expected one of "
                                    f"{', '.join(sorted(DISTANCE_TYPES))})")
        arguments["metric"] = metric
    return arguments


def transaction_id(dataset: LanceDataset) -> str | None:
    """The id of the transaction that made the dataset's version (None where Lance kept none)."""
    transaction = dataset.read_transaction(dataset.version)
    return transaction.uuid if transaction is not None else None


def describe(dataset: LanceDataset) -> list[IndexContent]:
    """Every index of the dataset's version, as ListTableIndices answers it."""
    covered_rows = _rows_by_fragment(dataset)
    return [_content(index, covered_rows) for index in dataset.describe_indices()]


def _rows_by_fragment(dataset: LanceDataset) -> dict[int, int]:
    return {fragment.fragment_id: fragment.count_rows() for fragment in dataset.get_fragments()}


def _content(index: Any, rows_by_fragment: dict[int, int]) -> IndexContent:
    segments = list(index.segments)
    covered = {fragment for segment in segments for fragment in segment.fragment_ids}
    return IndexContent(
        index_name=index.name,
        index_uuid=segments[0].uuid if segments else "",
        columns=list(index.field_names),
        status=BUILT,
        index_type=index.index_type,
        type_url=index.type_url,
        num_indexed_rows=index.num_rows_indexed,
        num_unindexed_rows=sum(rows for fragment, rows in rows_by_fragment.items() if fragment not in covered),
        size_bytes=index.total_size_bytes,
        num_segments=len(segments),
        created_at=min((segment.created_at for segment in segments if segment.created_at), default=None),
        index_version=segments[0].index_version if segments else None,
        index_details=json.dumps(index.details, sort_keys=True, default=str),
    )


def stats(dataset: LanceDataset, name: str | None) -> DescribeTableIndexStatsResponse:
    """DescribeTableIndexStats of the index `name`; TableIndexNotFound when it is missing."""
    if not name:
        raise InvalidInputError("the request needs index_name")
    index = _named(dataset, name)
    metric = (index.details or {}).get("metric_type")
    content = _content(index, _rows_by_fragment(dataset))
    return DescribeTableIndexStatsResponse(
        index_type=content.index_type,
        distance_type=metric.lower() if isinstance(metric, str) else None,
        num_indexed_rows=content.num_indexed_rows,
        num_unindexed_rows=content.num_unindexed_rows,
        num_indices=content.num_segments,
    )


def drop(dataset: LanceDataset, name: str | None) -> str | None:
    """Drop the index `name`; the id of the transaction that committed the drop."""
    if not name:
        raise InvalidInputError("the request needs index_name")
    dataset.drop_index(name)
    return transaction_id(dataset)


def _named(dataset: LanceDataset, name: str) -> Any:
    for index in dataset.describe_indices():
        if index.name == name:
            return index
    raise TableIndexNotFoundError(f"index {name!r} not found in {dataset.uri} (version {dataset.version})")
