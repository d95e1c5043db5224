"""Build the bundled notebooks (cells: notebook_cells.py, notebook_tour.py) with outputs.

    python scripts/make_notebooks.py            # write and execute all three
    python scripts/make_notebooks.py 02         # only the ones whose name contains "02"

Each notebook is executed top to bottom with nbclient in a fresh kernel, so the outputs
checked in are real; ``pytest --nbval notebooks/`` then compares a new run against them.
Cells whose output varies (ports, keys, timings) start with ``# NBVAL_IGNORE_OUTPUT``;
the others print fixed markers so the comparison means something.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from notebook_cells import BUILD, QUICKSTART, Cell
from notebook_tour import TEACHING

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def write(name: str, cells: list[Cell], run: bool = True) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for number, (kind, source) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(source)
        cell["id"] = f"{name[:2]}-{number:02d}"  # stable ids: no churn when regenerated
        nb.cells.append(cell)
    if run:
        NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=False).execute(
            cwd=str(NOTEBOOKS)
        )
        for cell in nb.cells:
            cell.metadata.pop("execution", None)  # timestamps: churn without meaning
    path = NOTEBOOKS / name
    nbformat.write(nb, path)
    return path


def main(argv: list[str]) -> None:
    # The quickstart keeps its workspace (NOTEBOOK_KIT_HOME, else a folder beside it):
    # here it gets a fresh temporary one, so the stored outputs are those of a first run.
    os.environ["NOTEBOOK_KIT_HOME"] = tempfile.mkdtemp(prefix="notebook-kit-build-")
    wanted = {
        "01-quickstart.ipynb": QUICKSTART,
        "02-build-an-api.ipynb": BUILD,
        "03-teaching-tour.ipynb": TEACHING,
    }
    for name, cells in wanted.items():
        if argv and not any(part in name for part in argv):
            continue
        print("wrote", write(name, cells))


if __name__ == "__main__":
    main(sys.argv[1:])
