"""The GitHub Action's step (scripts/ci_action.py) in a simulated GitHub run.

Each test runs the script as GitHub would (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY, ...) on a copy of the quickstart (the embedded `dir` backend), with
GITHUB_API_URL and GITHUB_GRAPHQL_URL pointing at a fake GitHub API on 127.0.0.1 that keeps the
pull request's comments, records every call and knows which account each token is: a personal
token (GET /user answers), an installation token like the workflow's GITHUB_TOKEN (GET /user
answers 403 "Resource not accessible by integration", GraphQL's `viewer` answers
github-actions[bot]), or a token neither tells about. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import lance_namespace as ln
import pytest
import yaml

from lance_sync.drivers import register
from tests.servers.echo import EchoServer, assert_no_leak

#: every test here starts Python processes: the slow lane (tests/support/lanes.py)
pytestmark = pytest.mark.usefixtures("subprocesses")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "ci_action.py"
EXTRAS_SCRIPT = ROOT / "scripts" / "ci_extras.py"
QUICKSTART = ROOT / "examples" / "quickstart" / "lance-sync.yaml"
REPOSITORY = "acme/catalogs"
PULL_REQUEST = 7
MARKER = "<!-- lance-sync plan: catalog/lance-sync.yaml -->"
#: the artifact URL upload-artifact gives the HTML report, in these simulated runs
REPORT_URL = f"https://github.test/{REPOSITORY}/actions/runs/42/artifacts/9001"

register()  # `tables` reads with lance_namespace.connect("lance-sync-dir", ...), also when this file runs alone
#: a personal token, the workflow's GITHUB_TOKEN (an installation token) and one nobody knows
PERSONAL_TOKEN = "test-token"
INSTALLATION_TOKEN = "ghs_installation-token-for-tests"
ANONYMOUS_TOKEN = "token-of-an-unknown-kind"
CI_USER = {"login": "ci-bot", "id": 5001, "type": "User"}
ACTIONS_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
SOMEONE_ELSE = {"login": "mallory", "id": 6660, "type": "User"}


class FakeGitHub:
    """Issue comments of one pull request, with GitHub's paging; 403 for writes when read_only.
    Each comment records its author, the account of the token that posted it."""

    def __init__(self) -> None:
        self.comments: list[dict[str, Any]] = []
        self.calls: list[tuple[str, str]] = []
        self.read_only = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def reply(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def handle_call(self) -> None:
                url = urlsplit(self.path)
                fake.calls.append((self.command, url.path))
                token = self.headers["Authorization"].removeprefix("Bearer ")
                assert token in (PERSONAL_TOKEN, INSTALLATION_TOKEN, ANONYMOUS_TOKEN), token
                account = {PERSONAL_TOKEN: CI_USER, INSTALLATION_TOKEN: ACTIONS_BOT}.get(token)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                issue = f"/repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments"
                if self.command == "GET" and url.path == "/user":
                    if token != PERSONAL_TOKEN:
                        return self.reply(403, {"message": "Resource not accessible by integration"})
                    return self.reply(200, account)
                if self.command == "POST" and url.path == "/graphql":
                    assert "viewer" in body["query"]
                    if account is None:
                        return self.reply(200, {"data": None, "errors": [{"message": "Resource not accessible"}]})
                    return self.reply(200, {"data": {"viewer": {"login": account["login"],
                                                                "databaseId": account["id"]}}})
                if self.command != "GET" and fake.read_only:
                    return self.reply(403, {"message": "Resource not accessible by integration"})
                if self.command == "GET" and url.path == issue:
                    query = parse_qs(url.query)
                    size, page = int(query["per_page"][0]), int(query["page"][0])
                    return self.reply(200, fake.comments[(page - 1) * size:page * size])
                if self.command == "POST" and url.path == issue:
                    comment = {"id": 1000 + len(fake.comments), "body": body["body"], "user": account}
                    comment["html_url"] = f"https://github.test/{REPOSITORY}/pull/7#issuecomment-{comment['id']}"
                    fake.comments.append(comment)
                    return self.reply(201, comment)
                edited = re.fullmatch(rf"/repos/{REPOSITORY}/issues/comments/(\d+)", url.path)
                if self.command == "PATCH" and edited:
                    comment = next(c for c in fake.comments if c["id"] == int(edited.group(1)))
                    comment["body"] = body["body"]
                    return self.reply(200, comment)
                self.reply(404, {"message": "Not Found"})

            do_GET = do_POST = do_PATCH = handle_call

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def plan_comments(self) -> list[dict[str, Any]]:
        return [c for c in self.comments if MARKER in c["body"]]

    def writes(self) -> list[tuple[str, str]]:
        """The calls that change comments."""
        return [call for call in self.calls if call[0] in ("POST", "PATCH") and call[1] != "/graphql"]


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A repository checkout with the quickstart (without its Spark table) under catalog/."""
    manifest = yaml.safe_load(QUICKSTART.read_text())
    manifest["tables"] = [t for t in manifest["tables"] if "source" not in t]
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "lance-sync.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return tmp_path


class Step:
    """One run of the action's steps as action.yml runs them: the script; the upload of the HTML
    report (here: its artifact URL, REPORT_URL, when the script named a report); and the script's
    comment run, when the script wrote a comment. Their outputs, the summary and the log."""

    def __init__(self, workspace: Path, github: FakeGitHub, event_name: str, event: dict[str, Any],
                 ref: str = "refs/heads/main", env: dict[str, str] | None = None, script: Path = SCRIPT,
                 **inputs: str):
        self.workspace = workspace
        event_path = workspace.parent / "event.json"
        event_path.write_text(json.dumps(event))
        self.output_file = workspace.parent / "github_output"
        self.summary_file = workspace.parent / "step_summary"
        self.output_file.write_text("")
        self.summary_file.write_text("")
        environ = {
            "PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REF": ref, "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": github.url,
            "GITHUB_GRAPHQL_URL": f"{github.url}/graphql",
            "GITHUB_SERVER_URL": "https://github.test", "GITHUB_RUN_ID": "42", "GITHUB_SHA": "0123456789abcdef",
            "GITHUB_WORKSPACE": str(workspace), "GITHUB_OUTPUT": str(self.output_file),
            "GITHUB_STEP_SUMMARY": str(self.summary_file), "GITHUB_TOKEN": PERSONAL_TOKEN, "NO_COLOR": "1",
            "LANCE_SYNC_FILES": "lance-sync.yaml", "LANCE_SYNC_COMMAND": f"{sys.executable} -m lance_sync",
        }
        environ.update({f"LANCE_SYNC_{key.upper()}": value for key, value in inputs.items()})
        environ.update(env or {})
        self.result = subprocess.run([sys.executable, str(script)], cwd=workspace / "catalog", env=environ,
                                     capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
        self.log = self.result.stdout + self.result.stderr
        if self.outputs.get("comment-file"):
            environ.update(LANCE_SYNC_COMMENT_FILE=self.outputs["comment-file"],
                           LANCE_SYNC_REPORT_URL=REPORT_URL if self.outputs.get("report") else "")
            comment = subprocess.run([sys.executable, str(script), "comment"], cwd=workspace / "catalog",
                                     env=environ, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
            self.log += comment.stdout + comment.stderr
            assert comment.returncode == 0, self.log

    @property
    def code(self) -> int:
        return self.result.returncode

    @property
    def outputs(self) -> dict[str, str]:
        return dict(line.split("=", 1) for line in self.output_file.read_text().splitlines())

    @property
    def summary(self) -> str:
        return self.summary_file.read_text()


def pull_request(workspace: Path, github: FakeGitHub, env: dict[str, str] | None = None, **inputs: str) -> Step:
    event = {"pull_request": {"number": PULL_REQUEST}, "repository": {"default_branch": "main"}}
    return Step(workspace, github, "pull_request", event, ref=f"refs/pull/{PULL_REQUEST}/merge", env=env, **inputs)


def push(workspace: Path, github: FakeGitHub, branch: str = "main", env: dict[str, str] | None = None,
         **inputs: str) -> Step:
    return Step(workspace, github, "push", {"repository": {"default_branch": "main"}}, ref=f"refs/heads/{branch}",
                env=env, **inputs)


def tables(workspace: Path) -> list[str]:
    driver = ln.connect("lance-sync-dir", {"root": str(workspace / "catalog" / "lakehouse")})
    try:
        return sorted(driver.list_tables(ln.ListTablesRequest(id=["sales"])).tables)
    except ln.errors.NamespaceNotFoundError:
        return []


def test_a_pull_request_gets_the_plan_as_one_comment_edited_on_each_push(workspace: Path, github: FakeGitHub):
    github.comments = [{"id": i, "body": f"someone else's comment {i}", "html_url": "", "user": SOMEONE_ELSE}
                       for i in range(150)]
    first = pull_request(workspace, github)
    assert first.code == 0, first.log
    state = workspace / "catalog" / ".lance-sync"
    assert first.outputs == {"exitcode": "2", "has-changes": "true", "report": str(state / "plan.html"),
                             "report-name": "lance-sync-plan-catalog-lance-sync.yaml",
                             "comment-file": str(state / "comment.json"),
                             "comment-url": f"https://github.test/{REPOSITORY}/pull/7#issuecomment-1150"}
    [comment] = github.plan_comments()
    assert comment["body"].startswith(MARKER + "\n### lance-sync plan")
    assert "Plan: 7 to create" in comment["body"] and "./lakehouse/data/orders.lance" in comment["body"]
    assert "commit 0123456 · [run 42](https://github.test/acme/catalogs/actions/runs/42)" in comment["body"]
    assert "Plan: 7 to create" in first.summary
    assert tables(workspace) == []  # planning changed nothing

    manifest_path = workspace / "catalog" / "lance-sync.yaml"
    manifest = yaml.safe_load(manifest_path.read_text())
    manifest["tables"] = manifest["tables"][:1]
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    second = pull_request(workspace, github)
    assert second.code == 0, second.log
    [comment] = github.plan_comments()  # the same comment, edited
    assert comment["id"] == 1150 and "Plan: 4 to create" in comment["body"]
    assert github.writes() == [("POST", f"/repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments"),
                               ("PATCH", f"/repos/{REPOSITORY}/issues/comments/1150")]
    assert len(github.comments) == 151


def test_a_push_to_the_default_branch_applies(workspace: Path, github: FakeGitHub):
    step = push(workspace, github)
    assert step.code == 0, step.log
    assert step.outputs["exitcode"] == "0"
    assert "Apply complete: 7 succeeded" in step.log
    assert tables(workspace) == ["orders", "returns"]
    assert github.calls == []
    assert (workspace / "catalog" / ".lance-sync" / "journal").is_dir()


def test_a_push_to_another_branch_only_plans(workspace: Path, github: FakeGitHub):
    step = push(workspace, github, branch="feature")
    assert step.code == 0, step.log
    assert step.outputs["has-changes"] == "true"
    assert tables(workspace) == [] and github.calls == []


def test_an_invalid_manifest_fails_and_says_why_on_the_pull_request(workspace: Path, github: FakeGitHub):
    manifest_path = workspace / "catalog" / "lance-sync.yaml"
    manifest_path.write_text(manifest_path.read_text().replace("owner: quickstart", "owner: quickstart\ncolour: red"))
    step = pull_request(workspace, github)
    assert step.code == 1
    [comment] = github.plan_comments()
    assert "the manifests are not valid" in comment["body"] and "unknown field 'colour'" in comment["body"]


def test_a_fork_without_secrets_is_validated_and_told_what_the_plan_needs(workspace: Path, github: FakeGitHub):
    manifest_path = workspace / "catalog" / "lance-sync.yaml"
    manifest = yaml.safe_load(manifest_path.read_text())
    manifest["backends"]["lake"]["storage"] = {"aws_secret_access_key": "${LS_CI_SECRET}"}
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    github.read_only = True  # a fork's token cannot comment either
    step = pull_request(workspace, github)
    assert step.code == 0, step.log
    assert "LS_CI_SECRET: backends.lake.storage.aws_secret_access_key" in step.log  # validate named it
    assert "planning needs `LS_CI_SECRET`" in step.summary
    assert "::warning::could not comment on the pull request" in step.log
    assert step.outputs["comment-url"] == ""


def test_comment_false_keeps_the_plan_in_the_summary_only(workspace: Path, github: FakeGitHub):
    step = pull_request(workspace, github, comment="false")
    assert step.code == 0, step.log
    assert github.calls == [] and "Plan: 7 to create" in step.summary


def test_action_yml_runs_the_script_with_every_input_it_declares():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    run_step = next(step for step in action["runs"]["steps"] if step.get("id") == "run")
    assert run_step["run"] == 'python "$GITHUB_ACTION_PATH/scripts/ci_action.py"'
    passed = {re.fullmatch(r"\$\{\{ inputs\.([\w-]+) }}", value).group(1)
              for step in action["runs"]["steps"] for value in (step.get("env") or {}).values()
              if isinstance(value, str) and value.startswith("${{ inputs.")}
    used = passed | {"python-version", "working-directory"}
    assert used == set(action["inputs"]), set(action["inputs"]) ^ used
    assert {output["value"] for output in action["outputs"].values()} == {
        "${{ steps.run.outputs.exitcode }}", "${{ steps.run.outputs.has-changes }}",
        "${{ steps.comment.outputs.comment-url }}", "${{ steps.report.outputs.artifact-url }}"}


def test_action_yml_uploads_the_report_before_the_comment_that_links_it():
    """The upload takes the report the script names; the comment run, after it, gets its URL;
    both run when the script failed (a refused plan, an invalid manifest), never on cancel."""
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    ids = [step.get("id") for step in steps]
    assert ids.index("run") < ids.index("report") < ids.index("comment")
    upload, comment = steps[ids.index("report")], steps[ids.index("comment")]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "${{ steps.run.outputs.report }}"
    assert upload["with"]["name"] == "${{ steps.run.outputs.report-name }}"
    assert upload["if"] == "${{ !cancelled() && steps.run.outputs.report != '' }}"
    assert comment["run"] == 'python "$GITHUB_ACTION_PATH/scripts/ci_action.py" comment'
    assert comment["if"] == "${{ !cancelled() && steps.run.outputs.comment-file != '' }}"
    assert comment["env"]["LANCE_SYNC_COMMENT_FILE"] == "${{ steps.run.outputs.comment-file }}"
    assert comment["env"]["LANCE_SYNC_REPORT_URL"] == "${{ steps.report.outputs.artifact-url }}"


def test_a_pull_request_comment_links_the_whole_plan_as_an_html_report(workspace: Path, github: FakeGitHub):
    step = pull_request(workspace, github)
    assert step.code == 0, step.log
    report = Path(step.outputs["report"]).read_text()
    assert report.startswith("<!doctype html>") and "Plan: 7 to create" in report
    assert "./lakehouse/data/orders.lance" in report
    [comment] = github.plan_comments()
    assert (f"**The whole plan:** [HTML report]({REPORT_URL}) (artifact `lance-sync-plan-catalog-lance-sync.yaml`"
            in comment["body"])
    assert "<!doctype" not in step.log  # the page goes to its file, not to the log


def test_the_example_workflow_uses_the_action_with_inputs_it_declares():
    inputs = set(yaml.safe_load((ROOT / "action.yml").read_text())["inputs"])
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "lance-sync.yml").read_text())
    uses = [step for job in workflow["jobs"].values() for step in job["steps"]
            if step.get("uses", "").startswith("lance-sync/lance-sync@")]
    assert len(uses) == 2
    for step in uses:
        assert set(step["with"]) <= inputs


# --- only its own comment is edited ---------------------------------------------------------------


def comment_by(author: dict[str, Any], id: int, text: str) -> dict[str, Any]:
    return {"id": id, "body": f"{MARKER}\n{text}", "html_url": f"https://github.test/c/{id}", "user": author}


def test_another_accounts_comment_with_the_marker_is_never_edited(workspace: Path, github: FakeGitHub):
    github.comments = [comment_by(SOMEONE_ELSE, 1, "a copy of an old plan, quoted by a reviewer")]
    step = pull_request(workspace, github)
    assert step.code == 0, step.log
    assert github.comments[0]["body"].endswith("quoted by a reviewer")
    assert github.writes() == [("POST", f"/repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments")]
    assert github.comments[1]["user"] == CI_USER and "Plan: 7 to create" in github.comments[1]["body"]


def test_its_own_earlier_comment_is_edited_and_no_one_elses(workspace: Path, github: FakeGitHub):
    github.comments = [comment_by(SOMEONE_ELSE, 1, "someone's"), comment_by(CI_USER, 2, "an old plan")]
    step = pull_request(workspace, github)
    assert step.code == 0, step.log
    assert github.writes() == [("PATCH", f"/repos/{REPOSITORY}/issues/comments/2")]
    assert github.comments[0]["body"].endswith("someone's") and "Plan: 7 to create" in github.comments[1]["body"]


def test_the_workflow_token_finds_its_own_comment_through_graphql(workspace: Path, github: FakeGitHub):
    """GITHUB_TOKEN is an installation token: GET /user answers 403; GraphQL's viewer is
    github-actions[bot], whose comment is edited (not the one of a user who took its name)."""
    impostor = {**ACTIONS_BOT, "id": 777}  # the same login, another account
    github.comments = [comment_by(impostor, 1, "not ours"), comment_by(ACTIONS_BOT, 2, "an old plan")]
    step = pull_request(workspace, github, env={"GITHUB_TOKEN": INSTALLATION_TOKEN})
    assert step.code == 0, step.log
    assert ("GET", "/user") in github.calls and ("POST", "/graphql") in github.calls
    assert github.writes() == [("PATCH", f"/repos/{REPOSITORY}/issues/comments/2")]
    assert github.comments[0]["body"].endswith("not ours")


def test_without_a_known_account_a_new_comment_is_posted_and_said(workspace: Path, github: FakeGitHub):
    github.comments = [comment_by(ACTIONS_BOT, 1, "an old plan")]
    step = pull_request(workspace, github, env={"GITHUB_TOKEN": ANONYMOUS_TOKEN})
    assert step.code == 0, step.log
    assert "::warning::could not tell which account the token belongs to" in step.log
    assert github.writes() == [("POST", f"/repos/{REPOSITORY}/issues/{PULL_REQUEST}/comments")]
    assert github.comments[0]["body"].endswith("an old plan")


# --- no secret in the comment, the summary or the log ---------------------------------------------

UC_TOKEN = "uc-token-for-the-action-7Hq/x+Zz=Rw2"


def test_a_server_that_echoes_the_token_puts_it_in_no_comment(workspace: Path, github: FakeGitHub):
    manifest = {"version": 1, "owner": "quickstart",
                "backends": {"uc": {"type": "unity", "endpoint": "ECHO", "catalog": "main",
                                    "auth_token": "${UC_TOKEN}", "max_retries": 0}},
                "namespaces": [{"backend": "uc", "id": "main$sales"}]}
    with EchoServer(status=401, style="text") as echo:
        manifest["backends"]["uc"]["endpoint"] = echo.endpoint
        (workspace / "catalog" / "lance-sync.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
        step = pull_request(workspace, github, env={"UC_TOKEN": UC_TOKEN})
    assert step.code == 1, step.log
    [comment] = github.plan_comments()
    for where, text in (("the comment", comment["body"]), ("the summary", step.summary), ("the log", step.log)):
        assert_no_leak(where, text, UC_TOKEN, PERSONAL_TOKEN)
    assert "lance-sync plan failed" in comment["body"] and "Bearer ***" in comment["body"]


FAKE_LANCE_SYNC = '''
import base64, os, sys
from urllib.parse import quote
secret, token = os.environ["DEPLOY_TOKEN"], os.environ["GITHUB_TOKEN"]
if sys.argv[1] == "validate":
    print("lance-sync.yaml: valid")
    sys.exit(0)
basic = base64.b64encode(f"deployer:{secret}".encode()).decode()
print(f"### lance-sync plan\\n\\nthe server said: Bearer {secret}, Basic {basic}, ?token={quote(secret, safe='')}")
print(f"and {token}; the region is {os.environ['DEPLOY_REGION']}")
sys.exit(2)
'''


def test_the_action_masks_secret_variables_on_its_own(workspace: Path, github: FakeGitHub):
    """Whatever the command prints (here a stand-in for lance-sync that prints secrets), the
    values of variables with secret-looking names stay out of the comment, summary and log;
    other variables are left alone."""
    script = workspace / "fake_lance_sync.py"
    script.write_text(FAKE_LANCE_SYNC)
    secret = "deploy-token-Qm8/zt+Lp=Vc4"
    step = pull_request(workspace, github, env={"DEPLOY_TOKEN": secret, "DEPLOY_REGION": "eu-north-1"},
                        command=f"{sys.executable} {script}")
    assert step.code == 0, step.log
    [comment] = github.plan_comments()
    for where, text in (("the comment", comment["body"]), ("the summary", step.summary), ("the log", step.log)):
        assert_no_leak(where, text, secret, PERSONAL_TOKEN)
    assert "the server said: Bearer ***, Basic " in comment["body"] and "region is eu-north-1" in comment["body"]


def commit_all(workspace: Path, message: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", *args], cwd=workspace, env=env, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_pull_request_plans_only_what_changed_since_the_merge_base(workspace: Path, github: FakeGitHub):
    """With the base commit in the clone, the plan reads and shows only the pull request's
    changes and says so; without it (a shallow clone), a full plan with a notice; a push to
    the default branch plans and applies in full."""
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    (workspace / ".gitignore").write_text("catalog/lakehouse/\ncatalog/.lance-sync/\n")
    base = commit_all(workspace, "the catalog")
    assert push(workspace, github).code == 0  # applied in full on the default branch
    manifest_path = workspace / "catalog" / "lance-sync.yaml"
    manifest = yaml.safe_load(manifest_path.read_text())
    manifest["tables"][0]["properties"] = {"tier": "platinum"}
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    commit_all(workspace, "a pull request's change")

    event = {"pull_request": {"number": PULL_REQUEST, "base": {"sha": base}}, "repository": {"default_branch": "main"}}
    step = Step(workspace, github, "pull_request", event, ref=f"refs/pull/{PULL_REQUEST}/merge")
    assert step.code == 0, step.log
    assert f"changed since {base}" in step.summary and "1 to update" in step.summary, step.summary
    assert step.outputs["has-changes"] == "true"

    event["pull_request"]["base"]["sha"] = "f" * 40  # not in the clone
    step = Step(workspace, github, "pull_request", event, ref=f"refs/pull/{PULL_REQUEST}/merge")
    assert step.code == 0 and "::notice::planned in full" in step.log, step.log
    assert "changed since" not in step.summary and "1 to update" in step.summary, step.summary

    step = Step(workspace, github, "pull_request", {**event, "pull_request": {"number": PULL_REQUEST, "base": {
        "sha": base}}}, ref=f"refs/pull/{PULL_REQUEST}/merge", changed_only="false")
    assert "changed since" not in step.summary, step.summary


# --- apply: the outcomes and the plan in the job summary; has-changes; extras; pinning -----------


def test_an_apply_puts_its_outcomes_and_plan_in_the_summary(workspace: Path, github: FakeGitHub):
    step = push(workspace, github)
    assert step.code == 0, step.log
    assert step.outputs == {"exitcode": "0", "has-changes": "true"}
    summary = step.summary
    assert summary.startswith("### lance-sync apply: applied\n"), summary
    assert "Exit code 0 · 7 succeeded, 0 failed, 0 skipped." in summary
    assert re.search(r"Journal: `\.lance-sync/journal/apply-\w+\.jsonl` · Rollback plan: `\.lance-sync/journal/"
                     r"apply-\w+\.rollback\.json`", summary), summary
    assert "### lance-sync plan" in summary and "Plan: 7 to create" in summary  # the applied plan, in markdown
    assert "+ create dataset   lake: ./lakehouse/data/orders.lance" in summary
    assert "| status |" not in summary  # nothing failed or was skipped
    assert "     ok  create dataset lake: ./lakehouse/data/orders.lance" in step.log  # a line per outcome
    assert "Journal: .lance-sync/journal/" in step.log

    again = push(workspace, github)  # nothing left to do
    assert again.code == 0, again.log
    assert again.outputs["has-changes"] == "false" and "0 succeeded, 0 failed, 0 skipped" in again.summary


def test_has_changes_in_plan_mode_follows_the_plan(workspace: Path, github: FakeGitHub):
    step = pull_request(workspace, github, comment="false")
    assert step.outputs["has-changes"] == "true" and step.outputs["exitcode"] == "2"
    assert (workspace / "catalog" / ".lance-sync" / "plan.json").is_file()  # saved for `lance-sync apply`
    assert push(workspace, github, mode="apply").outputs["has-changes"] == "true"
    step = push(workspace, github, mode="plan")
    assert step.outputs == {"exitcode": "0", "has-changes": "false",
                            "report": str(workspace / "catalog" / ".lance-sync" / "plan.html"),
                            "report-name": "lance-sync-plan-catalog-lance-sync.yaml", "comment-file": ""}, step.log
    assert tables(workspace) == ["orders", "returns"]


#: stands in for lance-sync: apply runs the real one and reports its last two actions as failed
#: and skipped (an error with a '|' and a new line, which the summary's table must hold)
FAILING_APPLY = '''
import json, subprocess, sys
real = [sys.executable, "-m", "lance_sync"]
if sys.argv[1] != "apply":
    sys.exit(subprocess.run(real + sys.argv[1:]).returncode)
done = subprocess.run(real + sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
document = json.loads(done.stdout)
failed, skipped = document["outcomes"][-2:]
failed.update(status="failed", error="the catalog said 503 | try later\\nretry-after: 5", transient=True)
skipped.update(status="skipped", error="depends on a failed action")
document.update(exit_code=1, rerun_converges=True)
print(json.dumps(document))
sys.exit(1)
'''


def test_failed_and_skipped_actions_are_tabled_with_their_errors(workspace: Path, github: FakeGitHub):
    script = workspace / "failing_apply.py"
    script.write_text(FAILING_APPLY)
    step = push(workspace, github, command=f"{sys.executable} {script}")
    assert step.code == 1 and step.outputs["exitcode"] == "1" and step.outputs["has-changes"] == "true", step.log
    summary = step.summary
    assert "Exit code 1 · 5 succeeded, 1 failed, 1 skipped." in summary, summary
    assert "| status | action | error |" in summary
    assert re.search(r"\| failed \| [^|\n]+ \| the catalog said 503 \\\| try later<br>retry-after: 5 \|", summary)
    assert re.search(r"\| skipped \| [^|\n]+ \| depends on a failed action \|", summary)
    assert "applying again converges" in summary and "Plan: 7 to create" in summary
    assert " FAILED  " in step.log and "skipped  " in step.log
    assert "Apply partly failed: 5 succeeded, 1 failed, 1 skipped." in step.log


def test_an_apply_refused_before_planning_says_so(workspace: Path, github: FakeGitHub):
    manifest_path = workspace / "catalog" / "lance-sync.yaml"
    step = push(workspace, github, command=f"{sys.executable} -m lance_sync", args=f"--policy {manifest_path}.absent")
    assert step.code != 0 and step.outputs["has-changes"] == "false", step.log
    assert "### lance-sync apply failed" in step.summary and "nothing was planned" in step.summary


def test_extras_are_chosen_per_manifest_and_run(workspace: Path, github: FakeGitHub):
    """scripts/ci_extras.py as action.yml runs it (`extras: auto`), in the same environment."""
    def extras(step: Step) -> str:
        assert step.code == 0, step.log
        return step.result.stdout.strip()

    manifest_path = workspace / "catalog" / "lance-sync.yaml"
    assert extras(pull_request(workspace, github, script=EXTRAS_SCRIPT)) == ""  # dir only
    manifest = yaml.safe_load(QUICKSTART.read_text())  # with its sourced table
    manifest["backends"]["cat"] = {"type": "glue", "region": "eu-west-1"}
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    assert extras(pull_request(workspace, github, script=EXTRAS_SCRIPT)) == "glue"  # a plan needs no Spark
    assert extras(Step(workspace, github, "push", {"repository": {"default_branch": "main"}},
                       script=EXTRAS_SCRIPT)) == "glue,spark"
    manifest["spark"] = {"master": "sc://spark.example:15002"}
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    assert extras(pull_request(workspace, github, script=EXTRAS_SCRIPT, mode="apply")) == "connect,glue"
    assert github.calls == []


SHA_PINNED = re.compile(r"[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}")


def test_every_action_used_is_pinned_by_commit():
    """action.yml's steps, and the example workflow's third-party actions (not lance-sync's own,
    pinned to its release), name a 40-hex commit and, in a comment, the release it is."""
    action_text = (ROOT / "action.yml").read_text()
    uses = [step["uses"] for step in yaml.safe_load(action_text)["runs"]["steps"] if "uses" in step]
    workflow_text = (ROOT / "examples" / "ci" / "lance-sync.yml").read_text()
    workflow = yaml.safe_load(workflow_text)
    uses += [step["uses"] for job in workflow["jobs"].values() for step in job["steps"]
             if "uses" in step and not step["uses"].startswith("lance-sync/lance-sync@")]
    assert len(uses) >= 4
    for used in uses:
        assert SHA_PINNED.fullmatch(used), f"{used} is not pinned to a commit"
        assert re.search(rf"{re.escape(used)} # v\d+\.\d+\.\d+\n", action_text + workflow_text), used
