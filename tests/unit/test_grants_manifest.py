"""`grants:` in a manifest, offline: what validate accepts and refuses (naming file, line and
field), the two modes, the policy rules about grants, and the plan model's grant actions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.model.actions import (
    Action,
    Destruction,
    Kind,
    ObjectState,
    Reason,
    Verb,
    fingerprint,
)
from lance_sync.model.grants import AUTHORITATIVE, DeclaredGrants

BACKENDS: dict[str, dict[str, Any]] = {
    "dir": {"type": "dir"},
    "iceberg": {"type": "iceberg", "endpoint": "http://127.0.0.1:1"},
    "unity": {"type": "unity", "endpoint": "http://127.0.0.1:1", "catalog": "main"},
    "hive3": {"type": "hive3", "uri": "thrift://127.0.0.1:1"},
    "glue": {"type": "glue", "endpoint": "http://127.0.0.1:1", "catalog_id": "123456789012", "region": "us-east-1"},
}
NAMESPACES = {"dir": "sales", "iceberg": "wh.sales", "unity": "main$sales", "hive3": "hive$sales",
              "glue": "123456789012$sales"}
EXAMPLES = {"unity": ({"alice@example.com": ["select"], "analysts": ["MODIFY"]}, "use_schema"),
            "hive3": ({"user:alice": ["select"], "role:analysts": ["SELECT", "INSERT"]}, "SELECT"),
            "glue": ({"arn:aws:iam::123456789012:role/analyst": ["select", "DESCRIBE"]}, "DESCRIBE")}


def validate(tmp_path: Path, backend: str, namespace_grants: Any = None, table_grants: Any = None,
             **extra: Any) -> tuple[int, str]:
    namespace: dict[str, Any] = {"backend": "b", "id": NAMESPACES[backend]}
    if namespace_grants is not None:
        namespace["grants"] = namespace_grants
    registration: dict[str, Any] = {"backend": "b", "namespace": NAMESPACES[backend]}
    if table_grants is not None:
        registration["grants"] = table_grants
    registration.update(extra.pop("registration", {}))
    config = {**BACKENDS[backend], **extra.pop("backend_extra", {})}
    if backend == "dir":
        config["root"] = str(tmp_path)
    manifest = {"version": 1, "owner": "t", "backends": {"b": config},
                "namespaces": [namespace],
                "tables": [{"name": "orders", "location": str(tmp_path / "orders.lance"), "register": [registration]}],
                **extra}
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    result = CliRunner().invoke(main, ["validate", "-f", str(path)])
    return result.exit_code, result.output


@pytest.mark.parametrize("backend", ["dir", "iceberg"])
def test_a_backend_without_grants_refuses_them_by_name(tmp_path: Path, backend: str):
    code, output = validate(tmp_path, backend, table_grants={"alice": ["SELECT"]})
    assert code == 1, output
    assert f"backend 'b' ({backend}) has no grants" in output and "tables[0].register[0].grants" in output
    assert "lance-sync.yaml:" in output and "Traceback" not in output


@pytest.mark.parametrize("backend", sorted(EXAMPLES))
def test_the_backends_own_terms_validate(tmp_path: Path, backend: str):
    grants, namespace_privilege = EXAMPLES[backend]
    principal = next(iter(grants))
    code, output = validate(tmp_path, backend, {principal: [namespace_privilege]}, grants)
    assert code == 0, output


@pytest.mark.parametrize("backend", sorted(EXAMPLES))
def test_an_unknown_privilege_is_refused_at_its_line(tmp_path: Path, backend: str):
    principal = next(iter(EXAMPLES[backend][0]))
    code, output = validate(tmp_path, backend, table_grants={principal: ["SELECT", "SELCT"]})
    assert code == 1, output
    assert "'SELCT' is not a" in output and f"tables[0].register[0].grants.{principal}[1]" in output
    assert re.search(r"lance-sync\.yaml:\d+:\d+: ", output), output  # the file, line and column


def test_a_hive_principal_names_its_kind(tmp_path: Path):
    code, output = validate(tmp_path, "hive3", table_grants={"alice": ["SELECT"]})
    assert code == 1 and "principal 'alice'" in output and "user:" in output and "role:" in output, output


def test_grants_mode_alone_and_on_a_backend(tmp_path: Path):
    code, output = validate(tmp_path, "hive3", registration={"grants_mode": "authoritative"})
    assert code == 0, output
    code, output = validate(tmp_path, "hive3", table_grants={"user:a": ["SELECT"]},
                            backend_extra={"grants_mode": "authoritative"})
    assert code == 0, output
    code, output = validate(tmp_path, "hive3", registration={"grants_mode": "everything"})
    assert code == 1 and "grants_mode" in output, output
    code, output = validate(tmp_path, "dir", registration={"grants_mode": "authoritative"})
    assert code == 1 and "grants_mode cannot be declared" in output, output


def test_policy_rules_about_grants_run_in_validate(tmp_path: Path):
    policy = {"rules": [{"name": "no-writes", "forbidden_privileges": ["insert"]},
                        {"name": "roles-only", "allowed_principals": ["role:*"]}]}
    code, output = validate(tmp_path, "hive3", table_grants={"user:alice": ["SELECT"], "role:etl": ["INSERT"]},
                            policy=policy)
    assert code == 4, output
    assert "no-writes" in output and "INSERT may not be granted (to role:etl)" in output
    assert "roles-only" in output and "user:alice matches none of the allowed principals role:*" in output


def test_named_mode_manages_only_the_principals_it_names():
    declared = DeclaredGrants({"alice": frozenset({"SELECT"}), "bob": frozenset()})
    live = {"alice": frozenset({"SELECT", "MODIFY"}), "bob": frozenset({"SELECT"}), "carol": frozenset({"ALL"})}
    assert declared.changes(live) == {"alice": (frozenset(), frozenset({"MODIFY"})),
                                      "bob": (frozenset(), frozenset({"SELECT"}))}
    assert declared.others(live) == {"carol": frozenset({"ALL"})}


def test_authoritative_mode_revokes_every_other_principal():
    declared = DeclaredGrants({"alice": frozenset({"SELECT"})}, AUTHORITATIVE)
    live = {"alice": frozenset(), "carol": frozenset({"ALL"})}
    assert declared.changes(live) == {"alice": (frozenset({"SELECT"}), frozenset()),
                                      "carol": (frozenset(), frozenset({"ALL"}))}
    assert declared.others(live) == {}


def test_a_revoke_is_destructive_and_a_grant_is_its_inverse():
    before = ObjectState(privileges=["MODIFY", "SELECT"])
    revoke = Action(verb=Verb.REVOKE, kind=Kind.TABLE, reason=Reason.CHANGED, backend="b", id=["db", "t"],
                    display_id="db.t", detail="", before=before, after=ObjectState(privileges=["SELECT"]),
                    fingerprint=fingerprint(before, []), principal="alice", privileges=["MODIFY"])
    assert revoke.destroys == Destruction.ACCESS
    assert revoke.headline == "revoke MODIFY from alice on table b: db.t"
    undo = revoke.inverse()
    assert undo is not None and (undo.verb, undo.principal, undo.privileges) == (Verb.GRANT, "alice", ["MODIFY"])
    assert undo.destroys is None and undo.before == ObjectState(privileges=["SELECT"])
    assert revoke.key != undo.key  # a grant and a revoke of one principal can share a plan
    with pytest.raises(ValueError, match="principal"):
        Action(verb=Verb.GRANT, kind=Kind.TABLE, reason=Reason.ABSENT, backend="b", id=["t"], display_id="t",
               detail="", fingerprint="x")
