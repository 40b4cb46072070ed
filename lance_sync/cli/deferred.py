"""Defer a package's `__init__` until one of its own names is asked for.

`lance_namespace` re-exports the request and response models of its generated REST client,
`lance_namespace_urllib3_client`, whose `__init__` also imports every generated API class:
a large share of a plan's start-up (bench/bench_cli.py), for classes lance-sync never calls. Importing the models
(`lance_namespace_urllib3_client.models`) needs only the package's path, not its body.

`defer_body` puts the package in `sys.modules` with its path set and its body not yet run; the
first attribute that is not a submodule already imported (`ApiClient`, `__version__`, `dir()`)
runs the body, so other users of the package (lancedb, the lance-namespace REST client) see
the package they expect.

Only the CLI's own process defers it (`lance_sync.cli.app.run`): `import lance_sync` in another
program leaves that program's modules as they are.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any


def defer_body(package: str) -> None:
    """Defer `package`'s `__init__`; nothing happens when it is imported already or absent."""
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    lock = threading.RLock()
    body_run = False

    def run_body() -> None:
        nonlocal body_run
        with lock:
            if body_run:
                return
            body_run = True
            del module.__getattr__, module.__dir__
            spec.loader.exec_module(module)  # type: ignore[union-attr]

    def __getattr__(name: str) -> Any:
        run_body()
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        run_body()
        return sorted(module.__dict__)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    sys.modules[package] = module
