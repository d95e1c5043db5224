#!/usr/bin/env bash
# Set up a fresh machine and run every check: lint, format, types, the whole test suite.
# This is the README's test command; .ci/run calls it, so CI proves the README.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m "not slow"`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: Chromium for the browser tests, PostgreSQL for the database tests,
# wrk for the benchmark, Node.js and npm for the editor bundle. Installed only where missing.
need=()
for package in chromium postgresql wrk git; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
# Node.js 18+ and npm: pip install builds the CodeEditor's bundle (npm ci + esbuild). Looked up
# by command, not by package, since a NodeSource nodejs carries its own npm.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  need+=(nodejs npm)
fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

ruff check notebook_kit tests bench
ruff format --check notebook_kit tests bench
mypy notebook_kit --ignore-missing-imports
python3 -m pytest "$@"
