"""HTTP by the book (issue 26), over raw sockets to one ``notebook-kit serve`` for the
module: HEAD, 405 with ``Allow`` for any method, chunked trailers, ``100 Continue`` only
for a body that is read, 414 and 431, a missing Host, NaN in a JSON answer, and a large
answer to a slow reader.

The server's log is a file (``serve_child``), so a test can read the runtime's warnings.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.polling import wait_until
from support.raw_http import exchange, parse, read_answer, read_until_closed
from support.serving import Served, serve_child

from notebook_kit.workspace.workspace import Workspace

APP = "web"

# resource -> action; a {tag} gives each test a path (and request-log entries) of its own
ACTIONS = {
    "about": 'res.headers["X-Made-By"] = "web"\nres.body = {"method": req.httpMethod}',
    "big/{tag}": 'res.body = "x" * int(req.queryStringParameters["n"])',
    "number/{tag}": 'res.body = {"ok": 1, "x": [0.5, float(req.queryStringParameters["v"])]}',
    "echo": "res.body = req.body",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = Workspace(tmp_path_factory.mktemp("http") / "workspace")
    workspace.install_sample()
    for resource, action in ACTIONS.items():
        name = resource.partition("/")[0]
        method = "POST" if name == "echo" else "GET"
        content_type = "text/plain" if name in ("big", "echo") else None
        workspace.create(
            APP, name, label=name, method=method, resource=resource, action=action,
            content_type=content_type, requires_auth=False,
        )  # fmt: skip
    workspace.deploy(APP, "dev")
    workspace.deploy(APP, "prod")
    workspace.set_setting("send_timeout", "1")  # a reader that stops is cut after 1 s
    workspace.set_setting("rate_limit_prod", "0.001")  # prod: one call per caller, then 429
    workspace.set_setting("rate_limit_burst", "1")
    return workspace.home


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[Served]:
    with serve_child(home) as served:
        yield served


@pytest.fixture(scope="module")
def keys(home: Path) -> dict[str, str]:
    return Workspace(home).keys()


def connect(server: Served) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def logged(home: Path, method: str, path: str) -> dict[str, Any]:
    """The request log's entry for ``method path`` (one test's own), once it arrives."""
    workspace = Workspace(home)
    found: list[dict[str, Any]] = []

    def arrived() -> bool:
        found[:] = [
            e for e in workspace.request_log() if (e["method"], e["path"]) == (method, path)
        ]
        return bool(found)

    wait_until(arrived, within=2)
    assert len(found) == 1, found
    return found[0]


# -- HEAD ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        f"/dev/{APP}/about",  # a header of its own; the action says which method it saw
        f"/dev/{APP}/big/head?n=300000",  # past PACED_BYTES: a GET sends it paced
        "/dev/restapi_sample/employee/E001",
    ],
)
def test_head_answers_the_get_status_and_headers_without_a_body(
    server: Served, home: Path, keys: dict[str, str], target: str
) -> None:
    request = f" {target} HTTP/1.1\r\nHost: x\r\nx-api-key: {keys['dev']}\r\n\r\n".encode()
    with connect(server) as sock, sock.makefile("rb") as answers:
        sock.sendall(b"GET" + request)
        get_head, get_body = read_answer(answers)
        sock.sendall(b"HEAD" + request + b"GET" + request)  # no body after the HEAD's head:
        head_head, _ = read_answer(answers, head_only=True)  # the GET's answer follows it
        assert read_answer(answers) == (get_head, get_body)
    assert head_head == get_head
    assert get_head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert f"content-length: {len(get_body)}\r\n".encode() in get_head.lower()
    if target.endswith("/about"):
        assert json.loads(get_body) == {"method": "GET"}  # the action ran as for a GET
        assert b"X-Made-By: web" in get_head
    entry = logged(home, "HEAD", target.partition("?")[0])
    assert (entry["status"], entry["app"]) == (200, target.split("/")[2])


def test_head_on_a_resource_without_get_answers_405_with_allow(server: Served) -> None:
    request = b"HEAD /dev/restapi_sample/calculator HTTP/1.1\r\nHost: x\r\n\r\n"
    status, headers, body = parse(exchange(server.port, request)[0])
    assert (status, headers["allow"], body) == (405, "OPTIONS, POST", None)  # HEAD: no body


# -- 405 with Allow for any method -----------------------------------------------------------


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "PROPFIND", "BREW", "get", "DELETE"])
@pytest.mark.parametrize(
    ("path", "allow"),
    [
        ("/dev/restapi_sample/employee/E001", "GET, HEAD, OPTIONS"),
        ("/prod/restapi_sample/calculator", "OPTIONS, POST"),
        (f"/dev/{APP}/echo", "POST"),
    ],
)
def test_any_method_a_path_does_not_serve_answers_405_with_allow(
    server: Served, method: str, path: str, allow: str
) -> None:
    answer, _ = exchange(server.port, f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    status, headers, body = parse(answer)
    assert (status, headers["allow"]) == (405, allow)
    assert body == {"message": "Method Not Allowed"}
    assert headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("request_line", "status"),
    [
        ("TRACE /dev/restapi_sample/nosuch HTTP/1.1", 404),
        ("BREW /nowhere HTTP/1.1", 404),
        ("TRACE /_openapi/dev/restapi_sample.json HTTP/1.1", 405),
        ("CONNECT example.com:443 HTTP/1.1", 400),  # the authority form is not a path
    ],
)
def test_any_method_elsewhere_answers_as_the_path_does(
    server: Served, request_line: str, status: int
) -> None:
    answer, _ = exchange(server.port, f"{request_line}\r\nHost: x\r\n\r\n".encode())
    assert parse(answer)[0] == status


# -- chunked bodies with a trailer section ----------------------------------------------------

CHUNKED = f"POST /dev/{APP}/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_a_chunked_body_with_trailer_fields_is_the_chunks_joined(server: Served) -> None:
    chunks = b"5\r\nhello\r\n7;ext=1\r\n, trail\r\n2\r\ner\r\n0\r\n"
    trailer = b"X-Checksum: abc\r\nX-Other: 2\r\n\r\n"
    next_call = f"GET /dev/{APP}/about HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with connect(server) as sock:  # the trailer is consumed: the next call follows it
        sock.sendall(CHUNKED.encode() + chunks + trailer + next_call.encode())
        answers = read_until_closed(sock)
    first, second = answers.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200 ") and first.endswith(b"\r\n\r\nhello, trailer")
    assert second.startswith(b"200 ") and second.endswith(b'{"method": "GET"}')


@pytest.mark.parametrize(
    "trailer",
    [b"X-A: 1\nX-B: 2\r\n\r\n", b": no name\r\n\r\n", b"X-A\x00: 1\r\n\r\n", b"no colon\r\n\r\n"],
    ids=["bare-lf", "no-name", "nul", "no-colon"],
)
def test_a_malformed_trailer_section_answers_400_and_closes(server: Served, trailer: bytes) -> None:
    with connect(server) as sock:
        sock.sendall(CHUNKED.encode() + b"2\r\nhi\r\n0\r\n" + trailer)
        answer = read_until_closed(sock)
    status, headers, body = parse(answer)
    assert (status, headers["connection"]) == (400, "close")
    assert body == {"message": "Bad Request: malformed trailer section in the chunked body"}


# -- 100 Continue only for a body that is read ------------------------------------------------


def expecting(method: str, path: str, length: int, extra: str = "") -> bytes:
    """A head that announces ``length`` body bytes and waits for ``100 Continue``."""
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\nExpect: 100-continue\r\n{extra}\r\n"
    ).encode()


@pytest.mark.parametrize(
    ("method", "path", "length", "status"),
    [
        ("POST", "/dev/restapi_sample/calculator", 10, 403),  # no key
        ("POST", "/dev/restapi_sample/nosuch", 10, 404),
        ("PUT", "/dev/restapi_sample/calculator", 10, 405),
        ("TRACE", "/dev/restapi_sample/calculator", 10, 405),
        ("POST", "/dev/restapi_sample/calculator", 10**8, 413),  # over max_body_bytes
        ("POST", "/prod/restapi_sample/calculator", 10, 429),
    ],
)
def test_an_answer_the_head_decides_comes_without_100_continue(
    server: Served, method: str, path: str, length: int, status: int
) -> None:
    if status == 429:  # spend this caller's one prod call (its answer: whatever it is)
        exchange(
            server.port, b"OPTIONS /prod/restapi_sample/calculator HTTP/1.1\r\nHost: x\r\n\r\n"
        )
    with connect(server) as sock:
        sock.sendall(expecting(method, path, length))  # and no body: the caller waits
        answer = read_until_closed(sock)  # the answer, then the server closes
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer
    assert b"100 Continue" not in answer
    assert parse(answer)[1]["connection"] == "close"


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_call_that_runs_gets_100_continue_then_its_answer(
    server: Served, keys: dict[str, str], chunked: bool
) -> None:
    body = b'{"arg1": 3, "arg2": 4, "operation": "plus"}'
    head = expecting(
        "POST", "/dev/restapi_sample/calculator", len(body), f"x-api-key: {keys['dev']}\r\n"
    )
    if chunked:
        head = head.replace(b"Content-Length: %d" % len(body), b"Transfer-Encoding: chunked")
        body = b"%x\r\n%s\r\n0\r\nX-T: 1\r\n\r\n" % (len(body), body)
    with connect(server) as sock, sock.makefile("rb") as answers:
        sock.sendall(head)
        assert read_answer(answers) == (b"HTTP/1.1 100 Continue", b"")  # and nothing more:
        sock.sendall(body)  # the caller sends its body now
        answer_head, answer_body = read_answer(answers)
        assert answer_head.startswith(b"HTTP/1.1 200 ")
        assert json.loads(answer_body) == 7
        assert b"connection: keep-alive" in answer_head.lower()  # and it stays open
        sock.sendall(f"GET /dev/{APP}/about HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert read_answer(answers)[0].startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(("with_key", "status"), [(False, 403), (True, 200)])
def test_a_caller_that_sends_its_body_at_once_is_read_as_usual(
    server: Served, keys: dict[str, str], with_key: bool, status: int
) -> None:
    """``Expect: 100-continue`` with the body right behind the head: nothing to wait for,
    so no 100, and the connection stays open (closing it on unread bytes would reset it)."""
    body = b'{"arg1": 3, "arg2": 4, "operation": "plus"}'
    key = f"x-api-key: {keys['dev']}\r\n" if with_key else ""
    head = expecting("POST", "/dev/restapi_sample/calculator", len(body), key)
    with connect(server) as sock, sock.makefile("rb") as answers:
        sock.sendall(head + body)
        answer_head, _ = read_answer(answers)
        assert answer_head.startswith(f"HTTP/1.1 {status} ".encode()), answer_head
        assert b"connection: keep-alive" in answer_head.lower()


# -- 414 and 431 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_bytes", "status", "message"),
    [
        (
            b"GET /dev/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
            414,
            "URI Too Long: the request target is longer than a request head's limit (8192 bytes)",
        ),
        (
            b"GET /dev/restapi_sample/employee/E001 HTTP/1.1\r\nHost: x\r\n"
            + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 100) for i in range(90))
            + b"\r\n",
            431,
            "Request Header Fields Too Large: the request head is longer than its limit "
            "(8192 bytes)",
        ),
    ],
    ids=["long-target", "long-head"],
)
def test_an_oversized_head_answers_414_or_431_saying_which(
    server: Served, request_bytes: bytes, status: int, message: str
) -> None:
    with connect(server) as sock:
        sock.sendall(request_bytes)
        answer = read_until_closed(sock)
    status_found, headers, body = parse(answer)
    assert (status_found, body) == (status, {"message": message})
    assert headers["access-control-allow-origin"] == "*"


# -- Host ------------------------------------------------------------------------------------


def test_an_http_1_1_request_without_host_answers_400(server: Served) -> None:
    answer, _ = exchange(server.port, f"GET /dev/{APP}/about HTTP/1.1\r\n\r\n".encode())
    status, _, body = parse(answer)
    assert (status, body) == (
        400, {"message": "Bad Request: an HTTP/1.1 request must send a Host header"}
    )  # fmt: skip


def test_an_http_1_0_request_without_host_is_served_with_valid_urls(server: Served) -> None:
    with connect(server) as sock:
        sock.sendall(f"GET /dev/{APP}/about HTTP/1.0\r\n\r\n".encode())
        assert read_until_closed(sock).startswith(b"HTTP/1.1 200 ")
    with connect(server) as sock:
        sock.sendall(b"GET /_openapi/dev/restapi_sample.json HTTP/1.0\r\n\r\n")
        document = json.loads(read_until_closed(sock).partition(b"\r\n\r\n")[2])
    assert document["servers"][0]["url"] == f"{server.url}/dev/restapi_sample"


# -- NaN and Infinity ------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "named"), [("nan", "NaN"), ("-inf", "-Infinity")])
def test_nan_or_infinity_in_a_json_answer_is_a_500_naming_the_field_on_dev(
    server: Served, home: Path, value: str, named: str
) -> None:
    path = f"/dev/{APP}/number/{value}"
    answer, _ = exchange(server.port, f"GET {path}?v={value} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    why = (
        f"ValueError: res.body at /x/1 is {named}, which is not JSON (JSON has no NaN or Infinity)"
    )
    status, _, body = parse(answer)
    assert (status, body) == (500, {"message": "Internal server error", "error": why})
    assert logged(home, "GET", path)["error"] == why


def test_nan_in_a_json_answer_is_a_plain_500_on_prod(
    server: Served, home: Path, keys: dict[str, str]
) -> None:
    path = f"/prod/{APP}/number/nan"
    request = f"GET {path}?v=nan HTTP/1.1\r\nHost: x\r\nx-api-key: {keys['prod']}\r\n\r\n"
    status, _, body = parse(exchange(server.port, request.encode())[0])
    assert (status, body) == (500, {"message": "Internal server error"})
    assert "res.body at /x/1 is NaN" in logged(home, "GET", path)["error"]


# -- a large answer to a slow reader ---------------------------------------------------------


def test_a_large_answer_reaches_a_slow_reader_whole(server: Served, home: Path) -> None:
    """32 MB read at about 5 MB/s, the server cutting a reader that takes nothing for
    1 s. Before, the server wrote it all at once and closed the connection 5 s later,
    whatever was left: the reader got about 29 MB (what it had read and what the
    kernel's buffers held)."""
    size, rate = 32_000_000, 5_000_000
    path = f"/dev/{APP}/big/slow"
    with connect(server) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        sock.sendall(
            f"GET {path}?n={size} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        )
        received = bytearray()
        while chunk := sock.recv(1 << 18):
            received += chunk
            time.sleep(len(chunk) / rate)
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and f"content-length: {size}".encode() in head
    assert len(body) == size and body.count(b"x") == size
    assert logged(home, "GET", path)["error"] is None


def test_a_reader_that_stops_reading_is_cut_and_the_cut_logged(server: Served, home: Path) -> None:
    size, path = 8_000_000, f"/dev/{APP}/big/stalled"
    with connect(server) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        sock.sendall(f"GET {path}?n={size} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        began = time.monotonic()
        wait_until(lambda: f"answer to GET {path} cut" in server.log(), within=1 + 2)
        took = time.monotonic() - began
    error = logged(home, "GET", path)["error"]
    assert error.startswith("SendTimeout: the caller read nothing of the answer for 1 s; ")
    assert error.endswith(f" of its {size} bytes unsent")
    assert f"answer to GET {path} cut: {error}" in server.log()
    assert took > 1  # not before the reader has been silent for send_timeout
