"""``notebook-kit serve --detach`` returns once the server answers, so the next command
can call it (a pasted block works), and ``notebook-kit stop`` ends it. Real processes,
real HTTP on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.processes import free_port, run_cli

from notebook_kit.workspace.workspace import Workspace

Result = subprocess.CompletedProcess[str]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/cmdline").read_bytes() != b""  # not a zombie


def refused(result: Result) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("notebook-kit: "), result.stderr
    return lines[0]


@pytest.fixture
def pids() -> Iterator[list[int]]:
    """Process IDs of servers a test started: killed at the end whatever happened."""
    started: list[int] = []
    yield started
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_detach_returns_once_it_answers_and_stop_ends_it(
    sample_workspace: Workspace, pids: list[int]
) -> None:
    home, port = sample_workspace.home, free_port()
    result = run_cli("serve", "--detach", "--port", str(port), home=home)
    assert result.returncode == 0, result.stderr
    found = re.fullmatch(
        rf"notebook-kit serving {re.escape(str(home))} at http://127\.0\.0\.1:{port} in the "
        rf"background \(pid (\d+), log {re.escape(str(home))}/serve-{port}\.log\); "
        r"'notebook-kit stop' ends it\n",
        result.stdout,
    )
    assert found, result.stdout
    pid = int(found.group(1))
    pids.append(pid)
    # The very next call is answered: no sleep, no retry.
    key = sample_workspace.keys()["dev"]
    url = f"http://127.0.0.1:{port}/dev/restapi_sample/employee/E001"
    answer = httpx.get(url, headers={"x-api-key": key}, timeout=5)
    assert answer.json() == {"id": "E001", "name": "Alice Martin", "age": 34}
    assert os.getsid(pid) == pid  # a session of its own: closing the terminal leaves it
    record = json.loads((home / f"serve-{port}.pid").read_text())
    assert record == {
        "pid": pid,
        "url": f"http://127.0.0.1:{port}",
        "log": str(home / f"serve-{port}.log"),
    }

    stopped = run_cli("stop", home=home)

    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout == f"stopped the server at http://127.0.0.1:{port} (pid {pid})\n"
    assert not alive(pid)
    assert not (home / f"serve-{port}.pid").exists()
    with socket.create_server(("127.0.0.1", port)):
        pass  # the port is free again
    assert "stopped serving" in (home / f"serve-{port}.log").read_text()


def test_stop_port_stops_only_that_server(sample_workspace: Workspace, pids: list[int]) -> None:
    home = sample_workspace.home
    ports = [free_port(), free_port()]
    for port in ports:
        started = run_cli("serve", "--detach", "--port", str(port), home=home, check=True)
        pids.append(int(re.findall(r"pid (\d+)", started.stdout)[0]))
    out = run_cli("stop", "--port", str(ports[0]), home=home, check=True).stdout
    assert out == f"stopped the server at http://127.0.0.1:{ports[0]} (pid {pids[0]})\n"
    assert not alive(pids[0]) and alive(pids[1])
    assert httpx.get(f"http://127.0.0.1:{ports[1]}/", timeout=5).status_code == 404
    assert run_cli("stop", home=home, check=True).stdout.count("stopped the server") == 1
    assert not alive(pids[1])


def test_detach_on_a_busy_port_is_one_line_and_records_nothing(
    sample_workspace: Workspace,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        line = refused(
            run_cli("serve", "--detach", "--port", str(port), home=sample_workspace.home)
        )
    assert line == f"notebook-kit: port {port} is already in use"
    assert not list(sample_workspace.home.glob("serve-*"))


def test_stop_with_nothing_detached_is_one_line(workspace: Workspace) -> None:
    line = refused(run_cli("stop", home=workspace.home))
    assert line == (
        f"notebook-kit: no server started by serve --detach is running for {workspace.home}"
    )
    line = refused(run_cli("stop", "--port", "8123", home=workspace.home))
    assert line.endswith(f"is running for {workspace.home} on port 8123")


def test_stop_drops_the_record_of_a_server_that_is_gone(workspace: Workspace) -> None:
    """A record whose process ended (killed, machine rebooted) is removed, and never
    names a process to signal: the PID may belong to someone else by now."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    record = workspace.home / "serve-8124.pid"
    record.write_text(json.dumps({"pid": gone.pid, "url": "http://127.0.0.1:8124", "log": "x"}))
    refused(run_cli("stop", home=workspace.home))
    assert not record.exists()
