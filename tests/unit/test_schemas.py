"""The shipped JSON Schemas are generated from the models and cannot drift from them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from lance_sync.manifest.schema_models import (
    manifest_json_schema,
    overlay_json_schema,
    policy_json_schema,
)
from lance_sync.model.actions import plan_json_schema

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "regenerate with: lance-sync schema > schemas/manifest.schema.json; " \
             "lance-sync schema overlay > schemas/overlay.schema.json; " \
             "lance-sync schema plan > schemas/plan.schema.json; lance-sync schema policy > schemas/policy.schema.json"
SCHEMAS = ("manifest.schema.json", "overlay.schema.json", "plan.schema.json", "policy.schema.json")


def shipped(name: str) -> dict:
    return json.loads((ROOT / "schemas" / name).read_text())


def test_manifest_schema_file_matches_the_models():
    assert shipped("manifest.schema.json") == manifest_json_schema(), REGENERATE


def test_overlay_schema_file_matches_the_models():
    assert shipped("overlay.schema.json") == overlay_json_schema(), REGENERATE


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
    schema = shipped("manifest.schema.json")
    manifests = sorted(ROOT.glob("examples/**/lance-sync*.yaml"))
    assert manifests
    for path in manifests:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_every_example_overlay_validates_against_the_overlay_schema_only():
    """An overlay is not a manifest (no version, owner, backends): it has its own schema."""
    overlays = sorted(ROOT.glob("examples/**/*.overlay.yaml"))
    assert overlays
    for path in overlays:
        document = yaml.safe_load(path.read_text())
        jsonschema.validate(document, shipped("overlay.schema.json"))
        assert not jsonschema.Draft202012Validator(shipped("manifest.schema.json")).is_valid(document)


def test_the_overlay_schema_still_checks_what_an_overlay_says():
    validator = jsonschema.Draft202012Validator(shipped("overlay.schema.json"))
    assert validator.is_valid({"backends": {"uc": {"read_timeout_seconds": 5}}})
    assert validator.is_valid({"namespaces": [{"backend": "uc", "id": "main$sales", "properties": {"a": 1}}]})
    assert not validator.is_valid({"tables": [{"properties": {"tier": "gold"}}]})  # which table?
    assert not validator.is_valid({"tables": [{"name": "orders", "register": [{"backend": "uc"}]}]})
    assert not validator.is_valid({"backends": {"uc": {"endpoint": "http://x", "colour": "red"}}})
    assert not validator.is_valid({"tables": [{"name": "orders", "protect": "maybe"}]})


def test_schemas_are_valid_json_schema_documents():
    for name in SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(shipped(name))
