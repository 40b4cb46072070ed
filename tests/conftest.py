"""Shared fixtures: catalog servers (tests/servers), one Spark session for the whole run, and a
parse cache of its own (lance_sync.manifest.parsing); and `--shuffle SEED` (or
LANCE_SYNC_TEST_SHUFFLE=SEED), which runs the files, and the tests of each file, in an order
drawn from SEED, so that a test that needs another to run first is found (CI sets a seed)."""

from __future__ import annotations

import os
import random

import pytest

from lance_sync.manifest.parsing import CACHE_ENV

pytest_plugins = ["tests.servers.fixtures", "tests.spark_fixture", "tests.support.lanes", "tests.support.browser"]

SHUFFLE_VARIABLE = "LANCE_SYNC_TEST_SHUFFLE"


@pytest.fixture(scope="session", autouse=True)
def _parse_cache_of_the_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Parsed manifests are kept in the run's own folder, never the user's cache (the tests of
    the cache itself point it elsewhere)."""
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("parse-cache"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--shuffle", metavar="SEED", default=os.environ.get(SHUFFLE_VARIABLE) or None,
                     help=f"run the tests in an order drawn from SEED (default: ${SHUFFLE_VARIABLE}; unset: file order)")


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.getoption("--shuffle")
    return f"test order shuffled with seed {seed} (--shuffle {seed} repeats it)" if seed else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files in a shuffled order, and each file's tests in a shuffled order, kept together:
    a file's module-scoped fixtures are set up once, as in any order pytest itself runs (as
    pytest-randomly does)."""
    seed = config.getoption("--shuffle")
    if not seed:
        return
    chance = random.Random(str(seed))
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = list(files.values())
    chance.shuffle(order)
    for tests in order:
        chance.shuffle(tests)
    items[:] = [item for tests in order for item in tests]
