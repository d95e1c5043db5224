"""The bundled notebooks run top to bottom unattended and reproduce their stored outputs
(nbval in strict mode: every cell not marked ``# NBVAL_IGNORE_OUTPUT`` is compared)."""

from __future__ import annotations

import json
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
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    code_cells = sum(
        1
        for name in NAMES
        for c in json.loads((NOTEBOOKS / name).read_text())["cells"]
        if c["cell_type"] == "code"
    )
    assert f"{code_cells} passed" in result.stdout
