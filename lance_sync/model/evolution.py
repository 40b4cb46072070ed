"""Which column changes Lance makes in place (schema evolution), shared by the plan and apply.

pylance 14's `alter_columns` casts a column to many types, narrowings included (int64 to
int32 rewrites the column and fails or wraps on values that do not fit), and refuses others
(int to float, int to string). lance-sync alters a type in place only where every value fits
the new type: the widenings below. A new column is added only as nullable (Lance fills it
with nulls), and a column is made nullable, never not null, in place.
"""

from __future__ import annotations

import pyarrow as pa

from lance_sync.model.arrow_types import format_type, parse_type

#: each widening lance-sync makes in place: from a type to the types that hold all its values
_SIGNED = (pa.int8(), pa.int16(), pa.int32(), pa.int64())
_UNSIGNED = (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())
_FLOATS = (pa.float16(), pa.float32(), pa.float64())


def _wider(chain: tuple[pa.DataType, ...]) -> dict[pa.DataType, set[pa.DataType]]:
    return {t: set(chain[i + 1:]) for i, t in enumerate(chain)}


WIDENINGS: dict[pa.DataType, set[pa.DataType]] = {
    **_wider(_SIGNED), **_wider(_FLOATS),
    # an unsigned integer fits the next wider unsigned ones and the signed ones twice as wide
    **{t: set(_UNSIGNED[i + 1:]) | set(_SIGNED[i + 1:]) for i, t in enumerate(_UNSIGNED)},
    pa.string(): {pa.large_string()},
    pa.binary(): {pa.large_binary()},
}


def widens(have: str, want: str) -> bool:
    """Whether a column of type `have` becomes `want` in place without losing a value."""
    return parse_type(want) in WIDENINGS.get(parse_type(have), set())


def narrows(have: str, want: str) -> bool:
    """Whether `want` is narrower than `have` (the reverse of a widening)."""
    return widens(want, have)


def definition(name: str, type_name: str, nullable: bool) -> dict[str, object]:
    """A column's definition as plans hold it: {name, type (canonical spelling), nullable}."""
    return {"name": name, "type": format_type(parse_type(type_name)), "nullable": nullable}
