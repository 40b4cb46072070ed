"""Requests in any form a Lance Namespace client sends them, read once for every driver.

pylance calls a namespace with the generated request models (`DescribeTableRequest(...)`);
lancedb's core (Rust) calls the same Python methods with a plain dict subclass holding the
spec's field names (`{"id": ["sales", "orders"]}`). `SyncNamespace` wraps every public
operation with `accepting_mappings`, so each driver only ever sees the models.

An operation no driver implements answers `unsupported`: UnsupportedOperationError (code 0)
naming the backend and the operations it does implement.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lance_namespace import LanceNamespace
from lance_namespace.errors import InvalidInputError, UnsupportedOperationError
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])

#: marks a method as already reading its request with `as_request`
_ADAPTED = "__lance_sync_adapted__"
#: marks the stand-in for an operation the driver does not implement
_UNSUPPORTED = "__lance_sync_unsupported__"


def _interface_operations() -> dict[str, type[BaseModel]]:
    """Each public operation of `LanceNamespace` and the request model it takes, read from the
    interface's own signatures (so a new lance-namespace release needs no change here)."""
    operations = {}
    for name, function in vars(LanceNamespace).items():
        if name.startswith("_") or not inspect.isfunction(function):
            continue
        parameters = list(inspect.signature(function).parameters)
        request_type = typing.get_type_hints(function).get(parameters[1]) if len(parameters) > 1 else None
        if isinstance(request_type, type) and issubclass(request_type, BaseModel):
            operations[name] = request_type
    return operations


#: operation name (`declare_table`) -> request model (`DeclareTableRequest`)
OPERATIONS: dict[str, type[BaseModel]] = _interface_operations()


def as_request(request: Any, request_type: type[M]) -> M:
    """`request` as a `request_type`: the model itself, or a mapping (or another pydantic
    model) with the spec's field names. Anything else, or invalid fields, is InvalidInput (13)."""
    if isinstance(request, request_type):
        return request
    if isinstance(request, BaseModel):
        request = request.model_dump()
    if not isinstance(request, Mapping):
        raise InvalidInputError(f"expected a {request_type.__name__} or a mapping of its fields, "
                                f"got {type(request).__name__}")
    try:
        return request_type.model_validate(dict(request))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
        raise InvalidInputError(f"invalid {request_type.__name__}: {problems}") from None


def accepting_mappings(function: F, request_type: type[BaseModel]) -> F:
    """`function(self, request, ...)` that first turns `request` into a `request_type`."""
    if getattr(function, _ADAPTED, False):
        return function

    @functools.wraps(function)
    def operation(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        return function(self, as_request(request, request_type), *args, **kwargs)

    setattr(operation, _ADAPTED, True)
    return typing.cast(F, operation)


def unsupported(name: str) -> Callable[..., Any]:
    """The stand-in for an interface operation the driver does not implement."""

    def operation(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedOperationError(
            f"{self.backend_type}: {spec_name(name)} is not supported by lance-sync's "
            f"{self.backend_type} driver{_hint(name)} (it implements "
            f"{', '.join(spec_name(n) for n in implemented_operations(type(self)))})")

    operation.__name__ = operation.__qualname__ = name
    setattr(operation, _ADAPTED, True)
    setattr(operation, _UNSUPPORTED, True)
    return operation


def implemented_operations(cls: type) -> list[str]:
    """The interface operations `cls` implements."""
    return [name for name in OPERATIONS
            if not getattr(getattr(cls, name), _UNSUPPORTED, False)]


def spec_name(operation: str) -> str:
    """`drop_table` -> `DropTable`, as the specs name operations."""
    return "".join(part.capitalize() for part in operation.split("_"))


#: what to do instead, for the unsupported operations lancedb and pylance call
_HINTS = {
    "drop_table": "; DeregisterTable removes the registration and keeps the data, which other "
                  "catalogs may still register",
    "create_table": "; declare the table (DeclareTable) and write the data at its location",
}


def _hint(name: str) -> str:
    return _HINTS.get(name, "")
