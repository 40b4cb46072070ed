"""The `lance-sync` command line: the group of commands, and what happens to their failures.

Data (plans, reports, manifests, schemas) goes to stdout; progress and diagnostics to
stderr; both are masked, so no registered secret (`lance_sync.model.secrets`) is written. Exit
codes: 0 done or no changes; 1 error; 2 changes present (plan with --detailed-exitcode);
3 apply partly failed; 4 refused by a guard.

Logs are off unless asked for: `--log-level LEVEL` (or LANCE_SYNC_LOG=LEVEL) writes the
records of lance-sync and of the libraries it uses at LEVEL and above to stderr, masked too
(`MaskingFilter`), for the command's duration.

Each command is in a module of its own (or with the commands closest to it) and runs through
`lance_sync.api`; options several share are in `shared`, what apply shows in `apply_display`.
"""

from __future__ import annotations

import atexit
import functools
import gc
import json
import logging
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from lance_sync import __version__
from lance_sync.cli.apply import apply
from lance_sync.cli.check import discover, drift, status, verify
from lance_sync.cli.deferred import defer_body
from lance_sync.cli.importer import import_
from lance_sync.cli.info import show, version
from lance_sync.cli.manifest import schema, validate
from lance_sync.cli.plan import plan
from lance_sync.cli.reconcile import reconcile
from lance_sync.cli.unlock import unlock
from lance_sync.manifest import DEFAULT_MANIFEST
from lance_sync.model.errors import ExitCode, LanceSyncError
from lance_sync.model.secrets import MaskingFilter, masked_standard_streams, register_environment

# Only what every command needs is imported by the modules above (click and lance-sync's own
# light modules): `--help` and `validate` must start fast. Each command imports the rest
# (lance_sync.api, pydantic models, drivers, lance_namespace, pyarrow, Spark) itself;
# tests/unit/test_imports.py checks.


def _fail(message: str, code: int = ExitCode.ERROR, output_format: str | None = None) -> None:
    """The error on stderr; with --format json or markdown on stdout too, in that format (the
    one JSON document; a PR comment made from the markdown shows it)."""
    click.echo(f"Error: {message}", err=True)
    if output_format == "json":
        click.echo(json.dumps({"error": message, "exit_code": int(code)}, indent=2))
    elif output_format == "markdown":
        click.echo(f"### lance-sync failed (exit {int(code)})\n\n```\n{message}\n```")
    sys.exit(code)


def handle_errors(command: click.Command) -> click.Command:
    """Turn every failure of `command` into a message and an exit code; a traceback only with
    LANCE_SYNC_DEBUG.

    With --format json, the error is also the one JSON document on stdout; with markdown, a
    markdown block on stdout.
    """
    run = command.callback
    assert run is not None, command.name

    @functools.wraps(run)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        output_format = kwargs.get("output_format")
        try:
            return run(*args, **kwargs)
        except LanceSyncError as error:
            _fail(_relative(str(error), kwargs), error.exit_code, output_format)
        except KeyboardInterrupt:
            _fail("interrupted", ExitCode.ERROR, output_format)
        except Exception as error:  # noqa: BLE001 - the user gets a message, not a traceback
            debug = bool(os.environ.get("LANCE_SYNC_DEBUG"))
            if debug:
                traceback.print_exc()
            hint = "" if debug else " (set LANCE_SYNC_DEBUG=1 for a traceback)"
            _fail(f"{type(error).__name__}: {_relative(str(error), kwargs)}{hint}", ExitCode.ERROR, output_format)

    command.callback = wrapper
    return command


def _relative(message: str, options: dict[str, Any]) -> str:
    """`message` with the paths below the manifest's folder relative to it, as a plan shows them;
    the manifest files stay as they were given (a position names the file as typed)."""
    from lance_sync.model.locations import with_manifest_relative_paths

    given = options.get("files")
    default = "files" in options and not options.get("plan_file") and os.path.exists(DEFAULT_MANIFEST)
    files = list(given or ([DEFAULT_MANIFEST] if default else []))
    if not files:  # a saved plan, or no manifest: paths as they are
        return message
    kept = {f"\0{index}\0": name for index, name in enumerate(sorted(files, key=len, reverse=True))}
    for mark, name in kept.items():
        message = message.replace(name, mark)
    message = with_manifest_relative_paths(message, os.path.dirname(os.path.abspath(files[0])))
    for mark, name in kept.items():
        message = message.replace(mark, name)
    return message


class _Group(click.Group):
    """Usage errors (an unknown option, a bad value) exit 1 like any error: exit 2 means
    "changes present" to CI scripts. Everything written to stdout and stderr while a command
    runs is masked."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        register_environment()
        with masked_standard_streams():
            return self._main(args, prog_name, complete_var, **extra)

    def _main(self, args: Sequence[str] | None, prog_name: str | None, complete_var: str | None,
              **extra: Any) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        if "--no-color" in args:  # taken anywhere, as `terraform plan -no-color` is
            args.remove("--no-color")
            os.environ["NO_COLOR"] = "1"
        args = _chdir_first(args)
        try:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.Exit as done:
            sys.exit(done.exit_code)
        except click.ClickException as error:
            error.show()
            if _asks_for_json(args):
                click.echo(json.dumps({"error": error.format_message(), "exit_code": int(ExitCode.ERROR)}, indent=2))
            sys.exit(ExitCode.ERROR)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(ExitCode.ERROR)


def _chdir_first(args: list[str]) -> list[str]:
    """`--chdir DIR` (or `--chdir=DIR`) moved before the command, so that it is taken after the
    command too, as --no-color is."""
    for index, arg in enumerate(args):
        if arg == "--chdir" and index + 1 < len(args):
            return ["--chdir", args[index + 1], *args[:index], *args[index + 2:]]
        if arg.startswith("--chdir="):
            return [arg, *args[:index], *args[index + 1:]]
    return args


def _asks_for_json(args: Sequence[str]) -> bool:
    """The command line asks for --format json (so even a usage error is a JSON document)."""
    args = list(args)
    return "--format=json" in args or any(a == "--format" and b == "json" for a, b in zip(args, args[1:], strict=False))


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the generated REST client whose package body the CLI's process defers (lance_sync.cli.deferred)
REST_CLIENT = "lance_namespace_urllib3_client"


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lance-sync")
@click.option("--chdir", type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="Run in DIR, as if started there (manifests, plans and .lance-sync are found from it); "
                   "also after a command.")
@click.option("--no-color", is_flag=True, help="No colour in the output (as NO_COLOR=1 does); also after a command.")
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), envvar="LANCE_SYNC_LOG",
              show_envvar=True, metavar="LEVEL",
              help="Log to stderr at LEVEL (DEBUG, INFO, WARNING, ERROR) and above: INFO shows retries, "
                   "actions and reconcile cycles, DEBUG every request and read too. No logs without it.")
@click.pass_context
def main(context: click.Context, chdir: str | None, no_color: bool, log_level: str | None) -> None:
    """Declarative catalog sync for Lance tables: plan and apply a manifest across catalogs."""
    if chdir:
        os.chdir(chdir)
    if no_color:
        os.environ["NO_COLOR"] = "1"
    # thrift logs every failed connection attempt at ERROR; the driver's own error says it once
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    # py4j logs every command it exchanges with Spark's JVM at DEBUG: thousands of lines of its protocol
    logging.getLogger("py4j").setLevel(logging.INFO)
    if log_level:
        _log_to_stderr(context, log_level.upper())
    if context.invoked_subcommand not in LONG_RUNNING_COMMANDS:
        _pause_collections(context)


def _log_to_stderr(context: click.Context, level: str) -> None:
    """Every logger's records at `level` and above to stderr, masked, until the command ends.
    The root logger is configured here, in the CLI's own process, never by the library."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(MaskingFilter())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)

    def restore() -> None:
        root.removeHandler(handler)
        root.setLevel(previous)

    context.call_on_close(restore)


#: commands that run until stopped, and so keep the cyclic garbage collector running
LONG_RUNNING_COMMANDS = {"reconcile"}


#: set by `run`: this process ends when its command does
_ENDS_WITH_THE_COMMAND = False


def _pause_collections(context: click.Context) -> None:
    """Pause the cyclic garbage collector until the command ends. A command builds large
    structures without cycles (the manifest's state, the live state, the plan) and ends soon;
    each full collection rescanned all of them, which was 0.27 s of the 0.6 s a plan takes to
    read 100,000 dir tables. In a process that ends with the command (`run`) it stays paused:
    resumed, its first collection scanned every object of the modules the command imported
    (30 ms of a quickstart plan) for a process about to end."""
    if gc.isenabled():
        gc.disable()
        if not _ENDS_WITH_THE_COMMAND:
            context.call_on_close(gc.enable)


for _command in (validate, plan, apply, drift, status, reconcile, unlock, import_, schema, verify, discover, show,
                 version):
    main.add_command(handle_errors(_command))


def run() -> NoReturn:
    """The `lance-sync` program (`python -m lance_sync`): the command, then a quick exit.

    Once the command is done, with nothing left running but this thread, the exit handlers
    run and the standard streams are flushed as at any exit, and the process ends without
    the interpreter's teardown: freeing every module and object one by one took 0.6 s of
    CPU at the end of a 4.7 s plan of 10,000 tables, after the answer was out. A thread still
    running, a profiler or a debugger gets the usual exit.

    Being the process's owner, it also defers the REST client's package body (a large share of
    a plan's start-up) before any command imports it, and leaves the garbage collector paused
    once a short command is done (`_pause_collections`)."""
    global _ENDS_WITH_THE_COMMAND
    _ENDS_WITH_THE_COMMAND = True
    defer_body(REST_CLIENT)
    try:
        main(prog_name="lance-sync")
        code = 0
    except SystemExit as done:
        code = exit_status(done)
    if _needs_the_usual_exit():
        sys.exit(code)
    atexit._run_exitfuncs()  # noqa: SLF001 - what the interpreter runs first at exit
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # a reader that went away (a closed pipe): 120, as the interpreter says
            code = code or 120
    os._exit(code)


def _needs_the_usual_exit() -> bool:
    """A thread still at work (the usual exit waits for it), or a profiler or tracer
    (`python -m cProfile`, a debugger) that writes its results after the program returns."""
    others = any(thread is not threading.main_thread() and not thread.daemon for thread in threading.enumerate())
    return others or sys.getprofile() is not None or sys.gettrace() is not None


def exit_status(done: SystemExit) -> int:
    """The status a `SystemExit` ends the process with; a message (`sys.exit("...")`) is
    written to stderr and ends it with 1, as the interpreter does."""
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=sys.stderr)
    return 1
