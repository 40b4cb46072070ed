"""lance-sync from Python: the command line's commands as functions, returning what it renders.

    from lance_sync import api

    state = api.load("lance-sync.yaml")          # DesiredState: validated, ${VAR} resolved
    plan = api.plan(state)                        # Plan: plan.actions, plan.has_changes, ...
    print(api.render(plan))                       # as `lance-sync plan` prints it
    result = api.apply(state, allow_drop=False)   # ApplyResult: plan, status, report
    report = api.verify(state)                    # VerifyReport: report.broken, ...
    found = api.discover(state, "/data/lake")     # Lance datasets no backend registers
    differs = api.drift(state)                    # DriftReport: differs.items, .has_drift
    estate = api.status(state)                    # StatusReport: each object's sync and health
    held = api.held_leases(state)                 # [(where, LeaseRecord)]; api.unlock(state, id)
    imported = api.import_manifest("lake", state) # Imported: the manifest's text, what was left out
    last = api.reconcile(["lance-sync.yaml"], once=True)  # CycleReport of one unattended cycle

`lance-sync apply` is `apply` with hooks that print: one apply session (lance_sync.apply.session,
which a reconcile cycle runs too) with the same leases (one apply at a time per owner and
backend), the same guards for fresh, saved and rollback plans, the same journal and rollback
plan. A failure raises a `lance_sync.model.errors.LanceSyncError` whose `exit_code` is the CLI's:
`GuardRefusal` (4) for a refusal, `ManifestError(s)` for a bad manifest; catalog errors are
`lance_namespace.errors` classes. Nothing is printed; `on_progress` hooks take messages.
No error raised here, no rendered or saved plan, holds a registered secret (`lance_sync.model.secrets`).

Every command of the command line runs through here; importing this module loads no driver
and no Spark (`validate` stays cheap). Each function builds the drivers it needs from the manifest (or
the saved plan, or the backend type given to `import_manifest`), or uses the `drivers` given,
as `connect` returns them, and closes the drivers it built when it ends.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import ValidationError

from lance_sync.drivers import close_drivers, connect_backends, connect_drivers, connect_templates
from lance_sync.manifest import load_manifest
from lance_sync.model.actions import PLAN_FORMAT_VERSION, Action, Destruction, Plan
from lance_sync.model.desired import DesiredState
from lance_sync.model.errors import ExitCode, LanceSyncError
from lance_sync.model.secrets import mask, mask_exception
from lance_sync.model.shared import DEFAULT_PARALLELISM, STATE_DIRECTORY, Progress

if TYPE_CHECKING:
    import threading

    from lance_sync.apply.lease import LeaseRecord, LeaseStore
    from lance_sync.apply.reconcile import CycleReport
    from lance_sync.apply.report import ApplyReport, Outcome
    from lance_sync.apply.session import Fresh, Saved
    from lance_sync.check.drift import DriftReport
    from lance_sync.check.status import StatusReport
    from lance_sync.check.verify import VerifyReport
    from lance_sync.data.inspection import Engine
    from lance_sync.drivers.base import Drivers
    from lance_sync.manifest.history import Baseline
    from lance_sync.manifest.importer import Imported

ApplyStatus = Literal["no_changes", "dry_run", "applied", "partly_failed"]
SchemaDocument = Literal["manifest", "overlay", "plan", "policy"]
F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ApplyHooks", "ApplyResult", "apply", "connect", "discover", "drift", "held_leases", "import_manifest",
           "json_schema", "load", "load_plan", "plan", "reconcile", "render", "save_plan", "status", "unlock", "verify"]


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


def load(paths: str | Path | Sequence[str | Path], policy_file: str | Path | None = None, *,
         allow_unset: bool = False, positions: bool = False, plan_next: bool = False) -> DesiredState:
    """Load, merge (in order: a base, then overlays), validate and check manifest files; a
    policy file's rules join the manifest's (`--policy`). With `allow_unset` (`validate`), a
    `${VAR}` that is not set leaves its value unchecked (listed in `state.unset`) instead of
    failing. With `positions`, every declared object knows its file and line (slower for large
    manifests). With `plan_next` (a plan of the state follows), the planner's modules are
    imported while a worker process parses a large file. Reads files only: no driver, no
    catalog."""
    if isinstance(paths, str | Path):
        paths = [paths]
    return load_manifest([str(path) for path in paths], policy_file=str(policy_file) if policy_file is not None else None,
                         allow_unset=allow_unset, positions=positions, meanwhile=_import_planner if plan_next else None)


def json_schema(document: SchemaDocument = "manifest") -> dict[str, Any]:
    """The JSON Schema of manifests, overlays, plans or policy files (`lance-sync schema`)."""
    from lance_sync.manifest.schema_models import (
        manifest_json_schema,
        overlay_json_schema,
        policy_json_schema,
    )
    from lance_sync.model.actions import plan_json_schema

    schemas = {"manifest": manifest_json_schema, "overlay": overlay_json_schema, "plan": plan_json_schema,
               "policy": policy_json_schema}
    return schemas[document]()


@_masking_errors
def connect(source: DesiredState | Plan) -> Drivers:
    """A driver per backend of a loaded manifest, or of a saved plan (its `${VAR}` secrets read
    from the environment)."""
    return connect_drivers(source)


@_masking_errors
def plan(state: DesiredState, *, targets: Sequence[str] = (), scan_all: bool = False, parallelism: int = DEFAULT_PARALLELISM,
         drivers: Drivers | None = None, on_progress: Progress | None = None, baseline: Baseline | None = None) -> Plan:
    """What apply would change (`lance-sync plan`), checked against the manifest's policy:
    `targets` (BACKEND:ID globs) limit it to those objects and what they need; `baseline` (see
    `load_baseline`) to the manifest entries changed since a git revision; `scan_all` lists
    every namespace of every backend to find owned objects that left the manifest anywhere."""
    from lance_sync.plan.planner import build_plan

    with _connected(state, drivers) as connected:
        return build_plan(state, connected, parallelism, on_progress, scan_all, targets=targets, baseline=baseline)


def load_changed(paths: Sequence[str], ref: str, policy_file: str | None = None) -> tuple[DesiredState, Baseline]:
    """`load_baseline` and `load` at once, for a plan of what changed since `ref`: a file the
    revision has as it is now is parsed once, for the comparison and for the desired state,
    and only the tables that plan compares are built (`DesiredState.unbuilt`: the others, as
    written); such a state is planned, applied or checked for drift with that baseline only."""
    from lance_sync.manifest.history import read_baseline

    # the working tree's files are read once: the comparison's parse is the load's
    baseline, document = read_baseline(ref, paths, policy_file, meanwhile=_import_planner)
    from lance_sync.plan.changes import tables_to_build  # imported meanwhile

    # only the tables the plan compares are built (the checks across entries cover all)
    return load_manifest(list(paths), policy_file=policy_file, tables=tables_to_build(baseline),
                         document=document), baseline


def _import_planner() -> None:
    """The planner's modules (the Lance Namespace client's models among them, a third of a
    second): a plan of the changes comes next, so they are imported while a worker parses."""
    import lance_sync.plan.planner  # noqa: F401


def load_baseline(ref: str, files: Sequence[str], policy_file: str | None = None) -> Baseline:
    """The manifest `files` as git revision `ref` had them, for plans of what changed since
    (`--changed-since REF`); LanceSyncError outside a git repository or for an unknown `ref`."""
    from lance_sync.manifest.history import load_baseline as at_revision

    return at_revision(ref, files, policy_file)


def render(plan: Plan, output_format: str = "text", colour: bool = False,
           allowed: Collection[Destruction] = ()) -> str:
    """The plan as `lance-sync plan --format text|json|markdown|html` prints it (masked); `allowed`:
    the destructions an apply was allowed (`--allow-drop`, ...), which its summary says."""
    from lance_sync.plan.render import render_json, render_markdown, render_text

    if output_format == "json":
        return mask(render_json(plan))
    if output_format == "markdown":
        return mask(render_markdown(plan, allowed=allowed))
    if output_format == "text":
        return mask(render_text(plan, colour=colour, allowed=allowed))
    if output_format == "html":
        from lance_sync.plan.render_html import render_html

        return mask(render_html(plan))
    raise ValueError(f"unknown plan format '{output_format}' (text, json, markdown or html)")


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
        raise LanceSyncError(f"{path}: not a lance-sync plan ({_what_it_is(path, text) or f'not JSON: {error}'})") \
            from None
    version = document.get("format_version") if isinstance(document, dict) else None
    if isinstance(version, int) and version != PLAN_FORMAT_VERSION:
        raise LanceSyncError(f"{path}: a plan of format {version}, saved by another lance-sync version; this "
                             f"one applies format {PLAN_FORMAT_VERSION}: run `lance-sync plan --out` again")
    try:
        if isinstance(document, dict) and document.get("document") == "rollback":
            from lance_sync.apply.rollback import read_rollback

            return read_rollback(document)
        return Plan.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise LanceSyncError(f"{path}: not a lance-sync plan ({where}: {first['msg']})") from None


def _what_it_is(path: str | Path, text: str) -> str | None:
    """What a file given as a plan is instead, when it is a manifest or an apply's journal."""
    if Path(path).suffix in (".yaml", ".yml") or text.lstrip().startswith("version:"):
        return (f"it is a manifest: give a manifest with -f (`lance-sync plan -f {path}`, "
                f"`lance-sync apply -f {path}`)")
    try:
        first = json.loads(text.partition("\n")[0])
    except ValueError:
        return None
    if isinstance(first, dict) and "event" in first:
        return ("it is an apply's journal, one JSON record a line; the rollback plan beside it "
                "(.rollback.json) is one")
    return None


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
    #: an action's long step starts (a Spark start, a write from a source): what it waits for
    on_step: Callable[[Action, str], None] | None = None


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
          allow_revoke: bool = False, baseline: Baseline | None = None,
          dry_run: bool = False, lock_timeout: float = 0, targets: Sequence[str] = (), scan_all: bool = False,
          parallelism: int = DEFAULT_PARALLELISM, spark: str | None = None, state_dir: str | Path | None = None,
          drivers: Drivers | None = None, hooks: ApplyHooks | None = None) -> ApplyResult:
    """Carry out a fresh plan of a manifest (`target` a DesiredState: planned while this apply
    holds the leases, limited to `targets` if given) or a saved or rollback plan (`target` a
    Plan), as `lance-sync apply` does.

    Refusals raise GuardRefusal: a policy violation, blocked actions, data loss without
    `allow_drop`, a replace without `allow_replace`, a revoke without `allow_revoke`, a stale plan, a protected object, another
    apply's lease (waited for up to `lock_timeout` seconds). Journals and rollback plans go to `state_dir` (default:
    `.lance-sync` beside the manifest, or in the current directory for a plan).
    """
    from lance_sync.apply.options import ApplyOptions
    from lance_sync.apply.session import ApplySession, Fresh, Saved

    if (targets or baseline) and isinstance(target, Plan):
        raise LanceSyncError("targets and a baseline limit a fresh plan: plan the manifest with them instead")
    hooks = hooks or ApplyHooks()
    default_dir = Path(target.base_dir) if isinstance(target, DesiredState) else Path.cwd()
    options = ApplyOptions(allow_drop=allow_drop, allow_replace=allow_replace, allow_revoke=allow_revoke,
                           parallelism=parallelism, on_step=hooks.on_step,
                           spark=spark, state_dir=Path(state_dir) if state_dir else default_dir / STATE_DIRECTORY)
    if isinstance(target, DesiredState):
        def planned(drivers: Drivers) -> Plan:
            return plan(target, targets=targets, scan_all=scan_all, parallelism=parallelism, drivers=drivers,
                        on_progress=hooks.on_progress, baseline=baseline)

        source: Fresh | Saved = Fresh(target, planned)
    else:
        source = Saved(target)
    done = ApplySession(source, options, drivers=drivers, lock_timeout=lock_timeout, on_wait=hooks.on_wait,
                        dry_run=dry_run, review=_shown(hooks.on_plan), before_changes=_confirmed(hooks.confirm),
                        on_done=hooks.on_outcome).run()
    if done.report is not None:
        return ApplyResult(done.plan, "applied" if done.report.exit_code == ExitCode.OK else "partly_failed",
                           done.report)
    return ApplyResult(done.plan, "dry_run" if done.stage == "checked" else "no_changes")


def _shown(on_plan: Callable[[Plan], None] | None) -> Callable[[Plan], Plan]:
    """The session's review: the plan goes to `on_plan` as soon as it is made, and is applied as made."""

    def review(made: Plan) -> Plan:
        if on_plan:
            on_plan(made)
        return made

    return review


def _confirmed(confirm: Callable[[Plan], bool] | None) -> Callable[[Plan], None]:
    """Asks `confirm` once the guards passed; its False cancels the apply."""

    def before_changes(checked: Plan) -> None:
        if confirm and not confirm(checked):
            raise LanceSyncError("apply cancelled")

    return before_changes


@_masking_errors
def verify(state: DesiredState, *, engine: Engine = "auto", spark: str | None = None, parallelism: int = DEFAULT_PARALLELISM,
           drivers: Drivers | None = None, on_progress: Progress | None = None) -> VerifyReport:
    """Check every table location in scope (`lance-sync verify`): `report.broken` lists what is not
    a valid Lance dataset, dangling registrations and catalog column drift."""
    from lance_sync.check.verify import verify as run_verify

    with _connected(state, drivers) as connected:
        return run_verify(state, connected, engine, spark, parallelism, on_progress)


@_masking_errors
def discover(state: DesiredState, root: str, *, engine: Engine = "auto", spark: str | None = None,
             storage_options: dict[str, str] | None = None, parallelism: int = DEFAULT_PARALLELISM,
             drivers: Drivers | None = None, on_progress: Progress | None = None) -> list[str]:
    """Lance datasets under `root` that no backend of the manifest registers (`lance-sync discover`)."""
    from lance_sync.check.discover import discover as run_discover

    with _connected(state, drivers) as connected:
        return run_discover(state, connected, root, engine, spark, storage_options, parallelism, on_progress)


@_masking_errors
def drift(state: DesiredState, *, scan_all: bool = False, parallelism: int = DEFAULT_PARALLELISM,
          drivers: Drivers | None = None, on_progress: Progress | None = None,
          baseline: Baseline | None = None) -> DriftReport:
    """What differs between the manifest and the catalogs, and the repair the next apply would do
    (`lance-sync drift`): `report.items`, `report.has_drift`. Objects another owner (or nobody)
    owns are never drift. With `baseline`, only for the entries changed since it."""
    from lance_sync.check.drift import drift_report

    with _connected(state, drivers) as connected:
        return drift_report(state, connected, parallelism, on_progress, scan_all, baseline)


@_masking_errors
def status(state: DesiredState, *, scan_all: bool = False, parallelism: int = DEFAULT_PARALLELISM,
           state_dir: str | Path | None = None, drivers: Drivers | None = None,
           on_progress: Progress | None = None) -> StatusReport:
    """Every object the manifest declares with its sync (Synced, OutOfSync, Missing, Unknown)
    and health (Healthy, Degraded, Missing, Unknown), why, and the last apply that changed it
    (from the journals in `state_dir`, default `.lance-sync` beside the manifest) (`lance-sync
    status`): `report.objects`, `report.exit_code`. Reads only; a backend that cannot be read
    makes its objects Unknown instead of failing."""
    from lance_sync.apply.journal import last_applied
    from lance_sync.check.status import estate_status, read_estate
    from lance_sync.manifest.revision import manifest_revision

    folder = Path(state_dir) if state_dir else Path(state.base_dir) / STATE_DIRECTORY
    with _connected(state, drivers) as connected:
        reading = read_estate(state, connected, parallelism, on_progress, scan_all)
        return estate_status(state, reading, connected, last_applied(folder), manifest_revision(state.files))


@_masking_errors
def held_leases(state: DesiredState, *, drivers: Drivers | None = None) -> list[tuple[str, LeaseRecord]]:
    """Each apply lease held for the manifest's owner in its backends, and each takeover in
    progress, with where it is (`lance-sync unlock` without an id)."""
    from lance_sync.apply.lease import current_leases

    with _connected(state, drivers) as connected:
        return current_leases(_lease_stores_of(state, connected))


@_masking_errors
def unlock(state: DesiredState, lease_id: str, *, drivers: Drivers | None = None) -> list[str]:
    """Remove the apply lease `lease_id` of an apply that is gone, and any takeover by it, from
    the manifest's backends (`lance-sync unlock LEASE_ID`); where it was removed. Only for a
    holder that died: a lease whose holder expired, or whose process is gone on this host, is
    taken over by the next apply anyway."""
    from lance_sync.apply.lease import unlock as remove_lease

    with _connected(state, drivers) as connected:
        removed = remove_lease(_lease_stores_of(state, connected), lease_id)
    if not removed:
        raise LanceSyncError(f"no lease {lease_id} for owner '{state.owner}' in this manifest's backends; "
                             "run `lance-sync unlock` without an id to list them")
    return removed


def _lease_stores_of(state: DesiredState, drivers: Drivers) -> list[LeaseStore]:
    from lance_sync.apply.lease import lease_stores

    return lease_stores(drivers, state.ids_by_backend(), state.owner)


@contextlib.contextmanager
def _connected(source: DesiredState, given: Drivers | None) -> Iterator[Drivers]:
    """The drivers a caller gave (theirs to close), else ones built for `source` and closed when
    the call ends."""
    if given:
        yield given
        return
    built = connect(source)
    try:
        yield built
    finally:
        close_drivers(built)


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
        build: Callable[[], Drivers] = functools.partial(connect_templates, {backend: template})
    elif state is None:
        raise LanceSyncError("import reads a backend of the manifest (state) or one of backend_type")
    else:
        if backend not in state.backends:
            raise LanceSyncError(f"backend '{backend}' is not defined in the manifest")
        spec = state.backends[backend]
        template = spec.template
        build = functools.partial(connect_backends, {backend: spec})
        owner = owner or state.owner
    folder = os.path.abspath(base_dir) if base_dir is not None else os.getcwd()
    connected = drivers or build()
    try:
        return run_import(backend, connected[backend], template, namespaces, owner, folder, on_progress)
    finally:
        if not drivers:
            close_drivers(connected)


def reconcile(files: Sequence[str | Path], *, policy_file: str | Path | None = None, interval: float = 300.0,
              max_backoff: float = 3600.0, once: bool = False, lock_timeout: float = 0.0, scan_all: bool = False,
              parallelism: int = DEFAULT_PARALLELISM, spark: str | None = None, state_dir: str | Path | None = None,
              metrics_host: str = "127.0.0.1", metrics_port: int | None = None, status_token: str | None = None,
              on_record: Callable[[dict[str, Any]], None] = lambda record: None,
              stop: threading.Event | None = None) -> CycleReport | None:
    """Plan and apply on a schedule what the policy lets run unattended (`lance-sync
    reconcile`): each cycle re-reads the manifest files and runs the apply session with the
    policy's verbs; the rest is reported as pending. Runs until `stop` is set (one cycle with
    `once`) and returns the last cycle's report. `on_record` takes one JSON-ready record per
    event (start, each cycle, stop); `metrics_port` serves meanwhile Prometheus metrics, the
    status page (/) and its JSON (/api/status); with `status_token`, all but /healthz need
    `Authorization: Bearer <status_token>`."""
    import os
    import threading

    from lance_sync.apply.options import ApplyOptions
    from lance_sync.apply.reconcile import (
        Metrics,
        MetricsServer,
        Reconciler,
        Settings,
        default_state_dir,
        now,
        run_cycle,
    )
    from lance_sync.apply.status_page import StatusBoard
    from lance_sync.model.secrets import register

    paths = [str(path) for path in files]
    policy = str(policy_file) if policy_file is not None else None
    state = load(paths, policy_file=policy)  # a bad manifest fails at once, not in a cycle
    options = ApplyOptions(parallelism=parallelism, spark=spark,
                           state_dir=Path(state_dir) if state_dir else default_state_dir(paths))
    settings = Settings(files=paths, policy_file=policy, interval=interval, max_backoff=max_backoff,
                        lock_timeout=lock_timeout, scan_all=scan_all, options=options)
    stop = stop or threading.Event()
    metrics = Metrics(state.owner)
    board = StatusBoard(state.owner, interval)
    register(status_token)
    server = (MetricsServer(metrics, metrics_host, metrics_port, board, status_token).start()
              if metrics_port is not None else None)
    try:
        on_record({"time": now(), "event": "start", "owner": state.owner, "files": paths,
                   "interval_seconds": interval, "max_backoff_seconds": max_backoff,
                   "unattended": list(state.policy.unattended_verbs), "metrics": server.url if server else None,
                   "status_page": f"{server.base_url}/" if server else None, "pid": os.getpid()})
        if server is not None and server.exposure:
            on_record({"time": now(), "event": "warning", "message": server.exposure})
        last = Reconciler(lambda: run_cycle(settings, stop), interval, max_backoff, metrics, on_record,
                          stop, board=board).run(max_cycles=1 if once else None)
    finally:
        if server is not None:
            server.close()
    on_record({"time": now(), "event": "stop", "reason": "signal" if stop.is_set() else "once"})
    return last
