"""Metastore errors as `lance_namespace.errors`, and the text of any failure for a message.

The exceptions the Hive IDL declares (`METASTORE_ERRORS`) are answers: each operation of the
driver translates those it expects (a missing database, a name taken) itself, and
`translated` maps any other that escapes an operation with `translate`. Every text taken
from an error has the secrets it may echo masked (`lance_sync.model.secrets`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from lance_namespace.errors import (
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceNotFoundError,
)
from pymetastore.hive_metastore import ttypes
from pymetastore.hive_metastore.ttypes import (
    InvalidObjectException,
    InvalidOperationException,
    UnknownDBException,
)
from thrift.Thrift import TApplicationException, TException

from lance_sync.model import secrets

#: exceptions declared in the Hive IDL: answers, after which the connection stays in step
METASTORE_ERRORS: tuple[type[Exception], ...] = tuple(value for value in vars(ttypes).values()
                         if isinstance(value, type) and issubclass(value, TException)
                         and value.__module__ == ttypes.__name__)
APPLICATION_ERROR_NAMES = {value: name for name, value in vars(TApplicationException).items()
                           if name.isupper() and isinstance(value, int)}

T = TypeVar("T")


def message(error: BaseException) -> str:
    """A metastore error's text, with any secret it echoes masked (`lance_sync.model.secrets`)."""
    return secrets.mask(getattr(error, "message", None) or str(error) or type(error).__name__)


def failure_text(error: BaseException) -> str:
    """A failure's type and message, with the socket error under a transport error."""
    text = f"{type(error).__name__}: {message(error)}"
    inner = getattr(error, "inner", None)
    return f"{text} ({type(inner).__name__}: {inner})" if inner is not None else text


def translate(error: TException) -> LanceNamespaceError:
    """The fallback mapping of metastore errors that an operation did not handle itself."""
    text = f"hive3: the metastore answered {type(error).__name__}: {message(error)}"
    if isinstance(error, UnknownDBException):
        return NamespaceNotFoundError(text)
    if isinstance(error, InvalidObjectException | InvalidOperationException | ttypes.InvalidInputException):
        return InvalidInputError(text)
    return InternalError(text)


def translated(method: Callable[..., T]) -> Callable[..., T]:
    """Translate any metastore error that escapes an operation (generators included)."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generate(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from method(*args, **kwargs)
            except TException as error:
                raise translate(error) from error

        return generate

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except TException as error:
            raise translate(error) from error

    return call
