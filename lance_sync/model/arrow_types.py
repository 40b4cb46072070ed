"""Arrow type names as written in a manifest's `schema:` and shown in plans.

The grammar is pyarrow's own spelling, simplified so it reads well in YAML:

    int64  uint32  float32  string  large_binary  bool  date32
    timestamp[ms]  timestamp[us, tz=UTC]  time64[us]  duration[s]
    decimal128(10, 2)  list<string>  large_list<int32>
    fixed_size_list<float32>[128]  struct<id: int64, name: string>  map<string, int64>

`parse_type` turns text into a `pyarrow.DataType`; `format_type` is its inverse, so
`parse_type(format_type(t)) == t` for every type the grammar covers.

Also the rules every Arrow type shares across the project: how a dataset's columns drift
from the declared ones (`column_drift`), and the Arrow type Spark holds in place of one it
lacks (`spark_compatible`, used by the Spark data plane and by the Unity driver, whose
columns are Spark types).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import pyarrow as pa

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "boolean": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float": pa.float32(),
    "float64": pa.float64(),
    "double": pa.float64(),
    "string": pa.string(),
    "utf8": pa.string(),
    "large_string": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "date32": pa.date32(),
    "date": pa.date32(),
    "date64": pa.date64(),
}
_CANONICAL = {
    pa.bool_(): "bool",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.string(): "string",
    pa.date32(): "date32",
}
_TIME_UNITS = ("s", "ms", "us", "ns")
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\d+)|(.))")


_LARGEST = 2**31 - 1
#: names other schema languages (SQL, Spark, Java) give Arrow's types
_OTHER_NAMES = {"integer": "int64", "int": "int32", "long": "int64", "bigint": "int64", "smallint": "int16",
                "tinyint": "int8", "short": "int16", "byte": "int8", "real": "float32", "str": "string",
                "text": "string", "varchar": "string", "char": "string", "bytes": "binary", "datetime": "timestamp[us]"}


def _suggestion(name: str, known: list[str]) -> str:
    close = _OTHER_NAMES.get(name) or next(iter(difflib.get_close_matches(name, known, n=1)), None)
    return f" (did you mean {close}?)" if close else ""


class TypeSyntaxError(ValueError):
    """Raised for a type name outside the grammar; the message says what was expected."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = [m.group(0).strip() for m in _TOKEN.finditer(text) if m.group(0).strip()]
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end")
        self.pos += 1
        return token

    def expect(self, token: str) -> None:
        found = self.take()
        if found != token:
            raise self.error(f"expected '{token}', found '{found}'")

    def integer(self) -> int:
        token = self.take()
        if not token.isdigit():
            raise self.error(f"expected a number, found '{token}'")
        if int(token) > _LARGEST:  # Arrow keeps sizes and scales in 32 bits
            raise self.error(f"{token} is too large (at most {_LARGEST})")
        return int(token)

    def error(self, detail: str) -> TypeSyntaxError:
        return TypeSyntaxError(f"invalid Arrow type '{self.text}': {detail}")

    def parse(self) -> pa.DataType:
        data_type = self.data_type()
        if self.peek() is not None:
            raise self.error(f"unexpected '{self.peek()}'")
        return data_type

    def data_type(self) -> pa.DataType:
        name = self.take().lower()
        if name in _PRIMITIVES:
            return _PRIMITIVES[name]
        builders = {
            "timestamp": self.timestamp,
            "time32": lambda: pa.time32(self.unit(("s", "ms"))),
            "time64": lambda: pa.time64(self.unit(("us", "ns"))),
            "duration": lambda: pa.duration(self.unit(_TIME_UNITS)),
            "decimal128": self.decimal,
            "decimal": self.decimal,
            "list": lambda: pa.list_(self.item()),
            "large_list": lambda: pa.large_list(self.item()),
            "fixed_size_list": self.fixed_size_list,
            "struct": self.struct,
            "map": self.map,
        }
        if name not in builders:
            raise self.error(f"unknown type '{name}'{_suggestion(name, [*_PRIMITIVES, *builders])}")
        return builders[name]()

    def unit(self, allowed: tuple[str, ...]) -> str:
        self.expect("[")
        unit = self.take()
        if unit not in allowed:
            raise self.error(f"time unit must be one of {', '.join(allowed)}")
        self.expect("]")
        return unit

    def timestamp(self) -> pa.DataType:
        self.expect("[")
        unit = self.take()
        if unit not in _TIME_UNITS:
            raise self.error(f"time unit must be one of {', '.join(_TIME_UNITS)}")
        tz = None
        if self.peek() == ",":
            self.take()
            if self.take() != "tz":
                raise self.error("expected 'tz=' after ','")
            self.expect("=")
            tz = self.time_zone()
        self.expect("]")
        return pa.timestamp(unit, tz=tz)

    def time_zone(self) -> str:
        parts = []
        while self.peek() not in ("]", None):
            parts.append(self.take())
        if not parts:
            raise self.error("empty time zone")
        return "".join(parts)

    def decimal(self) -> pa.DataType:
        self.expect("(")
        precision = self.integer()
        self.expect(",")
        scale = self.integer()
        self.expect(")")
        if not 1 <= precision <= 38:
            raise self.error("decimal128 precision must be between 1 and 38")
        return pa.decimal128(precision, scale)

    def item(self) -> pa.DataType:
        self.expect("<")
        item = self.data_type()
        self.expect(">")
        return item

    def fixed_size_list(self) -> pa.DataType:
        item = self.item()
        self.expect("[")
        size = self.integer()
        self.expect("]")
        if size < 1:
            raise self.error("fixed_size_list size must be at least 1")
        return pa.list_(item, size)

    def struct(self) -> pa.DataType:
        self.expect("<")
        fields = []
        while True:
            name = self.take()
            self.expect(":")
            fields.append(pa.field(name, self.data_type()))
            separator = self.take()
            if separator == ">":
                return pa.struct(fields)
            if separator != ",":
                raise self.error(f"expected ',' or '>', found '{separator}'")

    def map(self) -> pa.DataType:
        self.expect("<")
        key = self.data_type()
        self.expect(",")
        value = self.data_type()
        self.expect(">")
        return pa.map_(key, value)


def parse_type(text: str) -> pa.DataType:
    """Parse a manifest type name; raises TypeSyntaxError naming what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise TypeSyntaxError("an Arrow type name must be a non-empty string")
    return _Parser(text).parse()


def format_type(data_type: pa.DataType) -> str:
    """The manifest spelling of an Arrow type (inverse of parse_type)."""
    if data_type in _CANONICAL:
        return _CANONICAL[data_type]
    if pa.types.is_timestamp(data_type):
        tz = f", tz={data_type.tz}" if data_type.tz else ""
        return f"timestamp[{data_type.unit}{tz}]"
    if pa.types.is_time32(data_type) or pa.types.is_time64(data_type) or pa.types.is_duration(data_type):
        return f"{str(data_type).split('[')[0]}[{data_type.unit}]"
    if pa.types.is_decimal128(data_type):
        return f"decimal128({data_type.precision}, {data_type.scale})"
    if pa.types.is_fixed_size_list(data_type):
        return f"fixed_size_list<{format_type(data_type.value_type)}>[{data_type.list_size}]"
    if pa.types.is_large_list(data_type):
        return f"large_list<{format_type(data_type.value_type)}>"
    if pa.types.is_list(data_type):
        return f"list<{format_type(data_type.value_type)}>"
    if pa.types.is_struct(data_type):
        fields = ", ".join(f"{f.name}: {format_type(f.type)}" for f in data_type)
        return f"struct<{fields}>"
    if pa.types.is_map(data_type):
        return f"map<{format_type(data_type.key_type)}, {format_type(data_type.item_type)}>"
    return str(data_type)


def schema_from_columns(columns: list[dict]) -> pa.Schema:
    """Build an Arrow schema from manifest columns: [{name, type, nullable?}, ...]."""
    return pa.schema(
        [pa.field(c["name"], parse_type(c["type"]), nullable=c.get("nullable", True)) for c in columns]
    )


def columns_from_schema(schema: pa.Schema) -> list[dict]:
    """The manifest form of an Arrow schema (inverse of schema_from_columns)."""
    columns = []
    for f in schema:
        column = {"name": f.name, "type": format_type(f.type)}
        if not f.nullable:
            column["nullable"] = False
        columns.append(column)
    return columns


@dataclass(frozen=True)
class ColumnDrift:
    """How a dataset's columns differ from the declared ones.

    Columns beyond the declared ones are schema evolution (a writer added them) and fine;
    a declared column that is missing, of another type, or nullable where the manifest says
    it is not, is a mismatch.
    """

    missing: tuple[str, ...] = ()
    #: (column, declared type, found type)
    changed: tuple[tuple[str, str, str], ...] = ()
    #: (column, found type)
    extra: tuple[tuple[str, str], ...] = ()

    @property
    def mismatched(self) -> bool:
        return bool(self.missing or self.changed)

    def problems(self) -> list[str]:
        found = [f"column '{name}' is declared but missing from the dataset" for name in self.missing]
        found += [f"column '{name}' is declared {declared} but the dataset has {actual}"
                  for name, declared, actual in self.changed]
        return found

    def describe_extra(self) -> str:
        return ", ".join(f"{name}: {type_name}" for name, type_name in self.extra)


def column_drift(declared: list[dict], found: list[dict]) -> ColumnDrift:
    """Compare manifest columns ({name, type, nullable?}) with a dataset's (same form)."""
    found_by_name = {c["name"]: c for c in found}
    declared_names = {c["name"] for c in declared}
    missing, changed = [], []
    for column in declared:
        actual = found_by_name.get(column["name"])
        if actual is None:
            missing.append(column["name"])
            continue
        want, have = parse_type(column["type"]), parse_type(actual["type"])
        declared_type, found_type = format_type(want), format_type(have)
        if want != have:
            changed.append((column["name"], declared_type, found_type))
        elif column.get("nullable", True) is False and actual.get("nullable", True) is not False:
            changed.append((column["name"], f"{declared_type} not null", f"{found_type} nullable"))
    extra = tuple((c["name"], c["type"]) for c in found if c["name"] not in declared_names)
    return ColumnDrift(tuple(missing), tuple(changed), extra)


def describe_columns(columns: list[dict] | None) -> str:
    """'(id: int64, name: string)' for messages."""
    if columns is None:
        return "(unknown)"
    return "(" + ", ".join(f"{c['name']}: {c['type']}" for c in columns) + ")"


# --- what Spark holds ---------------------------------------------------------------------

_WIDER_INTEGER = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
}


def spark_compatible(data_type: pa.DataType) -> pa.DataType:
    """The Arrow type Spark can hold without losing values (recursively): unsigned integers
    widen to the next signed type (uint64 to decimal(20, 0)), float16 to float32, date64 to
    date32, timestamps to microseconds, fixed-size and large lists to lists, and a dictionary
    to its value type."""
    if data_type in _WIDER_INTEGER:
        return _WIDER_INTEGER[data_type]
    if pa.types.is_float16(data_type):
        return pa.float32()
    if pa.types.is_date64(data_type):
        return pa.date32()
    if pa.types.is_timestamp(data_type):
        return pa.timestamp("us", tz=data_type.tz)
    if pa.types.is_dictionary(data_type):
        return spark_compatible(data_type.value_type)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return pa.list_(_compatible_field(data_type.value_field))
    if pa.types.is_fixed_size_list(data_type):
        return pa.list_(_compatible_field(data_type.value_field))
    if pa.types.is_struct(data_type):
        return pa.struct([_compatible_field(f) for f in data_type])
    if pa.types.is_map(data_type):
        return pa.map_(
            _compatible_field(data_type.key_field), _compatible_field(data_type.item_field)
        )
    return data_type


def _compatible_field(arrow_field: pa.Field) -> pa.Field:
    return arrow_field.with_type(spark_compatible(arrow_field.type))
