"""The package's shape: layers as folders, imports that flow one way, a light CLI.

    errors -> domain -> store -> builtins -> sandbox -> workspace -> runtime -> cli / notebook

Every import counts, at module level, inside a function or under ``if TYPE_CHECKING:``
(a type-only import is a dependency too). No exception: the notebook's conveniences
(``ws.serve()``, ``ws.definitions_frame()`` ...) are the notebook face's own subclass of
the core ``Workspace``, which imports nothing above it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "notebook_kit"
LAYERS = [
    "errors",
    "domain",
    "store",
    "builtins",
    "sandbox",
    "workspace",
    "runtime",
    "cli",
    "notebook",
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the notebook_kit modules it imports (resolved to existing modules)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = package[: len(package) - node.level + 1] if node.level else []
                head = ".".join([*base, *([node.module] if node.module else [])])
                targets = [head, *(f"{head}.{a.name}" for a in node.names)]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module and not module.startswith(target + "."):
                    graph[module].add(target)
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_import_circle() -> None:
    graph = _imports()
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        seen[module] = 1
        for target in sorted(graph[module]):
            if seen.get(target) == 1:
                circle = [*path[path.index(target) :], target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in seen:
                visit(target, [*path, target])
        seen[module] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module, [module])


def test_imports_flow_down_the_layers() -> None:
    upward = []
    for module, targets in _imports().items():
        for target in targets:
            here, there = _layer(module), _layer(target)
            if here is None or there is None or here == there:
                continue
            if {here, there} == {"cli", "notebook"}:
                upward.append(f"{module} -> {target} (faces do not import each other)")
            elif LAYERS.index(there) > LAYERS.index(here):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_package_root_is_small_and_modules_are_short() -> None:
    flat = [p.name for p in PACKAGE.glob("*.py")]
    assert len(flat) <= 12, flat
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 600
    }
    assert long == {}


@pytest.mark.parametrize("module", ["notebook_kit", "notebook_kit.cli"])
def test_light_imports_load_no_framework(module: str) -> None:
    """Importing the package loads no third-party module, the CLI only click: no web
    framework or its parts (sanic, multidict), no pandas, widgets, HTTP client, git,
    SQLAlchemy or psycopg. Each loads with the command or call that needs it."""
    code = (
        f"import json, sys, {module}; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}"
        " - set(sys.stdlib_module_names) - {'notebook_kit', 'click'})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    loaded = [m for m in json.loads(result.stdout or "[]") if not m.startswith("_")]
    assert (result.returncode, loaded) == (0, []), result.stderr


def test_builtins_take_a_context_never_the_workspace() -> None:
    for path in (PACKAGE / "builtins").glob("*.py"):
        assert "from ..workspace" not in path.read_text(), path.name
