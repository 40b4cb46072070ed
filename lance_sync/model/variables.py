"""`${VAR}` references to the environment: one syntax for manifests, saved plans and the
command line.

In manifest text, `${NAME}` and `${NAME:-default}` are replaced wherever they stand and `$$`
is a literal `$` (`REFERENCE`, used by the loader). A secret is written as a whole value
`${NAME}` (`WHOLE_REFERENCE`): a saved plan keeps that reference in the secret's place, and
it is read from the environment again when the plan is applied (`resolve_references`).
A plan of the changes since a revision names the variables the manifest resolved
(`resolved_variables`): the revision keeps no record of the environment it was applied in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from lance_sync.model.errors import ConfigError
from lance_sync.model.secrets import CREDENTIAL_VARIABLES, SECRET_KEY, is_secret, url_password

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


class Variable(NamedTuple):
    """A variable a manifest resolved, and its value: None for a secret, which is never shown."""

    name: str
    value: str | None
    secret: bool


def resolved_variables(templates: Mapping[tuple[Any, ...], str], environ: Mapping[str, str]) -> list[Variable]:
    """Each variable the manifest's `templates` (path -> text as written) resolved, by name:
    one not set and without a default is left out. A secret is one whose name or any key of
    a place it stands in reads as a credential (SECRET_KEY), one object stores read by
    themselves (CREDENTIAL_VARIABLES), a URL with a password, or a value already registered
    as a secret."""
    # one pass over the distinct texts (a large manifest has a template per table)
    references = {(match.group(1), match.group(2))
                  for match in REFERENCE.finditer("\n".join(set(templates.values()))) if match.group(1)}
    keys: dict[str, bool] = {}
    secret_places = [template for path, template in templates.items()
                     if any(isinstance(key, str) and _credential_key(key, keys) for key in path)]
    in_secret_places = {match.group(1) for match in REFERENCE.finditer("\n".join(secret_places))}
    values: dict[str, str] = {}
    for name, default in sorted(references, key=lambda reference: reference[1] is not None):
        value = environ.get(name)
        if value in (None, "") and default is not None:
            value = default
        if value is not None:
            values.setdefault(name, value)
    return [Variable(name, None, True) if name in in_secret_places or SECRET_KEY.search(name)
            or name in CREDENTIAL_VARIABLES or url_password(value) is not None or is_secret(value)
            else Variable(name, value, False) for name, value in sorted(values.items())]


def _credential_key(key: str, known: dict[str, bool]) -> bool:
    if key not in known:
        known[key] = SECRET_KEY.search(key) is not None
    return known[key]
