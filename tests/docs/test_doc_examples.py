"""Every console example of README.md and docs/ is run and its output compared with the doc.

How examples are found, run and compared, and the placeholders a doc may use: see
tests/docs/examples.py. What each example runs on is declared in SETUPS below, one entry per
example (doc, its how-manieth example from 0): a new example without an entry fails, saying to
add one. The examples of one doc run in order in one folder, each after its setup, so one can
build on the one before (`then`). An example that cannot run here is marked NOT_RUN with the
reason; keep those few.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.examples import DOCS, REPO, Example, as_single_command, find_blocks

QUICKSTART = REPO / "examples" / "quickstart"


@dataclass(frozen=True)
class Setup:
    prepare: Callable[[Example], None] | None = None   # None: on what the example before left
    not_run: str | None = None                         # why it is not run
    single_command: bool = False                       # see examples.as_single_command


def then() -> Setup:
    return Setup()


def NOT_RUN(reason: str) -> Setup:  # noqa: N802 - reads as a mark in the table
    return Setup(not_run=reason)


# --- setups ---------------------------------------------------------------------------------

def _copy(source: Path, example: Example) -> None:
    shutil.rmtree(example.folder, ignore_errors=True)
    shutil.copytree(source, example.folder, ignore=shutil.ignore_patterns("lakehouse", ".lance-sync"))


def fresh_quickstart(example: Example) -> None:
    _copy(QUICKSTART, example)


def fresh_repository(example: Example) -> None:
    shutil.rmtree(example.folder, ignore_errors=True)
    example.folder.mkdir(parents=True)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"setup: {path.name} no longer holds {old!r}"
    path.write_text(text.replace(old, new, 1))


def _git(example: Example, *args: str) -> None:
    subprocess.run(["git", *args], cwd=example.folder, check=True, capture_output=True,
                   env={**example.environment(), "GIT_AUTHOR_NAME": "docs", "GIT_AUTHOR_EMAIL": "docs@example.com",
                        "GIT_COMMITTER_NAME": "docs", "GIT_COMMITTER_EMAIL": "docs@example.com"})


def quickstart_in_git_applied_then_orders_platinum(example: Example) -> None:
    """changed-since.md: the quickstart applied and committed, then `tier: platinum`."""
    fresh_quickstart(example)
    example.lance_sync("apply", "-f", "lance-sync.yaml", "--auto-approve")
    (example.folder / ".gitignore").write_text("lakehouse/\n.lance-sync/\n")
    _git(example, "init", "-q", "-b", "main")
    _git(example, "add", "-A")
    _git(example, "commit", "-q", "-m", "the quickstart, applied")
    _edit(example.folder / "lance-sync.yaml", "tier: gold", "tier: platinum")


def _quickstart_orders_alone() -> str:
    """The quickstart's manifest with `orders` as its only table."""
    text = (QUICKSTART / "lance-sync.yaml").read_text()
    return text[:text.index("\n  # Materialized from a CSV file")] + "\n"


def _orders_entry(manifest: Path, entry: str) -> None:
    text = manifest.read_text()
    start = text.index("  - name: orders\n")
    end = text.index("    properties:\n      tier: gold", start)
    manifest.write_text(text[:start] + entry + text[end:])


def orders_applied_then_renamed(example: Example) -> None:
    """renames.md: the quickstart's `orders` alone applied, then renamed to `orders_v2`."""
    fresh_quickstart(example)
    manifest = example.folder / "lance-sync.yaml"
    manifest.write_text(_quickstart_orders_alone())
    example.lance_sync("apply", "-f", "lance-sync.yaml", "--auto-approve")
    _orders_entry(manifest, "  - name: orders_v2\n    renamed_from: orders\n"
                            "    location: ./lakehouse/data/orders.lance\n"
                            "    register:\n      - {backend: lake, namespace: sales}\n")


def renamed_applied_then_moved(example: Example) -> None:
    example.lance_sync("apply", "-f", "lance-sync.yaml", "--auto-approve")
    _edit(example.folder / "lance-sync.yaml", "    renamed_from: orders\n",
          "    renamed_from: [sales$orders_v2, orders]\n")
    _edit(example.folder / "lance-sync.yaml", "{backend: lake, namespace: sales}",
          "{backend: lake, namespace: sales$archive}")


def moved_applied_then_renamed_without_renamed_from(example: Example) -> None:
    example.lance_sync("apply", "-f", "lance-sync.yaml", "--auto-approve")
    _edit(example.folder / "lance-sync.yaml", "  - name: orders_v2\n    renamed_from: [sales$orders_v2, orders]\n",
          "  - name: archived_orders\n")


def orders_applied_then_its_columns_changed(example: Example) -> None:
    """table-state.md: the quickstart's `orders` alone applied, then a column renamed, one
    declared removed and one added."""
    fresh_quickstart(example)
    manifest = example.folder / "lance-sync.yaml"
    manifest.write_text(_quickstart_orders_alone())
    example.lance_sync("apply", "-f", "lance-sync.yaml", "--auto-approve")
    _edit(manifest, "      - {name: customer, type: string}\n",
          "      - {name: customer_name, type: string, renamed_from: customer}\n")
    _edit(manifest, '      - {name: embedding, type: "fixed_size_list<float32>[8]"}\n',
          "      - {name: embedding, removed: true}\n      - {name: discount, type: float64}\n")


DRIFT_MANIFEST = """\
version: 1
owner: docs
backends:
  lake: {type: dir, root: ./lakehouse}
namespaces:
  - {backend: lake, id: sales}
  - {backend: lake, id: sales$archive}
tables:
  - name: orders
    location: ./lakehouse/data/orders.lance
    register: [{backend: lake, namespace: sales}]
    properties: {tier: gold}
    schema: [{name: order_id, type: int64}]
  - name: returns
    location: ./lakehouse/data/returns.lance
    register:
      - {backend: lake, namespace: sales}
      - {backend: lake, namespace: sales$archive, name: returns_2026}
    schema: [{name: order_id, type: int64}]
  - name: refunds
    location: ./lakehouse/data/refunds.lance
    register:
      - {backend: lake, namespace: sales}
      - {backend: lake, namespace: sales$archive}
    schema: [{name: order_id, type: int64}]
  - name: payments
    location: ./lakehouse/data/payments.lance
    register: [{backend: lake, namespace: sales}]
    schema: [{name: order_id, type: int64}, {name: amount, type: double}]
"""


def drift_behind_its_back(example: Example) -> None:
    """drift.md: four tables applied, then changed with the Python the doc shows at its end."""
    fresh_repository(example)
    folder = example.folder / "drift"
    folder.mkdir()
    (folder / "lance-sync.yaml").write_text(DRIFT_MANIFEST)
    example.lance_sync("apply", "-f", "drift/lance-sync.yaml", "--auto-approve")
    doc = (REPO / "docs" / "drift.md").read_text()
    changes = doc[doc.index("```python\nlake = connect(") + len("```python\n"):]
    changes = changes[:changes.index("```")]
    script = ("import os\nimport lance\nimport pyarrow as pa\nfrom lance_namespace import DeclareTableRequest,"
              " DeregisterTableRequest\nfrom lance_sync.drivers import connect\n" + changes)
    subprocess.run([sys.executable, "-c", script], cwd=folder, env=example.environment(), check=True)


def status_one_table_dropped(example: Example) -> None:
    """status.md: the doc's manifest applied, then the doc's Python run on it."""
    fresh_repository(example)
    folder = example.folder / "estate"
    folder.mkdir()
    doc = (REPO / "docs" / "status.md").read_text()
    manifest = doc[doc.index("```yaml\n") + len("```yaml\n"):]
    (folder / "lance-sync.yaml").write_text(manifest[:manifest.index("```")])
    example.lance_sync("apply", "-f", "estate/lance-sync.yaml", "--auto-approve")
    changes = doc[doc.index("```python\n") + len("```python\n"):]
    script = ("import os\nfrom lance_namespace import DeregisterTableRequest\nfrom lance_sync.drivers import connect\n"
              + changes[:changes.index("```")])
    subprocess.run([sys.executable, "-c", script], cwd=folder, env=example.environment(), check=True)


def reconcile_example_with_refunds(example: Example) -> None:
    """policy.md: examples/reconcile with a table `Refunds` under scratch/ and no team."""
    _copy(REPO / "examples" / "reconcile", example)
    _edit(example.folder / "lance-sync.yaml", "\n# The manifest's own rules",
          "  - name: Refunds\n    location: ./lakehouse/scratch/refunds.lance\n"
          "    register:\n      - {backend: lake, namespace: sales}\n"
          "    schema:\n      - {name: order_id, type: int64}\n\n# The manifest's own rules")


GRANT_ERRORS = {
    "hive3": "version: 1\nowner: analytics\nbackends:\n  hms:\n    type: hive3\n    uri: thrift://127.0.0.1:9083\n"
             "namespaces:\n  - backend: hms\n    id: hive$sales\n"
             "tables:\n  - name: orders\n    location: ./lakehouse/orders.lance\n    register:\n"
             "      - backend: hms\n        namespace: hive$sales\n        grants:\n"
             "          \"user:alice\": [SELECT,\n            SELCT]\n",
    "dir": "version: 1\nowner: analytics\nbackends:\n  lake: {type: dir, root: ./lakehouse}\n"
           "namespaces:\n  - {backend: lake, id: sales}\ntables:\n  - name: orders\n"
           "    location: ./lakehouse/orders.lance\n    register:\n      - backend: lake\n"
           "        namespace: sales\n        grants:\n          alice@example.com: [SELECT]\n",
}


def _grant_error(kind: str) -> Callable[[Example], None]:
    def prepare(example: Example) -> None:
        fresh_repository(example)
        (example.folder / "lance-sync.yaml").write_text(GRANT_ERRORS[kind])
    prepare.__name__ = f"a_{kind}_grant_error"
    return prepare


def ci_step_beside_the_quickstart(example: Example) -> None:
    """ci.md: the CI step run by hand in examples/quickstart of a checkout."""
    fresh_repository(example)
    shutil.copytree(QUICKSTART, example.folder / "examples" / "quickstart")
    (example.folder / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "ci_action.py", example.folder / "scripts")
    (example.folder / "lance_sync").symlink_to(REPO / "lance_sync")  # the step reads its masking


def readme_quickstart(example: Example) -> None:
    """README: the quickstart's manifest (its yaml block named `# lance-sync.yaml`), nothing applied."""
    fresh_repository(example)
    readme = (REPO / "README.md").read_text()
    manifest = readme[readme.index("```yaml\n# lance-sync.yaml\n") + len("```yaml\n"):]
    (example.folder / "lance-sync.yaml").write_text(manifest[:manifest.index("```")])


# Unity: a server of this test's own (the doc's catalog `main` and its users must start empty)

def _unity(example: Example) -> str:
    return example.env["UC_ENDPOINT"]


def _permissions(example: Example, securable: str, name: str, principal: str,
                 add: list[str], remove: list[str]) -> None:
    from tests.servers.unity_server.app import API_ROOT
    body = {"changes": [{"principal": principal, "add": add, "remove": remove}]}
    request = urllib.request.Request(f"{_unity(example)}{API_ROOT}/permissions/{securable}/{name}",
                                     data=json.dumps(body).encode(), method="PATCH",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10):
        pass


GRANTS_MANIFEST = """\
version: 1
owner: analytics
backends:
  uc: {type: unity, endpoint: "${UC_ENDPOINT}", catalog: main}
namespaces:
  - backend: uc
    id: main$sales
    grants:
      alice@example.com: [USE SCHEMA]
      bob@example.com: [use_schema]
tables:
  - name: orders
    location: ./lakehouse/orders.lance
    register:
      - backend: uc
        namespace: main$sales
        grants:
          alice@example.com: [SELECT, MODIFY]
          bob@example.com: [SELECT]
"""


def unity_users_and_a_dataset(example: Example) -> None:
    """grants.md: users alice, bob, carol; alice holds USE CATALOG on main; 3 rows of orders."""
    import lance
    import pyarrow as pa

    from tests.conformance.harness_unity import ensure_catalog
    from tests.servers.unity import create_user
    fresh_repository(example)
    server = example.server  # type: ignore[attr-defined]
    ensure_catalog(server, "main")
    for user in ("alice", "bob", "carol"):
        create_user(server, f"{user}@example.com")
    _permissions(example, "catalog", "main", "alice@example.com", ["USE CATALOG"], [])
    lance.write_dataset(pa.table({"order_id": [1, 2, 3]}), str(example.folder / "lakehouse" / "orders.lance"))
    (example.folder / "lance-sync.yaml").write_text(GRANTS_MANIFEST)


def alice_loses_modify_carol_gets_select(example: Example) -> None:
    _edit(example.folder / "lance-sync.yaml", "alice@example.com: [SELECT, MODIFY]\n",
          "alice@example.com: [SELECT]\n          carol@example.com: [SELECT]\n")


def bob_changed_out_of_band(example: Example) -> None:
    _permissions(example, "table", "main.sales.orders", "bob@example.com", ["MODIFY"], ["SELECT"])


def promotion_files_and_five_versions(example: Example) -> None:
    """table-state.md: the base manifest and the overlays the doc shows (each yaml block naming its
    file on its first line), and a dataset of five versions."""
    import lance
    import pyarrow as pa

    fresh_repository(example)
    doc = (REPO / "docs" / "table-state.md").read_text()
    for name, body in re.findall(r"```yaml\n# (\S+\.yaml)\n(.*?)```", doc, re.S):
        (example.folder / name).write_text(body)
    rows = pa.table({"id": pa.array(range(10), pa.int64())})
    location = str(example.folder / "lake" / "events.lance")
    lance.write_dataset(rows, location)
    for _ in range(4):
        lance.write_dataset(rows, location, mode="append")


RECONCILE_LOOP = ("a loop changed by hand while it runs, its metrics read and SIGTERM sent: what it prints "
                  "depends on when the changes land; tests/e2e/test_reconcile.py runs the same loop")

SETUPS: dict[tuple[str, int], Setup] = {
    ("README.md", 0): Setup(readme_quickstart),
    ("docs/changed-since.md", 0): Setup(quickstart_in_git_applied_then_orders_platinum),
    ("docs/ci.md", 0): Setup(ci_step_beside_the_quickstart, single_command=True),
    ("docs/ci.md", 1): NOT_RUN("pre-commit fetches the hook from its repository at a released tag"),
    ("docs/cli.md", 0): NOT_RUN("shell completion is interactive (<TAB>)"),
    ("docs/drift.md", 0): Setup(drift_behind_its_back),
    ("docs/grants.md", 0): Setup(_grant_error("hive3")),
    ("docs/grants.md", 1): Setup(_grant_error("dir")),
    ("docs/grants.md", 2): Setup(unity_users_and_a_dataset),
    ("docs/grants.md", 3): Setup(alice_loses_modify_carol_gets_select),
    ("docs/grants.md", 4): Setup(bob_changed_out_of_band),
    ("docs/policy.md", 0): Setup(reconcile_example_with_refunds),
    ("docs/policy.md", 1): then(),
    ("docs/policy.md", 2): then(),
    ("docs/reconcile.md", 0): NOT_RUN(RECONCILE_LOOP),
    ("docs/reconcile.md", 1): NOT_RUN(RECONCILE_LOOP),
    ("docs/renames.md", 0): Setup(orders_applied_then_renamed),
    ("docs/renames.md", 1): Setup(renamed_applied_then_moved),
    ("docs/renames.md", 2): Setup(moved_applied_then_renamed_without_renamed_from),
    ("docs/status.md", 0): Setup(status_one_table_dropped),
    ("docs/table-state.md", 0): Setup(orders_applied_then_its_columns_changed),
    ("docs/table-state.md", 1): Setup(promotion_files_and_five_versions),
    ("docs/targets.md", 0): Setup(fresh_quickstart),
    ("docs/targets.md", 1): then(),
    ("docs/targets.md", 2): then(),
}
#: docs whose examples need a catalog server: the setup reads it as `example.server`
SERVERS = {"docs/grants.md": "unity"}

EXAMPLES = {str(doc.relative_to(REPO)): blocks for doc in DOCS if (blocks := find_blocks(doc))}


@pytest.fixture
def own_unity_server(tmp_path: Path) -> Iterator[object]:
    from tests.servers.unity import start
    server = start(tmp_path / "unity")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("doc", sorted(EXAMPLES))
def test_the_examples_of_a_doc_print_what_it_shows(doc: str, tmp_path: Path, request: pytest.FixtureRequest, subprocesses: None):
    example = Example(tmp_path / "example")
    if doc in SERVERS:
        server = request.getfixturevalue("own_unity_server")
        example.server = server  # type: ignore[attr-defined]
        example.env["UC_ENDPOINT"] = server.endpoint
    failures, skipped = [], []
    for block in EXAMPLES[doc]:
        setup = SETUPS.get(block.key)
        if setup is None:
            failures.append(f"{block.doc}:{block.line}: example {block.index} has no setup: add one to SETUPS in "
                            f"{Path(__file__).relative_to(REPO)} (or mark it NOT_RUN with the reason)")
            continue
        if setup.not_run is not None:
            skipped.append(block)
            continue
        if setup.prepare is not None:
            setup.prepare(example)
        failures.extend(example.run(as_single_command(block) if setup.single_command else block))
    assert not failures, "\n\n".join(failures)
    if skipped and len(skipped) == len(EXAMPLES[doc]):
        pytest.skip("; ".join(f"{doc}:{b.line}: {SETUPS[b.key].not_run}" for b in skipped))


def test_every_setup_names_an_example_that_exists():
    examples = {block.key for blocks in EXAMPLES.values() for block in blocks}
    assert set(SETUPS) - examples == set(), "SETUPS names examples the docs no longer have"
    assert set(SETUPS) >= examples, f"examples without a setup: {sorted(examples - set(SETUPS))}"
