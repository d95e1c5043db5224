#!/usr/bin/env bash
# Set up a fresh machine and run every check: lint, format, types, the docs site, the whole
# test suite.
# This is the README's test command; .ci/run calls it, so CI proves the README.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -m "not slow"`).
# Outside a virtual environment it makes and uses .venv/ here (Debian's python3 refuses
# pip installs into the system: "externally-managed-environment").
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: Chromium for the browser tests, PostgreSQL for the database tests, nginx
# for the front-door test (which runs its own nginx from a temp directory, on free ports),
# wrk for the benchmark, curl for the tour (docs/tour.md), strace to count a query's system
# calls (tests/test_database.py), Node.js and npm for the editor bundle, python3-venv where
# `python3 -m venv` cannot make an environment. HAProxy for the many-node recipe's test
# (tests/runtime/process/test_recipe.py: docs/front-door.md run as written, a node killed
# under load). systemd's systemd-analyze and logrotate check the production guide's unit
# and rotation config (tests/runtime/process/test_service_unit.py; no systemd runs).
# Installed only where missing.
need=()
for package in chromium postgresql nginx haproxy systemd logrotate wrk git curl strace; do
  dpkg -s "$package" >/dev/null 2>&1 || need+=("$package")
done
# Node.js 18+ and npm: pip install builds the CodeEditor's bundle (npm ci + esbuild). Looked up
# by command, not by package, since a NodeSource nodejs carries its own npm.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  need+=(nodejs npm)
fi
if [ -z "${VIRTUAL_ENV:-}" ] && [ ! -x .venv/bin/python ] \
  && ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
  need+=(python3-venv)
fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

source scripts/venv.sh
python -m pip install --quiet --disable-pip-version-check -e '.[test]'
# The OpenAPI tools tests/domain/test_openapi_clients.py runs (redocly, spectral,
# openapi-to-postmanv2, newman), pinned by tests/tools/package-lock.json: installed again
# only when that lock file is newer than the install.
tools=tests/tools
if [ ! -f "$tools/node_modules/.package-lock.json" ] \
  || [ "$tools/package-lock.json" -nt "$tools/node_modules/.package-lock.json" ]; then
  (cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

bash scripts/check.sh
# The documentation site (mkdocs.yml): any warning (a broken link or anchor, a reference that
# does not resolve) fails. Built into site/ (ignored by git); never with -q, which hides the
# warnings --strict counts. NO_MKDOCS_2_WARNING silences a banner about MkDocs' future.
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --site-dir site
# The suite: the tests on two workers (pytest-xdist; the browser tests share one worker and
# its JupyterLab), then, alone on the machine, those that assert a wall-clock bound or a
# latency under load (marked serial). Both parts run; either failing fails the whole.
# Extra arguments run pytest once, as given.
if [ $# -gt 0 ]; then
  exec python -m pytest "$@"
fi
status=0
python -m pytest -n "${NK_TEST_WORKERS:-2}" --dist loadgroup -m "not serial" || status=$?
python -m pytest -m serial || status=$((status ? status : $?))
exit "$status"
