"""Checking calls against a contract (domain/contract_checks.py): every violation of a
request is listed with where it is, a JSON pointer, the rule and a message; parameters are
read as their declared types; an answer is checked against its declared response."""

from __future__ import annotations

import json
from typing import Any

import pytest
from multidict import CIMultiDict

from notebook_kit.domain.contract_checks import CompiledContract, Violation, compile_contract
from notebook_kit.domain.contracts import Contract

INTEGER, HEX = {"type": "integer"}, "^[a-f0-9]+$"
ORDER = Contract.from_dict(
    {
        "parameters": [
            {"name": "page", "in": "query", "type": "integer", "required": True},
            {"name": "ratio", "in": "query", "type": "number"},
            {"name": "fresh", "in": "query", "type": "boolean"},
            {"name": "tag", "in": "query", "schema": {"type": "array", "items": INTEGER}},
            {"name": "x-trace", "in": "header", "schema": {"type": "string", "pattern": HEX}},
            {"name": "id", "in": "path", "schema": {"type": "integer", "minimum": 1}},
        ],
        "body": {
            "schema": {
                "type": "object",
                "required": ["name", "items"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
                    "a/b": {"type": "integer"},
                },
            }
        },
        "responses": {
            "200": {"schema": {"type": "object", "required": ["id"]}},
            "204": {},
            "default": {"media_type": "text/plain"},
        },
    }
)  # fmt: skip
JSON = CIMultiDict({"Content-Type": "application/json; charset=utf-8"})
MEDIA_TYPE = ("header", "/content-type", "mediaType")
GOOD = json.dumps({"name": "a", "items": [{"sku": 1}]}).encode()


@pytest.fixture(scope="module")
def order() -> CompiledContract:
    compiled = compile_contract(ORDER)
    assert compiled is not None
    return compiled


def _check(
    order: CompiledContract,
    query: str = "page=1",
    headers: Any = JSON,
    body: bytes = GOOD,
    path: dict[str, str] | None = None,
) -> list[dict[str, str]]:
    found = order.check_request(path or {"id": "7"}, query, headers, body)
    return [v.to_dict() for v in found]


def test_a_request_that_keeps_the_contract_has_no_violation(order: CompiledContract) -> None:
    assert _check(order, "page=2&ratio=0.5&fresh=true&tag=1&tag=2&other=anything") == []
    headers = CIMultiDict({"content-type": "application/json", "X-Trace": "beef"})
    assert _check(order, headers=headers) == []


def test_every_violation_is_listed_where_it_is(order: CompiledContract) -> None:
    headers = CIMultiDict({"Content-Type": "application/json", "X-TRACE": "not hex"})
    body = json.dumps({"items": [{"sku": 1}, {}], "extra": 1, "a/b": "x"}).encode()
    found = _check(order, "page=x&ratio=1e400&fresh=yes&tag=1&tag=b", headers, body, {"id": "0"})
    assert {(v["in"], v["pointer"], v["rule"]) for v in found} == {
        ("path", "/id", "minimum"),
        ("query", "/page", "type"),
        ("query", "/ratio", "type"),  # not finite: kept as text
        ("query", "/fresh", "type"),
        ("query", "/tag/1", "type"),
        ("header", "/x-trace", "pattern"),
        ("body", "/name", "required"),
        ("body", "/items/1/sku", "required"),
        ("body", "", "additionalProperties"),
        ("body", "/a~1b", "type"),  # a JSON pointer escapes '/'
    }
    assert all(v["message"] for v in found)
    page = next(v for v in found if v["pointer"] == "/page")
    assert page["message"] == '"x" is not of type "integer"'


def test_a_missing_required_parameter_points_at_its_name(order: CompiledContract) -> None:
    assert _check(order, query="") == [
        {"in": "query", "pointer": "/page", "rule": "required",
         "message": '"page" is a required property'},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        (JSON, b"", ("body", "", "required")),
        (JSON, b'{"name": ', ("body", "", "syntax")),
        (CIMultiDict({"Content-Type": "text/plain"}), GOOD, MEDIA_TYPE),
        (CIMultiDict(), GOOD, MEDIA_TYPE),
    ],
)  # fmt: skip
def test_a_body_that_cannot_be_checked_says_why(
    order: CompiledContract, headers: Any, body: bytes, expected: tuple[str, str, str]
) -> None:
    found = _check(order, headers=headers, body=body)
    assert [(v["in"], v["pointer"], v["rule"]) for v in found] == [expected]


def test_an_optional_body_may_be_left_out() -> None:
    compiled = compile_contract(Contract.from_dict({"body": {"required": False}}))
    assert compiled is not None
    assert compiled.check_request({}, "", CIMultiDict(), b"") == []


def test_a_form_body_is_read_as_its_fields_types() -> None:
    contract = Contract.from_dict(
        {
            "body": {
                "media_type": "application/x-www-form-urlencoded",
                "schema": {"type": "object", "required": ["n"],
                           "properties": {"n": {"type": "integer", "maximum": 5}}},
            }
        }
    )  # fmt: skip
    compiled = compile_contract(contract)
    assert compiled is not None
    form = CIMultiDict({"Content-Type": "application/x-www-form-urlencoded"})
    assert compiled.check_request({}, "", form, b"n=3") == []
    assert [v.rule for v in compiled.check_request({}, "", form, b"n=9")] == ["maximum"]
    assert [v.rule for v in compiled.check_request({}, "", form, b"n=x")] == ["type"]


def test_a_header_array_takes_every_value_split_at_commas() -> None:
    contract = Contract.from_dict(
        {"parameters": [{"name": "x-ids", "in": "header", "required": True,
                         "schema": {"type": "array", "items": {"type": "integer"}}}]}
    )  # fmt: skip
    compiled = compile_contract(contract)
    assert compiled is not None
    headers = CIMultiDict([("X-Ids", "1, 2"), ("x-ids", "3")])
    assert compiled.check_request({}, "", headers, b"") == []
    bad = CIMultiDict([("X-Ids", "1, two")])
    assert [v.pointer for v in compiled.check_request({}, "", bad, b"")] == ["/x-ids/1"]


@pytest.mark.parametrize(
    ("status", "content_type", "body", "expected"),
    [
        (200, "application/json", b'{"id": 1}', []),
        (200, "application/json", b'{"name": 1}', [("response", "/id", "required")]),
        (200, "text/html", b"<p>", [("response", "/content-type", "mediaType")]),
        (200, None, b"{}", [("response", "/content-type", "mediaType")]),
        (200, "application/json", b"{", [("response", "", "syntax")]),
        (204, None, b"", []),  # declared without a media type: anything goes
        (500, "text/plain", b"oops", []),  # default: text/plain, no schema
        (500, "application/json", b"{}", [("response", "/content-type", "mediaType")]),
    ],
)
def test_an_answer_is_checked_against_its_declared_response(
    order: CompiledContract, status: int, content_type: str | None, body: bytes,
    expected: list[tuple[str, str, str]],
) -> None:  # fmt: skip
    found = order.check_response(status, content_type, body)
    assert [(v.location, v.pointer, v.rule) for v in found] == expected


def test_nothing_declared_compiles_to_nothing_and_answers_unchecked() -> None:
    assert compile_contract(Contract()) is None
    only = compile_contract(Contract.from_dict({"responses": {"200": {}}}))
    assert only is not None and not only.checks_requests and not only.checks_responses


def test_a_violation_reads_as_one_line() -> None:
    violation = Violation("body", "/a", "type", '"x" is not of type "integer"')
    assert str(violation) == 'body /a: "x" is not of type "integer"'
    assert str(Violation("body", "", "required", "a request body is required")).startswith(
        "body /:"
    )
