"""The an5dpy package has no import cycle.

The graph has an edge from module A to module B where A imports B anywhere (module level or
inside a function; ``import x.y``, ``from x import y``, relative imports). ``from pkg import
name`` counts as importing ``pkg.name`` where that is a module, else ``pkg`` (a package's
``__init__`` is the package's own node).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from paths import REPO

PACKAGE = "an5dpy"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = Path(REPO)) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / PACKAGE).rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules that module ``name`` (file ``path``) imports."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:  # ``a.b.func`` -> ``a.b``
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    tree = ast.parse(path.read_text(), str(path))
    # imports only the type checker runs (``if TYPE_CHECKING:``) make no cycle at run time
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, (ast.Name, ast.Attribute))
                   and ast.unparse(block.test).endswith("TYPE_CHECKING")
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                full = f"{origin}.{alias.name}"
                add(full if full in known else origin)
    return found


def import_graph(root: Path = Path(REPO)) -> dict[str, set[str]]:
    files = modules(root)
    known = set(files)
    return {name: imported(name, path, known) for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "an5dpy.cli.main" in graph and "an5dpy.driver" in graph
    cycle = find_cycle(graph)
    if cycle:
        print("import cycle: " + " -> ".join(cycle))
    assert cycle is None, " -> ".join(cycle)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize("a_imports", [
    "from an5dpy.sub import b\n",
    "def f():\n    from an5dpy.sub.b import g\n",  # inside a function
    "from .sub import b\n",                        # relative
    "import an5dpy.sub.b as bb\n",
])
def test_a_cycle_is_found_in_every_import_form(tmp_path, a_imports):
    write(tmp_path, {"__init__.py": "", "a.py": a_imports, "sub/__init__.py": "",
                     "sub/b.py": "from ..a import f\n"})
    graph = import_graph(tmp_path)
    assert find_cycle(graph) in (["an5dpy.a", "an5dpy.sub.b", "an5dpy.a"],
                                 ["an5dpy.sub.b", "an5dpy.a", "an5dpy.sub.b"])


def test_imports_without_a_cycle_pass(tmp_path):
    write(tmp_path, {"__init__.py": "", "a.py": "from an5dpy.sub import b\nimport os\n",
                     "sub/__init__.py": "", "sub/b.py": "from an5dpy import c\n",
                     "c.py": "import numpy\n"})
    graph = import_graph(tmp_path)
    assert graph["an5dpy.a"] == {"an5dpy.sub.b"}
    assert graph["an5dpy.sub.b"] == {"an5dpy.c"}
    assert find_cycle(graph) is None


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    write(tmp_path, {"__init__.py": "", "sub/__init__.py": "from an5dpy.sub.b import x\n",
                     "sub/b.py": "from an5dpy.c import y\n", "c.py": "import an5dpy.sub\n"})
    assert find_cycle(import_graph(tmp_path)) == ["an5dpy.c", "an5dpy.sub", "an5dpy.sub.b",
                                                  "an5dpy.c"]


def test_imports_for_the_type_checker_only_make_no_cycle(tmp_path):
    write(tmp_path, {"__init__.py": "", "sub/__init__.py": "",
                     "a.py": "from an5dpy.sub import b\n",
                     "sub/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from an5dpy.a import f\n"})
    assert find_cycle(import_graph(tmp_path)) is None
