"""The runtime's rules over real HTTP (issue 2 §5): routing, auth, errors, limits and
live key rotation. What an action sees and sends is in ``test_runtime_actions.py``.

One in-thread server per module serves the probe application (``probe.py``) deployed
to both stages; tests that change settings or keys get their own workspace and server.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.polling import wait_until
from support.probe import APP, CORS, ECHO_ACTION, probe_home

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture(scope="module")
def served_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return probe_home(tmp_path_factory)


# -- not found, wrong method -------------------------------------------------------------------

NOT_FOUND_PATHS = [
    "/",
    "/dev",
    "/dev/",
    "/staging/restapi_sample/calculator",
    "/DEV/restapi_sample/calculator",
    "/dev/nosuchapp/calculator",
    "/dev/restapi_sample/nosuch",
    "/dev/restapi_sample",
    "/dev/restapi_sample/employee",
    "/dev/restapi_sample/employee/E001/extra",
    "/dev/probe/a",
    "/dev/probe/a/b/c/d",
    "/prod/restapi_sample/employee",
]


@pytest.mark.parametrize("path", NOT_FOUND_PATHS)
def test_runtime_answers_404_json_when_route_unknown(http: httpx.Client, path: str) -> None:
    response = http.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.content == b'{"message": "Not Found"}'


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/dev/restapi_sample/calculator", "OPTIONS, POST"),
        ("DELETE", "/prod/restapi_sample/employee/E001", "GET, HEAD, OPTIONS"),
        ("POST", "/dev/probe/a/b", "GET, HEAD"),
        ("GET", "/dev/probe/echo/x", "POST, PUT"),
        ("PATCH", "/dev/probe/boom", "GET, HEAD"),
    ],
)
def test_runtime_answers_405_with_allow_when_method_not_deployed(
    http: httpx.Client, method: str, path: str, allow: str
) -> None:
    response = http.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"message": "Method Not Allowed"}


# -- authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["dev", "prod"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-api-key": ""},
        {"x-api-key": "wrong"},
        {"x-api-key": "A" * 40},
        {"x-api-key-other": "{own}"},
        {"x-api-key": "{other}"},
        {"x-api-key": "{own_truncated}"},
        {"x-api-key": "{own}x"},
        {"Authorization": "Bearer {own}"},
    ],
    ids=[
        "none",
        "empty",
        "wrong",
        "40-chars",
        "other-header",
        "other-stage",
        "own-truncated",
        "own-extended",
        "bearer",
    ],
)
def test_runtime_answers_403_when_key_wrong_or_missing(
    http: httpx.Client, stage_keys: dict[str, str], stage: str, headers: dict[str, str]
) -> None:
    other = "prod" if stage == "dev" else "dev"
    own = stage_keys[stage]
    values = {"own": own, "other": stage_keys[other], "own_truncated": own[:-1]}
    filled = {name: value.format(**values) for name, value in headers.items()}
    response = http.get(f"/{stage}/probe/secure", headers=filled)
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.content == b'{"message": "Forbidden"}'


@pytest.mark.parametrize("stage", ["dev", "prod"])
@pytest.mark.parametrize("name", ["x-api-key", "X-API-KEY", "X-Api-Key"])
def test_runtime_accepts_own_stage_key_under_any_header_case(
    http: httpx.Client, stage_keys: dict[str, str], stage: str, name: str
) -> None:
    response = http.get(f"/{stage}/probe/secure", headers={name: stage_keys[stage]})
    assert response.status_code == 200
    assert response.content == b"secret"


def test_runtime_key_rotation_is_live_within_a_second(
    sample_workspace: Workspace, running_server: BackgroundServer
) -> None:
    old = sample_workspace.keys()
    url = running_server.endpoint("dev", "restapi_sample", "employee/E001")
    with httpx.Client(timeout=5) as client:
        assert client.get(url, headers={"x-api-key": old["dev"]}).status_code == 200
        new = sample_workspace.rotate_key("dev")
        assert new != old["dev"] and len(new) == 40 and new.isalnum()
        wait_until(lambda: client.get(url, headers={"x-api-key": old["dev"]}).status_code == 403)
        assert client.get(url, headers={"x-api-key": new}).status_code == 200
        prod = running_server.endpoint("prod", "restapi_sample", "employee/E001")
        assert client.get(prod, headers={"x-api-key": old["prod"]}).status_code == 200


# -- failures of the action --------------------------------------------------------------------


def test_runtime_answers_500_with_error_on_dev_when_action_raises(http: httpx.Client) -> None:
    response = http.get("/dev/probe/boom")
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.json() == {
        "message": "Internal server error",
        "error": "ZeroDivisionError: division by zero",
    }


def test_runtime_answers_500_without_error_on_prod_when_action_raises(http: httpx.Client) -> None:
    response = http.get("/prod/probe/boom")
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.content == b'{"message": "Internal server error"}'


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_runtime_answers_500_when_action_sets_unsendable_body(
    http: httpx.Client, stage: str
) -> None:
    response = http.get(f"/{stage}/probe/bad-body")
    assert response.status_code == 500
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.json()["message"] == "Internal server error"
    assert ("error" in response.json()) is (stage == "dev")


# -- body limit --------------------------------------------------------------------------------


@pytest.fixture
def small_limit_server(workspace: Workspace) -> Iterator[BackgroundServer]:
    workspace.create(
        APP,
        "echo",
        label="echo",
        method="POST",
        resource="echo/{name}",
        action=ECHO_ACTION,
        requires_auth=False,
    )
    workspace.deploy(APP, "dev")
    workspace.set_setting("max_body_bytes", "1000")
    with BackgroundServer(workspace) as server:
        yield server


def test_runtime_answers_413_when_body_over_limit(small_limit_server: BackgroundServer) -> None:
    url = small_limit_server.endpoint("dev", APP, "echo/n")
    with httpx.Client(timeout=5) as client:
        fits = client.post(url, content=b"x" * 1000)
        assert fits.status_code == 200
        assert fits.json()["body"] == "x" * 1000
    with httpx.Client(timeout=5) as client:
        response = client.post(url, content=b"x" * 1001)
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == CORS
    assert response.json() == {"message": "Request body is larger than 1000 bytes"}


def test_runtime_applies_new_body_limit_without_restart(
    small_limit_server: BackgroundServer,
) -> None:
    url = small_limit_server.endpoint("dev", APP, "echo/n")
    small_limit_server.workspace.set_setting("max_body_bytes", "2000")

    def accepts_1500() -> bool:
        with httpx.Client(timeout=5) as client:
            return client.post(url, content=b"y" * 1500).status_code == 200

    wait_until(accepts_1500)
    with httpx.Client(timeout=5) as client:
        assert client.post(url, content=b"y" * 2001).status_code == 413


def test_a_body_limit_smaller_than_a_head_limits_bodies_only(
    small_limit_server: BackgroundServer,
) -> None:
    """Sanic caps the head at the body limit too: with max_body_bytes 100, every request
    (its head is longer than 100 bytes) was answered 431. The head keeps its own limit,
    and a kept-alive connection follows a changed body limit."""
    url = small_limit_server.endpoint("dev", APP, "echo/n")
    headers = {"x-padding": "p" * 300}  # a head of some 400 bytes
    with httpx.Client(timeout=5) as client:
        assert client.post(url, content=b"x" * 500).status_code == 200  # kept alive
        small_limit_server.workspace.set_setting("max_body_bytes", "100")
        small_limit_server.sync()
        # the same connection follows the new limit (Sanic copied it per connection)
        fits = client.post(url, content=b"x" * 100, headers=headers)
        over = client.post(url, content=b"x" * 101, headers=headers)
    assert fits.status_code == 200, fits.text
    assert over.status_code == 413
    assert over.json() == {"message": "Request body is larger than 100 bytes"}


# -- routing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/dev/probe/a/b", b"literal"),
        ("/dev/probe/a/c", b'{"x": "c"}'),
        ("/dev/probe/a/b/c", b"deep"),  # a/b has no child c: the parameter branch answers
        ("/dev/probe/a/%C3%A9", b'{"x": "\\u00e9"}'),
        ("/dev/probe/a/a%20b", b'{"x": "a b"}'),
        ("/dev/probe/a/a%2Fb", b'{"x": "a/b"}'),
        ("/dev/probe/a/%62", b"literal"),  # %62 is 'b': decoded before matching
        ("/dev/probe/a/b/", b"literal"),  # one trailing slash tolerated
    ],
)
def test_runtime_matches_literals_before_parameters_and_decodes(
    http: httpx.Client, path: str, expected: bytes
) -> None:
    response = http.get(path)
    assert response.status_code == 200
    assert response.content == expected


def test_runtime_decodes_percent_encoded_path_parameter_to_unicode(http: httpx.Client) -> None:
    response = http.get("/dev/probe/greet/%C3%A9milie")
    assert response.status_code == 200
    assert response.content.decode() == "hello, émilie!"


def test_runtime_answers_json_for_unreadable_request(http: httpx.Client) -> None:
    # Sanic itself refuses a malformed request line; the answer still carries CORS.
    with socket.create_connection(("127.0.0.1", int(str(http.base_url.port)))) as sock:
        sock.sendall(b"GET /dev/probe/a/b HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
        data = sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert 400 <= status < 500
    assert b"access-control-allow-origin: *" in head.lower()
    assert json.loads(body)["message"]


def test_workers_get_the_settings_for_actions_and_never_a_secret(
    sample_workspace: Workspace,
) -> None:
    """What a worker is sent (``Feed.snapshot``): the settings its built-ins read, the
    secrets left with the trusted side, the keys as digests."""
    from notebook_kit.runtime.reload.feed import Feed

    ws = sample_workspace
    ws.set_setting("max_file_bytes", "1234")
    ws.set_setting("smtp_password", "a-secret-smtp-password")
    ws.set_setting("oauth2_client_secret", "a-secret-client-secret")
    ws.set_setting("presign_secret", "a-secret-presign-key-of-length")
    ws.set_setting("database_url", "sqlite:////tmp/elsewhere.sqlite3")
    feed = Feed(ws)
    snapshot = feed.snapshot(feed.read(), ())
    settings = snapshot["settings"]
    assert settings["max_file_bytes"] == 1234
    assert settings["database_url"] == "sqlite:////tmp/elsewhere.sqlite3"  # the actions' own
    for name in ("smtp_password", "oauth2_client_secret", "presign_secret"):
        assert name not in settings
    text = json.dumps(snapshot)
    assert "a-secret" not in text
    assert all(key not in text for key in ws.keys().values())
