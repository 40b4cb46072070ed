"""A large manifest's tables are validated and checked once per shape: an entry whose keys and
values but its name and location are those of one before (lance_sync.manifest.validate:
`StrictTables`, lance_sync.manifest.semantic: `_first_of_shape`). Each test compares that
road with validating and checking every table alone, on seeded random manifests, and fails
when the two answer differently: a table, a problem, or the order of the problems."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from pydantic import ValidationError

from lance_sync.manifest import validate
from lance_sync.manifest.loader import Document
from lance_sync.manifest.semantic import build_desired_state
from lance_sync.manifest.strategy import FastPathUnavailable
from lance_sync.manifest.validate import StrictTables, table_entries, validate_strictly
from lance_sync.model.errors import ManifestError, ManifestErrors
from tests.support.manifests import same_data

#: what an entry holds besides its name and location: valid shapes, and shapes the model or
#: the checks refuse (a key it does not know, a value of the wrong type, True for 1, an
#: unknown backend, a namespace or name the `dir` backend refuses, a reserved property, a
#: column type that is not one)
SHAPES: list[dict[str, Any]] = [
    {"register": [{"backend": "d", "namespace": "ns0"}]},
    {"register": [{"backend": "d", "namespace": "ns0"}], "protect": True},
    {"register": [{"backend": "d", "namespace": "ns0"}], "protect": False},
    {"properties": {"tier": "gold"}, "register": [{"backend": "d", "namespace": "ns0"}]},
    {"properties": {"tier": "gold"}, "register": [{"backend": "d", "namespace": "ns1"}]},
    {"register": [{"backend": "d", "namespace": ["ns1", "inner"]}], "protect": True},
    {"register": [{"backend": "d", "namespace": "ns0", "name": "other"}], "on_remove": "drop"},
    {"register": [{"backend": "d", "namespace": "ns0"}, {"backend": "e", "namespace": "ns2"}]},
    {"register": [{"backend": "d", "namespace": "ns0"}], "schema": [{"name": "id", "type": "int64"}]},
    {"register": [{"backend": "d", "namespace": "ns0"}], "schema": [{"name": "id", "type": "int64"}] * 2},
    {"register": [{"backend": "d", "namespace": "ns0"}], "tags": {"v1": 1}},
    {"register": [{"backend": "d", "namespace": "ns0"}], "renamed_from": "old"},
    {"register": [{"backend": "d", "namespace": "ns0"}], "properties": {"lance_sync.mine": "x"}},
    {"register": [{"backend": "zz", "namespace": "ns0"}]},
    {"register": [{"backend": "d", "namespace": "a$b"}]},
    {"register": [{"backend": "d", "namespace": "ns0", "name": "x$y"}]},
    {"register": [{"backend": "d", "namespace": "ns0"}], "schema": [{"name": "id", "type": "nope"}]},
    {"register": [{"backend": "d", "namespace": "ns0"}], "protect": 1},
    {"register": [{"backend": "d", "namespace": "ns0"}], "properties": {"n": 1}},
    {"register": [{"backend": "d", "namespace": "ns0"}], "unknown": "key"},
    {"register": []},
    {"properties": {"tier": "gold"}},
]
#: SHAPES the `Table` model takes (the others it refuses); the checks refuse some of them
VALID_SHAPES = [shape for index, shape in enumerate(SHAPES) if index < 16]


def random_tables(rng: random.Random, shapes: list[dict[str, Any]], bad_fields: bool) -> list[Any]:
    """Up to 30 entries of a few of `shapes`, names mostly unique, locations mostly inside the
    root (./lake); with `bad_fields`, names and locations the model refuses, and the odd entry
    that is no mapping."""
    few = rng.sample(shapes, rng.randint(1, 4))
    entries: list[Any] = []
    for index in range(rng.randint(1, 30)):
        name: Any = f"t{rng.randint(0, 40) if rng.random() < 0.1 else index}"
        location: Any = f"./lake/{name}.lance" if rng.random() < 0.9 else f"/elsewhere/{name}"
        if rng.random() < 0.05:
            location = "./lake"  # the root itself
        if bad_fields and rng.random() < 0.1:
            name, location = rng.choice([("", location), (name, ""), (5, location), (name, None)])
        entry = {"name": name, "location": location, **copy.deepcopy(rng.choice(few))}
        if bad_fields and rng.random() < 0.03:
            entry = rng.choice([["a list"], "text", {"location": location}])
        entries.append(entry)
    return entries


def by_shapes(raw: list[Any]) -> list[Any] | str:
    """StrictTables' answer: each table's name, location and model but both, or its refusal."""
    try:
        return [(name, location, shape.model_dump(exclude={"name", "location"}))
                for name, location, shape in StrictTables(copy.deepcopy(raw))]
    except FastPathUnavailable:
        return "refused"


def one_by_one(raw: list[Any]) -> list[Any] | str:
    """Each table validated by the `Table` model alone, or the refusal."""
    try:
        tables = validate._validated(copy.deepcopy(raw))
    except ValidationError:
        return "refused"
    return [(table.name, table.location, table.model_dump(exclude={"name", "location"})) for table in tables]


def test_a_table_validated_by_its_shape_is_the_table_the_model_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 4 tables, so that a chunk of mostly new shapes sends the next one a table at a
    time. Fails when a name or location is taken that the model refuses (or the reverse), or a
    table gets another table's fields."""
    monkeypatch.setattr(validate, "STRICT_CHUNK", 4)
    rng = random.Random(20261205)
    refused = 0
    for _ in range(1_500):
        raw = random_tables(rng, SHAPES, bad_fields=True)
        expected = one_by_one(raw)
        assert same_data(by_shapes(raw), expected), raw
        refused += expected == "refused"
    assert 0 < refused < 1_500  # both answers were tried


def desired(raw: list[Any], alone: bool) -> list[str] | str:
    """The desired tables' reprs of a manifest of these tables (backends `d` and `e`, dir), or its
    problems: built from their shapes, or (`alone`) from each table validated alone."""
    data = {"version": 1, "owner": "o", "backends": {"d": {"type": "dir", "root": "./lake"},
                                                    "e": {"type": "dir", "root": "./lake"}}, "tables": raw}
    document = Document(data, files=["lance-sync.yaml"])
    model, tables = validate_strictly(document)
    entries = table_entries(validate._validated(raw)) if alone else tables
    try:
        return [repr(table) for table in build_desired_state(model, document, "/base", entries).tables]
    except (ManifestError, ManifestErrors) as error:
        return str(error)


def test_tables_checked_by_their_shape_are_the_tables_checked_alone() -> None:
    """Manifests of tables the model takes, some with problems only the checks find. Fails when
    a table of a known shape misses a check, or a problem is reported twice, elsewhere or in
    another order."""
    rng = random.Random(5)
    failed = 0
    for _ in range(1_500):
        raw = random_tables(rng, VALID_SHAPES, bad_fields=False)
        expected = desired(copy.deepcopy(raw), alone=True)
        assert desired(raw, alone=False) == expected, raw
        failed += isinstance(expected, str)
    assert 0 < failed < 1_500  # both answers were tried
