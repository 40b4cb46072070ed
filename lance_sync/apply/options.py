"""What an apply may do, and how: the flags its guards read, its parallelism, where its journal goes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lance_sync.model.shared import DEFAULT_PARALLELISM, STATE_DIRECTORY

if TYPE_CHECKING:
    from lance_sync.model.actions import Action

#: times an action is sent again after a transient failure
ACTION_RETRIES = 2


@dataclass
class ApplyOptions:
    allow_drop: bool = False
    allow_replace: bool = False
    #: revokes take privileges from principals
    allow_revoke: bool = False
    parallelism: int = DEFAULT_PARALLELISM
    #: --spark value, for dataset writes that read a source
    spark: str | None = None
    #: where journals and rollback plans are written
    state_dir: Path = Path(STATE_DIRECTORY)
    action_retries: int = ACTION_RETRIES
    #: told what a long step of an action waits for (a Spark start, a write from a source), so
    #: that the progress line can name it
    on_step: Callable[[Action, str], None] | None = None
