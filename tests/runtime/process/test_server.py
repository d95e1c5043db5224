"""The background server (``BackgroundServer``): stop and start again on the same
port while a client keeps its connection pool, and a port in use refused."""

from __future__ import annotations

import socket

import httpx
import pytest

from notebook_kit.errors import ServerError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_background_server_restarts_on_same_port_with_kept_alive_client(
    sample_workspace: Workspace, keys: dict[str, str]
) -> None:
    server = BackgroundServer(sample_workspace).start()
    port = server.port
    path = "/dev/restapi_sample/employee/E002"
    headers = {"x-api-key": keys["dev"]}
    try:
        with httpx.Client(base_url=server.url, timeout=5) as client:
            assert client.get(path, headers=headers).status_code == 200
            server.stop()
            assert not server.running
            assert not _listening(port)
            server.start()
            assert server.port == port
            response = client.get(path, headers=headers)
            assert response.status_code == 200
            assert response.json()["id"] == "E002"
    finally:
        server.stop()
    assert not _listening(port)
    server.stop()  # twice is harmless


def test_background_server_refuses_port_in_use(sample_workspace: Workspace) -> None:
    with BackgroundServer(sample_workspace) as first:
        second = BackgroundServer(sample_workspace, port=first.port)
        with pytest.raises(OSError):
            second.start()
        assert httpx.get(first.url + "/dev/restapi_sample/calculator").status_code == 405


def test_background_server_starts_and_stops_without_a_warning(
    sample_workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    """In a notebook, any warning a server logs lands in the cell as stderr: an in-kernel
    server (Sanic's create_server, no main process) must register nothing Sanic warns about,
    such as main-process listeners."""
    caplog.set_level("WARNING")
    with BackgroundServer(sample_workspace) as server:
        answer = httpx.get(f"{server.url}/dev/restapi_sample/employee/E001", timeout=10)
        assert answer.status_code in (200, 403)
    assert [r.getMessage() for r in caplog.records if r.levelno >= 30] == []


def test_a_start_that_times_out_says_what_it_waited_for(sample_workspace: Workspace) -> None:
    """A start past its time names the step it was still on (reading the store, the
    zygote, the workers), and leaves nothing running: the port is free again."""
    server = BackgroundServer(sample_workspace)
    with pytest.raises(ServerError, match=r"did not start within 0\.01 s \(still (.+)\)") as info:
        server.start(timeout=0.01)
    assert not server.running
    phases = ("reading what is live", "starting the process that forks", "the HTTP workers")
    assert any(phase in str(info.value) for phase in phases), info.value
    assert not _listening(server.port)
