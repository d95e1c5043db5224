"""SIGTERM to ``notebook-kit serve --workers 2`` (the production setup), sent to the whole
process group (what systemd does) or to the main process only: calls in flight are
answered and logged, a new connection is refused at once, the server exits 0 — as with
one worker. A real server over real HTTP, a slow action in flight."""

from __future__ import annotations

import os
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from support.serving import serve_child

from notebook_kit.workspace.workspace import Workspace

NAP = "import time\ntime.sleep(2.0)\nres.body = {'napped': True}\n"
IN_FLIGHT = 12


@pytest.fixture(scope="module")
def nap_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = Workspace(tmp_path_factory.mktemp("graceful") / "workspace")
    workspace.create_application("slow")
    workspace.create(
        "slow", "nap", label="nap", method="GET", resource="nap", action=NAP, requires_auth=False
    )
    workspace.deploy("slow", "dev")
    return workspace.home


def naps_logged(home: Path) -> int:
    return sum(r["path"] == "/dev/slow/nap" for r in Workspace(home).request_log())


def refused(port: int) -> bool:
    """Whether a new connection is refused (not accepted and left unanswered)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.settimeout(2)
            sock.sendall(b"GET /dev/slow/nap HTTP/1.1\r\nHost: x\r\n\r\n")
            return sock.recv(100) == b""  # accepted, then closed unanswered: no hang
    except (ConnectionRefusedError, ConnectionResetError):
        return True
    except TimeoutError:
        return False


@pytest.mark.parametrize("target", ["group", "main"])
def test_sigterm_with_two_workers_drains_and_refuses(nap_home: Path, target: str) -> None:
    before = naps_logged(nap_home)
    with serve_child(nap_home, workers=2) as server:
        clients = [httpx.Client(timeout=10) for _ in range(IN_FLIGHT)]  # made before: slow
        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            calls = [pool.submit(c.get, f"{server.url}/dev/slow/nap") for c in clients]
            time.sleep(1.0)  # all of them are in the action (a loaded machine is slow)
            if target == "group":
                os.killpg(server.process.pid, signal.SIGTERM)
            else:
                server.process.send_signal(signal.SIGTERM)
            time.sleep(0.1)
            began = time.monotonic()
            assert refused(server.port)
            assert time.monotonic() - began < 1.0
            answers = [call.result() for call in calls]
        for client in clients:
            client.close()
        assert [a.status_code for a in answers] == [200] * IN_FLIGHT
        assert server.process.wait(timeout=15) == 0
        assert "Traceback" not in server.log(), server.log()
    assert naps_logged(nap_home) == before + IN_FLIGHT
