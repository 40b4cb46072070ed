"""`plan --format html` (and `show PLAN --format html`): the plan as one self-contained page.

The summary and the count of each change come first, then what needs attention (data
destroyed, blocked actions, policy violations, a partial plan), then every action grouped by
backend, each collapsed, with a before/after table of what it changes: properties, location,
version, privileges, managed principals, columns, the source of a dataset to write and the definition of a
dataset's part (a column, an index, a tag). Left-alone objects and the scanned namespaces
close the page. The shell, the style and the escaping are lance_sync.plan.html_page's.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from typing import Any

from lance_sync.model.actions import Action, Destruction, ObjectState, Plan, Reason
from lance_sync.plan.html_page import (
    attention,
    collapsed_list,
    counts_list,
    escaper,
    group_section,
    html_page,
    report_head,
    toolbar,
)
from lance_sync.plan.render import (
    SYMBOLS,
    describe_dataset,
    destruction_tag,
    header_files,
    partial_lines,
    replaced,
    scope_lines,
    summary_counts,
    summary_line,
    title,
    violation_line,
)

Escape = Callable[[object], str]
#: a row of the before/after table: the field, its value before and after (None: not there)
Row = tuple[str, str | None, str | None]


def render_html(plan: Plan) -> str:
    """The whole page for `plan`."""
    escape = escaper(plan.base_dir)
    body = [_head(plan, escape), _attention(plan, escape)]
    if plan.actions:
        body.append(toolbar(len(plan.actions), "actions"))
        body += [group_section(backend, [_action(a, escape) for a in actions], "actions")
                 for backend, actions in _by_backend(plan.actions).items()]
    body.append(_left_alone(plan, escape))
    return html_page(f"lance-sync {title(plan)}: {plan.owner}", "".join(body))


def _head(plan: Plan, escape: Escape) -> str:
    return (report_head(title(plan), plan.owner, header_files(plan), plan.created_at, plan.tool_version,
                        summary_line(plan), escape)
            + counts_list(summary_counts(plan)))


def _attention(plan: Plan, escape: Escape) -> str:
    """What a reviewer must not miss: destruction, refusals, a partial plan, warnings and notes."""
    danger = []
    for what, words in ((Destruction.DATA, "action(s) destroy data: apply needs --allow-drop"),
                        (Destruction.IDENTITY, f"table(s) replaced ({replaced(plan)}): apply needs --allow-replace"),
                        (Destruction.ACCESS, "revoke(s): principals lose privileges; apply needs --allow-revoke")):
        if plan.destroying(what):
            danger.append(f"<b>{len(plan.destroying(what)):,}</b> {escape(words)}")
    if plan.blocked():
        danger.append(f"<b>{len(plan.blocked()):,}</b> blocked action(s): apply will refuse this plan")
    if plan.policy_violations:
        danger.append(f"<b>{len(plan.policy_violations):,}</b> policy violation(s): apply will refuse this plan"
                      + "<ul>" + "".join(f"<li>{escape(violation_line(v))}</li>" for v in plan.policy_violations)
                      + "</ul>")
    other = [escape(line) for line in partial_lines(plan)]
    if plan.adopted_unmarked:
        other.append(f"{len(plan.adopted_unmarked):,} table(s) adopted without a mark (the backend cannot stamp "
                     "them in place): leaving the manifest will leave them registered")
    other += [f"Warning: {escape(w)}" for w in plan.warnings] + [f"Note: {escape(n)}" for n in plan.notes]
    return attention(danger, danger=True) + attention(other)


def _by_backend(actions: Sequence[Action]) -> dict[str, list[Action]]:
    """The actions of each backend in plan order, the backends in the order they first act."""
    groups: dict[str, list[Action]] = {}
    for action in actions:
        groups.setdefault(action.backend, []).append(action)
    return groups


def _action(action: Action, escape: Escape) -> str:
    """One action, collapsed: its head in the summary, the rest inside."""
    verb = action.verb.value
    title = (action.headline if action.is_grant else f"{action.name} {action.shown_id}" if action.part is None
             else f"{action.name} {action.part} on {action.shown_id}")
    head = (f"<summary><span class=\"sym\">{html.escape(SYMBOLS[action.verb])}</span>{escape(title)}"
            f"{_badges(action)}</summary>")
    return (f"<details class=\"item v-{verb}\" data-kind=\"{action.kind.value}\" data-verb=\"{verb}\">{head}"
            f"<div class=\"body\">{_action_body(action, escape)}</div></details>\n")


def _badges(action: Action) -> str:
    badges = []
    if action.reason == Reason.ADOPT:
        badges.append(("adopt", False))
    tag = destruction_tag(action)
    if tag is not None:
        badges.append((tag.strip("[]"), True))
    if action.blocked:
        badges.append(("blocked", True))
    if action.warnings:
        badges.append((f"{len(action.warnings)} warning(s)", False))
    return "".join(f"<span class=\"badge{' danger' if danger else ''}\">{html.escape(text)}</span>"
                   for text, danger in badges)


def _action_body(action: Action, escape: Escape) -> str:
    parts = [f"<p>{escape(action.detail)}</p>"]
    if action.blocked:
        parts.append(f"<p class=\"attention danger\">Blocked: {escape(action.blocked)}</p>")
    parts += [f"<p class=\"attention\">Warning: {escape(w)}</p>" for w in action.warnings]
    before = None if action.is_grant and action.reason == Reason.ABSENT else action.before
    rows = state_rows(before, action.after)
    if rows:
        parts.append(_diff_table(rows, escape))
    facts = []
    if action.part is not None:
        facts.append(f"{action.kind.value} <code>{escape(action.part)}</code> of the dataset at "
                     f"<code>{escape(action.location or '')}</code>")
    if action.registrations:
        facts.append("registered as: " + ", ".join(f"<code>{escape(f'{r.backend}: {r.display_id or r.id}')}</code>"
                                                   for r in action.registrations))
    if action.dataset is not None:
        facts.append(f"data: {escape(describe_dataset(action.dataset))}")
    if action.depends_on:
        facts.append(f"after {len(action.depends_on)} other action(s)")
    facts.append(f"reason: {action.reason.value}")
    parts.append("<ul class=\"plain note\">" + "".join(f"<li>{fact}</li>" for fact in facts) + "</ul>")
    return "".join(parts)


def _diff_table(rows: list[Row], escape: Escape) -> str:
    body = []
    for field, old, new in rows:
        change = "same" if old == new else "added" if old is None else "removed" if new is None else "changed"
        body.append(f"<tr class=\"{change}\"><th scope=\"row\">{escape(field)}</th>{_cell(old, escape)}"
                    f"{_cell(new, escape)}</tr>")
    return ("<table class=\"diff\"><thead><tr><th>field</th><th>before</th><th>after</th></tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _cell(value: str | None, escape: Escape) -> str:
    return "<td><span class=\"none\">(none)</span></td>" if value is None else f"<td>{escape(value)}</td>"


def state_rows(before: ObjectState | None, after: ObjectState | None) -> list[Row]:
    """Every field of either state, with its value before and after (None where a state lacks
    it), in the order the fields are read: the before/after view of one action."""
    old, new = state_fields(before), state_fields(after)
    return [(field, old.get(field), new.get(field)) for field in {**old, **new}]


def state_fields(state: ObjectState | None) -> dict[str, str]:
    """An object's compared state as named fields: 'location', 'property tier', 'column id', ..."""
    if state is None:
        return {}
    fields: dict[str, str] = {}
    if state.privileges is not None:
        fields["privileges"] = ", ".join(state.privileges) or "(none)"
    if state.principals is not None:
        fields["managed principals"] = ", ".join(state.principals) or "(none)"
    if state.location:
        fields["location"] = state.location
    if state.version is not None:
        fields["version"] = str(state.version)
    fields.update((f"property {key}", value) for key, value in sorted(state.properties.items()))
    for column in state.columns or []:
        fields[f"column {column.get('name')}"] = _column_text(column)
    if state.source:
        fields["source"] = " ".join(str(state.source[key]) for key in ("format", "path") if state.source.get(key))
    fields.update((f"definition {key}", _value(value)) for key, value in sorted((state.definition or {}).items()))
    return fields


def _column_text(column: dict[str, Any]) -> str:
    """'int64, not null', with any other attribute of the column after it."""
    text = _value(column.get("type"))
    if column.get("nullable") is False:
        text += ", not null"
    rest = {key: value for key, value in column.items() if key not in ("name", "type", "nullable")}
    return text + "".join(f", {key} {_value(value)}" for key, value in sorted(rest.items()))


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _left_alone(plan: Plan, escape: Escape) -> str:
    return (collapsed_list(f"Adopted without a mark ({len(plan.adopted_unmarked):,})",
                           [escape(f"{o.kind.value} {o.backend}: {o.display_id}") for o in plan.adopted_unmarked])
            + collapsed_list(f"Left alone ({len(plan.left_alone):,}): not owned by '{plan.owner}'",
                             [escape(f"{o.kind.value} {o.backend}: {o.display_id} ({o.reason})")
                              for o in plan.left_alone])
            + collapsed_list(f"Grants left alone on {len(plan.grants_left_alone):,} object(s)",
                             [escape(f"{o.kind.value} {o.backend}: {o.display_id}: {o.reason}")
                              for o in plan.grants_left_alone])
            + collapsed_list("Scanned namespaces", [escape(line.strip()) for line in scope_lines(plan)]))
