"""The README's commands work on Debian's system Python (issue 9): ``scripts/test.sh`` and
``scripts/run.sh`` make and use a virtual environment (``scripts/venv.sh``) instead of
pip-installing into the system, which Debian refuses (externally-managed-environment)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from support.processes import free_port

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
    for script in ("test.sh", "run.sh", "venv.sh", "check.sh"):
        subprocess.run(["bash", "-n", str(SCRIPTS / script)], check=True)


def test_the_test_command_runs_the_quick_check_first() -> None:
    """Lint, format, types and layout (``scripts/check.sh``, the seconds-long check) run
    before the docs and the test suite, in the same environment."""
    test_sh = (SCRIPTS / "test.sh").read_text()
    check_sh = (SCRIPTS / "check.sh").read_text()
    assert test_sh.index("bash scripts/check.sh") < test_sh.index("python -m pytest")
    for command in ("ruff check", "ruff format --check", "mypy notebook_kit", "test_layout.py"):
        assert command in check_sh, command
    assert "source scripts/venv.sh" in check_sh


@pytest.mark.slow
def test_run_sh_starts_jupyterlab_passing_extra_arguments_as_root_too(tmp_path: Path) -> None:
    """The real ``bash scripts/run.sh`` (its install is a no-op re-install into the active
    environment): JupyterLab starts and answers, with the extra arguments given to it;
    as root (containers, CI) the script adds --allow-root, without which JupyterLab exits
    1 ("Running as root is not recommended")."""
    port = free_port()
    venv = Path(sys.prefix)
    env = {
        **os.environ,
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),  # Jupyter's config, data and runtime files go here
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
    }
    log = tmp_path / "lab.log"
    extra = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1"]
    with log.open("wb") as out:
        lab = subprocess.Popen(
            ["bash", str(SCRIPTS / "run.sh"), *extra],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        answered = None
        while time.monotonic() < deadline and lab.poll() is None and answered is None:
            try:
                answered = httpx.get(f"http://127.0.0.1:{port}/api", timeout=2)
            except httpx.TransportError:
                time.sleep(0.5)
        assert answered is not None and answered.status_code == 200, log.read_text()
        assert "version" in answered.json()
        # exec: the script's process is JupyterLab now, with the arguments it was given
        argv = Path(f"/proc/{lab.pid}/cmdline").read_bytes().decode().split("\0")
        after_notebook = argv[argv.index("notebooks/01-quickstart.ipynb") + 1 : -1]
        assert after_notebook == (["--allow-root", *extra] if os.geteuid() == 0 else extra)
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()
