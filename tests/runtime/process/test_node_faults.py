"""Faults around a node, with the real parts: a PostgreSQL store that is down when the
node starts (and goes away again), and a disk that fills up under the request log. The
node neither exits nor loses a logged call; its admin /ready and /metrics say what is
wrong meanwhile."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.full_disk import run_on_a_small_disk
from support.pg import PostgresServer
from support.polling import wait_until
from support.serving import free_port

from notebook_kit import Workspace

EMPLOYEE = "/dev/restapi_sample/employee/E001"


@pytest.fixture
def own_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test's own, to stop and start."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.remove()


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=2)
    except httpx.TransportError:
        return None


@pytest.mark.serial  # asserts how soon /ready follows the store
def test_a_node_started_while_postgresql_is_down_waits_and_serves_once_it_is_back(
    own_postgres: PostgresServer, tmp_path: Path
) -> None:
    url = own_postgres.create_database()
    workspace = Workspace(tmp_path / "home", store=url)
    workspace.install_sample()
    key = workspace.keys()["dev"]
    del workspace
    own_postgres.stop()
    port, admin = free_port(), free_port()
    command = [sys.executable, "-m", "notebook_kit", "--home", str(tmp_path / "home"), "serve"]
    command += ["--port", str(port), "--admin-port", str(admin)]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            env={**os.environ, "NOTEBOOK_KIT_STORE": url},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{admin}"
    try:
        wait_until(lambda: _get(f"{base}/live") is not None, within=15)
        assert httpx.get(f"{base}/live").status_code == 200
        ready = httpx.get(f"{base}/ready")
        assert ready.status_code == 503
        assert ready.text.startswith("store unreachable: "), ready.text
        time.sleep(2.5)  # retries, no exit: a service manager would restart it in a loop
        assert process.poll() is None, log.read_text()
        assert httpx.get(f"{base}/ready").status_code == 503
        assert "ready 0" in httpx.get(f"{base}/metrics").text.replace("notebook_kit_", "")

        assert own_postgres.start() == ""
        wait_until(lambda: getattr(_get(f"{base}/ready"), "status_code", 0) == 200, within=10)
        answer = httpx.get(f"http://127.0.0.1:{port}{EMPLOYEE}", headers={"x-api-key": key})
        assert answer.status_code == 200 and answer.json()["id"] == "E001"

        own_postgres.stop()  # gone again while serving: not ready, still serving
        wait_until(lambda: getattr(_get(f"{base}/ready"), "status_code", 0) == 503, within=3)
        assert httpx.get(f"{base}/ready").text.startswith("store unreachable: ")
        answer = httpx.get(f"http://127.0.0.1:{port}{EMPLOYEE}", headers={"x-api-key": key})
        assert answer.status_code == 200
        assert own_postgres.start() == ""
        wait_until(lambda: getattr(_get(f"{base}/ready"), "status_code", 0) == 200, within=5)
        assert process.poll() is None
        assert log.read_text().count("Traceback") == 0, log.read_text()
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# Runs inside the mount namespace (``support.full_disk``): a node over a workspace on the
# small tmpfs, the disk filled, calls made, what /ready and /metrics say, space freed.
_FULL_DISK_DRIVER = """
import json, os, signal, subprocess, sys, time
import httpx
from notebook_kit import Workspace

disk, out = os.environ["DISK"], sys.argv[1]
port, admin, calls = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
home = os.path.join(disk, "ws")
workspace = Workspace(home)
workspace.install_sample()
key = workspace.keys()["dev"]
nk = [sys.executable, "-m", "notebook_kit", "--home", home]
with open(os.path.join(out, "serve.log"), "wb") as log:
    server = subprocess.Popen(
        nk + ["serve", "--port", str(port), "--admin-port", str(admin)],
        stdout=log, stderr=subprocess.STDOUT,
    )
base, api = f"http://127.0.0.1:{admin}", f"http://127.0.0.1:{port}"

def get(path):
    try:
        return httpx.get(base + path, timeout=2)
    except httpx.TransportError:
        return None

def until(check, seconds):
    deadline = time.time() + seconds
    while not check():
        assert time.time() < deadline and server.poll() is None, "gave up waiting"
        time.sleep(0.05)

until(lambda: getattr(get("/ready"), "status_code", 0) == 200, 30)
free = os.statvfs(disk)
with open(os.path.join(disk, "filler"), "ab") as filler:
    try:
        filler.write(b"\\0" * (free.f_bavail * free.f_frsize))
    except OSError:
        pass
answered = 0
body = {"arg1": 2, "arg2": 3, "operation": "plus"}
with httpx.Client(base_url=api, timeout=10, headers={"x-api-key": key}) as client:
    for _ in range(calls):
        answered += client.post("/dev/restapi_sample/calculator", json=body).status_code == 200
until(lambda: f"backlog_entries {calls}" in get("/metrics").text, 10)
full = get("/ready"), get("/metrics").text
os.remove(os.path.join(disk, "filler"))
until(lambda: "backlog_entries 0" in get("/metrics").text, 15)
after = get("/ready"), get("/metrics").text
server.send_signal(signal.SIGTERM)
server.wait(20)
print(json.dumps({
    "answered": answered, "rows": len(workspace.request_log()),
    "full": [full[0].status_code, full[0].text, full[1]],
    "after": [after[0].status_code, after[0].text, after[1]],
}))
"""


def _value(metrics: str, name: str) -> float:
    found = [line.split()[-1] for line in metrics.splitlines() if line.startswith(name + " ")]
    assert len(found) == 1, (name, metrics)
    return float(found[0])


def test_a_full_disk_keeps_the_logged_calls_waiting_and_says_so(tmp_path: Path) -> None:
    calls = 60
    driver = tmp_path / "driver.py"
    driver.write_text(_FULL_DISK_DRIVER)
    command = [sys.executable, str(driver), str(tmp_path), str(free_port()), str(free_port())]
    done = run_on_a_small_disk(
        shlex.join([*command, str(calls)]), tmp_path / "disk", size_kb=16384, timeout=150
    )
    serve_log = (tmp_path / "serve.log").read_text(errors="replace")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:] + serve_log
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["answered"] == calls  # the node kept serving
    status, ready, metrics = found["full"]
    assert status == 200  # still serving: ready, the backlog named
    assert ready.splitlines()[1] == (
        f"request log backlog: {calls} entries waiting, 0 dropped "
        "(the store refuses writes: the store's disk is full)"
    )
    assert _value(metrics, "notebook_kit_request_log_backlog_entries") == calls
    assert _value(metrics, "notebook_kit_request_log_written_total") == 0
    status, ready, metrics = found["after"]
    assert (status, ready) == (200, "ready\n")
    assert _value(metrics, "notebook_kit_request_log_backlog_entries") == 0
    assert _value(metrics, "notebook_kit_request_log_dropped_total") == 0
    assert _value(metrics, "notebook_kit_request_log_written_total") == calls
    assert found["rows"] == calls  # every call answered on the full disk is in the log
    assert "the store's disk is full" in serve_log
