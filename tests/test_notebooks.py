"""The bundled notebooks run top to bottom unattended and reproduce their stored outputs
(nbval in strict mode: every cell not marked ``# NBVAL_IGNORE_OUTPUT`` is compared)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = [
    "01-quickstart.ipynb",
    "02-build-an-api.ipynb",
    "03-teaching-tour.ipynb",
    "04-built-ins.ipynb",
]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_has_stored_outputs(name: str) -> None:
    """Without stored outputs nbval only checks that cells run: make sure it compares."""
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    compared = [c for c in code if "NBVAL_IGNORE_OUTPUT" not in "".join(c["source"])]
    assert compared and all(c["outputs"] for c in compared)
    errors = [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    streams = [o for c in code for o in c["outputs"] if o.get("name") == "stderr"]
    assert errors == [] and streams == []


@pytest.mark.slow
def test_notebooks_reproduce_outputs_under_nbval(tmp_path: Path) -> None:
    """One pytest run over the three notebooks (one kernel each), in a child process so
    the notebooks' own warnings filters and nbval's plugin do not mix with this session."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "-p",
            "no:cacheprovider",
            "-q",
            "-o",
            "filterwarnings=",
            "-o",
            "addopts=",
            "--rootdir",
            str(tmp_path),
            *(str(NOTEBOOKS / name) for name in NAMES),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        # the quickstart keeps its workspace in NOTEBOOK_KIT_HOME: a fresh one, as for a
        # first run (otherwise notebooks/notebook_kit_workspace/ would be made and reused)
        env={**os.environ, "NOTEBOOK_KIT_HOME": str(tmp_path / "quickstart-home")},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    code_cells = sum(
        1
        for name in NAMES
        for c in json.loads((NOTEBOOKS / name).read_text())["cells"]
        if c["cell_type"] == "code"
    )
    assert f"{code_cells} passed" in result.stdout


@pytest.mark.slow
def test_quickstart_run_all_keeps_the_workspace_the_studio_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Run all" twice, as a newcomer would: the workspace is the folder beside the
    notebook, still there and usable after the last (optional clean-up) cell."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("NOTEBOOK_KIT_HOME", raising=False)
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(NOTEBOOKS / "01-quickstart.ipynb", folder)
    check = "print(len(ws.definitions('restapi_sample')), ws.home)"
    for _ in range(2):
        nb = nbformat.read(folder / "01-quickstart.ipynb", as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(check))  # what the studio reads, after all
        NotebookClient(nb, timeout=120, kernel_name="python3").execute(cwd=str(folder))
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
        home = folder / "notebook_kit_workspace"
        assert nb.cells[-1].outputs[0].text.split() == ["4", str(home)]
        assert (home / "workspace.sqlite3").is_file()
