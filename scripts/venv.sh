# Sourced by test.sh and run.sh: use the active virtual environment, else .venv/ in the
# repository (made on first use, without the system's site-packages, with a current pip).
if [ -z "${VIRTUAL_ENV:-}" ]; then
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv || {
      echo "notebook-kit: cannot make .venv (on Debian/Ubuntu: sudo apt-get install python3-venv)" >&2
      exit 1
    }
    # The pip a new environment comes with is the Python's bundled one, often years old:
    # a current pip installs the same packages in about half the time.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  fi
  # shellcheck disable=SC1091
  source .venv/bin/activate
fi
