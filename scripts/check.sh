#!/usr/bin/env bash
# The seconds-long check to run before a commit: lint, format, types (strict for the core:
# pyproject.toml), and the layout tests (no import circle, no upward import, the CLI
# loads no web framework). Needs the environment scripts/test.sh sets up (run it once).
# scripts/test.sh runs this first, then the docs site and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh

python -m ruff check notebook_kit tests bench
python -m ruff format --check notebook_kit tests bench
python -m mypy notebook_kit
python -m pytest -q -p no:cacheprovider tests/test_layout.py
