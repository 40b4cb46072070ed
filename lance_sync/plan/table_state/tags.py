"""A table's declared tags against the dataset's: create a tag that is absent, move one
lance-sync made to the declared version, delete one it made that the manifest no longer
declares. A tag someone else made is never moved nor deleted (listed, or a conflict when the
manifest wants it elsewhere), and a tag naming a version the dataset does not have is a
conflict: the plan stops."""

from __future__ import annotations

from lance_sync.model.actions import Kind, Reason, Verb
from lance_sync.model.table_state import LiveTag
from lance_sync.plan.table_state.context import TableContext


def plan(context: TableContext) -> None:
    declared: dict[str, int] | None = context.declared.get("tags")
    if declared is None:
        return
    if not context.readable:
        if declared and (context.write is not None or context.status is None or context.status.status == "missing"):
            context.note(f"tags {', '.join(sorted(declared))} wait: the dataset is not written yet")
        return
    assert context.live is not None
    live = context.live
    for name, version in sorted(declared.items()):
        _declared(context, name, version, live.tags.get(name))
    for name, tag in sorted(live.tags.items()):
        if name in declared:
            continue
        if tag.owner == context.owner:
            context.action(Verb.DELETE, Kind.TAG, Reason.LEFT_MANIFEST, name,
                           before=context.state({"version": tag.version, "owner": tag.owner}), after=None,
                           detail=f"lance-sync made it (version {tag.version}) and the manifest no longer declares "
                           "it: delete the tag (the version stays)")
        else:
            context.left_alone(Kind.TAG, name, f"{_made_by(tag)}; names version {tag.version}")


def _declared(context: TableContext, name: str, version: int, tag: LiveTag | None) -> None:
    assert context.live is not None
    want = context.state({"version": version, "owner": context.owner})
    if tag is not None and tag.owner is None and tag.version == version:
        # as a table without an owner mark is: adopted in place (a tag's metadata costs no version);
        # a create whose mark was cut off is finished so
        context.action(Verb.UPDATE, Kind.TAG, Reason.ADOPT, name,
                       before=context.state({"version": tag.version, "owner": None}), after=want,
                       detail=f"names version {version} without an owner mark: adopt it (stamp the mark in its "
                       "metadata)")
        return
    if tag is not None and tag.owner != context.owner:
        if tag.version != version:
            _conflict(context, f"tag '{name}' names version {tag.version} and was {_made_by(tag)}; lance-sync moves "
                      "only the tags it made: delete it, or declare another name")
        return
    if tag is not None and tag.version == version:
        return
    if version not in context.live.versions:
        versions = context.live.versions
        held = f"versions {versions[0]} to {versions[-1]}" if versions else "no versions"
        _conflict(context, f"tag '{name}' names version {version}, which does not exist (the dataset has {held})")
        return
    if tag is None:
        context.action(Verb.CREATE, Kind.TAG, Reason.ABSENT, name, before=None, after=want,
                       detail=f"declared, absent: tag version {version}")
        return
    context.action(Verb.UPDATE, Kind.TAG, Reason.CHANGED, name,
                   before=context.state({"version": tag.version, "owner": tag.owner}), after=want,
                   detail=f"moves from version {tag.version} to version {version}")


def _made_by(tag: LiveTag) -> str:
    return f"made by lance-sync owner '{tag.owner}'" if tag.owner else "made outside lance-sync"


def _conflict(context: TableContext, message: str) -> None:
    context.out.conflicts.append((f"table '{context.table.name}' at {context.location}: {message}",
                                  context.table.name))
