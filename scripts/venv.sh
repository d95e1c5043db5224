# Sourced by test.sh and run.sh: use the active virtual environment, else .venv/ in the
# repository (made on first use, without the system's site-packages).
if [ -z "${VIRTUAL_ENV:-}" ]; then
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv || {
      echo "notebook-kit: cannot make .venv (on Debian/Ubuntu: sudo apt-get install python3-venv)" >&2
      exit 1
    }
  fi
  # shellcheck disable=SC1091
  source .venv/bin/activate
fi
