"""What mybinder does, done locally: a fresh virtual environment gets
``binder/requirements.txt`` and then runs ``binder/postBuild`` from a copy of the repository;
the quickstart notebook must then run top to bottom in that environment's own kernel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
_SKIP = shutil.ignore_patterns(
    ".git",
    "*.egg-info",
    "__pycache__",
    "test-artifacts",
    ".*cache",
    "bench",
    "docs",
    ".venv",
    "notebook_kit_workspace",
)

RUN_QUICKSTART = """
import sys
import nbformat
from nbclient import NotebookClient

nb = nbformat.read(sys.argv[1], as_version=4)
probe = "import sys, notebook_kit; print(sys.prefix); print(notebook_kit.__file__)"
nb.cells.append(nbformat.v4.new_code_cell(probe))  # which environment the kernel ran in
NotebookClient(nb, timeout=120, kernel_name="python3").execute(cwd=sys.argv[2])
outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
bad = [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
assert not bad, bad
prefix, package = nb.cells[-1].outputs[0].text.split()
assert prefix == sys.prefix, (prefix, sys.prefix)
assert package.startswith(sys.argv[3]), package
print("QUICKSTART-OK", len(outputs), "outputs")
"""


def _run(command: list[str], env: dict[str, str], cwd: Path) -> str:
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{command}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def test_binder_environment_installs_and_runs_quickstart(tmp_path: Path) -> None:
    assert os.access(REPO / "binder" / "postBuild", os.X_OK), "postBuild must be executable"
    checkout = tmp_path / "repo"
    shutil.copytree(REPO, checkout, ignore=_SKIP)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, clear=True)  # a real, empty environment
    bin_dir = env_dir / "bin"
    python = str(bin_dir / "python")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "NOTEBOOK_KIT"))
    }
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(env_dir),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_COMPILE="0",  # no byte-compiling of what is installed: a third of the time
        JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
        JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
    )
    pip = [python, "-m", "pip", "install", "--quiet", "--prefer-binary"]
    _run([*pip, "--upgrade", "pip"], env, checkout)  # mybinder's images carry a current pip
    _run([*pip, "-r", "binder/requirements.txt"], env, checkout)
    _run(["bash", "binder/postBuild"], env, checkout)
    _run([python, "-m", "pip", "check"], env, checkout)
    where = _run([python, "-c", "import notebook_kit; print(notebook_kit.__file__)"], env, tmp_path)
    assert where.strip().startswith(str(checkout))  # the checkout's package, not the host's
    prefix = _run([python, "-c", "import sys; print(sys.prefix)"], env, tmp_path).strip()
    assert Path(prefix) == env_dir and prefix != sys.prefix

    script = tmp_path / "run_quickstart.py"
    script.write_text(RUN_QUICKSTART)
    notebooks = checkout / "notebooks"
    out = _run(
        [
            python,
            str(script),
            str(notebooks / "01-quickstart.ipynb"),
            str(notebooks),
            str(checkout),
        ],
        env,
        tmp_path,
    )
    assert "QUICKSTART-OK" in out


def test_readme_first_command_installs_what_the_notebooks_import(tmp_path: Path) -> None:
    """``bash scripts/run.sh`` up to launching JupyterLab, from a copy of the repository
    outside any environment: it makes ``.venv``, installs ``.[notebook]`` there, and every
    module the shipped notebooks import then imports in that environment."""
    from support.notebooks import NOTEBOOKS, notebook_imports

    checkout = tmp_path / "repo"
    shutil.copytree(REPO, checkout, ignore=_SKIP)
    run_sh = (checkout / "scripts" / "run.sh").read_text()
    launch = "exec jupyter lab notebooks/01-quickstart.ipynb"
    assert launch in run_sh
    modules = sorted({m for nb in NOTEBOOKS for m in notebook_imports(nb)})
    check = f'python -c "import {", ".join(modules)}; import sys; print(sys.prefix)"\n'
    check += "command -v jupyter\n"
    # the whole launch line (its arguments too) becomes the check
    lines = [check if line.startswith(launch) else line for line in run_sh.splitlines()]
    (checkout / "scripts" / "install_only.sh").write_text("\n".join(lines) + "\n")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "NOTEBOOK_KIT"))
    }
    active = os.environ.get("VIRTUAL_ENV")
    if active:  # python3 must be the machine's, as for a newcomer
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(active)
        )
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_COMPILE"] = "0"  # no byte-compiling of what is installed
    out = _run(["bash", "scripts/install_only.sh"], env, checkout).split()
    assert out[0] == str(checkout / ".venv")
    assert out[1] == str(checkout / ".venv" / "bin" / "jupyter")
