"""How lance-sync types the plain (unquoted) scalars of a manifest: YAML 1.2's core schema.

PyYAML reads YAML 1.1, whose plain scalars hold traps: `NO`, `off` and `yes` are booleans,
`010` is octal 8, `1_000` is 1000, `1:20` is 80 and `2026-01-01` a date. YAML 1.2's core
schema knows only these, and reads everything else as text:

- null: `~`, `null`, `Null`, `NULL` and the empty value
- booleans: `true`, `True`, `TRUE`, `false`, `False`, `FALSE`
- integers: decimal `[-+]?[0-9]+`, octal `0o17`, hexadecimal `0x1F`
- floats: `1.5`, `.5`, `1.`, `1e3`, `-2.5E-3`, `.inf`, `-.Inf`, `.nan`

One rule is lance-sync's own: a decimal integer written with a leading zero (`010`) is
`LeadingZero`, not a number. YAML 1.1 reads it as octal and 1.2 as decimal, so whoever wrote
it may have meant either; every typed field refuses it, and a free-form text map keeps it
as written like any other value.

`dump_yaml` writes data for lance-sync to read back: it quotes every string that YAML 1.1 or
1.2 would read as something else.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

#: the plain scalars YAML 1.2 reads as null
NULLS = frozenset({"", "~", "null", "Null", "NULL"})
#: the plain scalars that are null or a boolean (numbers need `_NUMBER`)
_WORDS: dict[str, bool | None] = {
    **dict.fromkeys(NULLS), **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
_NUMBER_START = frozenset("0123456789+-.")
_INT = r"[-+]?[0-9]+"
_OCTAL = r"0o[0-7]+"
_HEX = r"0x[0-9a-fA-F]+"
_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
_INFINITY = r"[-+]?\.(?:inf|Inf|INF)"
_NAN = r"\.(?:nan|NaN|NAN)"
_NUMBER = re.compile(f"(?P<int>{_INT})|(?P<octal>{_OCTAL})|(?P<hex>{_HEX})|(?P<float>{_FLOAT})"
                     f"|(?P<infinity>{_INFINITY})|(?P<nan>{_NAN})")


@dataclass(frozen=True)
class LeadingZero:
    """A plain integer written with a leading zero, e.g. `010` (see the module docstring)."""

    text: str

    def __repr__(self) -> str:
        return self.text

    @property
    def decimal(self) -> int:
        """What YAML 1.2 reads: 10."""
        return int(self.text)


def plain_value(text: str) -> Any:
    """The value of a plain scalar: None, a bool, an int, a float, a LeadingZero, or `text`
    itself (the same object) when it is text."""
    if text and text[0] in _NUMBER_START:
        return _number(text)
    return _WORDS.get(text, text)


def _number(text: str) -> Any:
    match = _NUMBER.fullmatch(text)
    kind = match.lastgroup if match else None
    if kind == "int":
        digits = text.lstrip("+-")
        return LeadingZero(text) if len(digits) > 1 and digits[0] == "0" else int(text)
    if kind == "float":
        return float(text)
    if kind == "octal":
        return int(text[2:], 8)
    if kind == "hex":
        return int(text[2:], 16)
    if kind == "infinity":
        return -math.inf if text[0] == "-" else math.inf
    if kind == "nan":
        return math.nan
    return text


def yaml_1_1_value(text: str) -> Any:
    """What PyYAML (YAML 1.1) makes of a plain scalar, for hints; dates stay text."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, bool | int | float) or value is None else text


class _Dumper(yaml.SafeDumper):
    """PyYAML's dumper, which quotes what YAML 1.1 would type, taught YAML 1.2's numbers too."""


for _tag, _pattern, _first in (
        ("tag:yaml.org,2002:int", f"{_INT}|{_OCTAL}|{_HEX}", "-+0123456789"),
        ("tag:yaml.org,2002:float", f"{_FLOAT}|{_INFINITY}|{_NAN}", "-+.0123456789")):
    _Dumper.add_implicit_resolver(_tag, re.compile(f"(?:{_pattern})\\Z"), list(_first))


def dump_yaml(data: Any, **options: Any) -> str:
    """`data` as YAML that YAML 1.1 and 1.2 (and so lance-sync) read back the same."""
    text: str = yaml.dump(data, Dumper=_Dumper, **options)
    return text
