"""The systemd unit and the log rotation of docs/guide/production.md (Under systemd).

The unit is ``deploy/systemd/notebook-kit.service``, the file the page includes. There is
no running systemd in a test container, so: ``systemd-analyze verify`` checks the unit
(its ExecStart pointed at this environment's notebook-kit); no password of the page's
``EnvironmentFile`` is in it; its ``ExecStart`` runs with the ``EnvironmentFile``'s
variables (the store's URL pointing at the test's PostgreSQL), as the unit's ``User=``
would, an unprivileged user where this environment's interpreter lets one run it, until
``/ready`` answers 200; its ``KillSignal`` ends it with 0. ``logrotate --debug`` reads the
page's rotation config.
"""

from __future__ import annotations

import configparser
import grp
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from support.processes import free_port

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "guide" / "production.md"
UNIT = REPO / "deploy" / "systemd" / "notebook-kit.service"


def marked(name: str) -> str:
    """The text of the page's block marked ``<!-- name -->``."""
    found = re.search(rf"^<!-- {name} -->\n```\w+\n(.*?)^```$", PAGE.read_text(), re.M | re.S)
    assert found is not None, f"no block marked {name} in {PAGE.name}"
    return found.group(1)


def service() -> configparser.SectionProxy:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    unit.read_string(UNIT.read_text())
    return unit["Service"]


def environment_file() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in marked("environment-file").splitlines() if line)
    return {key.strip(): value.strip().strip('"') for key, value in pairs}


def test_the_page_shows_the_shipped_unit_and_keeps_the_password_out_of_it() -> None:
    assert f'--8<-- "{UNIT.relative_to(REPO)}"' in PAGE.read_text()
    unit = service()
    assert unit["EnvironmentFile"] == "/etc/notebook-kit/node.env"
    assert unit["KillSignal"] == "SIGTERM"
    assert unit["Restart"] == "on-failure"
    assert shlex.split(unit["ExecStart"])[1:4] == ["--home", "/srv/nk/node1", "serve"]
    store = environment_file()["NOTEBOOK_KIT_STORE"]
    password = urlsplit(store).password
    assert password and password not in UNIT.read_text()
    assert "NOTEBOOK_KIT_STORE" not in UNIT.read_text().split("[Service]")[1]


def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing (Debian package systemd)")
    here = Path(sys.prefix) / "bin" / "notebook-kit"
    unit = tmp_path / "notebook-kit.service"
    unit.write_text(UNIT.read_text().replace("/srv/nk/venv/bin/notebook-kit", str(here)))
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert str(unit) not in done.stderr and "notebook-kit.service" not in done.stderr, done.stderr


def _as_unit_user(home: Path) -> list[str]:
    """The prefix that runs a command as an unprivileged user (the unit's ``User=``): the
    ``postgres`` system user when this test runs as root and that user may run this
    environment's interpreter (it may live in root's home), else nothing."""
    if os.geteuid() != 0:
        return []
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        return []
    runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if runuser is None:
        return []
    prefix = [runuser, "-u", "postgres", "--"]
    if subprocess.run([*prefix, sys.executable, "-c", ""], capture_output=True).returncode:
        return []
    os.chown(home, user.pw_uid, user.pw_gid)
    return prefix


def test_the_units_command_serves_with_the_environment_file_until_sigterm(
    fresh_database: str,
) -> None:
    root = Path(tempfile.mkdtemp(prefix="notebook-kit-unit-"))
    try:
        node = root / "node1"
        node.mkdir(mode=0o700)
        prefix = _as_unit_user(node)
        port, admin = free_port(), free_port()
        command = shlex.split(service()["ExecStart"])
        command[0] = str(Path(sys.prefix) / "bin" / "notebook-kit")
        command = [
            {"/srv/nk/node1": str(node), "8001": str(port), "9101": str(admin)}.get(arg, arg)
            for arg in command
        ]
        variables = environment_file()
        assert set(variables) == {"NOTEBOOK_KIT_STORE"}
        variables["NOTEBOOK_KIT_STORE"] = fresh_database  # the test's server, not db.internal
        # what systemd hands a service: its EnvironmentFile over a bare environment
        env = {"PATH": "/usr/bin:/bin", "HOME": str(node), "LANG": "C.UTF-8", **variables}
        with (root / "node.log").open("wb") as log:
            process = subprocess.Popen(
                [*prefix, *command], env=env, stdout=log, stderr=log, start_new_session=True
            )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, (root / "node.log").read_text()
                try:
                    if httpx.get(f"http://127.0.0.1:{admin}/ready", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, (root / "node.log").read_text()
                time.sleep(0.1)
            assert httpx.get(f"http://127.0.0.1:{port}/nothing", timeout=5).status_code == 404
            os.kill(process.pid, getattr(signal, service()["KillSignal"]))
            assert process.wait(30) == 0, (root / "node.log").read_text()
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_logrotate_reads_the_pages_rotation_config(tmp_path: Path) -> None:
    logrotate = shutil.which("logrotate", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if logrotate is None:
        pytest.skip("logrotate is missing (Debian package logrotate)")
    node = tmp_path / "srv" / "nk" / "node1"
    node.mkdir(parents=True)
    (node / "serve-8001.log").write_text("notebook-kit serving ...\n" * 100)
    text = marked("logrotate").replace("/srv/nk/", f"{tmp_path}/srv/nk/")
    user = pwd.getpwuid(os.getuid()).pw_name
    group = pwd.getpwuid(os.getuid()).pw_gid
    text = text.replace("su nk nk", f"su {user} {grp.getgrgid(group).gr_name}")
    config = tmp_path / "notebook-kit"
    config.write_text(text)
    state = tmp_path / "state"
    done = subprocess.run(
        [logrotate, "--debug", "--force", "--state", str(state), str(config)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "serve-8001.log" in said and "copying" in said and "truncating" in said, said
    assert "error" not in said.lower(), said
