"""Applying a rename on a local `dir` catalog: the guards check it like any change, a rename whose
answer was lost counts as done on retry, and a backend without renames gets one replace."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from lance_namespace import DeclareTableRequest, RenameTableRequest
from lance_namespace.errors import ServiceUnavailableError

from lance_sync import api
from lance_sync.drivers.base import Capabilities
from lance_sync.drivers.dir.driver import DirNamespace
from lance_sync.model.actions import Verb
from lance_sync.model.errors import GuardRefusal


class Catalog:
    """A manifest whose one table `orders` was applied, then renamed to `orders_v2`."""

    def __init__(self, root: Path):
        self.path = root / "lance-sync.yaml"
        self.manifest = {
            "version": 1, "owner": "me", "backends": {"lake": {"type": "dir", "root": "./lake"}},
            "namespaces": [{"backend": "lake", "id": "sales"}],
            "tables": [{"name": "orders", "location": "./lake/orders.lance", "properties": {"tier": "gold"},
                        "register": [{"backend": "lake", "namespace": "sales"}],
                        "schema": [{"name": "id", "type": "int64"}]}]}
        self.write()
        assert api.apply(api.load(self.path)).status == "applied"
        orders = self.manifest["tables"][0]
        orders.update(name="orders_v2", renamed_from="orders", properties={"tier": "platinum"})
        self.write()
        self.state = api.load(self.path)
        self.driver = DirNamespace(self.state.backends["lake"].config)

    def write(self) -> None:
        self.path.write_text(yaml.safe_dump(self.manifest), encoding="utf-8")

    def names(self) -> list[str]:
        return sorted("$".join(t.id) for tables in self.driver.snapshot().tables.values() for t in tables)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return Catalog(tmp_path)


class LostAnswers(DirNamespace):
    """Renames, then answers 503 the first time: the answer is lost, the rename is made."""

    lost = 0

    def rename_table(self, request: RenameTableRequest):
        renamed = super().rename_table(request)
        if not self.lost:
            self.lost += 1
            raise ServiceUnavailableError("the answer was lost")
        return renamed


class NoRenames(DirNamespace):
    def capabilities(self) -> Capabilities:
        return Capabilities(bulk_declare=True)


def test_a_rename_whose_answer_was_lost_counts_as_done_and_makes_its_property_changes(catalog: Catalog):
    driver = LostAnswers(catalog.state.backends["lake"].config)
    result = api.apply(catalog.state, drivers={"lake": driver})
    assert result.status == "applied" and driver.lost == 1
    assert [a.verb for a in result.plan.actions] == [Verb.RENAME]
    assert catalog.names() == ["sales$orders_v2"]
    assert catalog.driver.get_table_info(("sales", "orders_v2")).properties["tier"] == "platinum"
    assert api.plan(catalog.state).actions == []


def test_a_saved_rename_is_refused_once_the_new_name_is_taken(catalog: Catalog):
    saved = api.plan(catalog.state)
    catalog.driver.declare_table(DeclareTableRequest(id=["sales", "orders_v2"], location="elsewhere.lance"))
    with pytest.raises(GuardRefusal, match=r"rename table lake: sales\$orders -> sales\$orders_v2: sales\$orders_v2 "
                       "is registered already: the new name was taken since the plan"):
        api.apply(saved)


def test_a_saved_rename_is_stale_once_the_old_registration_changed(catalog: Catalog):
    saved = api.plan(catalog.state)
    catalog.driver.update_table_properties(("sales", "orders"), {"tier": "bronze"}, [])
    with pytest.raises(GuardRefusal, match=r"stale(.|\n)*rename table lake: sales\$orders -> sales\$orders_v2"):
        api.apply(saved)
    catalog.driver.rename_table(RenameTableRequest(id=["sales", "orders"], new_table_name="gone"))
    with pytest.raises(GuardRefusal, match="stale"):
        api.apply(saved)


def test_without_renames_the_table_is_declared_again_under_the_new_name_with_allow_replace(catalog: Catalog):
    drivers = {"lake": NoRenames(catalog.state.backends["lake"].config)}
    catalog.driver.update_table_properties(("sales", "orders"), {"set.by.someone": "x"}, [])
    catalog.state = api.load(catalog.path)
    with pytest.raises(GuardRefusal, match="--allow-replace"):
        api.apply(catalog.state, drivers=drivers)
    result = api.apply(catalog.state, drivers=drivers, allow_replace=True)
    assert [(a.verb, a.renamed_from.display_id) for a in result.plan.actions] == [(Verb.REPLACE, "sales$orders")]
    assert catalog.names() == ["sales$orders_v2"]
    properties = catalog.driver.get_table_info(("sales", "orders_v2")).properties
    assert properties["tier"] == "platinum" and properties["set.by.someone"] == "x"  # unmanaged ones carried


def test_a_table_is_moved_out_of_a_namespace_the_manifest_does_not_name(tmp_path: Path):
    """The namespace a former id names is read too, though nothing else brings it in scope."""
    from lance_namespace import CreateNamespaceRequest

    from lance_sync.drivers.dir.config import DirConfig

    legacy = DirNamespace(DirConfig(root=str(tmp_path / "lake")))
    legacy.create_namespace(CreateNamespaceRequest(id=["legacy"]))
    legacy.declare_table(DeclareTableRequest(id=["legacy", "orders"], location=str(tmp_path / "lake" / "o.lance"),
                                             properties={"lance_sync.owner": "me"}))
    path = tmp_path / "lance-sync.yaml"
    path.write_text(yaml.safe_dump({
        "version": 1, "owner": "me", "backends": {"lake": {"type": "dir", "root": "./lake"}},
        "namespaces": [{"backend": "lake", "id": "sales"}],
        "tables": [{"name": "orders", "location": "./lake/o.lance", "renamed_from": "legacy$orders",
                    "register": [{"backend": "lake", "namespace": "sales"}]}]}), encoding="utf-8")
    plan = api.plan(api.load(path))
    assert [(a.verb, a.shown_id) for a in plan.actions if a.kind.value == "table"] == \
        [(Verb.RENAME, "legacy$orders -> sales$orders")]
    assert "legacy" in plan.scope[0].namespaces
