"""A CLI that forgives (issue 49): natural mistakes of a first hour get a plain message that
names the file, line and field, and says what to do; `--target` takes what a shell leaves alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from lance_sync.cli.app import main
from tests.support.cli import cli_env, run_cli

MANIFEST = {
    "version": 1, "owner": "first",
    "backends": {"lake": {"type": "dir", "root": "./lake"}},
    "namespaces": [{"backend": "lake", "id": "analytics"}],
    "tables": [{"name": "sessions", "location": "./lake/data/sessions.lance",
                "register": [{"backend": "lake", "namespace": "analytics"}],
                "schema": [{"name": "id", "type": "int64"}]},
               {"name": "events", "location": "./lake/data/events.lance",
                "register": [{"backend": "lake", "namespace": "analytics"}],
                "schema": [{"name": "id", "type": "int64"}]}],
}


def write(folder: Path, manifest: dict, name: str = "lance-sync.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def with_type(column_type: str) -> dict:
    return {**MANIFEST, "tables": [{**MANIFEST["tables"][0], "schema": [{"name": "id", "type": column_type}]}]}


def invoke(folder: Path, *args: str, monkeypatch: pytest.MonkeyPatch) -> Result:
    """`lance-sync ARGS...` started in `folder`."""
    monkeypatch.chdir(folder)
    return CliRunner(env={"NO_COLOR": "1"}).invoke(main, list(args), prog_name="lance-sync")


@pytest.mark.parametrize("target", ["sessions", "lake:analytics/sessions"])
def test_a_target_may_be_a_table_name_or_use_a_slash(tmp_path: Path, target: str):
    """`--target sessions` and `lake:analytics/sessions` plan the one table, no quotes needed."""
    result = run_cli(write(tmp_path, MANIFEST), "plan", "--target", target, env=cli_env())
    assert result.returncode == 0, result.stderr
    assert "+ create table     lake: analytics$sessions" in result.stdout
    assert "analytics$events (not targeted)" in result.stdout and "Warning" not in result.stdout


def test_a_dollar_the_shell_expanded_away_is_named(tmp_path: Path):
    """Unquoted, `lake:analytics$sessions` reaches lance-sync as `lake:analytics`: the plan warns
    that the namespace's tables are left out, and how to name one."""
    result = run_cli(write(tmp_path, MANIFEST), "plan", "--target", "lake:analytics", env=cli_env())
    assert result.returncode == 0, result.stderr
    assert ("Warning: --target lake:analytics names the namespace lake:analytics, not its tables; left out: "
            "analytics$sessions, analytics$events.") in result.stdout
    assert "--target lake:analytics/TABLE" in result.stdout


def test_a_manifest_given_as_a_plan_suggests_f(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write(tmp_path, MANIFEST)
    result = invoke(tmp_path, "apply", "lance-sync.yaml", monkeypatch=monkeypatch)
    assert result.exit_code == 1
    assert "it is a manifest: give a manifest with -f (`lance-sync plan -f lance-sync.yaml`" in result.stderr


def test_show_of_a_journal_says_what_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    journal = tmp_path / "apply-1.jsonl"
    journal.write_text('{"time": "t", "event": "start"}\n{"time": "t", "event": "succeeded"}\n')
    result = invoke(tmp_path, "show", str(journal), monkeypatch=monkeypatch)
    assert result.exit_code == 1
    assert "it is an apply's journal, one JSON record a line" in result.stderr


def test_a_missing_or_empty_file_says_so_plainly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    missing = invoke(tmp_path, "plan", "-f", "nope.yaml", monkeypatch=monkeypatch)
    assert missing.exit_code == 1 and missing.stderr == "Error: no such file: nope.yaml\n"
    (tmp_path / "empty.yaml").write_text("")
    empty = invoke(tmp_path, "plan", "-f", "empty.yaml", monkeypatch=monkeypatch)
    assert empty.exit_code == 1
    assert "empty.yaml:1:1: the file is empty; a manifest needs at least 'version: 1', an 'owner' and its " \
           "'backends'" in empty.stderr


@pytest.mark.parametrize(("column_type", "message"), [
    ("fixed_size_list<float32>[3000000000]", "3000000000 is too large (at most 2147483647)"),
    ("decimal128(38, 99999999999999999999)", "99999999999999999999 is too large (at most 2147483647)"),
    ("integer", "unknown type 'integer' (did you mean int64?)"),
])
def test_a_bad_type_names_file_line_and_field(tmp_path: Path, column_type: str, message: str):
    """Numbers too large for Arrow were an OverflowError with no place."""
    for debug in ({}, {"LANCE_SYNC_DEBUG": "1"}):
        result = run_cli(write(tmp_path, with_type(column_type)), "validate", env=cli_env(**debug))
        assert result.returncode == 1
        assert "lance-sync.yaml:" in result.stderr and "tables[0].schema[0].type" in result.stderr, result.stderr
        assert message in result.stderr and "LANCE_SYNC_DEBUG" not in result.stderr, result.stderr


def test_a_non_ascii_owner_gets_words_not_a_regular_expression(tmp_path: Path):
    result = run_cli(write(tmp_path, {**MANIFEST, "owner": "équipe"}), "validate", env=cli_env())
    assert result.returncode == 1
    assert "owner: 'équipe' does not match the required pattern (ASCII letters, digits and . _ @ / -" in result.stderr
    assert "^[" not in result.stderr


def test_markdown_and_json_put_the_error_on_stdout(tmp_path: Path):
    """A PR comment made from `plan --format markdown` shows why the plan failed."""
    manifest = write(tmp_path, with_type("integer"))
    markdown = run_cli(manifest, "plan", "--format", "markdown", env=cli_env())
    assert markdown.returncode == 1 and markdown.stdout.startswith("### lance-sync failed (exit 1)")
    assert "unknown type 'integer'" in markdown.stdout
    document = json.loads(run_cli(manifest, "plan", "--format", "json", env=cli_env()).stdout)
    assert "unknown type 'integer'" in document["error"]


def test_an_unexpected_error_with_debug_does_not_ask_for_debug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from lance_sync import api

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(api, "plan", broken)
    manifest = write(tmp_path, MANIFEST)
    plain = run_cli(manifest, "plan", env=cli_env())
    assert "RuntimeError: boom (set LANCE_SYNC_DEBUG=1 for a traceback)" in plain.stderr
    debug = CliRunner(env={"LANCE_SYNC_DEBUG": "1"}).invoke(main, ["plan", "-f", str(manifest)])
    assert "Error: RuntimeError: boom\n" in debug.stderr and "set LANCE_SYNC_DEBUG" not in debug.stderr
