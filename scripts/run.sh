#!/usr/bin/env bash
# The README's first command: notebook-kit with its notebook extra in a virtual environment
# (.venv/ here unless one is active), then the quickstart in JupyterLab.
# Extra arguments go to JupyterLab (e.g. `bash scripts/run.sh --no-browser --port 8889`).
# Run as root (a container, a CI machine), it adds --allow-root, without which JupyterLab
# refuses to start ("Running as root is not recommended").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
python -m pip install --quiet --disable-pip-version-check -e '.[notebook]'
as_root=()
if [ "$(id -u)" -eq 0 ]; then
  as_root=(--allow-root)
fi
exec jupyter lab notebooks/01-quickstart.ipynb ${as_root[@]+"${as_root[@]}"} "$@"
