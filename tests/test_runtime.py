"""The runtime's rules over real HTTP (issue 2 §5): routing, auth, errors, limits, the
action's ``req``/``res``/``const``/``fn``/``db``, live key rotation, and restarts.

One in-thread server per module serves a probe application deployed to both stages;
tests that change settings or keys get their own workspace and server.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from notebook_kit.models import Constant
from notebook_kit.server import BackgroundServer
from notebook_kit.workspace import Workspace

APP = "probe"
CORS = "*"

ECHO_ACTION = """\
res.body = {
    "httpMethod": req.httpMethod,
    "path": req.path,
    "stage": req.stage,
    "header": req.headers["X-Probe"] if "X-Probe" in req.headers else None,
    "header_lower": req.headers.get("x-probe"),
    "header_upper": req.headers.get("X-PROBE"),
    "queryStringParameters": req.queryStringParameters,
    "pathParameters": req.pathParameters,
    "body": req.body,
}
"""

BODY_ACTION = """\
kind = req.pathParameters["kind"]
if kind == "str":
    res.body = "héllo"
elif kind == "bytes":
    res.body = b"\\x00\\xffraw"
elif kind == "dict":
    res.body = {"a": [1, 2.5, None, True], "b": "é"}
elif kind == "list":
    res.body = [1, "two", {"three": 3}]
elif kind == "none":
    res.body = None
elif kind == "override":
    res.headers["content-type"] = "text/csv; charset=utf-8"
    res.body = "a,b\\n1,2\\n"
elif kind == "override-json":
    res.headers["CONTENT-TYPE"] = "application/vnd.probe+json"
    res.body = {"x": 1}
elif kind == "status":
    res.statusCode = 201
    res.headers["X-Made-By"] = "probe"
    res.body = "created"
"""

CONST_ACTION = """\
res.body = {
    name: [type(getattr(const, name)).__name__, str(getattr(const, name))]
    for name in ("TEXT", "COUNT", "PRICE", "ENABLED", "SETTINGS")
}
"""

FUNCTIONS = """\
GREETING = "hello"


def greet(name):
    return f"{GREETING}, {name}!"
"""

DB_ACTION = """\
db.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
changed = db.execute("INSERT INTO notes (text) VALUES (?)", [req.body])
rows = db.query("SELECT text FROM notes WHERE text = ?", [req.body])
res.body = {"changed": changed, "rows": rows}
"""

ASYNC_ACTION = """\
import asyncio

await asyncio.sleep(0.01)
res.body = "awaited " + req.queryStringParameters.get("n", "")
"""

DEFINITIONS: list[dict[str, Any]] = [
    {"api_id": "literal", "method": "GET", "resource": "a/b", "action": 'res.body = "literal"'},
    {
        "api_id": "param",
        "method": "GET",
        "resource": "a/{x}",
        "action": 'res.body = {"x": req.pathParameters["x"]}',
    },
    {"api_id": "deep", "method": "GET", "resource": "a/{x}/c", "action": 'res.body = "deep"'},
    {"api_id": "echo", "method": "POST", "resource": "echo/{name}", "action": ECHO_ACTION},
    {"api_id": "echo-put", "method": "PUT", "resource": "echo/{name}", "action": ECHO_ACTION},
    {"api_id": "boom", "method": "GET", "resource": "boom", "action": "res.body = 1 / 0"},
    {
        "api_id": "bad-body",
        "method": "GET",
        "resource": "bad-body",
        "action": "res.body = object()",
    },
    {
        "api_id": "body",
        "method": "GET",
        "resource": "body/{kind}",
        "action": BODY_ACTION,
        "content_type": "text/plain; charset=utf-8",
    },
    {
        "api_id": "const",
        "method": "GET",
        "resource": "const",
        "action": CONST_ACTION,
        "constants": [
            Constant("TEXT", "String", "Employee ID %s"),
            Constant("COUNT", "Integer", 42),
            Constant("PRICE", "Decimal", "0.10"),
            Constant("ENABLED", "Boolean", True),
            Constant("SETTINGS", "JSON", {"k": [1, 2]}),
        ],
    },
    {
        "api_id": "greet",
        "method": "GET",
        "resource": "greet/{name}",
        "action": 'res.body = greet(req.pathParameters["name"])',
        "functions": FUNCTIONS,
    },
    {"api_id": "db", "method": "POST", "resource": "db", "action": DB_ACTION},
    {
        "api_id": "csv",
        "method": "POST",
        "resource": "csv",
        "action": "res.body = fn.csvToObject(req.body)",
    },
    {"api_id": "async", "method": "GET", "resource": "async", "action": ASYNC_ACTION},
    {"api_id": "secure", "method": "GET", "resource": "secure", "action": 'res.body = "secret"'},
]
OPEN = {
    "literal",
    "param",
    "deep",
    "echo",
    "echo-put",
    "boom",
    "bad-body",
    "body",
    "const",
    "greet",
    "db",
    "csv",
    "async",
}


def build_probe(workspace: Workspace) -> None:
    """Create the probe application and deploy it to both stages."""
    for spec in DEFINITIONS:
        spec = dict(spec)
        api_id = spec.pop("api_id")
        workspace.create(APP, api_id, label=api_id, requires_auth=api_id not in OPEN, **spec)
    workspace.deploy(APP, "dev")
    workspace.deploy(APP, "prod")


@pytest.fixture(scope="module")
def probe_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = Workspace(tmp_path_factory.mktemp("runtime") / "workspace")
    workspace.install_sample()
    build_probe(workspace)
    return workspace.home


@pytest.fixture(scope="module")
def http(probe_home: Path) -> Iterator[httpx.Client]:
    with (
        BackgroundServer(Workspace(probe_home)) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def stage_keys(probe_home: Path) -> dict[str, str]:
    return Workspace(probe_home).keys()


def wait_for(check: Callable[[], bool], within: float = 1.0, slack: float = 0.3) -> float:
    """Poll ``check`` until true; fail if it takes longer than ``within`` (+ slack)."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > within + slack:
            raise AssertionError(f"not true within {within} s")
        time.sleep(0.02)
    return time.monotonic() - started


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
        ("DELETE", "/prod/restapi_sample/employee/E001", "GET, OPTIONS"),
        ("POST", "/dev/probe/a/b", "GET"),
        ("GET", "/dev/probe/echo/x", "POST, PUT"),
        ("PATCH", "/dev/probe/boom", "GET"),
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
        wait_for(lambda: client.get(url, headers={"x-api-key": old["dev"]}).status_code == 403)
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

    wait_for(accepts_1500)
    with httpx.Client(timeout=5) as client:
        assert client.post(url, content=b"y" * 2001).status_code == 413


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


# -- req ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["dev", "prod"])
@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_runtime_gives_action_the_request_fields(
    http: httpx.Client, stage: str, method: str
) -> None:
    response = http.request(
        method,
        f"/{stage}/probe/echo/J%C3%BCrgen?q=1&empty=&q2=a%20b&q=last",
        content="ünïcode body \u2603".encode(),
        headers={"x-PROBE": "header value"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "httpMethod": method,
        "path": f"/{stage}/probe/echo/J%C3%BCrgen",
        "stage": stage,
        "header": "header value",
        "header_lower": "header value",
        "header_upper": "header value",
        "queryStringParameters": {"q": "last", "empty": "", "q2": "a b"},
        "pathParameters": {"name": "Jürgen"},
        "body": "ünïcode body \u2603",
    }


def test_runtime_decodes_invalid_utf8_body_with_replacement(http: httpx.Client) -> None:
    response = http.post("/dev/probe/echo/x", content=b"ok\xffok")
    assert response.status_code == 200
    assert response.json()["body"] == "ok\ufffdok"


# -- res ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "status", "content_type", "body"),
    [
        ("str", 200, "text/plain; charset=utf-8", "héllo".encode()),
        ("bytes", 200, "text/plain; charset=utf-8", b"\x00\xffraw"),
        ("dict", 200, "text/plain; charset=utf-8", b'{"a": [1, 2.5, null, true], "b": "\\u00e9"}'),
        ("list", 200, "text/plain; charset=utf-8", b'[1, "two", {"three": 3}]'),
        ("none", 200, "text/plain; charset=utf-8", b""),
        ("override", 200, "text/csv; charset=utf-8", b"a,b\n1,2\n"),
        ("override-json", 200, "application/vnd.probe+json", b'{"x": 1}'),
        ("status", 201, "text/plain; charset=utf-8", b"created"),
    ],
)
def test_runtime_sends_res_body_by_type_and_content_type(
    http: httpx.Client, kind: str, status: int, content_type: str, body: bytes
) -> None:
    response = http.get(f"/dev/probe/body/{kind}")
    assert response.status_code == status
    assert response.headers["content-type"] == content_type
    assert response.content == body
    assert response.headers.get_list("content-type") == [content_type]


def test_runtime_sends_action_headers(http: httpx.Client) -> None:
    response = http.get("/dev/probe/body/status")
    assert response.headers["x-made-by"] == "probe"


def test_runtime_sends_json_content_type_for_dict_without_definition_type(
    http: httpx.Client,
) -> None:
    response = http.get("/dev/probe/a/z")
    assert response.headers["content-type"] == "application/json"


def test_runtime_sends_no_content_type_when_none_chosen(http: httpx.Client) -> None:
    response = http.get("/dev/probe/a/b")
    assert response.content == b"literal"
    assert "content-type" not in response.headers


# -- const, user functions, db, fn, async ------------------------------------------------------


def test_runtime_gives_action_typed_constants(http: httpx.Client) -> None:
    response = http.get("/dev/probe/const")
    assert response.status_code == 200
    assert response.json() == {
        "TEXT": ["str", "Employee ID %s"],
        "COUNT": ["int", "42"],
        "PRICE": ["Decimal", str(Decimal("0.10"))],
        "ENABLED": ["bool", "True"],
        "SETTINGS": ["dict", "{'k': [1, 2]}"],
    }


def test_runtime_gives_action_user_functions(http: httpx.Client) -> None:
    response = http.get("/dev/probe/greet/ada")
    assert (response.status_code, response.content) == (200, b"hello, ada!")


@pytest.mark.parametrize(
    "text", ["plain", "x'); DROP TABLE notes; --", "quote \" and ' both", "ünï"]
)
def test_runtime_db_binds_parameters(http: httpx.Client, probe_home: Path, text: str) -> None:
    response = http.post("/dev/probe/db", content=text.encode())
    assert response.status_code == 200
    result = response.json()
    assert result["changed"] == 1
    assert result["rows"] and all(row == {"text": text} for row in result["rows"])
    rows = Workspace(probe_home).database.query("SELECT count(*) AS n FROM notes")
    assert rows[0]["n"] >= 1


def test_runtime_fn_csv_to_object_parses_header_and_rows(http: httpx.Client) -> None:
    csv_text = 'id,name\n1,"Smith, Ann"\n2,"multi\nline"\n'
    response = http.post("/dev/probe/csv", content=csv_text.encode())
    assert response.status_code == 200
    assert response.json() == [
        {"id": "1", "name": "Smith, Ann"},
        {"id": "2", "name": "multi\nline"},
    ]


def test_runtime_awaits_async_action(http: httpx.Client) -> None:
    response = http.get("/dev/probe/async?n=7")
    assert (response.status_code, response.content) == (200, b"awaited 7")


# -- the background server ---------------------------------------------------------------------


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
