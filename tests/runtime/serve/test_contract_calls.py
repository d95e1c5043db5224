"""Contracts at a real server: a request that breaks its definition's contract gets one
422 problem listing every violation (with CORS) and the action never runs; an answer that
breaks its declared response goes out unchanged and is noted in the request log, whether
the action ran in an action process or inline; a definition without a contract answers as
before; recorded calls feed a draft."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.polling import wait_until

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

APP = "shop"
CONTRACT = {
    "parameters": [
        {"name": "page", "in": "query", "type": "integer", "required": True},
        {"name": "x-tag", "in": "header", "schema": {"type": "string", "enum": ["a", "b"]}},
        {"name": "id", "in": "path", "schema": {"type": "integer", "minimum": 1}},
    ],
    "body": {"schema": {"type": "object", "required": ["name"]}},
    "responses": {"200": {"schema": {"type": "object", "required": ["id"]}}},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, httpx.Client]]:
    """One server over ``shop``: ``put`` (PUT items/{id}, declared, keeps its contract),
    ``bad`` (GET bad, declares a 200 with an ``id`` it never gives) and ``plain``
    (POST plain, nothing declared), on dev and prod; dev records its calls."""
    ws = Workspace(tmp_path_factory.mktemp("contracts") / "home")
    put = (
        "import json\nres.body = {'id': int(req.pathParameters['id']),"
        " 'sent': json.loads(req.body)}"
    )
    ws.create(APP, "put", label="Put", method="PUT", resource="items/{id}", action=put,
              requires_auth=False, contract=CONTRACT)  # fmt: skip
    ws.create(APP, "bad", label="Bad", method="GET", resource="bad", requires_auth=False,
              action="res.body = {'name': 'no id'}",
              contract={"responses": CONTRACT["responses"]})  # fmt: skip
    for api_id in ("plain", "note"):
        ws.create(APP, api_id, label=api_id, method="POST", resource=api_id, requires_auth=False,
                  action="res.body = req.body")  # fmt: skip
    ws.set_setting("record_requests_dev", "true")
    for stage in ("dev", "prod"):
        ws.deploy(APP, stage)
    with BackgroundServer(ws) as server, httpx.Client(base_url=server.url, timeout=10) as client:
        yield ws, client


def _entries(ws: Workspace, count: int) -> list[dict[str, Any]]:
    """The newest ``count`` log entries, once the server has written them."""
    before = len(ws.request_log())
    wait_until(lambda: len(ws.request_log()) >= before)
    return ws.request_log()[-count:]


def _runs(ws: Workspace, stage: str, api_id: str) -> int:
    stats = ws.store.action_stats().get((stage, APP, api_id), {})
    return int(stats.get("requests", 0))


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_a_request_outside_the_contract_is_422_and_the_action_never_runs(
    served: tuple[Workspace, httpx.Client], stage: str
) -> None:
    ws, client = served
    runs = _runs(ws, stage, "put")
    answer = client.put(
        f"/{stage}/{APP}/items/0?page=two",
        headers={"X-Tag": "c", "Origin": "https://elsewhere.example"},
        json={"nom": "x"},
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["access-control-allow-origin"] == "*"
    problem = answer.json()
    assert (problem["type"], problem["title"], problem["status"]) == (
        "about:blank",
        "Unprocessable Content",
        422,
    )
    assert (
        problem["detail"] == f"The request does not match the contract of {APP}/put: 4 violations."
    )
    assert [(e["in"], e["pointer"], e["rule"]) for e in problem["errors"]] == [
        ("path", "/id", "minimum"),
        ("query", "/page", "type"),
        ("header", "/x-tag", "enum"),
        ("body", "/name", "required"),
    ]
    path = f"/{stage}/{APP}/items/0"
    wait_until(lambda: any(e["path"] == path for e in ws.request_log()[-1:]))
    entry = ws.request_log()[-1]
    assert entry["status"] == 422
    assert entry["error"].startswith("RequestContract: path /id: ")
    assert "body /name" in entry["error"]
    assert _runs(ws, stage, "put") == runs  # the action did not run


def test_a_request_in_the_contract_reaches_the_action(
    served: tuple[Workspace, httpx.Client],
) -> None:
    _, client = served
    answer = client.put(f"/dev/{APP}/items/7?page=2", headers={"X-Tag": "a"}, json={"name": "x"})
    assert answer.status_code == 200
    assert answer.json() == {"id": 7, "sent": {"name": "x"}}


def test_an_answer_outside_its_declared_response_goes_out_unchanged_and_is_noted(
    served: tuple[Workspace, httpx.Client],
) -> None:
    ws, client = served
    # 40 calls: the first ones in action processes, then inline once proven fast
    answers = [client.get(f"/prod/{APP}/bad") for _ in range(40)]
    assert {(a.status_code, a.text) for a in answers} == {(200, '{"name": "no id"}')}
    wait_until(lambda: len([e for e in ws.request_log() if e["path"] == f"/prod/{APP}/bad"]) == 40)
    notes = {e["error"] for e in ws.request_log() if e["path"] == f"/prod/{APP}/bad"}
    assert notes == {'ResponseContract: response /id: "id" is a required property'}
    wait_until(lambda: _runs(ws, "prod", "bad") == 40)
    assert ws.store.action_stats()[("prod", APP, "bad")]["errors"] == 0  # it answered


def test_a_definition_without_a_contract_answers_as_before(
    served: tuple[Workspace, httpx.Client],
) -> None:
    _, client = served
    answer = client.post(f"/dev/{APP}/plain", content=b"{not json", headers={"X-Tag": "zzz"})
    assert (answer.status_code, answer.text) == (200, "{not json")


def test_recorded_calls_feed_a_draft(served: tuple[Workspace, httpx.Client]) -> None:
    ws, client = served
    for body in ({"v": 1}, {"v": 2.5, "w": "x"}):
        client.post(f"/dev/{APP}/note?limit=5", json=body)
    client.post(f"/prod/{APP}/note?other=1", json={"v": "prod calls are not recorded"})
    wait_until(
        lambda: len([e for e in ws.request_log() if e["recorded"] and "note" in e["path"]]) == 2
    )
    draft = ws.infer_contract(APP, "note").to_dict()
    assert draft["parameters"] == [
        {"name": "limit", "in": "query", "schema": {"type": "integer"}, "required": True}
    ]
    assert draft["body"]["schema"] == {
        "type": "object",
        "properties": {"v": {"type": "number"}, "w": {"type": "string"}},
        "required": ["v"],
    }
    assert draft["responses"] == [{"status": "200"}]  # what it answers them now: untyped text
