"""`${VAR}` references to the environment: one syntax for manifests, saved plans and the
command line.

In manifest text, `${NAME}` and `${NAME:-default}` are replaced wherever they stand and `$$`
is a literal `$` (`REFERENCE`, used by the loader). A secret is written as a whole value
`${NAME}` (`WHOLE_REFERENCE`): a saved plan keeps that reference in the secret's place, and
it is read from the environment again when the plan is applied (`resolve_references`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lance_sync.model.errors import ConfigError

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: `$$`, `${NAME}` or `${NAME:-default}` inside text; group 1 is the name, group 2 the default
REFERENCE = re.compile(rf"\$\$|\$\{{({NAME})(?::-([^}}]*))?\}}")
#: a value that is one reference and nothing else (use with fullmatch); group 1 is the name
WHOLE_REFERENCE = re.compile(rf"\$\{{({NAME})\}}")


def is_whole_reference(text: str) -> bool:
    return WHOLE_REFERENCE.fullmatch(text) is not None


def resolve_references(values: Mapping[str, Any], environ: Mapping[str, str], where: str) -> dict[str, Any]:
    """`values` with every value that is a whole `${NAME}` replaced by that variable's value,
    in nested mappings too; ConfigError naming `where` and the key when the variable is unset."""
    return {key: _resolve(value, key, environ, where) for key, value in values.items()}


def _resolve(value: Any, key: str, environ: Mapping[str, str], where: str) -> Any:
    if isinstance(value, Mapping):
        return {k: _resolve(v, f"{key}.{k}", environ, where) for k, v in value.items()}
    match = WHOLE_REFERENCE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return value
    name = match.group(1)
    if name not in environ:
        raise ConfigError(f"{where}: {key} needs the environment variable {name}")
    return environ[name]
