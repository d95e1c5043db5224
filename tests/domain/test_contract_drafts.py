"""A draft contract from the calls seen (domain/contract_drafts.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from notebook_kit.domain.contract_drafts import (
    SampleAnswer,
    SampleRequest,
    infer_contract,
    infer_schema,
)


@pytest.mark.parametrize(
    ("values", "schema"),
    [
        ([], {}),
        ([1, 2], {"type": "integer"}),
        ([1, 2.5], {"type": "number"}),
        ([2.0], {"type": "integer"}),
        (["a", None], {"type": ["null", "string"]}),
        ([True], {"type": "boolean"}),
        ([[1, "a"]], {"type": "array", "items": {"type": ["integer", "string"]}}),
        ([[]], {"type": "array"}),
        (
            [{"id": "E1", "age": 3}, {"id": "E2", "tags": []}],
            {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "age": {"type": "integer"},
                    "tags": {"type": "array"},
                },
                "required": ["id"],  # only what every object had
            },
        ),
    ],
)
def test_a_schema_fits_every_value_seen(values: list[Any], schema: dict[str, Any]) -> None:
    assert infer_schema(values) == schema


def _request(query: str = "", headers: dict[str, str] | None = None, body: Any = None,
             **path: str) -> SampleRequest:  # fmt: skip
    data = b"" if body is None else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})} if data else headers or {}
    return SampleRequest(path, query, sent, data)


def test_a_draft_declares_what_the_calls_sent_and_got() -> None:
    requests = [
        _request("page=1&q=x", {"X-Trace": "ab", "Accept": "*/*", "x-api-key": "k"},
                 {"name": "a", "n": 1}, id="7"),
        _request("page=2", {}, {"name": "b", "n": 1.5}, id="8"),
    ]  # fmt: skip
    answers = [
        SampleAnswer(201, "application/json", b'{"id": "E1"}'),
        SampleAnswer(201, "application/json; charset=utf-8", b'{"id": "E2", "extra": true}'),
        SampleAnswer(404, "text/plain", b"not here"),
        SampleAnswer(204, None, b""),
    ]
    draft = infer_contract("PUT", ("id",), requests, answers).to_dict()
    assert draft["parameters"] == [
        {"name": "id", "in": "path", "schema": {"type": "integer"}, "required": True},
        {"name": "page", "in": "query", "schema": {"type": "integer"}, "required": True},
        {"name": "q", "in": "query", "schema": {"type": "string"}, "required": False},
        # transport headers (Accept, Content-Type, x-api-key) are left out
        {"name": "x-trace", "in": "header", "schema": {"type": "string"}, "required": False},
    ]
    assert draft["body"] == {
        "media_type": "application/json",
        "required": True,
        "schema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "n": {"type": "number"}},
            "required": ["name", "n"],
        },
    }
    assert draft["responses"] == [
        {
            "status": "201",
            "media_type": "application/json",
            "schema": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "extra": {"type": "boolean"}},
                "required": ["id"],
            },
        },
        {"status": "204"},
        {"status": "404", "media_type": "text/plain"},
    ]


def test_a_draft_of_nothing_seen_declares_the_path_parameters_only() -> None:
    assert infer_contract("GET", ("id",), [], []).to_dict() == {
        "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}, "required": True}]
    }


def test_a_get_never_gets_a_body_and_bodies_not_json_keep_no_schema() -> None:
    sent = [SampleRequest({}, "", {"Content-Type": "text/csv"}, b"a,b")]
    assert infer_contract("GET", (), sent, []).body is None
    body = infer_contract("POST", (), sent, []).body
    assert body is not None and (body.media_type, body.schema) == ("text/csv", None)
    broken = [SampleRequest({}, "", {"Content-Type": "application/json"}, b"{")]
    body = infer_contract("POST", (), broken, []).body
    assert body is not None and body.schema is None


def test_a_body_sent_by_some_calls_only_is_optional_and_a_form_is_text_fields() -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    sent = [SampleRequest({}, "", form, b"a=1&b=2"), SampleRequest({}, "", form, b"a=3")]
    body = infer_contract("POST", (), [*sent, SampleRequest()], []).body
    assert body is not None and body.required is False
    assert body.schema == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a"],
    }
