"""Slow and idle clients against a real server over raw sockets: a head trickled one byte
at a time is cut, idle keep-alive connections close, and slow connections past the
descriptor limit do not stop real callers from being answered."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.serving import serve_child

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

HEAD = b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 100


@pytest.fixture
def server(sample_workspace: Workspace) -> Iterator[BackgroundServer]:
    sample_workspace.set_setting("request_timeout", "1")
    sample_workspace.set_setting("keep_alive_timeout", "1")
    with BackgroundServer(sample_workspace) as running:
        yield running


def test_head_trickled_one_byte_at_a_time_is_cut(server: BackgroundServer) -> None:
    """Every byte comes well within the 1 s timeout, the whole head never does."""
    with socket.create_connection((server.host, server.port)) as sock:
        sock.settimeout(0.01)
        began = time.monotonic()
        answer = b""
        for byte in HEAD:  # 0.1 s a byte: 11 s for the whole head
            try:
                sock.sendall(bytes([byte]))
                answer = sock.recv(4096)
                break  # an answer, or the server closed
            except TimeoutError:
                time.sleep(0.09)
            except (BrokenPipeError, ConnectionResetError):
                break
        took = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'{"message": "Request Timeout"}' in answer
    assert b"Access-Control-Allow-Origin: *" in answer
    assert took < 1 + 2 * 0.5 + 0.5  # the timeout, two checks (every half of it), slack


def test_body_trickled_one_byte_at_a_time_is_cut(server: BackgroundServer) -> None:
    head = b"POST /dev/restapi_sample/calculator HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n"
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(head)
        sock.settimeout(0.01)
        began = time.monotonic()
        answer = b""
        for _ in range(200):  # 0.1 s a byte: 20 s for the whole body
            try:
                sock.sendall(b"1")
                answer = sock.recv(4096)
                break
            except TimeoutError:
                time.sleep(0.09)
            except (BrokenPipeError, ConnectionResetError):
                break
        took = time.monotonic() - began
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'{"message": "Request Timeout"}' in answer
    assert took < 1 + 2 * 0.5 + 0.5


def test_idle_keep_alive_connection_is_closed(server: BackgroundServer) -> None:
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(b"OPTIONS /dev/restapi_sample/calculator HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
        began = time.monotonic()
        assert sock.recv(4096) == b""  # closed by the server
        assert time.monotonic() - began < 1 + 0.5 + 0.5


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = Workspace(tmp_path_factory.mktemp("slow") / "workspace")
    workspace.install_sample()
    return workspace.home


def test_real_calls_answered_past_the_descriptor_limit(sample_home: Path) -> None:
    """300 slow connections against a worker limited to 256 descriptors: calls from real
    callers are still answered (the slowest connections make room)."""
    key = Workspace(sample_home).keys()["dev"]
    slow: list[socket.socket] = []
    with serve_child(sample_home, nofile=(256, 256)) as server:
        try:
            for _ in range(300):
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                sock.sendall(b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\n")
                slow.append(sock)
            time.sleep(0.5)  # the server has accepted what it could
            statuses = []
            for _ in range(30):
                try:
                    answer = httpx.get(
                        f"{server.url}/dev/restapi_sample/employee/E001",
                        headers={"x-api-key": key},
                        timeout=5,
                    )
                    statuses.append(answer.status_code)
                except httpx.TransportError as exc:
                    statuses.append(type(exc).__name__)
            assert statuses == [200] * 30, statuses
        finally:
            for sock in slow:
                sock.close()
        assert server.process.poll() is None


def test_soft_descriptor_limit_is_raised_to_the_hard_one(sample_home: Path) -> None:
    with serve_child(sample_home, nofile=(256, 4096)) as server:
        limits = Path(f"/proc/{server.process.pid}/limits").read_text()
    found = re.search(r"Max open files\s+(\d+)\s+(\d+)", limits)
    assert found, limits
    assert found.groups() == ("4096", "4096")
