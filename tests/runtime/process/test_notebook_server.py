"""``Workspace.serve``: the in-kernel background server a notebook cell starts (and re-runs)."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
from support.processes import free_port

from notebook_kit import Workspace
from notebook_kit.notebook.serving import background_servers


def server_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("notebook-kit-server")]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_serve_twice_on_same_port_replaces_server(sample_workspace: Workspace) -> None:
    port = free_port()
    first = sample_workspace.serve(port=port)
    second = sample_workspace.serve(port=port)  # the same cell run again
    try:
        assert not first.running and second.running
        assert second.url == f"http://127.0.0.1:{port}"
        assert server_threads() == [f"notebook-kit-server-{port}"]
        answer = httpx.get(f"{second.url}/dev/restapi_sample/employee/1", timeout=10)
        assert answer.status_code == 403  # the runtime answers: the key is missing
    finally:
        second.stop()
    assert server_threads() == []
    assert port_is_free(port)


def test_serve_on_free_port_again_stops_previous_server(sample_workspace: Workspace) -> None:
    first = sample_workspace.serve()
    second = sample_workspace.serve()
    try:
        assert not first.running and second.running
        assert background_servers(sample_workspace) == [second]
        assert server_threads() == [f"notebook-kit-server-{second.port}"]
    finally:
        second.stop()
    assert background_servers(sample_workspace) == []


def test_serve_takes_port_over_from_another_workspace(
    sample_workspace: Workspace, tmp_path
) -> None:
    port = free_port()
    other = Workspace(tmp_path / "other").serve(port=port)
    mine = sample_workspace.serve(port=port)
    try:
        assert not other.running and mine.running
        assert len(server_threads()) == 1
    finally:
        mine.stop()


def test_serve_on_port_held_by_another_process_fails_clearly(
    sample_workspace: Workspace,
) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot serve on 127.0.0.1:{port}"):
            sample_workspace.serve(port=port)
    assert server_threads() == []


def test_serve_many_restarts_leak_no_threads(sample_workspace: Workspace) -> None:
    port = free_port()
    before = threading.active_count()
    for _ in range(5):
        server = sample_workspace.serve(port=port)
    server.stop()
    assert threading.active_count() == before
    assert port_is_free(port)


def test_request_log_frame_lists_served_requests(sample_workspace: Workspace) -> None:
    server = sample_workspace.serve()
    key = sample_workspace.keys()["dev"]
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            client.get("/dev/restapi_sample/employee/E001", headers={"x-api-key": key})
            client.get("/prod/restapi_sample/employee/E001")
    finally:
        server.stop()  # flushes what is still buffered
    frame = sample_workspace.request_log_frame()
    assert list(frame.columns) == [
        "at",
        "stage",
        "app",
        "method",
        "path",
        "status",
        "duration_ms",
        "deployment",
        "consumer",
        "id",
        "error",
    ]
    assert frame["app"].tolist() == ["restapi_sample", "restapi_sample"]
    assert frame["consumer"].fillna("").tolist() == ["stage:dev", ""]  # the dev key; no key
    assert frame[["stage", "path", "status"]].values.tolist() == [
        ["dev", "/dev/restapi_sample/employee/E001", 200],
        ["prod", "/prod/restapi_sample/employee/E001", 403],
    ]
    live = {d.stage: d.id for d in sample_workspace.deployments("restapi_sample") if d.active}
    assert frame["deployment"].tolist() == [live["dev"], live["prod"]]  # who answered
    assert frame["id"].diff().dropna().tolist() == [1]  # entry numbers, consecutive
    assert str(frame["at"].dtype).startswith("datetime64")
    assert sample_workspace.request_log_frame(limit=1)["stage"].tolist() == ["prod"]


def test_request_log_keeps_last_configured_rows(sample_workspace: Workspace) -> None:
    sample_workspace.set_setting("request_log_size", "3")
    server = sample_workspace.serve()
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for number in range(5):
                client.get(f"/dev/nowhere/{number}")
                time.sleep(0.01)
    finally:
        server.stop()
    paths = sample_workspace.request_log_frame()["path"].tolist()
    assert paths == ["/dev/nowhere/2", "/dev/nowhere/3", "/dev/nowhere/4"]


@pytest.mark.parametrize("face", ["serve", "serve_process"])
def test_a_call_after_a_quiet_spell_reaches_the_log_within_a_second(
    sample_workspace: Workspace, face: str
) -> None:
    """The Logs tab reads the store while the server runs: a call made after the server
    sat idle (its supervisor no longer looking every turn) is there within a second,
    with no stop or flush asked for."""
    server = getattr(sample_workspace, face)(port=0)
    key = sample_workspace.keys()["dev"]
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            client.get("/dev/restapi_sample/employee/E001", headers={"x-api-key": key})
            time.sleep(3)  # a quiet spell
            before = len(sample_workspace.request_log_frame())
            client.get("/dev/restapi_sample/employee/E002", headers={"x-api-key": key})
            called = time.monotonic()
            while len(sample_workspace.request_log_frame()) == before:
                assert time.monotonic() - called < 1.0, "the call is not in the log after 1 s"
                time.sleep(0.02)
        paths = sample_workspace.request_log_frame()["path"].tolist()
        assert paths[-1] == "/dev/restapi_sample/employee/E002"
    finally:
        server.stop()
