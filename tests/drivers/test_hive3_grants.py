"""The Hive driver's grants against the real Hive Metastore 2.3 and the project's Hive 3.x server:
what the shared suite (tests/conformance/test_grants.py) does not reach. HMS keeps any
string as a privilege and may hold one privilege in several rows (two grantors, two
spellings); a role must exist; refusals are explained. pymetastore writes and reads behind
the driver's back.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from lance_namespace import CreateNamespaceRequest, DeclareTableRequest
from lance_namespace.errors import (
    InvalidInputError,
    NamespaceNotFoundError,
    TableNotFoundError,
)
from pymetastore.hive_metastore.ttypes import (
    GrantRevokePrivilegeRequest,
    GrantRevokeType,
    HiveObjectPrivilege,
    HiveObjectRef,
    HiveObjectType,
    PrincipalType,
    PrivilegeBag,
    PrivilegeGrantInfo,
)

from lance_sync.drivers.base import Identifier
from lance_sync.drivers.hive3.answers import ANSWER_CHECKS
from lance_sync.drivers.hive3.driver import Hive3Namespace
from lance_sync.model.grants import Securable
from tests.conformance.harness_hive3 import Hive3Harness
from tests.conformance.harness_hms import HmsHarness, object_ref
from tests.servers.hive_support import hive_client

pytestmark = pytest.mark.servers


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=[HmsHarness, Hive3Harness], ids=["hms", "hive3"])
def hive(request: pytest.FixtureRequest, tmp_path: Path) -> HmsHarness:
    return request.param(request.getfixturevalue(request.param.server_fixture), tmp_path)


@pytest.fixture
def driver(hive: HmsHarness) -> Iterator[Hive3Namespace]:
    driver = Hive3Namespace(**hive.config())
    yield driver
    driver.close()


@pytest.fixture(params=["namespace", "table"])
def securable(request: pytest.FixtureRequest, hive: HmsHarness, driver: Hive3Namespace
              ) -> tuple[Securable, Identifier]:
    namespace = hive.new_namespace_id()
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    if request.param == "namespace":
        return "namespace", namespace
    table = (*namespace, unique("t"))
    driver.declare_table(DeclareTableRequest(id=list(table)))
    return "table", table


def grant_as(hive: HmsHarness, kind: Securable, id: Identifier, name: str, principal_type: int,
             *privileges: str, grantor: str) -> None:
    """A grant through pymetastore, with the privileges spelled as given."""
    ref = object_ref(kind, id)
    bag = PrivilegeBag([HiveObjectPrivilege(
        hiveObject=ref, principalName=name, principalType=principal_type,
        grantInfo=PrivilegeGrantInfo(privilege=privilege, createTime=0, grantor=grantor,
                                     grantorType=PrincipalType.USER, grantOption=False))
        for privilege in privileges])
    with hive_client(hive.server.endpoint) as client:
        assert client.grant_revoke_privileges(GrantRevokePrivilegeRequest(
            requestType=GrantRevokeType.GRANT, privileges=bag)).success


def rows(hive: HmsHarness, kind: Securable, id: Identifier) -> set[tuple[str, int, str, str]]:
    with hive_client(hive.server.endpoint) as client:
        return {(row.principalName, row.principalType, row.grantInfo.privilege, row.grantInfo.grantor)
                for row in client.list_privileges(None, None, object_ref(kind, id))}


def test_a_privilege_held_in_several_rows_is_revoked_whole(hive: HmsHarness, driver: Hive3Namespace,
                                                           securable: tuple[Securable, Identifier]):
    """Two grantors and two spellings of SELECT: listed once, and all of them revoked (a
    revoke removes one row per privilege named, so the driver reads again and repeats)."""
    kind, id = securable
    alice = unique("alice")
    grant_as(hive, kind, id, alice, PrincipalType.USER, "select", "SELECT", grantor="one")
    grant_as(hive, kind, id, alice, PrincipalType.USER, "SELECT", "Update", grantor="two")
    assert driver.list_grants(kind, id)[f"user:{alice}"] == {"SELECT", "UPDATE"}
    driver.change_grants(kind, id, f"user:{alice}", frozenset(), frozenset({"select"}))
    assert rows(hive, kind, id) == {(alice, PrincipalType.USER, "Update", "two")}
    driver.change_grants(kind, id, f"user:{alice}", frozenset({"update"}), frozenset())  # held
    assert rows(hive, kind, id) == {(alice, PrincipalType.USER, "Update", "two")}


def test_principals_of_each_kind_are_told_apart(hive: HmsHarness, driver: Hive3Namespace,
                                                securable: tuple[Securable, Identifier]):
    """One name as a user and as a group: two principals; the driver's rows carry its grantor."""
    kind, id = securable
    name = unique("ops")
    driver.change_grants(kind, id, f"user:{name}", frozenset({"SELECT"}), frozenset())
    driver.change_grants(kind, id, f"group:{name}", frozenset({"ALL"}), frozenset())
    grants = driver.list_grants(kind, id)
    assert grants[f"user:{name}"] == {"SELECT"} and grants[f"group:{name}"] == {"ALL"}
    assert rows(hive, kind, id) == {(name, PrincipalType.USER, "SELECT", "lance-sync"),
                                    (name, PrincipalType.GROUP, "ALL", "lance-sync")}


def test_calls(hive: HmsHarness, driver: Hive3Namespace, securable: tuple[Securable, Identifier]):
    """list: the object's read and one list_privileges; a change: those two and one request
    per direction that has something to send."""
    if hive.server.external:
        pytest.skip("request counting is a feature of the project's servers")
    kind, id = securable
    alice = f"user:{unique('alice')}"

    def calls(operation) -> int:
        hive.reset_requests()
        operation()
        return hive.requests_served()

    assert calls(lambda: driver.list_grants(kind, id)) == 2
    assert calls(lambda: driver.change_grants(kind, id, alice, frozenset({"SELECT"}), frozenset())) == 3
    assert calls(lambda: driver.change_grants(kind, id, alice, frozenset({"SELECT"}), frozenset())) == 2
    assert calls(lambda: driver.change_grants(kind, id, alice, frozenset({"ALL"}), frozenset({"SELECT"}))) == 4
    assert calls(lambda: driver.change_grants(kind, id, alice, frozenset(), frozenset({"ALL", "SELECT"}))) == 3


def test_a_grant_to_a_missing_role_is_invalid_input(hive: HmsHarness, driver: Hive3Namespace,
                                                    securable: tuple[Securable, Identifier]):
    kind, id = securable
    role = unique("nobody")
    with pytest.raises(InvalidInputError, match=f"role '{role}' does not exist"):
        driver.change_grants(kind, id, f"role:{role}", frozenset({"SELECT"}), frozenset())
    assert rows(hive, kind, id) == set()


@pytest.mark.parametrize(("principal", "grant", "what"), [
    ("alice", {"SELECT"}, "user:NAME, group:NAME or role:NAME"),
    ("User:alice", {"SELECT"}, "user:NAME, group:NAME or role:NAME"),
    ("user:", {"SELECT"}, "user:NAME, group:NAME or role:NAME"),
    ("user:alice", {"FROBNICATE"}, "FROBNICATE cannot be granted"),
    ("user:alice", {"SELECT,INSERT"}, "cannot be granted"),
])
def test_bad_principals_and_privileges_are_refused_before_any_call(
        hive: HmsHarness, driver: Hive3Namespace, securable: tuple[Securable, Identifier],
        principal: str, grant: set[str], what: str):
    kind, id = securable
    with pytest.raises(InvalidInputError, match=what):
        driver.change_grants(kind, id, principal, frozenset(grant), frozenset())
    assert rows(hive, kind, id) == set()


def test_objects_without_grants(hive: HmsHarness, driver: Hive3Namespace):
    namespace = hive.new_namespace_id()
    with pytest.raises(NamespaceNotFoundError):
        driver.change_grants("namespace", namespace, "user:alice", frozenset({"SELECT"}), frozenset())
    with pytest.raises((NamespaceNotFoundError, TableNotFoundError)):
        driver.list_grants("table", (*namespace, "t"))
    with pytest.raises(InvalidInputError, match="has no grants"):
        driver.list_grants("namespace", namespace[:1])
    with pytest.raises(InvalidInputError, match="has no grants"):
        driver.change_grants("namespace", namespace[:1], "user:alice", frozenset({"SELECT"}), frozenset())
    driver.create_namespace(CreateNamespaceRequest(id=list(namespace)))
    hive.create_foreign_table(namespace, "parquet_t")
    with pytest.raises(InvalidInputError, match="not a Lance table"):
        driver.list_grants("table", (*namespace, "parquet_t"))


# --- the check of list_privileges' answer ---------------------------------------------------------

REF = HiveObjectRef(objectType=HiveObjectType.TABLE, dbName="sales", objectName="t")


def row(**fields: object) -> HiveObjectPrivilege:
    values: dict[str, object] = {
        "hiveObject": HiveObjectRef(objectType=HiveObjectType.TABLE, dbName="SALES", objectName="T"),
        "principalName": "alice", "principalType": PrincipalType.USER,
        "grantInfo": PrivilegeGrantInfo(privilege="SELECT", grantOption=True)}
    return HiveObjectPrivilege(**{**values, **fields})


@pytest.mark.parametrize(("answer", "what"), [
    (None, "privileges is missing"),
    ([row(principalType=7)], "principalType is 7, not USER, GROUP or ROLE"),
    ([row(principalName="")], "principalName is empty"),
    ([row(grantInfo=None)], "privileges[0].grantInfo is missing"),
    ([row(grantInfo=PrivilegeGrantInfo(privilege=3))], "privilege is int 3, not a string"),
    ([row(hiveObject=HiveObjectRef(objectType=HiveObjectType.TABLE, dbName="sales", objectName="u"))],
     "answered for"),
    ([row(hiveObject=HiveObjectRef(objectType=HiveObjectType.DATABASE, dbName="sales"))], "answered for"),
    ([row(hiveObject=HiveObjectRef(objectType=HiveObjectType.TABLE, dbName="sales", objectName="t",
                                   catName="lake"))], "answered for"),
])
def test_a_wrong_list_of_privileges_is_named(answer: object, what: str):
    problem = ANSWER_CHECKS["list_privileges"](answer, None, None, REF)
    assert problem is not None and what in problem, problem


def test_a_good_list_of_privileges_passes():
    assert ANSWER_CHECKS["list_privileges"]([], None, None, REF) is None
    assert ANSWER_CHECKS["list_privileges"]([row(), row(principalType=PrincipalType.ROLE)], None, None, REF) is None
    assert ANSWER_CHECKS["list_privileges"]([row(principalName="bob")], "alice", PrincipalType.USER, REF) \
        == "privileges[0]: principal 'bob' was not asked for"
