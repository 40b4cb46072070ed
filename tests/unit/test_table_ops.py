"""The pieces of the drivers' table operations that need no dataset (support/table_ops and its
modules); the operations themselves are proven on every backend by
tests/conformance/test_table_operations.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from lance_namespace.errors import (
    ConcurrentModificationError,
    InternalError,
    InvalidInputError,
    TableColumnNotFoundError,
    TableIndexAlreadyExistsError,
    TableIndexNotFoundError,
    TableTagAlreadyExistsError,
    TableTagNotFoundError,
    TableVersionNotFoundError,
)

from lance_sync.drivers.support.table_columns import arrow_type
from lance_sync.drivers.support.table_history import manifest_version
from lance_sync.drivers.support.table_ops import lance_error, page


def test_a_page_follows_its_token_in_either_direction():
    items = [3, 1, 2, 5, 4]
    assert page(items, lambda n: n, None, None) == ([1, 2, 3, 4, 5], None)
    assert page(items, lambda n: n, 0, None) == ([1, 2, 3, 4, 5], None)  # 0: no limit, as None
    assert page(items, lambda n: n, 2, None) == ([1, 2], "2")
    assert page(items, lambda n: n, 2, "2") == ([3, 4], "4")
    assert page(items, lambda n: n, 2, "4") == ([5], None)
    assert page(items, lambda n: n, 2, "4", descending=True) == ([3, 2], "2")
    assert page(["b", "a"], lambda s: s, 1, "a") == (["b"], None)


def test_a_page_refuses_a_negative_limit_and_a_token_it_never_gave():
    with pytest.raises(InvalidInputError, match="limit"):
        page([1], lambda n: n, -1, None)
    with pytest.raises(InvalidInputError, match="page_token 'x'"):
        page([1], lambda n: n, 1, "x")


def test_manifest_names_give_their_version_in_both_naming_schemes():
    assert manifest_version("18446744073709551614.manifest") == 1  # V2: 2^64 - 1 - version
    assert manifest_version("7.manifest") == 7  # V1
    assert manifest_version("latest_version_hint.json") is None
    assert manifest_version("d7.manifest") is None


def test_json_data_types_map_to_the_arrow_types_lance_casts_to():
    assert arrow_type({"type": "int64"}) == pa.int64()
    assert arrow_type({"type": "Float64"}) == pa.float64()
    with pytest.raises(InvalidInputError, match="'struct'"):
        arrow_type({"type": "struct", "fields": []})
    with pytest.raises(InvalidInputError, match="not a JSON Arrow data type"):
        arrow_type({"name": "int64"})


@pytest.mark.parametrize(("raised", "answered"), [
    (ValueError("Ref conflict error: tag stable already exists"), TableTagAlreadyExistsError),
    (ValueError("Ref not found error: tag nope does not exist"), TableTagNotFoundError),
    (ValueError("Version not found error: version main:99 does not exist"), TableVersionNotFoundError),
    (RuntimeError("Lance index not found: name=nope, /home/runner/work/lance/src/index.rs:2545:24"),
     TableIndexNotFoundError),
    (RuntimeError("LanceError(Index): Index name 'id_idx' already exists, please specify a different name"),
     TableIndexAlreadyExistsError),
    (KeyError("nope not found in schema"), TableColumnNotFoundError),
    (OSError('Invalid user input: Column "nope" does not exist in the dataset'), TableColumnNotFoundError),
    (OSError("Retryable commit conflict for version 3"), ConcurrentModificationError),
    (OSError("Invalid user input: Expression is not valid: +++"), InvalidInputError),
    (ValueError("Cannot drop all columns from a dataset"), InvalidInputError),
    (OSError("connection reset by peer"), InternalError),
])
def test_pylances_errors_are_answered_with_the_specs_codes(raised: Exception, answered: type):
    error = lance_error(raised, "dir: DropTableIndex on table ['a', 't']")
    assert type(error) is answered
    assert str(error).startswith("dir: DropTableIndex on table ['a', 't']: ") and ".rs:" not in str(error)
