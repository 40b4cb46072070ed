"""The test suite's layout rules (tests/support/__init__.py), checked on its source so that they hold."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
#: what a test module is named, and so what pytest collects
TEST_MODULE = "test_*.py"
#: the mark of the slow lane, given by the lanes rule (tests/support/lanes.py), never by hand
LANE_MARK = "slow"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def suite_modules() -> dict[str, Path]:
    """Module name -> file, for every module under tests/."""
    return {module_name(path): path for path in sorted(TESTS.rglob("*.py"))}


def is_test_module(name: str) -> bool:
    return name.rpartition(".")[2].startswith("test_")


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of the suite that `path` imports, wherever the import statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            # `from tests.unit import test_x` imports the module test_x
            found |= {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known}
    return found & known


def test_test_file_names_are_unique():
    """Fails on a second test_layout.py under tests/ (checked)."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob(TEST_MODULE)):
        by_name[path.name].append(str(path.relative_to(ROOT)))
    twice = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not twice, ("these test files share a name: rename all but one after what it tests, so that a "
                       "name in a report or in -k points at one file:\n"
                       + "\n".join(f"  {name}: {', '.join(paths)}" for name, paths in twice.items()))


def test_no_module_imports_a_test_module():
    """Fails on `from tests.unit.test_render import ...` in a test module (checked)."""
    modules = suite_modules()
    imports = [f"  {path.relative_to(ROOT)} imports {target}"
               for name, path in modules.items()
               for target in sorted(imported_modules(path, name, set(modules)))
               if is_test_module(target)]
    assert not imports, ("a test module is no library: move what these import to tests/support (or "
                         "tests/servers, tests/conformance/harness*.py) and import it from there:\n"
                         + "\n".join(imports))


def hand_written_lane_marks(tree: ast.AST) -> list[int]:
    """The lines of `pytest.mark.slow` (`mark.slow`) and of `add_marker("slow")`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == LANE_MARK and (
                isinstance(node.value, ast.Attribute) and node.value.attr == "mark"
                or isinstance(node.value, ast.Name) and node.value.id == "mark"):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "add_marker" and \
                any(isinstance(arg, ast.Constant) and arg.value == LANE_MARK for arg in node.args):
            lines.append(node.lineno)
    return lines


def test_the_slow_mark_is_never_written_by_hand():
    """Fails on `@pytest.mark.slow` on a test (checked)."""
    marks = [f"  {path.relative_to(ROOT)}:{line}"
             for path in suite_modules().values() for line in hand_written_lane_marks(ast.parse(path.read_text()))]
    assert not marks, (f"`{LANE_MARK}` follows from what a test needs (tests/support/lanes.py): remove the mark, "
                       "and take the fixture that makes the test slow (a server, `spark`, `subprocesses`), or "
                       "mark `servers` or `spark` when it asks for one at run time:\n" + "\n".join(marks))
