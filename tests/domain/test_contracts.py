"""A definition's contract: what may be declared, and every rule a declaration must keep
(domain/contracts.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_kit.domain.contracts import EMPTY, Contract, Parameter, RequestBody, ResponseSpec
from notebook_kit.domain.models import Definition
from notebook_kit.errors import ValidationError

FULL = {
    "parameters": [
        {"name": "page", "in": "query", "type": "integer", "required": True, "description": "n"},
        {"name": "X-Trace", "in": "header", "schema": {"type": "string", "maxLength": 8}},
        {"name": "id", "in": "path", "type": "integer"},
    ],
    "body": {"schema": {"type": "object", "required": ["name"]}},
    "responses": {"200": {"schema": {"type": "object"}, "description": "ok"}, "404": {}},
}


def _definition(**overrides: Any) -> Definition:
    fields: dict[str, Any] = {
        "app": "shop",
        "id": "put-item",
        "label": "Put",
        "method": "PUT",
        "resource": "items/{id}",
        "contract": FULL,
    }
    return Definition(**{**fields, **overrides})


def test_a_full_contract_reads_and_writes_back_the_same() -> None:
    contract = Contract.from_dict(FULL)
    data = contract.to_dict()
    assert data["parameters"] == [
        {
            "name": "page",
            "in": "query",
            "schema": {"type": "integer"},
            "required": True,
            "description": "n",
        },
        {
            "name": "x-trace",  # header names are case-insensitive: kept in lower case
            "in": "header",
            "schema": {"type": "string", "maxLength": 8},
            "required": False,
        },
        {"name": "id", "in": "path", "schema": {"type": "integer"}, "required": True},
    ]
    assert data["body"] == {
        "media_type": "application/json",
        "required": True,
        "schema": {"type": "object", "required": ["name"]},
    }
    assert data["responses"] == [  # the mapping form reads as the list form
        {"status": "200", "media_type": "application/json", "schema": {"type": "object"},
         "description": "ok"},
        {"status": "404"},
    ]  # fmt: skip
    assert Contract.from_dict(data) == contract


def test_an_undeclared_definition_is_written_as_before() -> None:
    plain = _definition(contract=None, method="GET")
    assert plain.contract is EMPTY and plain.contract.is_empty
    assert "contract" not in plain.to_dict()  # older records, exports and the sample stay the same
    assert Definition.from_dict(plain.to_dict()) == plain


def test_a_definition_carries_its_contract_through_its_dict() -> None:
    definition = _definition()
    assert definition.contract.checks_requests
    assert Definition.from_dict(definition.to_dict()) == definition


@pytest.mark.parametrize(
    ("contract", "message"),
    [
        ({"parameters": [{"name": "a", "in": "cookie"}]}, "is in one of query, header, path"),
        (
            {"parameters": [{"name": "a b", "in": "header"}]},
            "header parameter name 'a b' is not a valid name",
        ),
        ({"parameters": [{"name": "", "in": "query"}]}, "query parameter name '' is not"),
        ({"parameters": [{"name": "a", "in": "query", "type": "date"}]}, "type 'date'"),
        (
            {"parameters": [{"name": "a", "in": "query", "type": "string", "schema": {}}]},
            "'type' or 'schema', not both",
        ),
        ({"parameters": [{"in": "query"}]}, "needs a 'name' and an 'in'"),
        (
            {"parameters": [{"name": "a", "in": "query"}, {"name": "a", "in": "query"}]},
            "declared twice",
        ),
        ({"parameters": [{"name": "Content-Type", "in": "header"}]}, "described by the body"),
        ({"parameters": [{"name": "a", "in": "query", "required": "yes"}]}, "true or false"),
        ({"parameters": [{"name": "a", "in": "query", "colour": 1}]}, "no field 'colour'"),
        ({"parameters": [{"name": "a", "in": "query", "schema": []}]}, "a JSON Schema object"),
        ({"body": {"schema": {"type": "nope"}}}, "not a valid JSON Schema"),
        ({"body": {"schema": {"minimum": "x"}}}, "not a valid JSON Schema"),
        ({"body": {"schema": {"$ref": "https://example.com/s.json"}}}, "only local references"),
        ({"body": {"media_type": "json"}}, "not a media type"),
        ({"body": {"schema": {"x": float("nan")}}}, "is not JSON"),
        ({"responses": [{"status": "600"}]}, "100 to 599 or 'default'"),
        ({"responses": [{"status": True}]}, "100 to 599 or 'default'"),
        ({"responses": [{"status": "200"}, {"status": 200}]}, "response 200 is declared twice"),
        ({"responses": [{"media_type": "text/plain"}]}, "an object with a 'status'"),
        ({"parameters": {"a": 1}}, "parameters must be a list"),
        ({"headers": []}, "no field 'headers'"),
        ([], "a contract must be an object"),
        ({"body": {"schema": {"description": "x" * 300_000}}}, "larger than 256 KiB"),
    ],
)
def test_a_bad_contract_is_refused_with_a_message(contract: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        Contract.from_dict(contract)
    assert caught.value.field == "contract"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"resource": "items"}, "path parameter 'id' is not in the resource"),
        ({"method": "GET", "contract": {"body": {}}}, "a GET takes no request body"),
        ({"method": "OPTIONS", "contract": {"body": {}}}, "a OPTIONS takes no request body"),
    ],
)
def test_a_contract_must_fit_its_definition(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _definition(**overrides)


def test_a_path_parameter_is_always_required() -> None:
    parameter = Parameter.from_dict({"name": "id", "in": "path", "required": False})
    assert parameter.required is True


def test_the_declared_response_of_a_status_falls_back_to_default() -> None:
    contract = Contract(
        responses=(ResponseSpec("default", "application/json"), ResponseSpec(201, "text/plain"))
    )
    assert [r.status for r in contract.responses] == ["201", "default"]  # default last
    assert contract.response(201).media_type == "text/plain"  # type: ignore[union-attr]
    assert contract.response("500").status == "default"  # type: ignore[union-attr]
    assert Contract().response(200) is None


def test_what_a_contract_checks() -> None:
    assert not Contract(responses=(ResponseSpec("200"),)).checks_requests
    assert Contract(body=RequestBody()).checks_requests
    assert Contract((Parameter("q", "query"),)).checks_requests


_SIMPLE = st.sampled_from(["string", "integer", "number", "boolean", "array"])
_NAMES = st.text("abcdefghij_-", min_size=1, max_size=8)


@given(
    st.lists(st.tuples(_NAMES, st.sampled_from(["query", "header"]), _SIMPLE, st.booleans()),
             max_size=5, unique_by=lambda p: (p[0].lower(), p[1])),
    st.sampled_from(["200", "201", "404", "default"]),
)  # fmt: skip
def test_any_declaration_reads_back_what_it_wrote(parameters: list[Any], status: str) -> None:
    data = {
        "parameters": [
            {"name": n, "in": where, "type": kind, "required": req}
            for n, where, kind, req in parameters
        ],
        "responses": [{"status": status, "schema": {"type": "object"}}],
    }
    contract = Contract.from_dict(data)
    assert Contract.from_dict(contract.to_dict()) == contract
    assert len(contract.parameters) == len(parameters)
