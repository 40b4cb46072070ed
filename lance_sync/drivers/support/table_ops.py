"""The Lance Namespace spec's table operations, answered on the dataset at the table's location.

Indexes (CreateTableIndex, CreateTableScalarIndex, ListTableIndices, DescribeTableIndexStats,
DropTableIndex), tags (ListTableTags, GetTableTagVersion, CreateTableTag, UpdateTableTag,
DeleteTableTag), versions (ListTableVersions, DescribeTableVersion) and columns
(AlterTableAddColumns, AlterTableAlterColumns, AlterTableDropColumns) are not catalog
operations: every backend keeps only the table's location, and the state they read or change
lives in the Lance dataset there. So one implementation serves every driver: `TableOperations`
(a base of `SyncNamespace`) asks the driver where the table is (`table_location`: DescribeTable
by default, with the storage options it answers), opens the dataset with pylance and runs the
operation (`table_indexes`, `table_history`, `table_columns`).

Answers follow pylance's own `lance.namespace.DirectoryNamespace`: a missing table is
TableNotFound (4; a missing namespace is what the driver's DescribeTable answers), a
registered table without a dataset at its location TableNotFound too; a missing index
TableIndexNotFound (6), an index name in use TableIndexAlreadyExists (7); a missing tag
TableTagNotFound (8), a tag name in use TableTagAlreadyExists (9); a missing version
TableVersionNotFound (11); a missing column TableColumnNotFound (12); a request that Lance
refuses InvalidInput (13); a commit that lost a race ConcurrentModification (14). A request on
a branch other than `main` is UnsupportedOperation (0): lance-sync manages a table's main line.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from lance_namespace import (
    AlterTableAddColumnsRequest,
    AlterTableAddColumnsResponse,
    AlterTableAlterColumnsRequest,
    AlterTableAlterColumnsResponse,
    AlterTableDropColumnsRequest,
    AlterTableDropColumnsResponse,
    CreateTableIndexRequest,
    CreateTableIndexResponse,
    CreateTableScalarIndexResponse,
    CreateTableTagRequest,
    CreateTableTagResponse,
    DeleteTableTagRequest,
    DeleteTableTagResponse,
    DescribeTableIndexStatsRequest,
    DescribeTableIndexStatsResponse,
    DescribeTableVersionRequest,
    DescribeTableVersionResponse,
    DropTableIndexRequest,
    DropTableIndexResponse,
    GetTableTagVersionRequest,
    GetTableTagVersionResponse,
    ListTableIndicesRequest,
    ListTableIndicesResponse,
    ListTableTagsRequest,
    ListTableTagsResponse,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    UpdateTableTagRequest,
    UpdateTableTagResponse,
)
from lance_namespace.errors import (
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    TableColumnNotFoundError,
    TableIndexAlreadyExistsError,
    TableIndexNotFoundError,
    TableNotFoundError,
    TableTagAlreadyExistsError,
    TableTagNotFoundError,
    TableVersionNotFoundError,
    UnsupportedOperationError,
)

from lance_sync.drivers.support import table_columns, table_history, table_indexes
from lance_sync.drivers.support.answers import one_line
from lance_sync.model.backend_config import Identifier

if TYPE_CHECKING:
    from lance import LanceDataset

T = TypeVar("T")

#: the branch every table has; the only one these operations work on
MAIN_BRANCH = "main"

#: pylance's messages (its exceptions are ValueError, OSError or RuntimeError whatever the cause)
#: -> the spec's error, first match wins
_LANCE_ERRORS: list[tuple[re.Pattern[str], type[LanceNamespaceError]]] = [
    (re.compile(r"ref conflict|tag \S+ already exists", re.I), TableTagAlreadyExistsError),
    (re.compile(r"ref not found", re.I), TableTagNotFoundError),
    (re.compile(r"version not found|version \S+ does not exist|_versions/\S+ was not found", re.I),
     TableVersionNotFoundError),
    (re.compile(r"index not found", re.I), TableIndexNotFoundError),
    (re.compile(r"index name .* already exists", re.I), TableIndexAlreadyExistsError),
    (re.compile(r"column .*(does not exist|not found)|not found in schema|no field named", re.I),
     TableColumnNotFoundError),
    (re.compile(r"commit conflict|conflicting|concurrent", re.I), ConcurrentModificationError),
]
#: pylance's wording for a request it refuses (raised as OSError too)
_REFUSED = re.compile(r"invalid user input|invalid input", re.I)
#: where a Rust error message's source position starts (", /home/runner/.../x.rs:12:3")
_RUST_POSITION = re.compile(r",\s*/\S+\.rs:\d+:\d+.*$", re.S)


def lance_error(error: Exception, context: str) -> LanceNamespaceError:
    """The spec's error for what pylance raised (see the module docstring)."""
    message = one_line(_RUST_POSITION.sub("", str(error).strip("'\"")))
    for pattern, error_type in _LANCE_ERRORS:
        if pattern.search(message):
            return error_type(f"{context}: {message}")
    if isinstance(error, (ValueError, TypeError, KeyError)) or _REFUSED.search(message):
        return InvalidInputError(f"{context}: {message}")
    return InternalError(f"{context}: {message}")


def open_dataset(location: str, storage_options: dict[str, str] | None, context: str) -> LanceDataset:
    """The latest version of the dataset at `location`; TableNotFound when there is none."""
    import lance

    try:
        return lance.dataset(location, storage_options=storage_options or None)
    except (ValueError, OSError) as error:
        if "not found" in str(error).lower():
            raise TableNotFoundError(f"{context}: the table is registered at {location}, which holds "
                                     "no Lance dataset") from None
        raise lance_error(error, context) from None


def check_branch(request: Any, context: str) -> None:
    branch = getattr(request, "branch", None)
    if branch not in (None, MAIN_BRANCH):
        raise UnsupportedOperationError(f"{context}: branch {branch!r}: lance-sync's drivers answer "
                                        f"table operations on the {MAIN_BRANCH} branch only")


def page(items: Sequence[T], key: Callable[[T], Any], limit: int | None, page_token: str | None,
         descending: bool = False) -> tuple[list[T], str | None]:
    """One page of `items` (in order of `key`, or its reverse when `descending`): those after
    `page_token` (the last key of the page before), at most `limit` of them (all of them for
    none or 0); the token of the next page, None after the last."""
    if limit is not None and limit < 0:
        raise InvalidInputError(f"limit must not be negative (got {limit})")
    rest = sorted(items, key=key, reverse=descending)
    if page_token:
        after = _token_key(rest, key, page_token)
        rest = [item for item in rest if (key(item) < after if descending else key(item) > after)]
    if limit is None or limit == 0 or len(rest) <= limit:
        return rest, None
    shown = rest[:limit]
    return shown, str(key(shown[-1]))


def _token_key(items: Sequence[T], key: Callable[[T], Any], token: str) -> Any:
    if not items or isinstance(key(items[0]), str):
        return token
    try:
        return int(token)
    except ValueError:
        raise InvalidInputError(f"page_token {token!r} is not one this operation answered") from None


class TableOperations:
    """The spec's table operations for every driver (see the module docstring); `SyncNamespace`
    supplies `table_location`."""

    backend_type: ClassVar[str]

    def table_location(self, id: Identifier) -> tuple[str, dict[str, str]]:
        """(location, storage options) of the table `id`."""
        raise NotImplementedError

    @contextlib.contextmanager
    def _dataset(self, request: Any, operation: str) -> Iterator[LanceDataset]:
        """The table's dataset (latest version), with pylance's errors answered as the spec's."""
        id = tuple(request.id or ())
        context = f"{self.backend_type}: {operation} on table {list(id)}"
        if not id:
            raise InvalidInputError(f"{context}: the request needs the table id")
        check_branch(request, context)
        location, options = self.table_location(id)
        dataset = open_dataset(location, options, context)
        try:
            yield dataset
        except LanceNamespaceError as error:
            raise type(error)(f"{context}: {error}") from None
        except (ValueError, TypeError, KeyError, OSError, RuntimeError) as error:
            raise lance_error(error, context) from None

    # --- indexes --------------------------------------------------------------------------

    def create_table_index(self, request: CreateTableIndexRequest) -> CreateTableIndexResponse:
        with self._dataset(request, "CreateTableIndex") as dataset:
            return CreateTableIndexResponse(transaction_id=table_indexes.create(dataset, request, vector=True))

    def create_table_scalar_index(self, request: CreateTableIndexRequest) -> CreateTableScalarIndexResponse:
        with self._dataset(request, "CreateTableScalarIndex") as dataset:
            return CreateTableScalarIndexResponse(
                transaction_id=table_indexes.create(dataset, request, vector=False))

    def list_table_indices(self, request: ListTableIndicesRequest) -> ListTableIndicesResponse:
        with self._dataset(request, "ListTableIndices") as dataset:
            if request.version is not None:
                dataset = dataset.checkout_version(request.version)
            indexes, token = page(table_indexes.describe(dataset), lambda index: index.index_name,
                                  request.limit, request.page_token)
            return ListTableIndicesResponse(indexes=indexes, page_token=token)

    def describe_table_index_stats(self, request: DescribeTableIndexStatsRequest
                                   ) -> DescribeTableIndexStatsResponse:
        with self._dataset(request, "DescribeTableIndexStats") as dataset:
            if request.version is not None:
                dataset = dataset.checkout_version(request.version)
            return table_indexes.stats(dataset, request.index_name)

    def drop_table_index(self, request: DropTableIndexRequest) -> DropTableIndexResponse:
        with self._dataset(request, "DropTableIndex") as dataset:
            return DropTableIndexResponse(transaction_id=table_indexes.drop(dataset, request.index_name))

    # --- tags -----------------------------------------------------------------------------

    def list_table_tags(self, request: ListTableTagsRequest) -> ListTableTagsResponse:
        with self._dataset(request, "ListTableTags") as dataset:
            tags = table_history.tags(dataset)
            names, token = page(list(tags), lambda name: name, request.limit, request.page_token)
            return ListTableTagsResponse(tags={name: tags[name] for name in names}, page_token=token)

    def get_table_tag_version(self, request: GetTableTagVersionRequest) -> GetTableTagVersionResponse:
        with self._dataset(request, "GetTableTagVersion") as dataset:
            tag = table_history.tag(dataset, request.tag)
            return GetTableTagVersionResponse(version=tag.version, branch=tag.branch)

    def create_table_tag(self, request: CreateTableTagRequest) -> CreateTableTagResponse:
        with self._dataset(request, "CreateTableTag") as dataset:
            dataset.tags.create(request.tag, request.version)
            return CreateTableTagResponse()

    def update_table_tag(self, request: UpdateTableTagRequest) -> UpdateTableTagResponse:
        with self._dataset(request, "UpdateTableTag") as dataset:
            dataset.tags.update(request.tag, request.version)
            return UpdateTableTagResponse()

    def delete_table_tag(self, request: DeleteTableTagRequest) -> DeleteTableTagResponse:
        with self._dataset(request, "DeleteTableTag") as dataset:
            dataset.tags.delete(request.tag)
            return DeleteTableTagResponse()

    # --- versions -------------------------------------------------------------------------

    def list_table_versions(self, request: ListTableVersionsRequest) -> ListTableVersionsResponse:
        with self._dataset(request, "ListTableVersions") as dataset:
            shown, token = page(table_history.versions(dataset), lambda version: version.version,
                                request.limit, request.page_token, descending=bool(request.descending))
            return ListTableVersionsResponse(versions=shown, page_token=token)

    def describe_table_version(self, request: DescribeTableVersionRequest) -> DescribeTableVersionResponse:
        with self._dataset(request, "DescribeTableVersion") as dataset:
            version = dataset.version if request.version is None else request.version
            return DescribeTableVersionResponse(version=table_history.version(dataset, version))

    # --- columns --------------------------------------------------------------------------

    def alter_table_add_columns(self, request: AlterTableAddColumnsRequest) -> AlterTableAddColumnsResponse:
        with self._dataset(request, "AlterTableAddColumns") as dataset:
            return AlterTableAddColumnsResponse(version=table_columns.add(dataset, request.new_columns))

    def alter_table_alter_columns(self, request: AlterTableAlterColumnsRequest
                                  ) -> AlterTableAlterColumnsResponse:
        with self._dataset(request, "AlterTableAlterColumns") as dataset:
            return AlterTableAlterColumnsResponse(version=table_columns.alter(dataset, request.alterations))

    def alter_table_drop_columns(self, request: AlterTableDropColumnsRequest) -> AlterTableDropColumnsResponse:
        with self._dataset(request, "AlterTableDropColumns") as dataset:
            return AlterTableDropColumnsResponse(version=table_columns.drop(dataset, request.columns))
