"""What an apply did: each action's outcome, the journal and the rollback plan it wrote."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lance_sync.model.actions import Action
from lance_sync.model.errors import ExitCode

Status = Literal["succeeded", "failed", "skipped"]


@dataclass
class Outcome:
    action: Action
    status: Status
    error: str | None = None
    #: the failure may pass if the apply is run again (unavailable, throttled, cut-off answer)
    transient: bool = False
    #: a dataset write: the version it committed (what a rollback must find to delete it)
    version: int | None = None


@dataclass
class ApplyReport:
    outcomes: list[Outcome] = field(default_factory=list)
    journal_path: Path | None = None
    rollback_path: Path | None = None

    def with_status(self, status: Status) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status]

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if not self.with_status("failed") and not self.with_status("skipped") \
            else ExitCode.PARTIAL_APPLY

    @property
    def rerun_converges(self) -> bool:
        """Every failure was transient: running apply again can finish the job."""
        return all(o.transient for o in self.with_status("failed"))
