#!/usr/bin/env bash
# The README's first command: notebook-kit with its notebook extra in a virtual environment
# (.venv/ here unless one is active), then the quickstart in JupyterLab.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
python -m pip install --quiet --disable-pip-version-check -e '.[notebook]'
exec jupyter lab notebooks/01-quickstart.ipynb "$@"
