"""The journal of an apply: a JSON line at its start, one per action's outcome and one at its end."""

from __future__ import annotations

import datetime
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from lance_sync.model.actions import DATASET_PARTS, Action, Kind, action_key, dataset_key, part_key
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
            if action.kind in DATASET_PARTS:  # addressed by the dataset's location and its name
                record.update(location=action.location, part=action.part)
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


@dataclass(frozen=True)
class Applied:
    """The last action an apply carried out on an object, from its journal."""

    time: str
    #: 'create table', 'grant table'
    action: str
    journal: str
    #: the manifest's git revision when that apply ran (None: not in git, or a journal without it)
    revision: str | None = None


def journal_folder(state_dir: Path) -> Path:
    """Where the applies of a state dir keep their journals."""
    return state_dir / "journal"


def last_applied(state_dir: Path) -> dict[str, Applied]:
    """Per object (its key: `action_key`, `dataset_key` or `part_key`; a grant counts for its
    object), the last action that succeeded in the journals of the applies with this state
    dir; a line that cannot be read is passed over."""
    found: dict[str, Applied] = {}
    for path in sorted(journal_folder(state_dir).glob("apply-*.jsonl")):  # the stamp in the name sorts by time
        revision = None
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
                if record.get("event") == "start":
                    revision = record.get("revision")
                elif record.get("event") == "succeeded":
                    found[_object_key(record)] = Applied(record["time"], f"{record['verb']} {record['kind']}",
                                                         str(path), revision)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut short by a crash
    return found


def _object_key(record: dict) -> str:
    kind = Kind(record["kind"])
    if kind == Kind.DATASET:
        return dataset_key(record["display_id"])
    if kind in DATASET_PARTS:
        return part_key(kind, record["location"], record.get("part"))
    return action_key(kind, record["backend"], record["id"])
