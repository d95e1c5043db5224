"""The README's commands work on Debian's system Python (issue 9): ``scripts/test.sh`` and
``scripts/run.sh`` make and use a virtual environment (``scripts/venv.sh``) instead of
pip-installing into the system, which Debian refuses (externally-managed-environment)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"


def _bash(script: str, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _outside_any_venv() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    # drop an active environment's bin from PATH, so python3 is the system's
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        env["PATH"] = os.pathsep.join(
            p for p in env["PATH"].split(os.pathsep) if not p.startswith(active)
        )
    return env


def test_venv_sh_makes_and_uses_dot_venv_outside_an_environment(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPTS / "venv.sh", checkout / "scripts")
    probe = 'source scripts/venv.sh && python -c "import sys; print(sys.prefix)"'
    prefix = _bash(probe, checkout, _outside_any_venv()).strip()
    assert Path(prefix) == checkout / ".venv"
    config = (checkout / ".venv" / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in config
    # Run again: the same environment, reused.
    assert _bash(probe, checkout, _outside_any_venv()).strip() == prefix


def test_venv_sh_keeps_an_active_environment(tmp_path: Path) -> None:
    checkout = tmp_path / "repo"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPTS / "venv.sh", checkout / "scripts")
    env = {**_outside_any_venv(), "VIRTUAL_ENV": str(tmp_path / "mine")}
    assert _bash("source scripts/venv.sh && echo $VIRTUAL_ENV", checkout, env).strip() == str(
        tmp_path / "mine"
    )
    assert not (checkout / ".venv").exists()


def test_scripts_install_into_the_environment_not_the_system() -> None:
    test_sh = (SCRIPTS / "test.sh").read_text()
    run_sh = (SCRIPTS / "run.sh").read_text()
    for text, extra in ((test_sh, ".[test]"), (run_sh, ".[notebook]")):
        assert "source scripts/venv.sh" in text
        assert f"python -m pip install --quiet --disable-pip-version-check -e '{extra}'" in text
        assert "python3 -m pip" not in text
        assert text.index("source scripts/venv.sh") < text.index("python -m pip install")
    assert "python3-venv" in test_sh
    assert "jupyter lab notebooks/01-quickstart.ipynb" in run_sh
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()
    assert ".venv/" in (REPO / ".gitignore").read_text().splitlines()
    for script in ("test.sh", "run.sh", "venv.sh"):
        subprocess.run(["bash", "-n", str(SCRIPTS / script)], check=True)
