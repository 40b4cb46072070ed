"""What no action can fix: a plan with any stops (drift and status report them instead)."""

from __future__ import annotations

from dataclasses import dataclass

from lance_sync.model.backend_config import Identifier


@dataclass(frozen=True)
class Conflict:
    """Something no action can fix: the plan stops (drift reports it instead)."""

    message: str
    #: what it is about: owner (marked by another owner), not_lance (a table of another format
    #: under the name), namespace (a table's namespace is neither there nor declared), storage
    #: (a location cannot be read), schema (the dataset's columns contradict the manifest)
    topic: str
    table: str | None = None
    backend: str | None = None
    id: Identifier | None = None
    #: the message without the table it is about (drift names the table beside it)
    detail: str | None = None

    def __str__(self) -> str:
        return self.message
