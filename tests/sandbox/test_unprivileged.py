"""The sandbox as users run it: not as root. A workspace made and served by an ordinary
user (``nobody``, through ``setpriv``) keeps the store from action code exactly as it does
for root, in a test run and in a served call (no capabilities to drop: Landlock applies
with ``no_new_privs`` alone)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from notebook_kit.sandbox.inside.landlock import abi

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534
AS_NOBODY = [
    "setpriv",
    f"--reuid={NOBODY}",
    f"--regid={NOBODY}",
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
]

SCRIPT = """
import json, sys
import httpx
from notebook_kit import Constant, Workspace

ws = Workspace(sys.argv[1])
ws.create("probe", "read", label="read", method="GET", resource="read",
          action="res.body = {'outcome': open(const.STORE, 'rb').read(16).hex()}",
          requires_auth=False)
ws.edit("probe", "read",
        constants=[Constant("STORE", "String", str(ws.home / "workspace.sqlite3"))])
ws.deploy("probe", "dev")
tested = ws.invoke("probe", "read")
with ws.serve() as server:
    served = httpx.get(server.url + "/dev/probe/read", timeout=10)
print(json.dumps({"uid": __import__("os").getuid(), "test": [tested.status, tested.text],
                  "served": [served.status_code, served.text]}))
"""


def _python_for_nobody() -> tuple[str, dict[str, str]] | None:
    """An interpreter the user ``nobody`` can run, with this checkout and its
    dependencies importable: this one if nobody can reach it, else the system's Python
    of the same version over this environment's site-packages."""
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])}
    system = "/usr/bin/python{}.{}".format(*sys.version_info[:2])
    probe = 'exec "$0" -c "import sys, sanic; print(sys.version_info[:2])"'
    for candidate in (sys.executable, system):
        check = subprocess.run(  # started by a shell of nobody's: no capability helps
            [*AS_NOBODY, "/bin/sh", "-c", probe, candidate],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        if check.returncode == 0 and check.stdout.strip() == str(sys.version_info[:2]):
            return candidate, env
    return None


@pytest.mark.skipif(abi() == 0, reason="this kernel has no Landlock")
@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root")
def test_an_ordinary_user_gets_the_same_confinement() -> None:
    found = _python_for_nobody()
    if found is None:
        pytest.skip("no Python of this version that the user nobody can run")
    python, extra = found
    place = Path(tempfile.mkdtemp(prefix="notebook-kit-nobody-"))
    try:
        _probe_as_nobody(python, extra, place)
    finally:
        shutil.rmtree(place, ignore_errors=True)


def _probe_as_nobody(python: str, extra: dict[str, str], place: Path) -> None:
    os.chown(place, NOBODY, NOBODY)
    script = place / "probe.py"
    script.write_text(SCRIPT)
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith("NOTEBOOK_KIT_")},
        **extra,
        "HOME": str(place),
    }
    done = subprocess.run(
        [*AS_NOBODY, python, str(script), str(place / "home")],
        capture_output=True, text=True, env=environ, cwd=place, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["uid"] == NOBODY
    for key in ("test", "served"):
        status, text = outcome[key]
        assert status == 500, outcome
        assert "PermissionError" in text and "Permission denied" in text, outcome
