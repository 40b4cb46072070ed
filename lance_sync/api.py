"""lance-sync from Python: the command line's commands as functions, returning what it renders.

    from lance_sync import api

    state = api.load("lance-sync.yaml")          # DesiredState: validated, ${VAR} resolved
    plan = api.plan(state)                        # Plan: plan.actions, plan.has_changes, ...
    print(api.render(plan))                       # as `lance-sync plan` prints it
    result = api.apply(state, allow_drop=False)   # ApplyResult: plan, status, report
    report = api.verify(state)                    # VerifyReport: report.broken, ...
    found = api.discover(state, "/data/lake")     # Lance datasets no backend registers
    differs = api.drift(state)                    # DriftReport: differs.items, .has_drift
    held = api.held_leases(state)                 # [(where, LeaseRecord)]; api.unlock(state, id)
    imported = api.import_manifest("lake", state) # Imported: the manifest's text, what was left out

`lance-sync apply` is `apply` with hooks that print: the same leases (one apply at a time per
owner and backend), the same guards for fresh, saved and rollback plans, the same journal and
rollback plan. A failure raises a `lance_sync.errors.LanceSyncError` whose `exit_code` is the
CLI's: `GuardRefusal` (4) for a refusal, `ManifestError(s)` for a bad manifest; catalog errors
are `lance_namespace.errors` classes. Nothing is printed; `on_progress` hooks take messages.
No error raised here, no rendered or saved plan, holds a registered secret (`lance_sync.model.secrets`).

Every command of the command line that talks to a catalog runs through here (`validate` and
`schema` read files only). Each function builds the drivers it needs from the manifest (or
the saved plan, or the backend type given to `import_manifest`), or uses the `drivers` given,
as `connect` returns them.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import ValidationError

from lance_sync.apply.execute import (
    ApplyOptions,
    ApplyReport,
    Outcome,
    check_flags,
    check_live,
    execute,
    touched_ids,
)
from lance_sync.apply.lease import Leases, lease_stores
from lance_sync.drivers import connect_backends, connect_templates
from lance_sync.drivers.base import Drivers
from lance_sync.manifest import load_manifest
from lance_sync.model.actions import PLAN_FORMAT_VERSION, Plan
from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import ExitCode, LanceSyncError
from lance_sync.model.secrets import mask, mask_exception
from lance_sync.model.shared import DEFAULT_PARALLELISM, Progress

if TYPE_CHECKING:
    from lance_sync.apply.lease import LeaseRecord, LeaseStore
    from lance_sync.check.drift import DriftReport
    from lance_sync.check.verify import VerifyReport
    from lance_sync.data.inspection import Engine
    from lance_sync.manifest.importer import Imported

ApplyStatus = Literal["no_changes", "dry_run", "applied", "partly_failed"]
F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ApplyHooks", "ApplyResult", "apply", "connect", "discover", "drift", "held_leases", "import_manifest",
           "load", "load_plan", "plan", "render", "save_plan", "unlock", "verify"]


def _masking_errors(function: F) -> F:
    """Errors leave `function` with every registered secret masked in their text (a driver
    masks what servers send; this also covers errors raised by the libraries underneath)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception as error:
            mask_exception(error)
            raise

    return wrapper  # type: ignore[return-value]


def load(paths: str | Path | Sequence[str | Path], policy_file: str | Path | None = None) -> DesiredState:
    """Load, merge (in order: a base, then overlays), validate and check manifest files; a
    policy file's rules join the manifest's (`--policy`)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    return load_manifest([str(path) for path in paths],
                         policy_file=str(policy_file) if policy_file is not None else None)


@_masking_errors
def connect(source: DesiredState | Plan) -> Drivers:
    """A driver per backend of a loaded manifest, or of a saved plan (its `${VAR}` secrets read
    from the environment)."""
    if isinstance(source, Plan):
        return connect_templates(source.backends)
    return connect_backends(source.backends)


@_masking_errors
def plan(state: DesiredState, *, targets: Sequence[str] = (), scan_all: bool = False, parallelism: int = DEFAULT_PARALLELISM,
         drivers: Drivers | None = None, on_progress: Progress | None = None) -> Plan:
    """What apply would change (`lance-sync plan`), checked against the manifest's policy:
    `targets` (BACKEND:ID globs) limit it to those objects and what they need; `scan_all` lists
    every namespace of every backend to find owned objects that left the manifest anywhere."""
    from lance_sync.plan.planner import build_plan

    return build_plan(state, drivers or connect(state), parallelism, on_progress, scan_all, targets=targets)


def render(plan: Plan, output_format: str = "text", colour: bool = False) -> str:
    """The plan as `lance-sync plan --format text|json|markdown` prints it (masked)."""
    from lance_sync.plan.render import render_json, render_markdown, render_text

    if output_format == "json":
        return mask(render_json(plan))
    if output_format == "markdown":
        return mask(render_markdown(plan))
    if output_format == "text":
        return mask(render_text(plan, colour=colour))
    raise ValueError(f"unknown plan format '{output_format}' (text, json or markdown)")


def save_plan(plan: Plan, path: str | Path) -> None:
    """Save a plan for a later `apply` (`lance-sync plan --out`); secrets stay `${VAR}`, and
    any other text that holds one is masked."""
    Path(path).write_text(mask(plan.model_dump_json(indent=2)) + "\n", encoding="utf-8")


def load_plan(path: str | Path, policy_file: str | Path | None = None) -> Plan:
    """A plan saved by `save_plan` or `lance-sync plan --out`, or a rollback plan; with a
    policy file, checked against its rules (apply refuses what breaks them)."""
    saved = _read_plan(path)
    if policy_file is not None:
        from lance_sync.manifest import load_policy
        from lance_sync.model.policy import enforce

        enforce(load_policy(str(policy_file), saved.backends), saved)
    return saved


def _read_plan(path: str | Path) -> Plan:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise LanceSyncError(f"{path}: cannot read the plan: {error.strerror}") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise LanceSyncError(f"{path}: not a lance-sync plan (not JSON: {error})") from None
    version = document.get("format_version") if isinstance(document, dict) else None
    if isinstance(version, int) and version != PLAN_FORMAT_VERSION:
        raise LanceSyncError(f"{path}: a plan of format {version}, saved by another lance-sync version; this "
                             f"one applies format {PLAN_FORMAT_VERSION}: run `lance-sync plan --out` again")
    try:
        return Plan.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LanceSyncError(f"{path}: not a lance-sync plan ({where}: {first['msg']})") from None


@dataclass
class ApplyHooks:
    """What a caller hears while `apply` runs; each is optional."""

    #: planning progress messages
    on_progress: Progress | None = None
    #: the plan, as soon as it is made and before the guards run
    on_plan: Callable[[Plan], None] | None = None
    #: asked after the guards passed, before anything changes: False cancels the apply
    confirm: Callable[[Plan], bool] | None = None
    #: each action's outcome as it finishes
    on_outcome: Callable[[Outcome], None] | None = None
    #: another apply holds a lease and this one waits (with a lock timeout)
    on_wait: Progress | None = None


@dataclass
class ApplyResult:
    """What `apply` did: the plan it ran, how it ended, and (when it ran) each action's outcome,
    the journal and the rollback plan."""

    plan: Plan
    status: ApplyStatus
    report: ApplyReport | None = None

    @property
    def exit_code(self) -> ExitCode:
        """The CLI's: 0, or 3 when actions failed or were skipped."""
        return self.report.exit_code if self.report is not None else ExitCode.OK


@_masking_errors
def apply(target: DesiredState | Plan, *, allow_drop: bool = False, allow_replace: bool = False,
          dry_run: bool = False, lock_timeout: float = 0, targets: Sequence[str] = (), scan_all: bool = False,
          parallelism: int = DEFAULT_PARALLELISM, spark: str | None = None, state_dir: str | Path | None = None,
          drivers: Drivers | None = None, hooks: ApplyHooks | None = None) -> ApplyResult:
    """Carry out a fresh plan of a manifest (`target` a DesiredState: planned while this apply
    holds the leases, limited to `targets` if given) or a saved or rollback plan (`target` a
    Plan), as `lance-sync apply` does.

    Refusals raise GuardRefusal: a policy violation, blocked actions, data loss without
    `allow_drop`, a replace without `allow_replace`, a stale plan, a protected object, another
    apply's lease (waited for up to `lock_timeout` seconds). Journals and rollback plans go to `state_dir` (default:
    `.lance-sync` beside the manifest, or in the current directory for a plan).
    """
    if targets and isinstance(target, Plan):
        raise LanceSyncError("targets limit a fresh plan: plan the manifest with targets instead")
    hooks = hooks or ApplyHooks()
    drivers = drivers or connect(target)
    default_dir = Path(target.base_dir) if isinstance(target, DesiredState) else Path.cwd()
    options = ApplyOptions(allow_drop=allow_drop, allow_replace=allow_replace, parallelism=parallelism,
                           spark=spark, state_dir=Path(state_dir) if state_dir else default_dir / ".lance-sync")
    run = _Run(drivers, options, hooks, dry_run)

    if isinstance(target, DesiredState):
        # planned under the leases, so the plan reads what this apply will change: its creates
        # need no live check
        def planned() -> Plan:
            return plan(target, targets=targets, scan_all=scan_all, parallelism=parallelism, drivers=drivers,
                        on_progress=hooks.on_progress)

        if dry_run:
            return run(planned(), None, include_creates=False)
        leases = Leases(lease_stores(drivers, target.ids_by_backend(), target.owner), target.owner)
        with leases.holding(lock_timeout, on_wait=hooks.on_wait):
            return run(planned(), leases, include_creates=False)
    if dry_run or not target.has_changes:
        return run(target, None, include_creates=True)
    leases = Leases(lease_stores(drivers, touched_ids(target), target.owner), target.owner)
    with leases.holding(lock_timeout, on_wait=hooks.on_wait):
        return run(target, leases, include_creates=True)


class _Run:
    """The steps after planning: guards, confirmation, execution."""

    def __init__(self, drivers: Drivers, options: ApplyOptions, hooks: ApplyHooks, dry_run: bool):
        self.drivers = drivers
        self.options = options
        self.hooks = hooks
        self.dry_run = dry_run

    def __call__(self, plan: Plan, leases: Leases | None, include_creates: bool) -> ApplyResult:
        """`include_creates`: creates are checked against live objects too (a saved plan's,
        made before this apply held the leases)."""
        if self.hooks.on_plan:
            self.hooks.on_plan(plan)
        if not plan.has_changes and not plan.policy_violations:
            return ApplyResult(plan, "no_changes")
        check_flags(plan, self.options)
        check_live(plan, self.drivers, include_creates=include_creates, parallelism=self.options.parallelism)
        if self.dry_run:
            return ApplyResult(plan, "dry_run")
        if self.hooks.confirm and not self.hooks.confirm(plan):
            raise LanceSyncError("apply cancelled")
        report = execute(plan, self.drivers, self.options, on_done=self.hooks.on_outcome,
                         stop=leases.lost if leases is not None else None)
        return ApplyResult(plan, "applied" if report.exit_code == ExitCode.OK else "partly_failed", report)


@_masking_errors
def verify(state: DesiredState, *, engine: Engine = "auto", spark: str | None = None, parallelism: int = DEFAULT_PARALLELISM,
           drivers: Drivers | None = None, on_progress: Progress | None = None) -> VerifyReport:
    """Check every table location in scope (`lance-sync verify`): `report.broken` lists what is not
    a valid Lance dataset, dangling registrations and catalog column drift."""
    from lance_sync.check.verify import verify as run_verify

    return run_verify(state, drivers or connect(state), engine, spark, parallelism, on_progress)


@_masking_errors
def discover(state: DesiredState, root: str, *, engine: Engine = "auto", spark: str | None = None,
             storage_options: dict[str, str] | None = None, parallelism: int = DEFAULT_PARALLELISM,
             drivers: Drivers | None = None, on_progress: Progress | None = None) -> list[str]:
    """Lance datasets under `root` that no backend of the manifest registers (`lance-sync discover`)."""
    from lance_sync.check.discover import discover as run_discover

    return run_discover(state, drivers or connect(state), root, engine, spark, storage_options,
                        parallelism, on_progress)


@_masking_errors
def drift(state: DesiredState, *, scan_all: bool = False, parallelism: int = DEFAULT_PARALLELISM,
          drivers: Drivers | None = None, on_progress: Progress | None = None) -> DriftReport:
    """What differs between the manifest and the catalogs, and the repair the next apply would do
    (`lance-sync drift`): `report.items`, `report.has_drift`. Objects another owner (or nobody)
    owns are never drift."""
    from lance_sync.check.drift import drift_report

    return drift_report(state, drivers or connect(state), parallelism, on_progress, scan_all)


@_masking_errors
def held_leases(state: DesiredState, *, drivers: Drivers | None = None) -> list[tuple[str, LeaseRecord]]:
    """Each apply lease held for the manifest's owner in its backends, and each takeover in
    progress, with where it is (`lance-sync unlock` without an id)."""
    from lance_sync.apply.lease import current_leases

    return current_leases(_lease_stores_of(state, drivers))


@_masking_errors
def unlock(state: DesiredState, lease_id: str, *, drivers: Drivers | None = None) -> list[str]:
    """Remove the apply lease `lease_id` of an apply that is gone, and any takeover by it, from
    the manifest's backends (`lance-sync unlock LEASE_ID`); where it was removed. Only for a
    holder that died: a lease whose holder expired, or whose process is gone on this host, is
    taken over by the next apply anyway."""
    from lance_sync.apply.lease import unlock as remove_lease

    removed = remove_lease(_lease_stores_of(state, drivers), lease_id)
    if not removed:
        raise LanceSyncError(f"no lease {lease_id} for owner '{state.owner}' in this manifest's backends; "
                             "run `lance-sync unlock` without an id to list them")
    return removed


def _lease_stores_of(state: DesiredState, drivers: Drivers | None) -> list[LeaseStore]:
    return lease_stores(drivers or connect(state), state.ids_by_backend(), state.owner)


@_masking_errors
def import_manifest(backend: str, state: DesiredState | None = None, *, backend_type: str | None = None,
                    properties: Mapping[str, str] | None = None, owner: str | None = None,
                    namespaces: Sequence[str] = (), base_dir: str | Path | None = None,
                    drivers: Drivers | None = None, on_progress: Progress | None = None) -> Imported:
    """A manifest of what `backend` holds under `namespaces` (default: its root), to adopt an
    existing catalog (`lance-sync import`): `imported.text`, and in `imported.left_out` what
    another owner manages.

    The backend is the one of that name in `state`, whose owner is the default `owner`; or,
    without a manifest, one of `backend_type` with `properties` (`storage.x` keys are storage
    options; secrets as `${VAR}`), and then `owner` is required. Local paths below `base_dir`
    (where the manifest goes; default: the current directory) are written relative to it.
    """
    from lance_sync.manifest.importer import OWNER_NEEDED, backend_template
    from lance_sync.manifest.importer import import_manifest as run_import

    if state is not None and backend_type is not None:
        raise LanceSyncError("import reads a backend of the manifest (state) or one of backend_type, not both")
    if backend_type is not None:
        if not owner:
            raise LanceSyncError(f"an owner is required with a backend_type: {OWNER_NEEDED}")
        template = backend_template(backend_type, properties or {})
        driver = drivers[backend] if drivers else connect_templates({backend: template})[backend]
    elif state is None:
        raise LanceSyncError("import reads a backend of the manifest (state) or one of backend_type")
    else:
        if backend not in state.backends:
            raise LanceSyncError(f"backend '{backend}' is not defined in the manifest")
        spec = state.backends[backend]
        template = spec.template
        driver = drivers[backend] if drivers else connect_backends({backend: spec})[backend]
        owner = owner or state.owner
    folder = os.path.abspath(base_dir) if base_dir is not None else os.getcwd()
    return run_import(backend, driver, template, namespaces, owner, folder, on_progress)
