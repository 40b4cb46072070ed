#!/usr/bin/env python3
"""The GitHub Action's step (action.yml): validate, then plan or apply, with GitHub's environment.

- A pull request: validate, plan with --format markdown, and post the plan as ONE comment on
  the pull request, with a link to the whole plan as an HTML report (`show --format html`, which
  action.yml uploads as an artifact between this script's two runs: see "Two runs" below). The plan covers only the manifest entries changed since the merge base
  (`--changed-since`; input `changed-only`), when the clone has the base commit; otherwise,
  and on the default branch, it is a full plan. Each run edits the comment the last run posted: one that carries the
  hidden marker naming the manifests AND was written by the account the token authenticates
  as (`GitHub.viewer`). Anyone else's comment is never edited, marker or not; when the
  account cannot be told, a new comment is posted (with a warning).
- A push to the repository's default branch: validate and apply with --auto-approve and
  --format json (one document: the plan and every outcome). The log gets a line per outcome,
  the counts, the journal and the rollback plan; the job summary gets the counts, a table of
  the actions that failed or were skipped with their errors, the journal and rollback plan,
  and the applied plan in markdown (`lance-sync show --format markdown`).
- Anything else (a push to another branch, a manual run): validate and plan.
`mode: plan` or `mode: apply` forces one. The plan also goes to the job summary, and is saved
to .lance-sync/plan.json next to the first manifest (`lance-sync apply` can carry it out), with
the HTML report beside it (.lance-sync/plan.html).

Two runs: the artifact's link is known only once action.yml's upload step ran, after this
script. So `ci_action.py` does everything but the comment: it writes the comment to
.lance-sync/comment.json (output `comment-file`) and names the report (outputs `report`,
`report-name`); then `ci_action.py comment`, with the artifact's link in LANCE_SYNC_REPORT_URL,
adds the link to the comment and posts it. The comment always links the report when there is
one; a comment cut to fit GitHub's limit says the whole plan is there.

A pull request from a fork gets no secrets: validate still runs (it names the variables it
could not resolve), and the comment says the plan needs them instead of failing the check.

Settings come from the environment, as action.yml passes its inputs (LANCE_SYNC_*), and
from GitHub's own variables (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REF,
GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_SERVER_URL,
GITHUB_RUN_ID, GITHUB_SHA) and the token in GITHUB_TOKEN. Only the standard library is used,
and the GitHub API is reached only at GITHUB_API_URL.

Secrets: lance-sync masks the secrets it knows in everything it writes; this step masks on
its own side too, in the comment, the job summary and everything it writes to the log: the
values of environment variables whose names look secret (`SECRET_VARIABLE`: a part TOKEN,
SECRET, PASSWORD, PASSWD, PASS, CREDENTIAL, KEY, PRIVATE or SAS, such as UC_TOKEN or
AWS_SECRET_ACCESS_KEY; GITHUB_TOKEN among them), in the forms lance-sync masks (exact, URL-,
JSON- and HTML-encoded, base64 at any offset). The masking itself is lance-sync's
`lance_sync/model/secrets.py`, loaded from this action's own source (it uses the standard library
only), so the two never differ in what a form is.

Exit status: lance-sync's (plan: 0 no changes or changes, 1 error, 4 blocked; apply: its own).
Step outputs: exitcode; has-changes, "true" when the plan (of a plan run) or the applied plan
has actions (a blocked plan included), else "false"; report and report-name (the HTML report's
absolute path and its artifact's name; empty without a plan); comment-file; and, of the
comment run, comment-url. The details are in the job summary, not in outputs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

#: lance-sync's exit codes (see docs/cli.md)
OK, ERROR, CHANGES, REFUSED = 0, 1, 2, 4
#: GitHub refuses comments longer than this; lance-sync's markdown stays under 65,000
COMMENT_LIMIT = 65_536
#: where a plan run saves its plan, its HTML report and the comment to post, in .lance-sync next
#: to the first manifest
PLAN_FILE = "plan.json"
REPORT_FILE = "plan.html"
COMMENT_FILE = "comment.json"
PAGE_SIZE = 100
UNSET_VARIABLE = re.compile(r"environment variable '([A-Za-z_][A-Za-z0-9_]*)' is not set")
#: environment variables whose values are masked: a name with one of these parts
SECRET_VARIABLE = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|KEY|PRIVATE|SAS)S?(?:_|$)",
                             re.IGNORECASE)
VIEWER_QUERY = "query { viewer { login databaseId } }"


def _load_masking() -> ModuleType:
    """lance-sync's masking (lance_sync/model/secrets.py, standard library only) from this action's
    source, without importing the lance_sync package."""
    path = Path(__file__).resolve().parents[1] / "lance_sync" / "model" / "secrets.py"
    spec = importlib.util.spec_from_file_location("lance_sync_action_secrets", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


masking = _load_masking()


def register_secret_variables(environ: dict[str, str]) -> None:
    """Mask the values of the environment variables whose names look secret."""
    masking.register(*(value for name, value in environ.items() if SECRET_VARIABLE.search(name)))


@dataclass
class Settings:
    files: list[str]
    mode: str
    comment: bool
    lock_timeout: str
    extra_args: list[str]
    command: list[str]
    #: pull-request plans read only what changed since the merge base (`changed-only` input)
    changed_only: bool = True

    @classmethod
    def from_environment(cls, environ: dict[str, str]) -> Settings:
        mode = environ.get("LANCE_SYNC_MODE", "auto").strip() or "auto"
        if mode not in ("auto", "plan", "apply"):
            raise SystemExit(f"::error::mode must be auto, plan or apply (got '{mode}')")
        return cls(files=environ.get("LANCE_SYNC_FILES", "").split() or ["lance-sync.yaml"], mode=mode,
                   comment=environ.get("LANCE_SYNC_COMMENT", "true").strip().lower() == "true",
                   lock_timeout=environ.get("LANCE_SYNC_LOCK_TIMEOUT", "").strip() or "600",
                   extra_args=shlex.split(environ.get("LANCE_SYNC_ARGS", "")),
                   command=shlex.split(environ.get("LANCE_SYNC_COMMAND", "")) or ["lance-sync"],
                   changed_only=environ.get("LANCE_SYNC_CHANGED_ONLY", "true").strip().lower() != "false")

    def file_args(self) -> list[str]:
        return [arg for path in self.files for arg in ("-f", path)]


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Identity:
    """The account a token authenticates as: a user, or a GitHub App's bot (github-actions[bot]
    for the workflow's GITHUB_TOKEN)."""

    login: str
    id: int | None

    def wrote(self, comment: dict[str, Any]) -> bool:
        author = comment.get("user") or {}
        if self.id is not None and isinstance(author.get("id"), int):
            return author["id"] == self.id
        return str(author.get("login") or "").lower() == self.login.lower()


class GitHub:
    """What the step knows of the run, and the few REST calls it makes."""

    def __init__(self, environ: dict[str, str]):
        self.environ = environ
        self.event_name = environ.get("GITHUB_EVENT_NAME", "")
        path = environ.get("GITHUB_EVENT_PATH")
        self.event: dict[str, Any] = json.loads(Path(path).read_text()) if path and Path(path).is_file() else {}
        self.api = environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
        self.graphql = environ.get("GITHUB_GRAPHQL_URL") or _graphql_url(self.api)
        self.repository = environ.get("GITHUB_REPOSITORY", "")
        self.token = environ.get("GITHUB_TOKEN", "")

    @property
    def pull_request(self) -> int | None:
        number = (self.event.get("pull_request") or {}).get("number")
        return number if self.event_name.startswith("pull_request") and isinstance(number, int) else None

    @property
    def on_default_branch(self) -> bool:
        default = (self.event.get("repository") or {}).get("default_branch")
        return self.event_name == "push" and bool(default) and self.environ.get("GITHUB_REF") == f"refs/heads/{default}"

    def merge_base(self) -> str | None:
        """The commit a pull request's branch forked from its base (for --changed-since); None,
        with a notice, when the clone lacks the base commit (a shallow checkout)."""
        base = ((self.event.get("pull_request") or {}).get("base") or {}).get("sha")
        if not base:
            return None
        found = subprocess.run(["git", "merge-base", str(base), "HEAD"], capture_output=True, text=True,
                               stdin=subprocess.DEVNULL)
        if found.returncode != 0:
            print("::notice::planned in full: the pull request's base commit is not in this clone "
                  "(check out with fetch-depth: 0 to plan only what changed)")
            return None
        return found.stdout.strip()

    def run_link(self) -> str:
        server, run_id = self.environ.get("GITHUB_SERVER_URL"), self.environ.get("GITHUB_RUN_ID")
        sha = self.environ.get("GITHUB_SHA", "")[:7]
        run = f"[run {run_id}]({server}/{self.repository}/actions/runs/{run_id})" if server and run_id else ""
        return " · ".join(part for part in (f"commit {sha}" if sha else "", run) if part)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """A REST call (`path` under the API URL) or, given a whole URL, any call."""
        url = path if "://" in path else f"{self.api}{path}"
        request = urllib.request.Request(
            url, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                     "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                     "User-Agent": "lance-sync-action"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def viewer(self) -> Identity | None:
        """The account the token authenticates as: GET /user answers for a personal or OAuth
        token; an installation token (the workflow's GITHUB_TOKEN, a GitHub App's) gets 403
        there, and GraphQL's `viewer` answers for both. None when neither says."""
        try:
            user = self.request("GET", "/user")
            return Identity(str(user["login"]), user.get("id"))
        except (urllib.error.URLError, OSError, KeyError, TypeError, ValueError):
            pass
        try:
            viewer = self.request("POST", self.graphql, {"query": VIEWER_QUERY})["data"]["viewer"]
            return Identity(str(viewer["login"]), viewer.get("databaseId"))
        except (urllib.error.URLError, OSError, KeyError, TypeError, ValueError):
            return None

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """Edit this account's comment that carries `marker`, or post one; its URL. Another
        account's comment is never edited; when the token's account is unknown, a new comment
        is posted."""
        issue = f"/repos/{self.repository}/issues/{number}"
        me = self.viewer()
        if me is None:
            print("::warning::could not tell which account the token belongs to (GET /user and GraphQL's "
                  "viewer both failed), so no earlier comment is edited: posting a new one")
            return self.request("POST", f"{issue}/comments", {"body": body})["html_url"]
        page = 1
        while True:
            comments = self.request("GET", f"{issue}/comments?per_page={PAGE_SIZE}&page={page}")
            found = next((c for c in comments if marker in (c.get("body") or "") and me.wrote(c)), None)
            if found is not None:
                return self.request("PATCH", f"/repos/{self.repository}/issues/comments/{found['id']}",
                                    {"body": body})["html_url"]
            if len(comments) < PAGE_SIZE:
                return self.request("POST", f"{issue}/comments", {"body": body})["html_url"]
            page += 1


def _graphql_url(api: str) -> str:
    """GitHub's GraphQL endpoint beside its REST API: api.github.com/graphql, or on GitHub
    Enterprise Server HOST/api/graphql beside HOST/api/v3."""
    return api.removesuffix("/v3") + "/graphql" if api.endswith("/api/v3") else f"{api}/graphql"


def lance_sync(settings: Settings, *args: str, live: bool = False) -> Run:
    """Run lance-sync; its output goes to the log (masked, as everything this step writes),
    all at the end; or, `live`, its stderr (progress, each failed action) line by line as it
    comes and its stdout (a JSON document) only to the caller."""
    command = [*settings.command, *args]
    print(f"$ lance-sync {shlex.join(args)}", flush=True)
    if live:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL) as process:
            stdout: list[str] = []
            reader = threading.Thread(target=lambda: stdout.append(process.stdout.read() if process.stdout else ""))
            reader.start()
            lines = []
            for line in process.stderr or []:
                lines.append(line)
                sys.stdout.write(line)
                sys.stdout.flush()
            reader.join()
        return Run(process.returncode, "".join(stdout), "".join(lines))
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.stdout.flush()
    return Run(result.returncode, result.stdout, result.stderr)


def show_plan(settings: Settings, path: Path, output_format: str) -> str:
    """A saved plan as `lance-sync show FILE --format FORMAT` prints it; empty if it fails."""
    shown = subprocess.run([*settings.command, "show", str(path), "--format", output_format], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL)
    if shown.returncode != OK:
        print(f"::warning::could not render the plan in {output_format}: {shown.stderr.strip()}")
        return ""
    return shown.stdout


def plan_markdown(settings: Settings, plan: dict[str, Any]) -> str:
    """A plan of apply's JSON document in markdown; empty if it fails."""
    with tempfile.TemporaryDirectory(prefix="lance-sync-action-") as folder:
        path = Path(folder) / "plan.json"
        path.write_text(json.dumps(plan))
        return show_plan(settings, path, "markdown")


def write_report(settings: Settings, saved: Path) -> Path | None:
    """The saved plan as an HTML report beside it (masked, as everything this step writes); None
    when there is no saved plan or it cannot be rendered."""
    if not saved.is_file():
        return None
    page = show_plan(settings, saved, "html")
    if not page:
        return None
    report = saved.with_name(REPORT_FILE)
    report.write_text(masking.mask(page), encoding="utf-8")
    return report.resolve()


def report_name(settings: Settings) -> str:
    """The artifact's name: it names the manifests, so several uses of the action in one run keep
    apart (an artifact's name takes no slash, colon, quote or angle bracket)."""
    return "lance-sync-plan-" + re.sub(r"[^A-Za-z0-9._-]+", "-", " ".join(manifest_paths(settings))).strip("-")


def relative(text: str, base_dir: str | None) -> str:
    """Locations below the manifests' folder shown as ./..., as lance-sync shows them."""
    return text.replace(base_dir.rstrip("/") + "/", "./") if base_dir else text


def headline(outcome: dict[str, Any], base_dir: str | None) -> str:
    """'create table lake: sales$orders', from an outcome of apply's JSON document."""
    return relative(f"{outcome.get('verb')} {outcome.get('kind')} {outcome.get('backend')}: "
                    f"{outcome.get('display_id')}", base_dir)


def counts(document: dict[str, Any]) -> dict[str, int]:
    outcomes = document.get("outcomes") or []
    return {status: sum(o.get("status") == status for o in outcomes) for status in ("succeeded", "failed", "skipped")}


def print_outcomes(document: dict[str, Any]) -> None:
    """A log line per outcome, the counts, the journal and the rollback plan."""
    base_dir = (document.get("plan") or {}).get("base_dir")
    for outcome in document.get("outcomes") or []:
        mark = {"succeeded": "ok", "failed": "FAILED"}.get(outcome.get("status"), str(outcome.get("status")))
        error = f": {outcome['error']}" if outcome.get("error") else ""
        print(f"{mark:>7}  {headline(outcome, base_dir)}{relative(error, base_dir)}")
    done = counts(document)
    if document.get("outcomes") is not None:
        verdict = "complete" if not done["failed"] and not done["skipped"] else "partly failed"
        print(f"Apply {verdict}: {done['succeeded']} succeeded, {done['failed']} failed, {done['skipped']} skipped.")
    elif document.get("error"):
        print(f"Apply {document.get('status')}: {document['error']}")
    for label, key in (("Journal", "journal"), ("Rollback plan", "rollback")):
        if document.get(key):
            print(f"{label}: {document[key]}")


def apply_summary(settings: Settings, document: dict[str, Any], code: int) -> str:
    """The job summary of an apply: the counts, a table of the actions that failed or were
    skipped with their errors, the journal and rollback plan, and the plan it carried out."""
    plan = document.get("plan") or {}
    base_dir = plan.get("base_dir")
    done = counts(document)
    lines = [f"### lance-sync apply: {document.get('status')}", "",
             f"Exit code {code} · {done['succeeded']} succeeded, {done['failed']} failed, {done['skipped']} skipped."]
    if document.get("error"):
        lines += ["", f"Refused: {cell(document['error'], base_dir)}"]
    unsuccessful = [o for o in document.get("outcomes") or [] if o.get("status") != "succeeded"]
    if unsuccessful:
        lines += ["", "| status | action | error |", "| --- | --- | --- |"]
        lines += [f"| {o.get('status')} | {cell(headline(o, base_dir), None)} | {cell(o.get('error') or '', base_dir)} |"
                  for o in unsuccessful]
    if document.get("rerun_converges"):
        lines += ["", "The failures were transient: applying again converges."]
    kept = [f"{label}: `{document[key]}`" for label, key in (("Journal", "journal"), ("Rollback plan", "rollback"))
            if document.get(key)]
    if kept:
        lines += ["", " · ".join(kept)]
    shown = plan_markdown(settings, plan) if plan else ""
    return "\n".join(lines) + "\n\n" + (shown or "No plan.\n")


def cell(text: str, base_dir: str | None) -> str:
    """Text for one cell of a markdown table."""
    return relative(str(text), base_dir).replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def manifest_paths(settings: Settings) -> list[str]:
    """The manifests relative to the repository's root."""
    where = os.path.relpath(os.getcwd(), os.environ.get("GITHUB_WORKSPACE", os.getcwd()))
    return [os.path.normpath(os.path.join(where, f)) for f in settings.files]


def marker(settings: Settings) -> str:
    """Names the manifests, so several uses of the action in one repository keep apart."""
    return f"<!-- lance-sync plan: {' '.join(manifest_paths(settings))} -->"


def fenced(text: str) -> str:
    return "```\n" + text.strip().replace("```", "'''") + "\n```"


def plan_comment(settings: Settings, validated: Run, plan: Run | None, github: GitHub) -> str:
    """The comment body: the plan, or why there is none."""
    if validated.code != OK:
        text = f"### lance-sync: the manifests are not valid\n\n{fenced(validated.stderr or validated.stdout)}\n"
    elif plan is None:
        text = "### lance-sync plan\n\nNot planned.\n"
    elif plan.code in (OK, CHANGES, REFUSED):
        text = plan.stdout
    elif unset := sorted(set(UNSET_VARIABLE.findall(plan.stderr))):
        text = ("### lance-sync plan\n\nThe manifests are valid, but planning needs "
                f"{', '.join(f'`{name}`' for name in unset)}, which this run does not have (a pull request "
                "from a fork gets no secrets). A maintainer's run plans it.\n\n"
                f"{fenced(validated.stdout)}\n")
    else:
        text = f"### lance-sync plan failed\n\n{fenced(plan.stderr or plan.stdout)}\n"
    footer = f"\n<sub>{github.run_link()}</sub>\n" if github.run_link() else ""
    return f"{marker(settings)}\n{masking.mask(text)}{footer}"


def comment_with_report(body: str, report_url: str, name: str) -> str:
    """The comment as posted: `body` and, when the report was uploaded, a link to it; cut to fit
    GitHub's limit, the cut saying where the whole plan is."""
    link = (f"\n**The whole plan:** [HTML report]({report_url}) (artifact `{name}`: download it and open "
            f"`{REPORT_FILE}`).\n") if report_url else ""
    if len(body) + len(link) <= COMMENT_LIMIT:
        return body + link
    cut = ("\n\n_(cut to fit a comment: the whole plan is in the HTML report)_\n" if report_url
           else "\n\n_(cut to fit a comment)_\n")
    return body[:COMMENT_LIMIT - len(cut) - len(link)] + cut + link


def write_outputs(environ: dict[str, str], **outputs: str) -> None:
    path = environ.get("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.writelines(f"{key}={value}\n" for key, value in outputs.items())


def write_summary(environ: dict[str, str], text: str) -> None:
    path = environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as summary:
            summary.write(masking.mask(text) + "\n")


def main(argv: list[str]) -> int:
    environ = dict(os.environ)
    register_secret_variables(environ)
    with masking.masked_standard_streams():
        return run_comment(environ) if argv == ["comment"] else run_step(environ)


def resolved_mode(settings: Settings, github: GitHub) -> str:
    """plan or apply: `auto` applies on a push to the default branch only."""
    if settings.mode != "auto":
        return settings.mode
    return "apply" if github.on_default_branch else "plan"


def state_dir(settings: Settings) -> Path:
    """.lance-sync next to the first manifest, where lance-sync keeps its journals."""
    return Path(settings.files[0]).parent / ".lance-sync"


def run_step(environ: dict[str, str]) -> int:
    settings = Settings.from_environment(environ)
    github = GitHub(environ)
    mode = resolved_mode(settings, github)

    validated = lance_sync(settings, "validate", *settings.file_args())
    if mode == "apply" and validated.code == OK:
        return run_apply(settings, github, environ)

    plan = None
    saved = state_dir(settings) / PLAN_FILE
    if validated.code == OK:
        since = github.merge_base() if github.pull_request is not None and settings.changed_only else None
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.unlink(missing_ok=True)
        plan = lance_sync(settings, "plan", *settings.file_args(), "--format", "markdown", "--detailed-exitcode",
                          "--out", str(saved), *(["--changed-since", since] if since else []),
                          *settings.extra_args)
    code = validated.code if plan is None else plan.code
    body = plan_comment(settings, validated, plan, github)
    write_summary(environ, body)
    report = write_report(settings, saved) if plan is not None and plan.code in (OK, CHANGES, REFUSED) else None
    comment_file = ""
    if github.pull_request is not None and settings.comment:
        path = state_dir(settings) / COMMENT_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"pull_request": github.pull_request, "marker": marker(settings), "body": body,
                                    "report_name": report_name(settings) if report else ""}))
        comment_file = str(path.resolve())
    write_outputs(environ, exitcode=str(code), **{"has-changes": str(plan_has_changes(plan, saved)).lower(),
                                                  "report": str(report or ""),
                                                  "report-name": report_name(settings) if report else "",
                                                  "comment-file": comment_file})
    if plan is not None and plan.code == ERROR and UNSET_VARIABLE.search(plan.stderr):
        print("::warning::plan skipped: secrets are not available to this run")
        return OK
    return OK if code in (OK, CHANGES) else code


def run_comment(environ: dict[str, str]) -> int:
    """The second run: post the comment the first one wrote, with the link to the report that
    action.yml uploaded (LANCE_SYNC_REPORT_URL; empty when it was not). A failure to comment is
    a warning: the plan is in the job summary."""
    saved = json.loads(Path(environ["LANCE_SYNC_COMMENT_FILE"]).read_text())
    body = comment_with_report(saved["body"], environ.get("LANCE_SYNC_REPORT_URL", "").strip(), saved["report_name"])
    comment_url = ""
    try:
        comment_url = GitHub(environ).upsert_comment(saved["pull_request"], saved["marker"], masking.mask(body))
        print(f"Plan posted: {comment_url}")
    except (urllib.error.URLError, OSError, KeyError, ValueError) as error:
        # a pull request from a fork has a read-only token: the job summary has the plan
        print(f"::warning::could not comment on the pull request ({error}); the plan is in the job summary")
    write_outputs(environ, **{"comment-url": comment_url})
    return OK


def plan_has_changes(plan: Run | None, saved: Path) -> bool:
    """Whether the plan has actions: read from the plan it saved (a blocked plan, exit 4, has
    them too); by its exit code (2) when it saved none."""
    if plan is None or plan.code not in (OK, CHANGES, REFUSED):
        return False
    try:
        return bool(json.loads(saved.read_text())["actions"])
    except (OSError, ValueError, KeyError, TypeError):
        return plan.code == CHANGES


def run_apply(settings: Settings, github: GitHub, environ: dict[str, str]) -> int:
    """Apply with --format json: a log line per outcome, and the outcomes, the journal and the
    plan in the job summary."""
    applied = lance_sync(settings, "apply", *settings.file_args(), "--auto-approve", "--lock-timeout",
                         settings.lock_timeout, "--format", "json", *settings.extra_args, live=True)
    try:
        document = json.loads(applied.stdout)
    except ValueError:
        document = None
    if not isinstance(document, dict) or "plan" not in document:
        # an error before planning (a manifest, another apply's lease): {"error": ...} or no JSON
        error = document.get("error") if isinstance(document, dict) else None
        text = (f"### lance-sync apply failed\n\nExit code {applied.code}; nothing was planned.\n\n"
                f"{fenced(str(error or applied.stderr or applied.stdout))}\n")
        has_changes = False
    else:
        print_outcomes(document)
        text = apply_summary(settings, document, applied.code)
        has_changes = bool((document.get("plan") or {}).get("actions"))
    footer = f"\n<sub>{github.run_link()}</sub>\n" if github.run_link() else ""
    write_summary(environ, text + footer)
    write_outputs(environ, exitcode=str(applied.code), **{"has-changes": str(has_changes).lower()})
    return applied.code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
