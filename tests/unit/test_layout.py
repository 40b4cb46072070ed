"""The package's layout rules (docs/contributing.md, "Layout"), checked on the source so that they hold."""

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
#: a function longer than this (first decorator to last line) does several things: split it along them
MAX_FUNCTION_LINES = 60
#: the backends' packages: every sub-package of this folder but the shared code
DRIVERS = PACKAGE / "drivers"
DRIVERS_SHARED = "support"
#: the modules every backend has: its configuration (read offline), its client, its driver
BACKEND_MODULES = frozenset({"config", "client", "driver"})
#: what a backend's other modules may be named, so that the same role has the same name everywhere
BACKEND_VOCABULARY = frozenset({"answers", "auth", "credentials", "errors", "grants", "identifiers", "leases",
                                "objects", "renames", "transport"})
#: the standard library's private names that are the only way to do what the package needs
STDLIB_PRIVATE_CALLS = frozenset({
    ("os", "_exit"),  # leave without the interpreter's shutdown
    ("atexit", "_run_exitfuncs"),  # what the interpreter runs first at exit, before os._exit
})
#: namedtuple's methods: public, spelled with an underscore so that they never clash with a field
NAMEDTUPLE_METHODS = frozenset({"_replace", "_asdict", "_make"})


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


def function_lengths() -> list[tuple[int, str, str]]:
    """(lines, file, name) of every function and method of the package, nested ones too."""
    found = []
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.append(((node.end_lineno or node.lineno) - first + 1, str(path.relative_to(PACKAGE.parent)), node.name))
    return found


def test_no_function_is_longer_than_the_limit():
    """Fails on a function of MAX_FUNCTION_LINES + 1 lines (checked)."""
    long = sorted((entry for entry in function_lengths() if entry[0] > MAX_FUNCTION_LINES), reverse=True)
    assert not long, (f"split these functions along what they do, to {MAX_FUNCTION_LINES} lines at most:\n"
                      + "\n".join(f"  {lines} lines: {file} {name}" for lines, file, name in long))


def backend_modules() -> dict[str, set[str]]:
    """Backend package -> the names of its modules and sub-packages."""
    return {package.name: {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
            | {sub.name for sub in package.iterdir() if (sub / "__init__.py").is_file()}
            for package in sorted(DRIVERS.iterdir())
            if (package / "__init__.py").is_file() and package.name != DRIVERS_SHARED}


def test_every_backend_names_its_modules_from_one_vocabulary():
    """Fails on a backend without a client module, and on one with a module `helpers` (checked)."""
    backends = backend_modules()
    assert backends, f"no backend package found under {DRIVERS}"
    missing = [f"  lance_sync.drivers.{backend}: add the module {module}"
               for backend, names in backends.items() for module in sorted(BACKEND_MODULES - names)]
    unknown = [f"  lance_sync.drivers.{backend}.{module}: name it from the vocabulary, or add the role to "
               "BACKEND_VOCABULARY if no name there fits"
               for backend, names in backends.items()
               for module in sorted(names - BACKEND_MODULES - BACKEND_VOCABULARY)]
    assert not missing + unknown, (
        f"every backend has {', '.join(sorted(BACKEND_MODULES))}, and its other modules are named from "
        f"{', '.join(sorted(BACKEND_VOCABULARY))}:\n" + "\n".join(missing + unknown))


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, call) of every call of another object's or module's private method or function.
    `self._x()` and `cls._x()` are the object's own; `super()._x()` inside `_x` extends the
    method it overrides."""
    found = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_private(node.func.attr):
            target, attr = node.func.value, node.func.attr
            own = isinstance(target, ast.Name) and target.id in ("self", "cls")
            overridden = (isinstance(target, ast.Call) and isinstance(target.func, ast.Name)
                          and target.func.id == "super" and attr == function)
            stdlib = isinstance(target, ast.Name) and (target.id, attr) in STDLIB_PRIVATE_CALLS
            if not (own or overridden or stdlib or attr in NAMEDTUPLE_METHODS):
                found.append((node.lineno, ast.unparse(node.func)))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def test_no_module_calls_another_objects_privates():
    """Fails on `other._x()` in a module of the package (checked)."""
    calls = [f"  {path.relative_to(PACKAGE.parent)}:{line}: {call}"
             for path in modules().values() for line, call in private_calls(ast.parse(path.read_text()))]
    assert not calls, ("these call another object's or module's private name: make what they need public "
                       "where it lives, or move the work there:\n" + "\n".join(calls))
