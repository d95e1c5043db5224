"""Processes an action forks or spawns neither outlive ``notebook-kit serve`` nor keep its
port (docs/trust-model.md): real server processes, real children, real sockets."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import Iterator

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl")

APP = "kids"
ACTIONS = {
    "spawn": """\
import subprocess
res.body = str(subprocess.Popen(["sleep", "300"]).pid)
""",
    "fork": """\
import os, time
pid = os.fork()
if pid == 0:
    time.sleep(300)
    os._exit(0)
res.body = str(pid)
""",
    # a daemon: its parent (the shell) exits at once, so it is orphaned
    "orphan": """\
import subprocess
res.body = subprocess.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"],
                          capture_output=True, text=True).stdout.strip()
""",
}


@pytest.fixture
def kids_home(sample_workspace: Workspace) -> Iterator[Workspace]:
    for name, action in ACTIONS.items():
        sample_workspace.create(APP, name, label=name, method="GET", resource=name,
                                action=action, requires_auth=False)  # fmt: skip
    sample_workspace.deploy(APP, "dev")
    yield sample_workspace


@pytest.fixture
def started() -> Iterator[list[int]]:
    """The pids the actions report; any still alive is killed at teardown."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def port_sockets_of(pid: int, port: int) -> list[str]:
    """The TCP sockets on local ``port`` (listening or accepted) that ``pid`` holds."""
    on_port = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    on_port.add(f"socket:[{fields[9]}]")
    held = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            held.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return [link for link in held if link in on_port]


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_children(server: ServerProcess, pids: list[int]) -> dict[str, int]:
    with httpx.Client(timeout=10) as client:
        found = {n: int(client.get(server.endpoint("dev", APP, n)).text) for n in ACTIONS}
    pids.extend(found.values())
    return found


def test_children_end_with_the_server_and_free_its_port(
    kids_home: Workspace, started: list[int]
) -> None:
    server = ServerProcess(kids_home.home).start()
    children = start_children(server, started)
    assert all(alive(pid) for pid in children.values())
    assert server.process is not None
    assert port_sockets_of(server.process.pid, server.port) != []
    assert port_sockets_of(children["fork"], server.port) == []  # it gave the port back
    server.stop()
    wait_until(lambda: not any(alive(pid) for pid in children.values()), within=3)
    assert port_is_free(server.port)
    with socket.socket() as caller, pytest.raises(ConnectionRefusedError):
        caller.connect(("127.0.0.1", server.port))


def test_forked_child_dies_with_a_killed_server(kids_home: Workspace, started: list[int]) -> None:
    server = ServerProcess(kids_home.home).start()
    children = start_children(server, started)
    assert server.process is not None
    server.process.kill()  # SIGKILL: no stop hook runs
    server.process.wait()
    wait_until(lambda: not alive(children["fork"]), within=2)
    assert port_is_free(server.port)
