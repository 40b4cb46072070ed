"""A table's `retention:` against the dataset's versions: the old versions a cleanup would
remove now (which, how many files and bytes: `explain_cleanup_old_versions`), planned as one
`delete versions` action. Tagged versions and the latest are always kept. It deletes data, so
it is planned only on a dataset that carries this owner's record (lance-sync created it);
another is listed as left alone."""

from __future__ import annotations

from typing import Any

from lance_sync.model.actions import Kind, ObjectState, Reason, Verb
from lance_sync.model.marks import describe_dataset_owner
from lance_sync.plan.table_state.context import TableContext


def plan(context: TableContext) -> None:
    declared: dict[str, Any] | None = context.declared.get("retention")
    if declared is None or not context.readable:
        return
    assert context.live is not None and context.status is not None
    if context.status.owner != context.owner:
        context.left_alone(Kind.VERSIONS, None, f"retention: the dataset {describe_dataset_owner(context.status.owner)}"
                           f"; lance-sync cleans up only the datasets it created for '{context.owner}'")
        return
    cleanup = context.live.cleanup
    if cleanup is None or not cleanup.count:
        return
    context.action(Verb.DELETE, Kind.VERSIONS, Reason.CHANGED, None,
                   before=ObjectState(location=context.location, version=context.live.version,
                                      definition={"keep_versions": declared.get("keep_versions"),
                                                  "older_than": declared.get("older_than"),
                                                  "versions": list(cleanup.versions)}),
                   after=None,
                   detail=f"retention ({policy_text(declared)}): remove {cleanup.count} old version(s) "
                   f"({ranges(cleanup.versions)}): {cleanup.files} file(s), {cleanup.bytes} bytes; tagged versions "
                   "and the latest are kept")


def policy_text(retention: dict[str, Any]) -> str:
    parts = []
    if retention.get("keep_versions") is not None:
        parts.append(f"keep the newest {retention['keep_versions']}")
    if retention.get("older_than") is not None:
        parts.append(f"older than {retention['older_than']} s")
    return ", ".join(parts)


def ranges(versions: tuple[int, ...]) -> str:
    """'versions 1-4, 7': consecutive versions as a range."""
    spans: list[list[int]] = []
    for version in sorted(versions):
        if spans and version == spans[-1][1] + 1:
            spans[-1][1] = version
        else:
            spans.append([version, version])
    return "versions " + ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)
