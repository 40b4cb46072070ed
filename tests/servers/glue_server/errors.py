"""Glue errors as the JSON protocol carries them: HTTP status, `__type` and message."""

from __future__ import annotations

from moto.core.exceptions import JsonRESTError


class GlueError(JsonRESTError):
    """An error answer; raise it inside a moto handler or serve it as a WSGI app."""

    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(code, message)
        self.code = status


def entity_not_found(message: str) -> GlueError:
    return GlueError("EntityNotFoundException", message)


def already_exists(message: str) -> GlueError:
    return GlueError("AlreadyExistsException", message)


def invalid_input(message: str) -> GlueError:
    return GlueError("InvalidInputException", message)


def access_denied(message: str) -> GlueError:
    return GlueError("AccessDeniedException", message)
