"""What the in-kernel server puts on the wire (issue 9): no empty ``alt-svc:`` header.
Raw HTTP/1.1 over a real socket to a ``BackgroundServer``, so no client hides a header."""

from __future__ import annotations

import socket

import pytest

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


def raw_headers(port: int, request_line: str, headers: str = "") -> list[str]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"{request_line}\r\nHost: x\r\n{headers}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode()
    return head.split("\r\n")


@pytest.mark.parametrize(
    ("what", "request_line", "untyped"),
    [
        ("runtime answer", "GET /nowhere HTTP/1.1", False),
        ("action answer", "GET /dev/demo/typed HTTP/1.1", False),
        ("untyped action answer", "GET /dev/demo/untyped HTTP/1.1", True),
        ("openapi", "GET /dev/demo/openapi.json HTTP/1.1", False),
    ],
)
def test_no_empty_alt_svc_header(
    workspace: Workspace, what: str, request_line: str, untyped: bool
) -> None:
    for api_id, content_type in (("typed", "text/plain"), ("untyped", None)):
        workspace.create(
            "demo",
            api_id,
            label=api_id,
            method="GET",
            resource=api_id,
            action="res.body = 'hi'\n",
            content_type=content_type,
            requires_auth=False,
        )
    workspace.deploy("demo", "dev")
    with BackgroundServer(workspace) as server:
        lines = raw_headers(server.port, request_line)
    assert lines[0].startswith("HTTP/1.1 "), lines
    names = [line.partition(":")[0].lower() for line in lines[1:]]
    assert "alt-svc" not in names, (what, lines)
    assert ("content-type" in names) is not untyped, lines
