"""What an apply may do, and how: the flags its guards read, its parallelism, where its journal goes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lance_sync.model.shared import DEFAULT_PARALLELISM, STATE_DIRECTORY

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
