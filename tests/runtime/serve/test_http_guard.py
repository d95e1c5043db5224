"""Malformed HTTP (issue 11) over raw sockets to a real server: every answer is a JSON
4xx from the runtime, none a 500, a silence or a hang."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.raw_http import exchange, parse

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture
def server(sample_workspace: Workspace) -> Iterator[BackgroundServer]:
    sample_workspace.set_setting("request_timeout", "1")
    with BackgroundServer(sample_workspace) as running:
        yield running


def test_options_asterisk_answers_200_with_allow(server: BackgroundServer) -> None:
    status, headers, body = parse(
        exchange(server.port, b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")[0]
    )
    assert status == 200
    assert headers["allow"] == "GET, HEAD, POST, PUT, DELETE, OPTIONS"
    assert headers["access-control-allow-origin"] == "*"
    assert body == {"message": "OK"}
    status, _, _ = parse(exchange(server.port, b"GET * HTTP/1.1\r\nHost: x\r\n\r\n")[0])
    assert status == 400


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /dev/\x00x HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n",
        b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
        b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
        b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\nX-A: a\nb\r\n\r\n",
        b"GET http://127.0.0.1 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET http://127.0.0.1/dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET foo HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET ?a=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=[
        "nul-in-target",
        "empty-header-name",
        "nul-in-value",
        "bare-cr",
        "bare-lf",
        "absolute-form",
        "absolute-form-with-path",
        "not-a-path",
        "query-only",
    ],
)
def test_malformed_head_answers_400_json(server: BackgroundServer, request_bytes: bytes) -> None:
    answer, _ = exchange(server.port, request_bytes)
    status, headers, body = parse(answer)
    assert status == 400
    assert headers["access-control-allow-origin"] == "*"
    assert isinstance(body, dict) and body["message"].startswith("Bad Request")


def test_body_shorter_than_content_length_answers_408_within_the_timeout(
    server: BackgroundServer,
) -> None:
    short = (
        b"POST /dev/restapi_sample/calculator HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"
    )
    answer, took = exchange(server.port, short)
    status, headers, body = parse(answer)
    assert status == 408
    assert body == {"message": "Request Timeout"}
    assert headers["access-control-allow-origin"] == "*"
    assert took < 1.5 * 1 + 0.5  # request_timeout 1 s; Sanic checks every half of it


def test_well_formed_requests_still_pass(server: BackgroundServer) -> None:
    answer, _ = exchange(
        server.port, b"OPTIONS /dev/restapi_sample/calculator HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert parse(answer)[0] == 200
