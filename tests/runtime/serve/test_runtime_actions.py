"""What an action sees and sends, over real HTTP (issue 2 §5): ``req``, ``res``,
``const``, user functions, ``db``, ``fn`` and async actions, on the probe application.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from support.probe import probe_home

from notebook_kit.workspace.workspace import Workspace


@pytest.fixture(scope="module")
def served_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return probe_home(tmp_path_factory)


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
def test_runtime_db_binds_parameters(http: httpx.Client, served_home: Path, text: str) -> None:
    response = http.post("/dev/probe/db", content=text.encode())
    assert response.status_code == 200
    result = response.json()
    assert result["changed"] == 1
    assert result["rows"] and all(row == {"text": text} for row in result["rows"])
    rows = Workspace(served_home).database.query("SELECT count(*) AS n FROM notes")
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
