"""The package's layout rules (README "Layout"), checked on the source so that they hold."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lance_sync"
#: a module longer than this mixes concerns: split it along them
MAX_MODULE_LINES = 700
#: the top of the package holds the front door and the public entry points, nothing else
MAX_TOP_LEVEL_MODULES = 8
#: folders that may import nothing above them: the vocabulary is the bottom of the stack
BOTTOM = "lance_sync.model"


def modules() -> dict[str, Path]:
    """Module name -> file, for every module of the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def import_time_imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The package's modules that importing `name` runs: its top-level imports, outside
    functions and `if TYPE_CHECKING:` blocks, with the packages they pass through."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imported: set[str] = set()

    def add(target: str) -> None:
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            # a module's own packages are imported before it runs: never a cycle through them
            if prefix in known and not name.startswith(prefix + "."):
                imported.add(prefix)

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                add(base)
                for alias in node.names:
                    add(f"{base}.{alias.name}")
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)

    visit(ast.parse(path.read_text()).body)
    imported.discard(name)
    return imported


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: import_time_imports(path, name, set(found)) for name, path in found.items()}


def test_no_import_time_cycle():
    graph = import_graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target] if target in path else [name, target])
            elif target not in state:
                walk(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    assert not cycles, "import-time cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_vocabulary_imports_nothing_above_it():
    graph = import_graph()
    upward = {name: sorted(t for t in targets if not t.startswith(BOTTOM))
              for name, targets in graph.items() if name.startswith(BOTTOM)}
    assert not {name: targets for name, targets in upward.items() if targets}


def test_no_module_is_longer_than_the_limit():
    long = {name: lines for name, path in modules().items()
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split these along their concerns: {long}"


def test_the_top_of_the_package_holds_few_modules():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_no_two_public_classes_share_a_name():
    classes = Counter(node.name for path in modules().values() for node in ast.parse(path.read_text()).body
                      if isinstance(node, ast.ClassDef) and not node.name.startswith("_"))
    assert not [name for name, count in classes.items() if count > 1]
