"""The variables a plan of the changes since a revision names (lance_sync.model.variables.
resolved_variables): every one the manifest resolved, with its value, but never a secret's."""

from __future__ import annotations

from lance_sync.model import secrets
from lance_sync.model.variables import Variable, resolved_variables


def test_each_variable_by_name_with_its_value_and_secrets_by_name_only():
    secrets.register("registered-elsewhere-46")  # as a driver registers a token it obtains
    templates = {
        ("tables", 0, "location"): "./lake/${DS}/${DS}_${PART:-p1}.lance",  # twice, and a default
        ("backends", "b", "secret_access_key"): "${KEY}",  # a credential's place
        ("backends", "b", "storage", "sas"): "${PLAIN_NAME}",
        ("backends", "b", "uri"): "${URI}",  # a URL with a password
        ("tables", 1, "properties", "p"): "${API_TOKEN}-${AWS_SESSION_TOKEN}-${KNOWN}-$$-${UNSET}",
    }
    environ = {"DS": "a", "KEY": "k1", "PLAIN_NAME": "s", "URI": "http://u:pw@host", "API_TOKEN": "t",
               "AWS_SESSION_TOKEN": "x", "KNOWN": "registered-elsewhere-46"}
    assert resolved_variables(templates, environ) == [
        Variable("API_TOKEN", None, True), Variable("AWS_SESSION_TOKEN", None, True), Variable("DS", "a", False),
        Variable("KEY", None, True), Variable("KNOWN", None, True), Variable("PART", "p1", False),
        Variable("PLAIN_NAME", None, True), Variable("URI", None, True)]


def test_a_variable_secret_in_one_place_is_secret_everywhere():
    templates = {("tables", 0, "properties", "owner"): "${WHO}", ("backends", "b", "password"): "${WHO}",
                 ("tables", 1, "properties", "owner"): "${WHO}"}
    assert resolved_variables(templates, {"WHO": "me"}) == [Variable("WHO", None, True)]
