from __future__ import annotations

import pyarrow as pa
import pytest

from lance_sync.model.arrow_types import (
    TypeSyntaxError,
    columns_from_schema,
    format_type,
    parse_type,
    schema_from_columns,
)

ROUND_TRIP = ["int64", "uint32", "float32", "float64", "string", "large_string", "binary", "bool", "date32",
              "timestamp[ms]", "timestamp[us, tz=UTC]", "time64[ns]", "duration[s]", "decimal128(12, 2)",
              "list<string>", "large_list<int32>", "fixed_size_list<float32>[128]",
              "struct<id: int64, tags: list<string>>", "map<string, int64>"]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(text):
    assert format_type(parse_type(text)) == text


def test_aliases():
    assert parse_type("double") == pa.float64()
    assert parse_type("fixed_size_list<float>[4]") == pa.list_(pa.float32(), 4)


@pytest.mark.parametrize("text", ["int65", "list<int64", "fixed_size_list<float32>[0]", "timestamp[xs]", "",
                                  "struct<a int64>", "decimal128(40, 2)", "map<string>"])
def test_errors_are_explained(text):
    with pytest.raises(TypeSyntaxError):
        parse_type(text)


def test_schema_round_trip():
    columns = [{"name": "id", "type": "int64", "nullable": False}, {"name": "v", "type": "fixed_size_list<float32>[8]"}]
    assert columns_from_schema(schema_from_columns(columns)) == columns
