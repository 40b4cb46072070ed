"""The shipped JSON Schemas are generated from the models and cannot drift from them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from lance_sync.manifest.models import manifest_json_schema, policy_json_schema
from lance_sync.plan.model import plan_json_schema

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "regenerate with: lance-sync schema > schemas/manifest.schema.json; " \
             "lance-sync schema plan > schemas/plan.schema.json; lance-sync schema policy > schemas/policy.schema.json"


def test_manifest_schema_file_matches_the_models():
    shipped = json.loads((ROOT / "schemas" / "manifest.schema.json").read_text())
    assert shipped == manifest_json_schema(), REGENERATE


def test_plan_schema_file_matches_the_models():
    shipped = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
    assert shipped == plan_json_schema(), REGENERATE


def test_policy_schema_file_matches_the_models():
    shipped = json.loads((ROOT / "schemas" / "policy.schema.json").read_text())
    assert shipped == policy_json_schema(), REGENERATE


def test_every_example_policy_file_validates_against_the_shipped_schema():
    schema = json.loads((ROOT / "schemas" / "policy.schema.json").read_text())
    policies = sorted(ROOT.glob("examples/**/policy*.yaml"))
    assert policies
    for path in policies:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_every_example_manifest_validates_against_the_shipped_schema():
    schema = json.loads((ROOT / "schemas" / "manifest.schema.json").read_text())
    manifests = sorted(ROOT.glob("examples/**/lance-sync*.yaml"))
    assert manifests
    for path in manifests:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_schemas_are_valid_json_schema_documents():
    for name in ("manifest.schema.json", "plan.schema.json", "policy.schema.json"):
        jsonschema.Draft202012Validator.check_schema(json.loads((ROOT / "schemas" / name).read_text()))
