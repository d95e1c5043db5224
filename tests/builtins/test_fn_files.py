"""fn.getFile / getFileNames / putFile / deleteFile / getPresignedUrl, end to end: a deployed
action called over HTTP on a real server, and presigned links fetched from that server."""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from support.raw_http import read_until_closed

from notebook_kit.builtins import presign
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

# One action that calls fn.<name>(*args) from a JSON body; bytes travel as {"base64": ...}.
CALL = """
import base64, json

def decode(value):
    if isinstance(value, dict) and set(value) == {"base64"}:
        return base64.b64decode(value["base64"])
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    return value

def encode(value):
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value

call = json.loads(req.body)
target = fn
for part in call["fn"].split("."):
    target = getattr(target, part)
res.body = {"result": encode(target(*[decode(a) for a in call["args"]]))}
"""


class Api:
    """Calls built-ins through the deployed action."""

    def __init__(self, workspace: Workspace, server: BackgroundServer) -> None:
        self.workspace = workspace
        self.server = server
        self.http = httpx.Client(timeout=10)
        self.url = f"{server.url}/dev/t/call"
        self.headers = {"x-api-key": workspace.keys()["dev"]}

    def set_setting(self, name: str, value: str | None) -> None:
        """Change a setting and wait until the server has reloaded: built-ins read the
        settings snapshot the server took at its last reload, not the store."""
        self.workspace.set_setting(name, value)
        self.server.sync(5)

    def raw(self, name: str, *args: Any) -> httpx.Response:
        return self.http.post(self.url, json={"fn": name, "args": list(args)}, headers=self.headers)

    def __call__(self, name: str, *args: Any) -> Any:
        response = self.raw(name, *args)
        assert response.status_code == 200, response.text
        return response.json()["result"]

    def error(self, name: str, *args: Any) -> str:
        """The BuiltinError the action raised (the dev stage shows it with the 500)."""
        response = self.raw(name, *args)
        assert response.status_code == 500, response.text
        error = response.json()["error"]
        assert error.startswith("BuiltinError: "), error
        return error


@contextmanager
def deployed_api(workspace: Workspace) -> Iterator[Api]:
    """Deploy the fn-calling action as t/call on dev and serve it."""
    workspace.create("t", "call", label="call", method="POST", resource="call", action=CALL)
    workspace.deploy("t", "dev")
    with BackgroundServer(workspace) as server:
        client = Api(workspace, server)
        yield client
        client.http.close()


@pytest.fixture
def api(workspace: Workspace) -> Iterator[Api]:
    with deployed_api(workspace) as client:
        yield client


def b64(data: bytes) -> dict[str, str]:
    return {"base64": base64.b64encode(data).decode()}


def files_root(workspace: Workspace) -> Path:
    return workspace.home / "files"


# -- files -----------------------------------------------------------------------------


def test_put_then_get_text_file(api: Api) -> None:
    put = api("putFile", "notes/hello.txt", {"content": "héllo"})
    assert put["path"] == "notes/hello.txt"
    assert put["size"] == len("héllo".encode())
    got = api("getFile", "notes/hello.txt")
    assert got["content"] == "héllo"
    assert got["contentType"].startswith("text/plain")
    assert got["size"] == put["size"]
    assert got["modified"] == put["modified"]
    assert (files_root(api.workspace) / "notes/hello.txt").read_bytes() == "héllo".encode()


def test_put_then_get_binary_file_keeps_content_type(api: Api) -> None:
    data = bytes(range(256))
    api("putFile", "img/pixel", {"content": b64(data), "contentType": "image/png"})
    got = api("getFile", "img/pixel")
    assert got["contentType"] == "image/png"
    assert base64.b64decode(got["content"]["base64"]) == data


def test_put_without_overwrite_refuses_existing_file(api: Api) -> None:
    api("putFile", "a.txt", {"content": "first"})
    error = api.error("putFile", "a.txt", {"content": "second", "overwrite": False})
    assert "already exists" in error
    assert api("getFile", "a.txt")["content"] == "first"
    api("putFile", "a.txt", {"content": "second"})  # overwrite defaults to True
    assert api("getFile", "a.txt")["content"] == "second"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../escape.txt", "'..'"),
        ("/etc/escape.txt", "absolute"),
        ("a\\escape.txt", "backslash"),
        ("a\x00b", "NUL"),
        ("", "empty"),
    ],
)
def test_put_refuses_unsafe_paths(api: Api, path: str, message: str) -> None:
    error = api.error("putFile", path, {"content": "x"})
    assert message in error
    assert not (api.workspace.home / "escape.txt").exists()
    assert api("getFileNames", "") == []


def test_get_refuses_symlink_out_of_root(api: Api, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("secret")
    root = files_root(api.workspace)
    root.mkdir(exist_ok=True)
    (root / "link.txt").symlink_to(secret)
    assert "outside the storage root" in api.error("getFile", "link.txt")


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({}, "content is required"),
        ({"content": 5}, "content is required"),
        ({"content": "x", "overwrite": "no"}, "overwrite is true or false"),
        ({"content": "x", "contentType": "bad\r\nX: y"}, "not a media type"),
        ({"content": "x", "mode": "w"}, "unknown option 'mode'"),
        ("just text", "options are a dict"),
    ],
)
def test_put_refuses_bad_parameters(api: Api, parameters: Any, message: str) -> None:
    assert message in api.error("putFile", "x.txt", parameters)
    assert api("getFileNames", "") == []


def test_put_refuses_content_over_max_file_bytes(api: Api) -> None:
    api.set_setting("max_file_bytes", "10")
    assert "limit (max_file_bytes) is 10" in api.error("putFile", "big.txt", {"content": "x" * 11})
    assert api("getFileNames", "") == []


def test_get_file_names_lists_sorted_with_folders(api: Api) -> None:
    for name in ("b.txt", "a.txt", "sub/c.txt", "sub/deeper/d.txt"):
        api("putFile", name, {"content": name})
    assert api("getFileNames", "") == ["a.txt", "b.txt", "sub/"]
    assert api("getFileNames", "sub") == ["c.txt", "deeper/"]
    assert "no folder 'nope'" in api.error("getFileNames", "nope")


def test_delete_file_then_get_fails(api: Api) -> None:
    api("putFile", "sub/gone.txt", {"content": "x"})
    assert api("deleteFile", "sub/gone.txt") is None
    assert "no file 'sub/gone.txt'" in api.error("getFile", "sub/gone.txt")
    assert api("getFileNames", "") == []
    assert "no file" in api.error("deleteFile", "sub/gone.txt")


def test_files_root_setting_moves_the_storage(api: Api, tmp_path: Path) -> None:
    api.set_setting("files_root", str(tmp_path / "elsewhere"))
    api("putFile", "x.txt", {"content": "x"})
    assert (tmp_path / "elsewhere" / "x.txt").read_text() == "x"


# -- presigned links --------------------------------------------------------------------


def test_presigned_get_downloads_the_file_from_the_request_host(api: Api) -> None:
    api("putFile", "docs/report.json", {"content": '{"a": 1}'})
    url = api("getPresignedUrl", "docs/report.json")
    assert url.startswith(f"{api.server.url}/_files/docs/report.json?expires=")
    response = httpx.get(url)
    assert response.status_code == 200
    assert response.json() == {"a": 1}
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    head = httpx.head(url)  # HEAD: the GET's answer, without its body
    assert (head.status_code, head.content) == (200, b"")
    assert dict(head.headers) == dict(response.headers)


def _tamper(url: str, part: str) -> str:
    split = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(split.query).items()}
    if part == "path":
        return url.replace("/_files/a.txt", "/_files/b.txt")
    if part == "expires":
        query["expires"] = str(int(query["expires"]) + 1)
    if part == "signature":
        last = query["signature"][-1]
        query["signature"] = query["signature"][:-1] + ("0" if last != "0" else "1")
    if part == "missing":
        del query["signature"]
    return f"{split.scheme}://{split.netloc}{split.path}?" + "&".join(
        f"{k}={v}" for k, v in query.items()
    )


@pytest.mark.parametrize("part", ["path", "expires", "signature", "missing"])
def test_tampered_links_get_403_and_touch_nothing(api: Api, part: str) -> None:
    for name in ("a.txt", "b.txt"):
        api("putFile", name, {"content": name})
    for method in ("GET", "PUT"):
        url = _tamper(api("getPresignedUrl", "a.txt", {"method": method}), part)
        response = httpx.request(method, url, content=b"overwritten")
        assert response.status_code == 403, response.text
        assert response.headers["content-type"] == "application/json"
        assert response.json()["message"].startswith("Forbidden")
    assert api("getFile", "a.txt")["content"] == "a.txt"
    assert api("getFile", "b.txt")["content"] == "b.txt"


@pytest.mark.parametrize(("link", "used"), [("GET", "PUT"), ("PUT", "GET")])
def test_link_used_with_the_wrong_method_gets_403(api: Api, link: str, used: str) -> None:
    api("putFile", "a.txt", {"content": "keep"})
    url = api("getPresignedUrl", "a.txt", {"method": link})
    response = httpx.request(used, url, content=b"changed")
    assert response.status_code == 403
    assert "keep" not in response.text
    assert api("getFile", "a.txt")["content"] == "keep"


def test_expired_link_gets_403(api: Api) -> None:
    api("putFile", "a.txt", {"content": "x"})
    ws = api.workspace
    secret = presign.workspace_secret(ws.store, None)
    past = time.time() - 3600
    url = presign.presigned_url(api.server.url, secret, "GET", "a.txt", 60, now=past)
    response = httpx.get(url)
    assert response.status_code == 403
    assert response.json()["message"] == "Forbidden: the link has expired"


def test_presigned_put_uploads_then_replaces(api: Api) -> None:
    url = api("getPresignedUrl", "uploads/photo.bin", {"method": "put", "expiresIn": 120})
    first = httpx.put(url, content=b"\x00\x01", headers={"content-type": "image/png"})
    assert first.status_code == 201, first.text
    assert first.json()["size"] == 2
    got = api("getFile", "uploads/photo.bin")
    assert got["contentType"] == "image/png"
    assert base64.b64decode(got["content"]["base64"]) == b"\x00\x01"
    second = httpx.put(url, content=b"new")
    assert second.status_code == 200
    assert api("getFile", "uploads/photo.bin")["size"] == 3


def test_presigned_put_that_expects_100_continue_stores_its_body(api: Api) -> None:
    """curl sends ``Expect: 100-continue`` with a large upload: the body is read (the 100
    first) and stored whole."""
    url = urlsplit(api("getPresignedUrl", "up.bin", {"method": "PUT"}))
    body = bytes(range(256)) * 8
    head = (
        f"PUT {url.path}?{url.query} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        "Expect: 100-continue\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", api.server.port), timeout=10) as sock:
        sock.sendall(head.encode())
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        assert read_until_closed(sock).startswith(b"HTTP/1.1 201 ")
    assert base64.b64decode(api("getFile", "up.bin")["content"]["base64"]) == body


def test_presigned_put_over_max_file_bytes_gets_413(api: Api) -> None:
    api.set_setting("max_file_bytes", "4")
    url = api("getPresignedUrl", "big.bin", {"method": "PUT"})
    assert httpx.put(url, content=b"12345").status_code == 413
    assert api("getFileNames", "") == []


def test_rotating_the_secret_voids_links(api: Api) -> None:
    api("putFile", "a.txt", {"content": "x"})
    url = api("getPresignedUrl", "a.txt")
    assert httpx.get(url).status_code == 200
    api.set_setting("presign_secret", "a-new-secret-of-enough-length")
    assert httpx.get(url).status_code == 403


def test_expires_in_is_capped_and_base_url_setting_wins(api: Api) -> None:
    api("putFile", "a.txt", {"content": "x"})
    api.set_setting("public_base_url", "https://files.example.com/")
    url = api("getPresignedUrl", "a.txt", {"expiresIn": 10**9})
    assert url.startswith("https://files.example.com/_files/a.txt?")
    expires = int(parse_qs(urlsplit(url).query)["expires"][0])
    assert expires <= time.time() + 604_800 + 1


@pytest.mark.parametrize(
    ("path", "options", "message"),
    [
        ("missing.txt", None, "no file 'missing.txt'"),
        ("a.txt", {"method": "DELETE"}, "method is GET or PUT"),
        ("a.txt", {"expiresIn": 0}, "expiresIn is a positive whole number"),
        ("a.txt", {"expiresIn": "60"}, "expiresIn is a positive whole number"),
        ("a.txt", {"ttl": 5}, "unknown option 'ttl'"),
        ("../a.txt", {"method": "PUT"}, "'..'"),
    ],
)
def test_get_presigned_url_refuses_bad_requests(
    api: Api, path: str, options: Any, message: str
) -> None:
    api("putFile", "a.txt", {"content": "x"})
    assert message in api.error("getPresignedUrl", path, options)


def test_presigned_url_outside_a_request_needs_public_base_url(workspace: Workspace) -> None:
    workspace.create(
        "t", "link", label="link", method="GET", resource="link",
        action='fn.putFile("a.txt", {"content": "x"})\nres.body = fn.getPresignedUrl("a.txt")',
    )  # fmt: skip
    outcome = workspace.invoke("t", "link")
    assert outcome.status == 500 and "public_base_url" in outcome.json()["error"]
    workspace.set_setting("public_base_url", "https://api.example.com")
    assert workspace.invoke("t", "link").text.startswith("https://api.example.com/_files/a.txt?")


def test_files_route_cannot_collide_with_stages_and_answers_preflight(api: Api) -> None:
    preflight = httpx.options(f"{api.server.url}/_files/a.txt")
    assert preflight.status_code == 204
    assert "PUT" in preflight.headers["access-control-allow-methods"]
    assert httpx.delete(f"{api.server.url}/_files/a.txt").status_code == 405
