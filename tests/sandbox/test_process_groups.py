"""An action process runs one application's code on one stage: a server's dev and prod
calls of the same application go to different processes (so dev code, which may be
unreviewed, cannot wait in a process for the values prod calls are given, such as the
application's prod secrets), and the supervisor refuses a process the code of another
stage."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx

from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "pair"


def test_dev_and_prod_calls_of_one_application_run_in_separate_processes(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path / "home")
    ws.create(APP, "pid", label="pid", method="GET", resource="pid",
              action="import os\nres.body = {'pid': os.getpid()}", requires_auth=False)  # fmt: skip
    ws.deploy(APP, "dev")
    ws.deploy(APP, "prod")
    server = ServerProcess(ws.home).start()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            pids = {
                stage: [client.get(f"/{stage}/{APP}/pid").json()["pid"] for _ in range(3)]
                for stage in ("dev", "prod")
            }
    finally:
        server.stop()
    # a few calls, far from being proven fast: every one ran in an action process
    assert len(set(pids["dev"])) == 1 and len(set(pids["prod"])) == 1  # each reused
    assert pids["dev"][0] != pids["prod"][0]


def test_the_supervisor_gives_a_process_the_code_of_its_own_stage_only(tmp_path: Path) -> None:
    from notebook_kit.runtime.process.supervisor import Supervisor

    ws = Workspace(tmp_path / "home")
    ws.create(APP, "x", label="x", method="GET", resource="x", action="res.body = 'x'")
    ws.deploy(APP, "dev")
    with socket.socket() as listener:
        supervisor = Supervisor(ws, listener)
        read = supervisor.feed.read()
        version = next(iter(read.referenced))
        asked = {"op": "code", "key": f"dev:{version}"}
        assert "definition" in supervisor.grants.code(asked, APP, "dev")
        refused = {"error": f"no code 'dev:{version}' for this process"}
        assert supervisor.grants.code(asked, APP, "prod") == refused
        assert supervisor.grants.code(asked, "other", "dev") == refused
