"""Saved examples as Postman tests: each a copy of its operation's converted request with
the example's values and a test script (newman runs them in test_openapi_clients.py)."""

from __future__ import annotations

from typing import Any

import pytest
from support.shop import shop_definitions

from notebook_kit.domain.examples import Example
from notebook_kit.domain.postman import EXAMPLES_FOLDER, with_example_tests

DEFINITIONS = shop_definitions("shop")


def _request(method: str, path: list[str], variables: list[str] = ()) -> dict[str, Any]:
    """A request item shaped as openapi-to-postmanv2 writes one."""
    return {
        "name": f"{method} {'/'.join(path)}",
        "request": {
            "method": method,
            "url": {
                "path": path,
                "host": ["{{baseUrl}}"],
                "query": [{"key": "limit", "value": "<integer>"}],
                "variable": [{"key": v, "value": "<integer>"} for v in variables],
            },
            "header": [
                {"key": "Content-Type", "value": "application/json"},
                {"key": "Accept", "value": "application/json"},
                {"key": "x-trace", "value": "<string>"},
            ],
            "body": {"mode": "raw", "raw": '{"name": "<string>"}'},
            "auth": {"type": "apikey", "apikey": [{"key": "value", "value": "{{apiKey}}"}]},
        },
        "response": [{"name": "a saved answer"}],
    }


COLLECTION = {
    "info": {"name": "shop"},
    "item": [
        {
            "name": "items",
            "item": [
                _request("POST", ["items"]),
                {"name": "{id}", "item": [_request("GET", ["items", ":id"], ["id"])]},
            ],
        }
    ],
}


def _example(api_id: str, name: str, request: Any = None, expect: Any = None) -> Example:
    return Example.of("shop", api_id, name, request, expect)


def test_example_becomes_the_converted_request_with_its_values() -> None:
    example = _example(
        "get-item",
        "one",
        {"path_parameters": {"id": "7"}, "query": "q=a b&limit=2", "headers": {"X-Trace": "t1"}},
        {"status": 200, "json": {"name": "pen", "tags.0": True}, "max_ms": 500},
    )
    collection, missing = with_example_tests(COLLECTION, DEFINITIONS, [example])
    assert missing == []
    assert collection["item"][0] == COLLECTION["item"][0]  # the converted requests stay
    folder = collection["item"][-1]
    assert folder["name"] == EXAMPLES_FOLDER
    [item] = folder["item"]
    assert item["name"] == "get-item/one"
    request = item["request"]
    assert request["method"] == "GET"
    assert request["auth"] == COLLECTION["item"][0]["item"][1]["item"][0]["request"]["auth"]
    assert request["url"]["variable"] == [{"key": "id", "value": "7"}]
    assert request["url"]["query"] == [
        {"key": "q", "value": "a b"},
        {"key": "limit", "value": "2"},
    ]
    # no body: no Content-Type; the converter's made-up header parameter gives way
    assert request["header"] == [
        {"key": "Accept", "value": "application/json"},
        {"key": "X-Trace", "value": "t1"},
    ]
    assert "body" not in request
    script = "\n".join(item["event"][0]["script"]["exec"])
    assert item["event"][0]["listen"] == "test"
    assert "pm.response.to.have.status(200);" in script
    assert 'field(body, ["name"])' in script and 'to.eql("pen")' in script
    assert 'field(body, ["tags", "0"])' in script and "to.eql(true)" in script
    assert "pm.expect(pm.response.responseTime).to.be.at.most(500);" in script


def test_example_body_is_sent_raw_with_the_converted_content_type() -> None:
    example = _example("create-item", "pen", {"body": {"name": "pen", "price": 1}}, {"status": 201})
    collection, _ = with_example_tests(COLLECTION, DEFINITIONS, [example])
    request = collection["item"][-1]["item"][0]["request"]
    assert request["body"] == {"mode": "raw", "raw": '{"name": "pen", "price": 1}'}
    assert {"key": "Content-Type", "value": "application/json"} in request["header"]
    script = collection["item"][-1]["item"][0]["event"][0]["script"]["exec"]
    assert "field(" not in "\n".join(script)  # only the status is expected


@pytest.mark.parametrize(
    "api_id",
    ["delete-item", "list-items"],  # in the application, not in this collection
)
def test_example_without_its_operation_is_left_out(api_id: str) -> None:
    collection, missing = with_example_tests(COLLECTION, DEFINITIONS, [_example(api_id, "x")])
    assert missing == [f"{api_id}/x"]
    assert collection["item"][-1] == {"name": EXAMPLES_FOLDER, "item": []}


def test_adding_twice_replaces_the_folder() -> None:
    example = _example("create-item", "pen")
    once, _ = with_example_tests(COLLECTION, DEFINITIONS, [example])
    twice, _ = with_example_tests(once, DEFINITIONS, [example])
    assert [item["name"] for item in twice["item"]] == ["items", EXAMPLES_FOLDER]
    assert len(twice["item"][-1]["item"]) == 1
    assert "item" in COLLECTION and len(COLLECTION["item"]) == 1  # the input is not changed
