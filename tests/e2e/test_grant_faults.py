"""Grants converge under faults: the grants life cycle's apply, through a FaultProxy in front of
the suite's Unity Catalog server (permissions API) and Glue server (Lake Formation), with a
fixed seed; never a matter of timing.

- One fault on each grant-changing request (rate 1.0, one fault per distinct request): a lost
  answer after the server applied the change (`dropped`, `truncated`), a connection cut before
  anything is forwarded (`reset`) and a `503`. The driver or the apply's runner sends the change
  again, which sends only what is still missing (grants are read first): apply exits 0 in one
  run and the independent client reads exactly the declared grants.
- Faults on every request (reads included) at rate 0.3: an apply may fail part-way, and the
  next apply converges from what it left; each catalog ends with exactly the declared grants.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.conftest import harness_class
from tests.conformance.harness import Harness
from tests.servers.faults import FaultProxy, proxy_fixture
from tests.support.grants import Lifecycle

pytestmark = pytest.mark.servers

SEED = 20261126
#: the grant-changing request of each backend, as the proxy sees its path
CHANGES = {"unity": (r"/permissions/", ["PATCH"]),
           "glue": (r"^/(Batch)?(Grant|Revoke)Permissions$", ["POST"])}

unity_proxy = proxy_fixture("unity_server")
glue_proxy = proxy_fixture("glue_server")


@pytest.fixture(params=sorted(CHANGES))
def proxied(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Harness, FaultProxy]:
    cls = harness_class(request.param)
    harness = cls(request.getfixturevalue(cls.server_fixture), tmp_path_factory.mktemp("grant_faults"))
    return harness, request.getfixturevalue(f"{request.param}_proxy")


def through(life: Lifecycle, proxy: FaultProxy) -> None:
    """The manifest's backend talks to the proxy (the harness's client still talks to the server)."""
    life.backend["endpoint"] = proxy.server.endpoint


@pytest.mark.parametrize("kind", ["dropped", "truncated", "reset", "503"])
def test_a_grant_change_whose_request_or_answer_is_lost_converges(
        proxied: tuple[Harness, FaultProxy], tmp_path: Path, kind: str):
    harness, proxy = proxied
    life = Lifecycle(harness, tmp_path)
    through(life, proxy)
    alice, bob, _ = principals = harness.grant_principals()
    read, write, _ = harness.grant_examples("table")
    use = harness.grant_examples("namespace")[0]
    life.write({alice: [use]}, {alice: [read]})
    life.run("apply", "--auto-approve")

    path, methods = CHANGES[harness.backend_type]
    proxy.configure(rate=1.0, seed=SEED, kinds=[kind], only=path, methods=methods, max_faults_per_request=1)
    proxy.reset_stats()
    life.write({alice: [use]}, {alice: [write], bob: [read, write]})
    life.run("apply", "--auto-approve", "--allow-revoke")
    assert proxy.stats[kind] >= 1, proxy.stats  # the faults did happen
    proxy.configure(rate=0.0)
    assert life.table_grants(principals) == {alice: {write}, bob: {read, write}}
    life.run("plan", "--detailed-exitcode")


def test_grants_converge_with_faults_on_every_request(proxied: tuple[Harness, FaultProxy], tmp_path: Path):
    harness, proxy = proxied
    life = Lifecycle(harness, tmp_path)
    through(life, proxy)
    alice, bob, carol = principals = harness.grant_principals()
    read, write, third = harness.grant_examples("table")
    use = harness.grant_examples("namespace")[0]
    life.write({alice: [use], bob: [use]}, {alice: [read, write], bob: [read], carol: [third]})
    proxy.configure(rate=0.3, seed=SEED, kinds=["dropped", "reset", "503"], max_faults_per_request=2)
    outcomes = []
    for _ in range(6):
        result = life.run("apply", "--auto-approve", "--allow-revoke", expect=None)
        outcomes.append(result)
        if life.last_exit == 0:
            break
    assert life.last_exit == 0, outcomes[-1]
    assert sum(proxy.stats[kind] for kind in ("dropped", "reset", "503")) > 0, proxy.stats
    proxy.configure(rate=0.0)
    assert life.table_grants(principals) == {alice: {read, write}, bob: {read}, carol: {third}}
    assert life.namespace_grants(principals) == {alice: {use}, bob: {use}}
    life.run("plan", "--detailed-exitcode")
