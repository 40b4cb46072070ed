"""The journal of an apply: a JSON line at its start, one per action's outcome and one at its end."""

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
    """Append-only JSON lines, masked (`lance_sync.model.secrets`)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, event: str, action: Action | None = None, **details: object) -> None:
        """A line, handed to the operating system before this returns."""
        self.append(event, action, **details)
        self.flush()

    def append(self, event: str, action: Action | None = None, **details: object) -> None:
        """A line, buffered until `flush`: an apply flushes before it waits for its workers, so
        no line waits while nothing happens, and a burst of outcomes costs one write."""
        record = {"time": now(), "event": event, **details}
        if action is not None:
            record.update(verb=action.verb.value, kind=action.kind.value, backend=action.backend,
                          id=action.id, display_id=action.display_id)
            if action.renamed_from is not None:
                record.update(renamed_from=action.renamed_from.id)
        with self._lock:
            self._file.write(mask(_JSON.encode(record)) + "\n")

    def flush(self) -> None:
        with self._lock:
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def now() -> str:
    """The time for a journal line or a plan's `created_at`."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
