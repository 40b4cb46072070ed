"""Print a plan: text like `terraform plan`, JSON, or markdown for a pull-request comment."""

from __future__ import annotations

from collections.abc import Iterator

import click

from lance_sync.plan.model import Action, ActionType, DatasetStatus, ObjectState, Plan

MARKDOWN_LIMIT = 65_000

SYMBOLS = {
    ActionType.CREATE_NAMESPACE: "+",
    ActionType.DECLARE_TABLE: "+",
    ActionType.CREATE_TABLE: "+",
    ActionType.UPDATE_NAMESPACE: "~",
    ActionType.UPDATE_TABLE: "~",
    ActionType.ADOPT: "~",
    ActionType.REPLACE_TABLE: "-/+",
    ActionType.DEREGISTER_TABLE: "-",
    ActionType.DROP_TABLE: "-",
    ActionType.DROP_NAMESPACE: "-",
}
COLOURS = {"+": "green", "~": "yellow", "-": "red", "-/+": "magenta"}


def summary_counts(plan: Plan) -> dict[str, int]:
    """Actions grouped the way the summary line reads them."""
    groups = {"create": 0, "update": 0, "adopt": 0, "replace": 0, "remove": 0}
    for action in plan.actions:
        symbol = SYMBOLS[action.action]
        if action.action == ActionType.ADOPT:
            groups["adopt"] += 1
        else:
            groups[{"+": "create", "~": "update", "-/+": "replace", "-": "remove"}[symbol]] += 1
    return groups


def summary_line(plan: Plan) -> str:
    if not plan.actions:
        return "No changes. The catalogs match the manifest."
    counts = summary_counts(plan)
    text = (f"Plan: {counts['create']} to create, {counts['update']} to update, {counts['adopt']} to adopt, "
            f"{counts['replace']} to replace, {counts['remove']} to remove.")
    losing = len(plan.data_loss())
    if losing:
        text += f" {losing} destructive (needs --allow-drop)."
    blocked = len(plan.blocked())
    if blocked:
        text += f" {blocked} blocked."
    return text


# --- text ------------------------------------------------------------------------------------------

def render_text(plan: Plan, colour: bool = False) -> str:
    def paint(text: str, symbol: str, bold: bool = False) -> str:
        return click.style(text, fg=COLOURS[symbol], bold=bold) if colour else text

    lines = [f"lance-sync plan for owner '{plan.owner}' ({', '.join(plan.manifest_files)})", ""]
    for action in plan.actions:
        symbol = SYMBOLS[action.action]
        head = f"{symbol:>3} {action.action.value:<17} {action.backend}: {action.display_id}"
        if action.data_loss:
            head += "  [destroys data]" if action.action == ActionType.DROP_TABLE else "  [destructive]"
        lines.append(paint(head, symbol, bold=True))
        lines.extend(f"        {line}" for line in _details(action))
        lines.append("")
    if plan.left_alone:
        lines.append(f"Left alone ({len(plan.left_alone)}): seen in scope, not owned by '{plan.owner}'")
        lines.extend(f"    {o.object} {o.backend}: {o.display_id} ({o.reason})" for o in plan.left_alone)
        lines.append("")
    for warning in plan.warnings:
        lines.append(f"Warning: {warning}")
    if plan.warnings:
        lines.append("")
    lines.append(summary_line(plan))
    return "\n".join(lines) + "\n"


def _details(action: Action) -> Iterator[str]:
    yield f"# {action.reason}"
    if action.blocked:
        yield f"! BLOCKED: {action.blocked}"
    for warning in action.warnings:
        yield f"! warning: {warning}"
    before, after = action.before, action.after
    if before and after and action.action != ActionType.CREATE_TABLE:
        yield from _changes(before, after)
    else:
        state = after or before
        if state is not None:
            yield from _state(state, "+" if after else "-")
    if action.action == ActionType.CREATE_TABLE:
        yield f"write: {action.write_mode} dataset" + ("" if action.registers else " (already registered)")
    if action.method == "replace":
        yield "method: deregister and declare again (the backend cannot update in place)"
    if action.dataset is not None:
        yield f"data: {describe_dataset(action.dataset)}"


def _state(state: ObjectState, sign: str) -> Iterator[str]:
    if state.location:
        yield f"{sign} location = {state.location}"
    for key, value in sorted(state.properties.items()):
        yield f"{sign} {key} = {value!r}"
    if state.columns:
        columns = ", ".join(f"{c['name']}: {c['type']}" for c in state.columns)
        yield f"{sign} schema = ({columns})"
    if state.source:
        yield f"{sign} source = {state.source['format']} {state.source['path']}"


def _changes(before: ObjectState, after: ObjectState) -> Iterator[str]:
    if before.location != after.location:
        yield f"~ location = {before.location} -> {after.location}"
    for key in sorted(set(before.properties) | set(after.properties)):
        old, new = before.properties.get(key), after.properties.get(key)
        if old == new:
            continue
        if old is None:
            yield f"+ {key} = {new!r}"
        elif new is None:
            yield f"- {key} = {old!r}"
        else:
            yield f"~ {key} = {old!r} -> {new!r}"


def describe_dataset(status: DatasetStatus) -> str:
    if status.status == "valid":
        rows = f"{status.row_count:,} rows" if status.row_count is not None else "rows unknown"
        return f"Lance dataset, version {status.version}, {rows}"
    return {"missing": "no dataset at the location",
            "not_lance": "the location holds data that is not Lance",
            "corrupt": f"corrupt Lance dataset ({status.error or 'unreadable'})",
            "unreachable": f"storage unreachable ({status.error or 'unknown error'})"}[status.status]


# --- json ------------------------------------------------------------------------------------------

def render_json(plan: Plan) -> str:
    return plan.model_dump_json(indent=2) + "\n"


# --- markdown --------------------------------------------------------------------------------------

def render_markdown(plan: Plan, limit: int = MARKDOWN_LIMIT) -> str:
    """A pull-request comment: summary table first, details collapsed, always under `limit`."""
    counts = summary_counts(plan)
    head = ["### lance-sync plan", "", f"Owner `{plan.owner}` · {summary_line(plan)}", ""]
    if plan.actions:
        head += ["| change | count |", "| --- | ---: |"]
        head += [f"| {name} | {count} |" for name, count in counts.items() if count]
        head.append("")
    if plan.data_loss():
        head.append(f"> **{len(plan.data_loss())} destructive action(s)**: apply needs `--allow-drop`.")
    if plan.blocked():
        head.append(f"> **{len(plan.blocked())} blocked action(s)**: apply will refuse this plan.")
    head += [f"> {w}" for w in plan.warnings]
    head.append("")
    text = "\n".join(head)
    if not plan.actions and not plan.left_alone:
        return text
    opening = f"<details><summary>Details ({len(plan.actions)} actions)</summary>\n\n```diff\n"
    closing = "```\n\n</details>\n"
    budget = limit - len(text) - len(opening) - len(closing) - 300
    body: list[str] = []
    used, shown = 0, 0
    for action in plan.actions:
        block = _markdown_action(action)
        if used + len(block) > budget:
            break
        body.append(block)
        used += len(block)
        shown += 1
    note = ""
    if shown < len(plan.actions):
        note = (f"\n_Truncated: {len(plan.actions) - shown} of {len(plan.actions)} actions not shown to stay "
                f"under {limit:,} characters. Run `lance-sync plan` for the full plan._\n")
    left_alone = ""
    if plan.left_alone:
        left_alone = f"\n{len(plan.left_alone)} object(s) in scope are not owned by `{plan.owner}` and are left alone.\n"
    return text + opening + "".join(body) + closing + note + left_alone


def _markdown_action(action: Action) -> str:
    sign = {"+": "+", "~": "!", "-": "-", "-/+": "!"}[SYMBOLS[action.action]]
    head = f"{sign} {action.action.value} {action.backend}: {_fence_safe(action.display_id)}"
    if action.data_loss:
        head += "  [destructive]"
    lines = [head] + [f"{' ' if sign != '-' else '-'}     {_fence_safe(line)}" for line in _details(action)]
    return "\n".join(lines) + "\n"


def _fence_safe(text: str) -> str:
    """Keep user text from closing the code fence."""
    return text.replace("```", "'''")
