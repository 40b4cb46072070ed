"""The conformance suite runs once per backend; each backend is a Harness (harness_<type>.py)."""

from __future__ import annotations

import importlib

import pytest

from tests.conformance.harness import Harness

#: harness modules: every backend, plus the Hive driver against the real HMS 2.3 (default catalog only)
BACKENDS = ["dir", "unity", "iceberg", "glue", "hive3", "hms"]


def harness_class(backend: str) -> type[Harness]:
    module = importlib.import_module(f"tests.conformance.harness_{backend}")
    return next(v for v in vars(module).values()
                if isinstance(v, type) and issubclass(v, Harness) and v.__module__ == module.__name__)


@pytest.fixture(params=BACKENDS)
def harness(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Harness:
    cls = harness_class(request.param)
    server = request.getfixturevalue(cls.server_fixture) if cls.server_fixture else None
    return cls(server, tmp_path_factory.mktemp(f"data_{request.param}"))


def pytest_itemcollected(item: pytest.Item) -> None:
    """The harness asks for its server at run time (getfixturevalue), out of the lanes rule's
    sight: a test on a backend with a server needs `servers` (tests/support/lanes.py)."""
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("harness") if callspec else None
    if backend and harness_class(backend).server_fixture:
        item.add_marker("servers")
