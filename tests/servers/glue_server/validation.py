"""Glue's input constraints, read from botocore's Glue model and checked before any work.

Like the real service, a request that breaks a declared constraint (required
member, length, range, pattern) is answered with a ValidationException that
lists every violation, e.g. "1 validation error detected: Value 'a/b' at 'name'
failed to satisfy constraint: Member must satisfy regular expression pattern: ...".
botocore itself only checks required members and minimum lengths on the client.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import botocore.session
from botocore.model import OperationModel, OperationNotFoundError, ServiceModel, Shape

from tests.servers.glue_server.errors import GlueError

#: Java's way to write "any supplementary character" in a character class, and Python's.
_JAVA_SUPPLEMENTARY = r"\uD800\uDC00-\uDBFF\uDFFF"
_PYTHON_SUPPLEMENTARY = r"\U00010000-\U0010FFFF"


@lru_cache(maxsize=2)
def service_model(service: str) -> ServiceModel:
    return botocore.session.get_session().get_service_model(service)


def glue_model() -> ServiceModel:
    return service_model("glue")


def operation_model(operation: str, service: str = "glue") -> OperationModel:
    try:
        return service_model(service).operation_model(operation)
    except OperationNotFoundError as error:
        raise GlueError("UnknownOperationException", f"Unknown operation {operation}.") from error


def validate(operation: str, params: dict, service: str = "glue") -> None:
    """Raise a ValidationException listing every constraint `params` break.

    `service` names the botocore model: "glue", or "lakeformation" for the Lake
    Formation calls the same server answers (lakeformation.py).
    """
    violations: list[str] = []
    _check(operation_model(operation, service).input_shape, params, "", violations)
    if violations:
        plural = "s" if len(violations) > 1 else ""
        raise GlueError(
            "ValidationException",
            f"{len(violations)} validation error{plural} detected: " + "; ".join(violations),
        )


def _check(shape: Shape, value: object, path: str, violations: list[str]) -> None:
    if isinstance(value, dict) and shape.type_name == "structure":
        _check_structure(shape, value, path, violations)
    elif isinstance(value, list) and shape.type_name == "list":
        _check_range(shape, len(value), value, path, "length", violations)
        for index, item in enumerate(value, start=1):
            _check(shape.member, item, f"{path}.{index}.member", violations)
    elif isinstance(value, dict) and shape.type_name == "map":
        _check_range(shape, len(value), value, path, "length", violations)
        for key, item in value.items():
            _check(shape.key, key, f"{path}.key", violations)
            _check(shape.value, item, f"{path}.value", violations)
    elif isinstance(value, str) and shape.type_name == "string":
        _check_range(shape, len(value), value, path, "length", violations)
        _check_pattern(shape, value, path, violations)
    elif isinstance(value, int) and shape.type_name in ("integer", "long"):
        _check_range(shape, value, value, path, "value", violations)


def _check_structure(shape: Shape, value: dict, path: str, violations: list[str]) -> None:
    for name in shape.required_members:
        if value.get(name) is None:
            violations.append(
                f"Value null at '{_member_path(path, name)}' failed to satisfy"
                " constraint: Member must not be null"
            )
    for name, member in shape.members.items():
        if value.get(name) is not None:
            _check(member, value[name], _member_path(path, name), violations)


def _check_range(
    shape: Shape, size: int, value: object, path: str, measure: str, violations: list[str]
) -> None:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and size < low:
        violations.append(
            f"Value '{value}' at '{path}' failed to satisfy constraint:"
            f" Member must have {measure} greater than or equal to {low}"
        )
    if high is not None and size > high:
        violations.append(
            f"Value '{value}' at '{path}' failed to satisfy constraint:"
            f" Member must have {measure} less than or equal to {high}"
        )


def _check_pattern(shape: Shape, value: str, path: str, violations: list[str]) -> None:
    pattern = shape.metadata.get("pattern")
    compiled = _compile(pattern) if pattern else None
    if compiled is not None and not compiled.fullmatch(value):
        violations.append(
            f"Value '{value}' at '{path}' failed to satisfy constraint:"
            f" Member must satisfy regular expression pattern: {pattern}"
        )


@cache
def _compile(java_pattern: str) -> re.Pattern | None:
    """The pattern in Python syntax; None for the few Java-only ones (\\p{L}), left unchecked."""
    try:
        return re.compile(java_pattern.replace(_JAVA_SUPPLEMENTARY, _PYTHON_SUPPLEMENTARY))
    except re.error:
        return None


def _member_path(path: str, member: str) -> str:
    name = member[:1].lower() + member[1:]
    return f"{path}.{name}" if path else name
