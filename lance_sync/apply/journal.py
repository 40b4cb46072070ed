"""The journal of an apply: one JSON line per action start and end, appended as they happen."""

from __future__ import annotations

import datetime
import json
import threading
from pathlib import Path

from lance_sync.model.actions import Action
from lance_sync.model.secrets import mask

#: json.dumps(..., ensure_ascii=False) without building an encoder per line
_JSON = json.JSONEncoder(ensure_ascii=False)


class Journal:
    """Append-only JSON lines: one per action start and end, masked (`lance_sync.model.secrets`)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, event: str, action: Action | None = None, **details: object) -> None:
        record = {"time": now(), "event": event, **details}
        if action is not None:
            record.update(verb=action.verb.value, kind=action.kind.value, backend=action.backend,
                          id=action.id, display_id=action.display_id)
            if action.renamed_from is not None:
                record.update(renamed_from=action.renamed_from.id)
        with self._lock:
            self._file.write(mask(_JSON.encode(record)) + "\n")
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def now() -> str:
    """The time for a journal line or a plan's `created_at`."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
