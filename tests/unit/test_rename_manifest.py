"""`renamed_from` in a manifest: what each former name resolves to per registration, and every
mistake named with its file, line, column and field."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from lance_sync.cli.app import main
from lance_sync.manifest import load_manifest

HEAD = ("version: 1\nowner: team\nbackends:\n  lake: {type: dir, root: ./lake}\n"
        "  ice: {type: iceberg, endpoint: 'http://127.0.0.1:1'}\n"
        "namespaces:\n  - {backend: lake, id: sales}\ntables:\n")
#: line 9 of each manifest below: the first table entry
ORDERS = "  - name: orders_v2\n    location: ./lake/orders.lance\n    register: [{backend: lake, namespace: sales}]\n"


def write(tmp_path, text: str) -> str:
    path = tmp_path / "lance-sync.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return str(path)


def former_ids(tmp_path, text: str) -> dict[str, list[tuple[str, ...]]]:
    state = load_manifest([write(tmp_path, text)])
    return {f"{r.backend}:{'.'.join(r.id)}": list(r.renamed_from) for t in state.tables for r in t.registrations}


def test_a_name_is_the_former_name_in_each_registrations_own_namespace(tmp_path):
    text = ("  - name: orders_v2\n    location: ./lake/orders.lance\n    renamed_from: orders\n"
            "    register: [{backend: lake, namespace: sales}, {backend: ice, namespace: wh.sales}]\n")
    assert former_ids(tmp_path, text) == {"lake:sales.orders_v2": [("sales", "orders")],
                                          "ice:wh.sales.orders_v2": [("wh", "sales", "orders")]}


def test_several_former_names_newest_first_and_whole_ids_for_moves(tmp_path):
    """An id in the backend's syntax, or a list of names inside the list, is a whole table id: it
    applies where it has the depth of one (the dir id has no warehouse level). Text is read in
    each backend's own syntax: to Iceberg, 'old$orders' is a name."""
    text = ORDERS.replace("    register: [{backend: lake, namespace: sales}]\n",
                          "    register: [{backend: lake, namespace: sales}, {backend: ice, namespace: wh.sales}]\n"
                          "    renamed_from: [orders_2024, old$orders, [wh, old, orders]]\n")
    assert former_ids(tmp_path, text) == {
        "lake:sales.orders_v2": [("sales", "orders_2024"), ("old", "orders"), ("wh", "old", "orders")],
        "ice:wh.sales.orders_v2": [("wh", "sales", "orders_2024"), ("wh", "sales", "old$orders"), ("wh", "old", "orders")]}


def test_a_table_without_renamed_from_has_no_former_ids(tmp_path):
    assert former_ids(tmp_path, ORDERS) == {"lake:sales.orders_v2": []}


def test_the_schema_and_the_models_take_renamed_from(tmp_path):
    """The JSON Schema (editors) and the strict models (the fast road) both accept it."""
    import jsonschema
    import yaml

    from lance_sync.manifest.schema_models import manifest_json_schema

    text = ORDERS + "    renamed_from: [orders, [sales, orders_1]]\n"
    jsonschema.validate(yaml.safe_load(HEAD + text), manifest_json_schema())
    assert former_ids(tmp_path, text)["lake:sales.orders_v2"] == [("sales", "orders"), ("sales", "orders_1")]


OTHER = "  - name: other\n    location: ./lake/other.lance\n    register: [{backend: lake, namespace: sales}]\n"

#: (case id, tables text, message fragment, line:column, field)
BAD = [
    ("a name the manifest still declares", ORDERS + "    renamed_from: other\n" + OTHER,
     "table 'other' is still declared (at ", "12:19", "tables[0].renamed_from"),
    ("the table's own name", ORDERS + "    renamed_from: [orders, orders_v2]\n",
     "'orders_v2' is this table's own name", "12:28", "tables[0].renamed_from[1]"),
    ("an id another table registers", ORDERS + "    renamed_from: [sales$other]\n" + OTHER,
     "'sales$other' in backend 'lake' is still registered by table 'other'", "12:20", "tables[0].renamed_from[0]"),
    ("an id two tables claim", ORDERS + "    renamed_from: orders\n"
     + OTHER + "    renamed_from: sales$orders\n",
     "'sales$orders' in backend 'lake' is a former id of two registrations (sales$orders_v2 of table 'orders_v2' "
     "and sales$other of table 'other')",
     "16:19", "tables[1].renamed_from"),
    ("an id two registrations of one table claim", ORDERS.replace(
        "register: [{backend: lake, namespace: sales}]",
        "register: [{backend: lake, namespace: sales}, {backend: lake, namespace: sales, name: orders_2}]")
     + "    renamed_from: sales$orders\n",
     "(sales$orders_v2 of table 'orders_v2' and sales$orders_2 of table 'orders_v2')", "12:19",
     "tables[0].renamed_from"),
    ("an empty name", ORDERS + "    renamed_from: [sales$]\n", "'sales$' has an empty name", "12:20",
     "tables[0].renamed_from[0]"),
    ("an id of no backend of the table", ORDERS.replace("backend: lake, namespace: sales", "backend: ice, "
     "namespace: wh.sales") + "    renamed_from: [[sales, orders]]\n",
     "[sales, orders] is neither a table name nor a table id in the backends this table is registered in (ice)",
     "12:20", "tables[0].renamed_from[0]"),
    ("not text", ORDERS + "    renamed_from: [7]\n", "must be a string or a list, got a number", "12:20",
     "tables[0].renamed_from[0]"),
    ("an empty list", ORDERS + "    renamed_from: []\n", "must not be empty", "12:19", "tables[0].renamed_from"),
]


@pytest.mark.parametrize(("text", "fragment", "where", "field"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_bad_renamed_from_is_named_with_its_position(tmp_path, text, fragment, where, field):
    path = write(tmp_path, text)
    result = CliRunner().invoke(main, ["validate", "-f", path], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert f"{path}:{where}: {field}: " in result.output
    assert fragment in result.output


def test_a_namespace_cannot_be_renamed(tmp_path):
    path = tmp_path / "lance-sync.yaml"
    path.write_text(HEAD.replace("{backend: lake, id: sales}", "{backend: lake, id: sales, renamed_from: shop}")
                    + ORDERS, encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", "-f", str(path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert f"{path}:7:32: namespaces[0].renamed_from: namespaces cannot be renamed: no backend here can" \
        in result.output
