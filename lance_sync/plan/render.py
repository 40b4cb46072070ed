"""Print a plan: text like `terraform plan`, JSON, or markdown for a pull-request comment.

Text and markdown show local paths below the manifest's folder relative to it
(`./lakehouse/orders.lance`, as the manifest writes them), so a plan reads the same on every
machine; JSON keeps every location absolute, with the folder in `base_dir`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import click

from lance_sync.model.actions import (
    Action,
    DatasetStatus,
    Destruction,
    Kind,
    ObjectState,
    Partial,
    Plan,
    PolicyViolation,
    Reason,
    Verb,
)
from lance_sync.model.locations import with_manifest_relative_paths

MARKDOWN_LIMIT = 65_000
#: scanned namespaces named per backend before "and N more"
SCOPE_SHOWN = 10
#: actions a partial plan names as left out before "and N more"
OMITTED_SHOWN = 10

SYMBOLS = {Verb.CREATE: "+", Verb.UPDATE: "~", Verb.RENAME: "~>", Verb.REPLACE: "-/+", Verb.FORGET: "-",
           Verb.DELETE: "-", Verb.GRANT: "+", Verb.REVOKE: "-", Verb.RECORD: "~"}
COLOURS = {"+": "green", "~": "yellow", "~>": "cyan", "-": "red", "-/+": "magenta"}
DESTRUCTION_TAGS = {Destruction.DATA: "[destroys data]", Destruction.IDENTITY: "[new table id, grants are lost]",
                    Destruction.ACCESS: "[revokes access]"}
NAMESPACE_DELETION_TAG = "[deletes the namespace]"


def summary_counts(plan: Plan) -> dict[str, int]:
    """Actions grouped the way the summary line reads them."""
    groups = {"create": 0, "update": 0, "adopt": 0, "rename": 0, "replace": 0, "remove": 0, "grant": 0,
              "revoke": 0, "record": 0}
    for action in plan.actions:
        if action.reason == Reason.ADOPT:
            groups["adopt"] += 1
        elif action.verb in (Verb.FORGET, Verb.DELETE):
            groups["remove"] += 1
        else:
            groups[action.verb.value] += 1
    return groups


#: the apply flag each destruction needs
ALLOW_FLAGS = {Destruction.DATA: "--allow-drop", Destruction.IDENTITY: "--allow-replace",
               Destruction.ACCESS: "--allow-revoke"}


def summary_line(plan: Plan, allowed: Collection[Destruction] = ()) -> str:
    """The plan's counts in a line; a destruction the `allowed` flags were given for says so
    instead of what it needs."""
    if not plan.actions:
        text = summary_line_of_nothing(plan)
        if plan.policy_violations:
            text += f" {len(plan.policy_violations)} policy violation(s): apply refuses this plan."
        return text
    counts = summary_counts(plan)
    # renames are counted when there are some, as Terraform counts imports
    renames = f"{counts['rename']} to rename, " if counts["rename"] else ""
    # grants too, when there are some
    grants = "".join(f", {counts[verb]} to {verb}" for verb in ("grant", "revoke", "record") if counts[verb])
    text = (f"Plan: {counts['create']} to create, {counts['update']} to update, {counts['adopt']} to adopt, "
            f"{renames}{counts['replace']} to replace, {counts['remove']} to remove{grants}.")
    for what, words in ((Destruction.DATA, "destroy data"), (Destruction.IDENTITY, "replace tables"),
                        (Destruction.ACCESS, "revoke privileges")):
        if plan.destroying(what):
            needs = "allowed by" if what in allowed else "needs"
            text += f" {len(plan.destroying(what))} {words} ({needs} {ALLOW_FLAGS[what]})."
    blocked = len(plan.blocked())
    if blocked:
        text += f" {blocked} blocked."
    if plan.policy_violations:
        text += f" {len(plan.policy_violations)} policy violation(s): apply refuses this plan."
    if plan.partial is not None and plan.partial.by == "changed_since":
        text += f" Partial: changes since {plan.partial.since}"
        text += f"; {len(plan.partial.omitted)} change(s) left out." if plan.partial.omitted else "."
    elif plan.partial is not None:
        text += f" Partial: {len(plan.partial.omitted)} change(s) left out."
    return text


def summary_line_of_nothing(plan: Plan) -> str:
    if plan.partial is not None and plan.partial.by == "changed_since" and not plan.partial.omitted:
        return f"No changes in what changed since {plan.partial.since}: the catalogs match it."
    if plan.partial is not None and plan.partial.omitted:
        return f"No changes in this partial plan; {len(plan.partial.omitted)} change(s) left out."
    return "No changes. The catalogs match the manifest."


def partial_lines(plan: Plan) -> list[str]:
    """What a partial plan says about itself: why, and what it leaves out (the first few)."""
    if plan.partial is None:
        return []
    omitted = plan.partial.omitted
    if plan.partial.by == "target":
        head = (f"This plan is partial: only --target {', '.join(plan.partial.targets)} and what it depends "
                f"on; {len(omitted)} other change(s) left out (plan without --target to see them all).")
    elif plan.partial.by == "changed_since":
        head = (f"This plan is partial: only the manifest entries changed since {plan.partial.since} and what "
                "they depend on were read and compared (plan without --changed-since for a full plan).")
        lines = [head, *(f"    {note}" for note in changed_since_notes(plan.partial))]
        if omitted:
            lines.append(f"  {len(omitted)} change(s) left out:")
        lines += [f"    {o.action} {o.backend}: {o.display_id} ({o.why})" for o in omitted[:OMITTED_SHOWN]]
        if len(omitted) > OMITTED_SHOWN:
            lines.append(f"    ... and {len(omitted) - OMITTED_SHOWN} more")
        return lines
    else:
        head = f"This plan is partial: {len(omitted)} change(s) need a person and are left out."
    lines = [head]
    lines += [f"    {o.action} {o.backend}: {o.display_id} ({o.why})" for o in omitted[:OMITTED_SHOWN]]
    if len(omitted) > OMITTED_SHOWN:
        lines.append(f"    ... and {len(omitted) - OMITTED_SHOWN} more")
    return lines


def changed_since_notes(partial: Partial) -> list[str]:
    """Why a plan of the changes since a revision covers more than the entries that changed,
    and the variables it resolved (the revision has no record of the environment it was
    applied in)."""
    notes = list(partial.widened)
    if partial.variables:
        shown = ", ".join(f"{v.name}=(secret)" if v.secret else f"{v.name}={v.value!r}" for v in partial.variables)
        notes.append(f"variables resolved: {shown} (applied under other values, it needs a full plan)")
    return notes


def violation_line(violation: PolicyViolation) -> str:
    where = f" ({violation.where})" if violation.where else ""
    return f"[{violation.rule}] {violation.check}: {violation.message}{where}"


def action_label(action: Action) -> str:
    """'create table     lake: sales$orders' ('rename table     lake: sales$orders -> sales$orders_v2'),
    with why it is notable and what it destroys."""
    if action.is_grant:
        return f"{action.headline}  {DESTRUCTION_TAGS[action.destroys]}" if action.destroys else action.headline
    label = f"{action.name:<16} {action.backend}: {action.shown_id}"
    if action.reason == Reason.ADOPT:
        label += "  (adopt)"
    tag = destruction_tag(action)
    return f"{label}  {tag}" if tag else label


def replaced(plan: Plan) -> str:
    """What the plan's replaces lose: grants only where a backend keeps them."""
    grants = any(a.drops_grants for a in plan.destroying(Destruction.IDENTITY))
    return "new table id, grants are lost" if grants else "new table id"


def destruction_tag(action: Action) -> str | None:
    """'[destroys data]', '[new table id, grants are lost]', ... or None."""
    if action.destroys is None:
        return None
    if action.kind == Kind.NAMESPACE:
        return NAMESPACE_DELETION_TAG
    if action.destroys == Destruction.IDENTITY and not action.drops_grants:
        return "[new table id]"  # a backend without grants has none to lose
    return DESTRUCTION_TAGS[action.destroys]


def action_head(action: Action) -> str:
    return f"{SYMBOLS[action.verb]:>3} {action_label(action)}"


def scope_lines(plan: Plan) -> list[str]:
    """What the plan read, shown where it explains the plan: with --scan-all, or where a table of
    this owner was seen outside the namespaces it read."""
    lines = []
    for scope in plan.scope:
        if scope.complete:
            lines.append(f"    {scope.backend}: every namespace (--scan-all)")
            continue
        shown = ", ".join(scope.namespaces[:SCOPE_SHOWN]) or "(nothing)"
        more = f" and {len(scope.namespaces) - SCOPE_SHOWN} more" if len(scope.namespaces) > SCOPE_SHOWN else ""
        lines.append(f"    {scope.backend}: {shown}{more}")
        if scope.owned_elsewhere:
            elsewhere = ", ".join(scope.owned_elsewhere[:SCOPE_SHOWN])
            more = f" and {len(scope.owned_elsewhere) - SCOPE_SHOWN} more" \
                if len(scope.owned_elsewhere) > SCOPE_SHOWN else ""
            lines.append(f"      owned by '{plan.owner}' outside them, not planned: {elsewhere}{more}")
    return lines


# --- text ------------------------------------------------------------------------------------------

def render_text(plan: Plan, colour: bool = False, allowed: Collection[Destruction] = ()) -> str:
    """The plan as text; `allowed`: the destructions the apply that shows it was allowed."""
    def paint(text: str, symbol: str, bold: bool = False) -> str:
        return click.style(text, fg=COLOURS[symbol], bold=bold) if colour else text

    lines = [f"lance-sync {title(plan)} for owner '{plan.owner}' ({header_files(plan)})", ""]
    if plan.partial is not None:
        lines += [*partial_lines(plan), ""]
    for action in plan.actions:
        lines.append(paint(action_head(action), SYMBOLS[action.verb], bold=True))
        lines.extend(f"        {line}" for line in _details(action))
        lines.append("")
    if plan.adopted_unmarked:
        lines.append(f"Adopted without a mark ({len(plan.adopted_unmarked)}): in sync; the backend cannot stamp "
                     "a table in place, so removing it from the manifest leaves it registered")
        lines.extend(f"    {o.kind.value} {o.backend}: {o.display_id}" for o in plan.adopted_unmarked)
        lines.append("")
    if plan.left_alone:
        lines.append(f"Left alone ({len(plan.left_alone)}): seen in scope, not owned by '{plan.owner}'")
        lines.extend(f"    {o.kind.value} {o.backend}: {o.display_id} ({o.reason})" for o in plan.left_alone)
        lines.append("")
    if plan.grants_left_alone:
        lines.append(f"Grants left alone on {len(plan.grants_left_alone)} object(s): to principals the manifest does "
                     "not name there (grants_mode: named)")
        lines.extend(f"    {o.kind.value} {o.backend}: {o.display_id}: {o.reason}" for o in plan.grants_left_alone)
        lines.append("")
    if any(scope.complete or scope.owned_elsewhere for scope in plan.scope):
        lines.append("Scanned (owned objects outside these namespaces are not seen; plan --scan-all lists "
                     "every namespace):")
        lines.extend(scope_lines(plan))
        lines.append("")
    if plan.policy_violations:
        lines.append(f"Policy violations ({len(plan.policy_violations)}): apply refuses this plan")
        lines.extend(f"    {violation_line(v)}" for v in plan.policy_violations)
        lines.append("")
    lines += [f"Note: {note}" for note in plan.notes]
    lines += [f"Warning: {warning}" for warning in plan.warnings]
    if plan.notes or plan.warnings:
        lines.append("")
    lines.append(summary_line(plan, allowed))
    return with_manifest_relative_paths("\n".join(lines) + "\n", plan.base_dir)


def title(plan: Plan) -> str:
    return "rollback plan" if plan.rollback else "plan"


def header_files(plan: Plan) -> str:
    """The manifest files, and what ./ means in the plan when paths are shown relative."""
    files = ", ".join(plan.manifest_files)
    return f"{files}; ./ is the manifest's folder" if plan.base_dir else files


def _details(action: Action) -> Iterator[str]:
    yield f"# {action.detail}"
    if action.blocked:
        yield f"! BLOCKED: {action.blocked}"
    for warning in action.warnings:
        yield f"! warning: {warning}"
    before, after = action.before, action.after
    if action.is_grant and action.reason == Reason.ABSENT:
        before = None  # what a principal held on an object replaced first is not what it starts from
    if before and after and action.kind != Kind.DATASET:
        yield from _changes(before, after)
    else:
        state = after or before
        if state is not None:
            yield from _state(state, "+" if after else "-")
    if action.kind == Kind.DATASET and action.registrations:
        yield "registered as: " + ", ".join(f"{r.backend}: {r.display_id or r.id}" for r in action.registrations)
    if action.dataset is not None:
        yield f"data: {describe_dataset(action.dataset)}"


def _state(state: ObjectState, sign: str) -> Iterator[str]:
    if state.privileges is not None:
        yield f"{sign} privileges = {', '.join(state.privileges) or '(none)'}"
    if state.principals is not None:
        yield f"{sign} managed principals = {', '.join(state.principals) or '(none)'}"
    if state.location:
        yield f"{sign} location = {state.location}"
    if state.version is not None:
        yield f"{sign} version = {state.version}"
    for key, value in sorted(state.properties.items()):
        yield f"{sign} {key} = {value!r}"
    if state.columns:
        columns = ", ".join(f"{c['name']}: {c['type']}" for c in state.columns)
        yield f"{sign} schema = ({columns})"
    if state.source:
        yield f"{sign} source = {state.source['format']} {state.source['path']}"
    for key, value in (state.definition or {}).items():
        yield f"{sign} {key} = {value}"


def _changes(before: ObjectState, after: ObjectState) -> Iterator[str]:
    if before.privileges != after.privileges:
        yield f"~ privileges = {', '.join(before.privileges or []) or '(none)'} -> {', '.join(after.privileges or []) or '(none)'}"
    if before.principals != after.principals:
        yield (f"~ managed principals = {', '.join(before.principals or []) or '(no record)'} -> "
               f"{', '.join(after.principals or []) or '(none)'}")
    if before.location != after.location:
        yield f"~ location = {before.location} -> {after.location}"
    had = before.definition or {}
    for key, value in (after.definition or {}).items():
        if key not in had:
            yield f"+ {key} = {value}"
        elif had[key] != value:
            yield f"~ {key} = {had[key]} -> {value}"
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
        made = f", created by lance-sync for '{status.owner}'" if status.owner else ""
        return f"Lance dataset, version {status.version}, {rows}{made}"
    return {"missing": "no dataset at the location",
            "not_lance": "the location holds data that is not Lance",
            "corrupt": f"corrupt Lance dataset ({status.error or 'unreadable'})",
            "interrupted": "an unfinished lance-sync write ("
                           f"{status.intent.describe() if status.intent else 'no intent record'})",
            "unreachable": f"storage unreachable ({status.error or 'unknown error'})"}[status.status]


# --- json ------------------------------------------------------------------------------------------

def render_json(plan: Plan) -> str:
    return plan.model_dump_json(indent=2) + "\n"


# --- markdown --------------------------------------------------------------------------------------

def render_markdown(plan: Plan, limit: int = MARKDOWN_LIMIT, allowed: Collection[Destruction] = ()) -> str:
    """A pull-request comment: summary table first, details collapsed, always under `limit`."""
    text = with_manifest_relative_paths("\n".join(_markdown_head(plan, allowed)) + "\n", plan.base_dir)
    if not plan.actions and not plan.left_alone:
        return text
    return text + _markdown_details(plan, limit, taken=len(text))


def _markdown_head(plan: Plan, allowed: Collection[Destruction]) -> list[str]:
    """The comment's visible part: the summary, the count of each change, and what needs attention."""
    counts = summary_counts(plan)
    head = [f"### lance-sync {title(plan)}", "", f"Owner `{plan.owner}` · {summary_line(plan, allowed)}", "",
            f"<sub>{header_files(plan)}</sub>", ""]
    if plan.actions:
        head += ["| change | count |", "| --- | ---: |"]
        head += [f"| {name} | {count} |" for name, count in counts.items() if count]
        head.append("")
    needs = {what: "allowed by" if what in allowed else "apply needs" for what in ALLOW_FLAGS}
    if plan.destroying(Destruction.DATA):
        head.append(f"> **{len(plan.destroying(Destruction.DATA))} action(s) destroy data**: "
                    f"{needs[Destruction.DATA]} `--allow-drop`.")
    if plan.destroying(Destruction.IDENTITY):
        head.append(f"> **{len(plan.destroying(Destruction.IDENTITY))} table(s) replaced** ({replaced(plan)}): "
                    f"{needs[Destruction.IDENTITY]} `--allow-replace`.")
    if plan.destroying(Destruction.ACCESS):
        head.append(f"> **{len(plan.destroying(Destruction.ACCESS))} revoke(s)**: principals lose privileges; "
                    f"{needs[Destruction.ACCESS]} `--allow-revoke`.")
    if plan.blocked():
        head.append(f"> **{len(plan.blocked())} blocked action(s)**: apply will refuse this plan.")
    if plan.policy_violations:
        head.append(f"> **{len(plan.policy_violations)} policy violation(s)**: apply will refuse this plan.")
        head.append(">")
        head += [f"> - `{v.rule}` ({v.check}): {_markdown_safe(v.message)}" for v in plan.policy_violations[:50]]
        if len(plan.policy_violations) > 50:
            head.append(f"> - ... and {len(plan.policy_violations) - 50} more")
    if plan.partial is not None:
        head.append(f"> **Partial plan.** {_markdown_safe(partial_lines(plan)[0])}")
        head += [f"> - {_markdown_safe(note)}" for note in changed_since_notes(plan.partial)]
    if plan.adopted_unmarked:
        head.append(f"> {len(plan.adopted_unmarked)} table(s) adopted without a mark (the backend cannot stamp "
                    "them in place): leaving the manifest will leave them registered.")
    if plan.grants_left_alone:
        head.append(f"> Grants to principals the manifest does not name are left alone on "
                    f"{len(plan.grants_left_alone)} object(s) (grants_mode: named).")
    head += [f"> {w}" for w in plan.warnings]
    head += [f"> Note: {n}" for n in plan.notes]
    # a blank line: <details> must not continue a blockquote
    head.append("")
    return head


def _markdown_details(plan: Plan, limit: int, taken: int) -> str:
    """The collapsed actions, as many as fit in `limit` beside the `taken` characters of the head,
    then what was left out."""
    opening = f"<details><summary>Details ({len(plan.actions)} actions)</summary>\n\n```diff\n"
    closing = "```\n\n</details>\n"
    budget = limit - taken - len(opening) - len(closing) - 300
    body: list[str] = []
    used, shown = 0, 0
    for action in plan.actions:
        block = with_manifest_relative_paths(_markdown_action(action), plan.base_dir)
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
    return opening + "".join(body) + closing + note + left_alone


def _markdown_action(action: Action) -> str:
    sign = {"+": "+", "~": "!", "~>": "!", "-": "-", "-/+": "!"}[SYMBOLS[action.verb]]
    head = f"{sign} {_fence_safe(action_label(action))}"
    lines = [head] + [f"{' ' if sign != '-' else '-'}     {_fence_safe(line)}" for line in _details(action)]
    return "\n".join(lines) + "\n"


def _markdown_safe(text: str) -> str:
    """User text (names, locations, patterns) in a markdown line: no markup, no HTML."""
    return "".join(f"\\{c}" if c in "\\`*_[]<>|#" else c for c in text.replace("\n", " "))


def _fence_safe(text: str) -> str:
    """Keep user text from closing the code fence."""
    return text.replace("```", "'''")
