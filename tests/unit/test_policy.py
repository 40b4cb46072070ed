"""Policies: every rule kind refuses a plan that breaks it (exit 4, named in text, JSON and
markdown) and passes one that keeps it; the offline rules run in validate; rules are checked
when written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.actions import ActionType, Kind, Verb
from lance_sync.model.policy import Policy, combine


class Lake:
    """A dir-backend manifest in a temporary directory, driven through the CLI."""

    def __init__(self, root: Path):
        self.root = root
        self.path = root / "lance-sync.yaml"
        self.manifest: dict[str, Any] = {
            "version": 1, "owner": "policy-test",
            "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "sales", "properties": {"team": "sales"}}],
            "tables": [{"name": name, "location": f"./lake/data/{name}.lance",
                        "register": [{"backend": "lake", "namespace": "sales"}],
                        "schema": [{"name": "id", "type": "int64"}]} for name in ("orders", "returns")],
        }

    def run(self, command: str, *args: str):
        self.path.write_text(yaml.safe_dump(self.manifest, sort_keys=False))
        result = CliRunner().invoke(main, [command, "-f", str(self.path), *args], catch_exceptions=False)
        assert "Traceback" not in result.output
        return result

    def files(self) -> list[Path]:
        return sorted(p.relative_to(self.root) for p in self.root.rglob("*") if p.is_file())

    def rules(self, *rules: dict[str, Any]) -> None:
        self.manifest["policy"] = {"rules": list(rules)}

    def remove_tables(self, *names: str) -> None:
        self.manifest["tables"] = [t for t in self.manifest["tables"] if t["name"] not in names]


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path)


#: rule kind -> (a rule the manifest breaks, a rule it keeps, tables removed from the applied manifest)
RULES: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    "allowed_locations": ({"allowed_locations": ["./lake/gold"]}, {"allowed_locations": ["./lake/data"]}, ()),
    "required_properties": ({"required_properties": ["cost_center"]},
                            {"required_properties": ["team"], "objects": ["namespace"]}, ()),
    "name_pattern": ({"name_pattern": "[a-z]+_v[0-9]+"}, {"name_pattern": "[a-z][a-z_]*"}, ()),
    "forbidden_actions": ({"forbidden_actions": ["forget"], "backends": ["la*"]},
                          {"forbidden_actions": ["delete", "replace table"]}, ("returns",)),
    "max_removals": ({"max_removals": 1}, {"max_removals": 2}, ("orders", "returns")),
}


@pytest.mark.parametrize("check", RULES)
def test_each_rule_kind_refuses_a_plan_that_breaks_it_and_passes_one_that_keeps_it(lake: Lake, check: str):
    breaking, keeping, removed = RULES[check]
    if removed:  # rules about removals need something applied to remove
        assert lake.run("apply", "--auto-approve").exit_code == 0
        lake.remove_tables(*removed)

    lake.rules({"name": "the-rule", **breaking})
    refused = lake.run("plan")
    assert refused.exit_code == 4, refused.output
    assert f"[the-rule] {check}:" in refused.stdout
    document = json.loads(lake.run("plan", "--format", "json").stdout)
    assert {(v["rule"], v["check"]) for v in document["policy_violations"]} == {("the-rule", check)}
    markdown = lake.run("plan", "--format", "markdown").stdout
    assert f"- `the-rule` ({check}):" in markdown and "policy violation(s)" in markdown
    before = lake.files()
    applied = lake.run("apply", "--auto-approve")
    assert applied.exit_code == 4 and "breaks the policy" in applied.output and "'the-rule'" in applied.output
    assert lake.files() == before  # nothing changed

    lake.rules({"name": "the-rule", **keeping})
    passing = lake.run("plan", "--detailed-exitcode")
    assert passing.exit_code == 2 and "policy violation" not in passing.stdout, passing.output
    assert lake.run("apply", "--auto-approve").exit_code == 0
    assert lake.run("plan", "--detailed-exitcode").exit_code == 0


@pytest.mark.parametrize("check", ["allowed_locations", "required_properties", "name_pattern"])
def test_the_rules_about_declared_objects_run_offline_in_validate(lake: Lake, check: str):
    breaking, keeping, _ = RULES[check]
    lake.rules({"name": "offline", **breaking})
    refused = lake.run("validate")
    assert refused.exit_code == 4 and f"[offline] {check}:" in refused.stdout
    assert "lance-sync.yaml:" in refused.stdout  # the declaration's file and line
    lake.rules({"name": "offline", **keeping})
    assert lake.run("validate").exit_code == 0


def test_an_object_in_sync_that_breaks_a_rule_refuses_the_plan_too(lake: Lake):
    assert lake.run("apply", "--auto-approve").exit_code == 0
    lake.rules({"name": "needs-cost-center", "required_properties": ["cost_center"], "objects": ["table"]})
    refused = lake.run("plan")
    assert refused.exit_code == 4 and "No changes" in refused.stdout
    assert refused.stdout.count("[needs-cost-center]") == 2  # orders and returns


def test_required_indexes_names_each_table_over_the_size_without_a_vector_index(lake: Lake):
    """Guards: the rule counts the rows of the datasets the plan reads: a table at least that
    large without a declared vector index refuses the plan, named with the rule; a smaller one
    does not; declaring one passes."""
    for name, rows in (("orders", 20), ("returns", 2)):
        lance.write_dataset(pa.table({"id": pa.array(range(rows), pa.int64()), "emb": pa.FixedSizeListArray.from_arrays(
            pa.array([0.5] * rows * 4, pa.float32()), 4)}), str(lake.root / "lake" / "data" / f"{name}.lance"))
    lake.rules({"name": "big-tables-are-searchable", "required_indexes": {"min_rows": 10}})
    refused = lake.run("plan")
    assert refused.exit_code == 4, refused.output
    assert "[big-tables-are-searchable] required_indexes: table 'orders' at " in refused.stdout
    assert "orders.lance holds 20 rows (at least 10) and declares no index of type IVF_FLAT or IVF_SQ or " \
           "IVF_PQ" in refused.stdout
    assert "required_indexes: table 'returns'" not in refused.stdout
    document = json.loads(lake.run("plan", "--format", "json").stdout)
    assert [(v["rule"], v["display_id"]) for v in document["policy_violations"]] == \
        [("big-tables-are-searchable", "sales$orders")]
    assert document["dataset_rows"] == {str(lake.root / "lake" / "data" / f"{name}.lance"): rows
                                        for name, rows in (("orders", 20), ("returns", 2))}
    orders = lake.manifest["tables"][0]
    orders["schema"].append({"name": "emb", "type": "fixed_size_list<float32>[4]"})
    orders["indexes"] = [{"name": "emb_idx", "column": "emb", "type": "IVF_FLAT", "params": {"num_partitions": 1}}]
    passing = lake.run("plan")
    assert passing.exit_code == 0 and "policy violation" not in passing.stdout, passing.output


def test_required_indexes_of_every_table_is_checked_offline(lake: Lake):
    """Guards: with no size (min_rows: 0) validate knows every table it covers needs the index."""
    lake.rules({"name": "all-indexed", "required_indexes": {"types": ["btree", "bitmap"]}})
    refused = lake.run("validate")
    assert refused.exit_code == 4, refused.output
    for name in ("orders", "returns"):
        assert f"[all-indexed] required_indexes: table '{name}' at " in refused.stdout
    assert "declares no index of type BTREE or BITMAP: declare one under its indexes (" in refused.stdout
    assert "lance-sync.yaml:" in refused.stdout  # the table's file and line
    for table in lake.manifest["tables"]:
        table["indexes"] = [{"name": "id_idx", "column": "id", "type": "BITMAP"}]
    assert lake.run("validate").exit_code == 0


def test_a_blocked_action_names_its_rule(lake: Lake):
    lake.rules({"name": "gold-only", "allowed_locations": ["./lake/gold"]})
    document = json.loads(lake.run("plan", "--format", "json").stdout)
    blocked = {a["display_id"]: a["blocked"] for a in document["actions"] if a["blocked"]}
    assert blocked["sales$orders"].startswith("policy rule 'gold-only': table lake: sales$orders: location ")
    assert any(key.endswith("orders.lance") and "writes data outside" in reason for key, reason in blocked.items())


def test_a_policy_file_adds_rules_and_a_clash_of_names_is_an_error(lake: Lake, tmp_path: Path):
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - name: no-forget\n    forbidden_actions: [forget]\n")
    assert lake.run("apply", "--auto-approve").exit_code == 0
    lake.remove_tables("returns")
    assert lake.run("plan").exit_code == 0
    refused = lake.run("plan", "--policy", str(policy))
    assert refused.exit_code == 4 and "[no-forget] forbidden_actions: forget table lake: sales$returns" in refused.stdout
    lake.rules({"name": "no-forget", "max_removals": 5})
    clash = lake.run("plan", "--policy", str(policy))
    assert clash.exit_code == 1 and "policy.yaml:2:" in clash.output and "defined in the manifest too" in clash.output
    # where the manifest defines it, by file and line (issue 46: "(at None)" on main at 94cefba)
    line = 1 + lake.path.read_text().splitlines().index("  - name: no-forget")
    assert f"defined in the manifest too (at {lake.path}:{line}:" in clash.output, clash.output


def test_a_saved_plan_that_breaks_the_policy_is_refused_by_apply(lake: Lake, tmp_path: Path):
    lake.rules({"name": "gold-only", "allowed_locations": ["./lake/gold"]})
    saved = tmp_path / "plan.json"
    assert lake.run("plan", "-o", str(saved)).exit_code == 4
    result = CliRunner().invoke(main, ["apply", str(saved), "--auto-approve"], catch_exceptions=False)
    assert result.exit_code == 4 and "gold-only" in result.output
    assert not (lake.root / "lake" / "data").exists()


def test_apply_of_a_saved_plan_checks_a_policy_file_given_then(lake: Lake, tmp_path: Path):
    saved, policy = tmp_path / "plan.json", tmp_path / "policy.yaml"
    assert lake.run("plan", "-o", str(saved)).exit_code == 0
    policy.write_text("rules:\n  - {name: nothing-new, forbidden_actions: [create namespace]}\n")
    result = CliRunner().invoke(main, ["apply", str(saved), "--auto-approve", "--policy", str(policy)],
                                catch_exceptions=False)
    assert result.exit_code == 4 and "nothing-new" in result.output


BAD_RULES = [
    ({"name": "two", "max_removals": 1, "name_pattern": "x"}, "this one states name_pattern, max_removals"),
    ({"name": "none"}, "this one states none"),
    ({"name": "regex", "name_pattern": "([a-z"}, "not a regular expression"),
    ({"name": "where", "max_removals": 1, "backends": ["prod"]}, "'prod' names no backend of the manifest"),
    ({"name": "objects", "max_removals": 1, "objects": ["table"]}, "objects applies to required_properties"),
    ({"name": "verb", "forbidden_actions": ["drop"]}, "must be 'create' or"),
    ({"name": "bad name!", "max_removals": 1}, "does not match the required pattern"),
    ({"name": "index-kind", "required_indexes": {"types": ["IVF_NOPE"]}}, "unknown index type 'IVF_NOPE'"),
]


@pytest.mark.parametrize(("rule", "message"), BAD_RULES, ids=[r["name"] for r, _ in BAD_RULES])
def test_a_badly_written_rule_is_an_error_at_its_line(lake: Lake, rule: dict[str, Any], message: str):
    lake.rules({"name": "fine", "max_removals": 3}, rule)
    result = lake.run("validate")
    assert result.exit_code == 1 and message in result.output, result.output
    assert "lance-sync.yaml:" in result.output and "policy.rules[1]" in result.output


def test_a_rule_name_given_twice_is_an_error(lake: Lake):
    lake.rules({"name": "same", "max_removals": 3}, {"name": "same", "max_removals": 4})
    result = lake.run("validate")
    assert result.exit_code == 1 and "rule 'same' is defined twice" in result.output


def test_unattended_of_two_policies_allows_only_what_both_allow():
    assert combine(Policy(), Policy()).unattended_verbs == ("create", "update", "rename", "grant")
    assert combine(Policy(unattended=("create", "forget")), Policy()).unattended == ("create", "forget")
    assert combine(Policy(unattended=("create", "forget")), Policy(unattended=("forget", "update"))).unattended \
        == ("forget",)


def test_unattended_never_lists_delete(lake: Lake):
    lake.manifest["policy"] = {"unattended": ["create", "delete"]}
    result = lake.run("validate")
    assert result.exit_code == 1 and "policy.unattended[1]" in result.output


def test_the_action_types_a_rule_can_name_are_every_verb_and_every_operation():
    from typing import get_args

    from lance_sync.model import actions as model

    operations = {f"{verb.value} {kind.value}" for kind, verb in model._OPERATIONS}
    assert set(get_args(ActionType)) == {v.value for v in Verb} | operations
    assert {k.value for k in Kind} == {"namespace", "table", "dataset", "column", "index", "tag", "versions"}


def test_a_violation_in_validate_names_the_file_and_line(lake: Lake):
    lake.rules({"name": "needs-cost-center", "required_properties": ["cost_center"], "objects": ["namespace"]})
    result = lake.run("validate")
    assert result.exit_code == 4
    assert re.search(r"namespace lake: sales lacks the required properties cost_center \(.*lance-sync\.yaml:\d+:\d+\)",
                     result.output), result.output
