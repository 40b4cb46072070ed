"""lance-sync's own errors and the CLI exit codes they map to.

Catalog errors stay `lance_namespace.errors` classes (drivers raise them); these are the
errors of the tool itself: bad input, guards, stale plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lance_sync.model.actions import Plan


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    CHANGES_PRESENT = 2
    PARTIAL_APPLY = 3
    REFUSED = 4


class LanceSyncError(Exception):
    """Base class: a failure with a message fit for the user, never a traceback."""

    exit_code = ExitCode.ERROR


@dataclass(frozen=True)
class Position:
    """Where a value came from: file, 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class ManifestError(LanceSyncError):
    """A problem in a manifest, located at a file, line, column and field."""

    def __init__(self, message: str, position: Position | None = None, field: str | None = None):
        self.message = message
        self.position = position
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.position}: " if self.position else ""
        what = f"{self.field}: " if self.field else ""
        return f"{where}{what}{self.message}"


class ManifestErrors(LanceSyncError):
    """Several manifest problems reported together (validation collects them all)."""

    def __init__(self, errors: list[ManifestError]):
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class ConfigError(LanceSyncError):
    """A backend configuration value is missing or invalid."""


class BackendUnavailable(LanceSyncError):
    """A backend could not be opened (its store or server cannot be reached); names it."""


class PlanError(LanceSyncError):
    """The live state conflicts with the manifest in a way no action can fix."""


class PlanConflicts(PlanError):
    """Conflicts no action can fix: the plan cannot be applied. It carries the plan of everything
    else when there is one, so that one conflict does not hide the other changes of the same edit."""

    def __init__(self, conflicts: Sequence[object], plan: Plan | None = None):
        self.plan = plan
        self.conflicts = list(conflicts)
        others = f"\n(the plan's {len(plan.actions)} other change(s) wait until these are resolved)" \
            if plan is not None and plan.actions else ""
        super().__init__("the plan cannot be made:\n" + "\n".join(f"  - {c}" for c in conflicts) + others)


class GuardRefusal(LanceSyncError):
    """A safety guard refused the run: data loss without --allow-drop, a protected object, a stale plan."""

    exit_code = ExitCode.REFUSED
