"""The OpenAPI 3.0 export: each JSON Schema 2020-12 word a contract can hold becomes its
3.0 equivalent, and whole documents validate as 3.0."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate
from support.shop import shop_definitions

from notebook_kit.domain.models import Application, Definition
from notebook_kit.domain.openapi import build_document
from notebook_kit.domain.openapi30 import schema30, to_openapi30


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, {"type": "string"}),
        ({"type": ["string", "null"]}, {"type": "string", "nullable": True}),
        ({"type": ["string", "integer"]}, {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        ({"type": "null"}, {"nullable": True, "enum": [None]}),
        ({"const": "a"}, {"enum": ["a"]}),
        ({"const": None}, {"enum": [None], "nullable": True}),
        ({"enum": ["a", None]}, {"enum": ["a", None], "nullable": True}),
        ({"examples": [3, 4]}, {"example": 3}),
        ({"exclusiveMinimum": 0}, {"minimum": 0, "exclusiveMinimum": True}),
        ({"exclusiveMaximum": 9.5}, {"maximum": 9.5, "exclusiveMaximum": True}),
        ({"minimum": 5, "exclusiveMinimum": 0}, {"minimum": 5}),  # the stricter bound stays
        ({"minimum": 0, "exclusiveMinimum": 5}, {"minimum": 5, "exclusiveMinimum": True}),
        (
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            {"type": "integer", "nullable": True},
        ),
        (
            {"oneOf": [{"$ref": "#/components/schemas/A"}, {"type": "null"}]},
            {"nullable": True, "oneOf": [{"$ref": "#/components/schemas/A"}]},
        ),
        (
            {"$ref": "#/components/schemas/A", "description": "an A"},
            {"description": "an A", "allOf": [{"$ref": "#/components/schemas/A"}]},
        ),
        (
            {"type": "object", "properties": {"a": True, "b": False}, "required": []},
            {"type": "object", "properties": {"a": {}, "b": {"not": {}}}},
        ),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        ),
        ({"type": "string", "contentEncoding": "base64"}, {"type": "string", "format": "byte"}),
        (
            {"type": "string", "contentMediaType": "image/png"},
            {"type": "string", "format": "binary"},
        ),
        (
            {"type": "object", "if": {}, "then": {}, "dependentRequired": {"a": ["b"]}},
            {"type": "object"},  # no 3.0 word for them: dropped
        ),
        (
            {"type": "array", "items": {"type": ["number", "null"], "exclusiveMinimum": 1}},
            {
                "type": "array",
                "items": {
                    "type": "number",
                    "nullable": True,
                    "minimum": 1,
                    "exclusiveMinimum": True,
                },
            },
        ),
        ({"additionalProperties": {"const": 1}}, {"additionalProperties": {"enum": [1]}}),
        ({"x-kind": {"const": 1}}, {"x-kind": {"const": 1}}),  # extensions kept as they are
    ],
)
def test_schema_words(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    assert schema30(schema) == expected


_RICH = {
    "$defs": {"Tag": {"type": ["string", "null"], "examples": ["red"]}},
    "type": "object",
    "required": ["kind", "tags", "weight"],
    "properties": {
        "kind": {"const": "box"},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
}


@pytest.mark.parametrize(
    "definitions",
    [
        shop_definitions("shop"),
        shop_definitions("bare", declared=False),
        [
            Definition(
                "box", "put", "Put a box", "PUT", "boxes/{id}", contract={"body": {"schema": _RICH}}
            )
        ],
    ],
    ids=["declared", "undeclared", "rich"],
)
def test_documents_validate_as_3_0(definitions: list[Definition]) -> None:
    app = Application(definitions[0].app)
    document = build_document(app, "dev", definitions, "http://api.example", 3)
    exported = build_document(app, "dev", definitions, "http://api.example", 3, version="3.0")
    validate(exported)
    assert exported["openapi"] == "3.0.3"
    assert exported == to_openapi30(document)
    assert document["openapi"] == "3.1.0"  # the 3.1 document is left as it was


def test_rich_contract_in_3_0() -> None:
    definition = Definition(
        "box", "put", "Put a box", "PUT", "boxes/{id}", contract={"body": {"schema": _RICH}}
    )
    doc = build_document(Application("box"), "dev", [definition], "http://x", 1, version="3.0")
    assert doc["components"]["schemas"]["Tag"] == {
        "type": "string",
        "nullable": True,
        "example": "red",
    }
    body = doc["paths"]["/boxes/{id}"]["put"]["requestBody"]["content"]["application/json"]
    properties = body["schema"]["properties"]
    assert properties["kind"] == {"enum": ["box"]}
    assert properties["tags"]["items"] == {"$ref": "#/components/schemas/Tag"}
    assert properties["weight"] == {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    assert properties["note"] == {"type": "string", "nullable": True}
    cors = doc["components"]["responses"]["NotFound"]["headers"]["Access-Control-Allow-Origin"]
    assert cors["schema"] == {"type": "string", "enum": ["*"]}
