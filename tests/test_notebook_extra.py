"""The README's install (``pip install -e '.[notebook]'``) gives every shipped notebook
what it imports (issue 9): each module a notebook's code imports is in the standard
library, is notebook_kit, or comes from a base dependency or the ``[notebook]`` extra."""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _name(requirement: str) -> str:
    """The normalized distribution name of a requirement (``a_b[x]>=1`` -> ``a-b``)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def notebook_imports(notebook: Path) -> set[str]:
    """Top-level names of every module the notebook's code cells import."""
    cells = json.loads(notebook.read_text())["cells"]
    found: set[str] = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).splitlines()
        if lines and lines[0].startswith("%%"):
            continue  # a cell magic's body is not Python for this kernel
        code = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return found


def notebook_requirements() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["notebook"]
    return {_name(r) for r in wanted}


def test_the_notebooks_import_something() -> None:
    assert len(NOTEBOOKS) >= 4
    assert {"notebook_kit", "httpx"} <= notebook_imports(REPO / "notebooks/01-quickstart.ipynb")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_extra_provides_every_import(notebook: Path) -> None:
    provided = notebook_requirements()
    distributions = packages_distributions()
    missing = []
    for module in sorted(notebook_imports(notebook)):
        if module in sys.stdlib_module_names or module == "notebook_kit":
            continue
        sources = {_name(d) for d in distributions.get(module, [])}
        assert sources, f"{module} is not installed here, so its distribution is unknown"
        if not sources & provided:
            missing.append(f"{module} ({', '.join(sorted(sources))})")
    assert not missing, f"{notebook.name} imports what [notebook] does not install: {missing}"
