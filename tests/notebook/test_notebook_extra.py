"""The README's install (``pip install -e '.[notebook]'``) gives every shipped notebook
what it imports (issue 9): each module a notebook's code imports is in the standard
library, is notebook_kit, or comes from a base dependency or the ``[notebook]`` extra."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from support.notebooks import NOTEBOOKS, notebook_imports

REPO = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    """The normalized distribution name of a requirement (``a_b[x]>=1`` -> ``a-b``)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


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


# A base install (no [notebook] extra), imitated in a child process: a meta-path finder
# that refuses the extra's widget libraries, as if they were not installed.
WITHOUT_EXTRA = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"ipywidgets", "anywidget"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
import notebook_kit
ws = notebook_kit.Workspace(sys.argv[1])
server = ws.serve()  # the base install serves: Sanic is a base dependency
print("served", server.url.startswith("http://127.0.0.1:"))
server.stop()
for name in ("studio", "request_charts"):
    try:
        notebook_kit.studio(ws) if name == "studio" else notebook_kit.request_charts
    except ModuleNotFoundError as exc:
        print(name, type(exc).__name__, exc.name, str(exc))
"""


def test_studio_without_the_notebook_extra_names_the_install(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    message = (
        "notebook_kit.studio (and request_charts) needs the notebook extra, which is not "
        "installed (no module named 'ipywidgets'): pip install 'notebook-kit[notebook]'"
    )
    assert result.stdout.splitlines() == [
        "served True",
        f"studio ModuleNotFoundError ipywidgets {message}",
        f"request_charts ModuleNotFoundError ipywidgets {message}",
    ]
