"""The `grants:` of a namespace entry or a table registration, checked offline against the
backend's rules (lance_sync.model.backend_config.BackendRules): privileges the backend has on
that object, principals it can name. A backend with no grants (Iceberg REST, dir) refuses them
by name."""

from __future__ import annotations

from collections.abc import Callable

from lance_sync.model.desired import BackendSpec
from lance_sync.model.grants import NAMED, DeclaredGrants, GrantsMode, Securable, format_privileges

#: reports a problem at a path below the entry: (message, path, whether it is about the key)
Fail = Callable[[str, tuple[str | int, ...], bool], None]


def declared_grants(spec: BackendSpec, kind: Securable, id: tuple[str, ...], grants: dict[str, list[str]] | None,
                    mode: GrantsMode | None, fail: Fail, where: str | None = None) -> DeclaredGrants | None:
    """The grants of an entry that declares `grants` or a `grants_mode`, in canonical spelling;
    None when the backend has none to give. Problems go to `fail`, with the path below the
    entry (('grants', principal) ...)."""
    allowed = spec.rules.grant_privileges(kind, id, spec.config)
    if not allowed:
        what = "grants" if grants is not None else "grants_mode"
        fail(f"backend '{spec.name}' ({spec.type}) has no grants on a {kind} like "
             f"'{spec.format_id(id)}': {what} cannot be declared here", (what,), True)
        return None
    checked: dict[str, frozenset[str]] = {}
    for principal, privileges in (grants or {}).items():
        problem = spec.rules.check_principal(principal, spec.config)
        if problem:
            fail(f"principal '{principal}': {problem}", ("grants", principal), True)
            continue
        canonical = []
        for index, privilege in enumerate(privileges):
            name = spec.rules.canonical_privilege(privilege)
            if name not in allowed:
                fail(f"'{privilege}' is not a {spec.type} privilege on a {kind} (known: "
                     f"{format_privileges(allowed)})", ("grants", principal, index), False)
            canonical.append(name)
        checked[principal] = frozenset(canonical)
    return DeclaredGrants(checked, mode or spec.grants_mode or NAMED, where)
