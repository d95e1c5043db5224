"""The OpenAPI 3.0 export of a 3.1 document, for tools that read only 3.0.

OpenAPI 3.1's schemas are JSON Schema 2020-12; 3.0's are an older subset with its own
words. What a contract can hold becomes its 3.0 equivalent:

- ``type: [T, "null"]`` -> ``type: T, nullable: true`` (several types -> ``anyOf``);
  ``type: "null"`` alone, a ``null`` in ``enum``, and an ``anyOf``/``oneOf`` member
  ``{"type": "null"}`` -> ``nullable: true``;
- ``const: v`` -> ``enum: [v]``; ``examples: [a, ...]`` -> ``example: a``;
- a numeric ``exclusiveMinimum``/``exclusiveMaximum`` -> ``minimum``/``maximum`` with the
  boolean form;
- ``true``/``false`` as a schema -> ``{}`` / ``{"not": {}}``; a ``$ref`` with other
  keywords beside it -> ``allOf: [{"$ref": ...}]`` and those keywords (3.0 ignores a
  ``$ref``'s siblings); ``contentEncoding: base64`` -> ``format: byte``, another
  ``contentMediaType`` on a string -> ``format: binary``;
- a ``prefixItems`` tuple -> ``items`` taking any of its members;
- keywords 3.0 does not know (``$defs`` already moved to ``components.schemas`` by
  ``openapi``, ``if``/``then``/``else``, ``dependentRequired``, ``unevaluated*``,
  ``patternProperties``, ``contains``...) are dropped: the 3.0 document may accept more
  than the contract does; the runtime still checks the contract itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["OPENAPI_30", "to_openapi30"]

OPENAPI_30 = "3.0.3"

_KEPT = frozenset(
    {
        "title",
        "multipleOf",
        "maximum",
        "minimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "enum",
        "description",
        "format",
        "default",
        "discriminator",
        "readOnly",
        "writeOnly",
        "xml",
        "externalDocs",
        "example",
        "deprecated",
    }
)
_ONE_SCHEMA = ("items", "not")
_LISTS = ("allOf", "anyOf", "oneOf")
_NULL = {"nullable": True, "enum": [None]}


def to_openapi30(document: Mapping[str, Any]) -> dict[str, Any]:
    """The 3.0 export of a 3.1 ``document`` (which is left as it is)."""
    converted: dict[str, Any] = _walk(document)
    converted["openapi"] = OPENAPI_30
    schemas = converted.get("components", {}).get("schemas")
    if isinstance(schemas, dict):
        converted["components"]["schemas"] = {name: schema30(s) for name, s in schemas.items()}
    return converted


def _walk(value: Any) -> Any:
    """The document's objects, each ``schema`` of a parameter, media type or header made
    a 3.0 schema (``components.schemas`` is done by the caller)."""
    if isinstance(value, Mapping):
        return {
            key: schema30(item) if key == "schema" else _walk(item) for key, item in value.items()
        }
    if isinstance(value, list):
        return [_walk(item) for item in value]
    return value


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and dict(schema) == _NULL


def _types(kind: Any, out: dict[str, Any]) -> None:
    kinds = [kind] if isinstance(kind, str) else [k for k in kind if isinstance(k, str)]
    if "null" in kinds:
        out["nullable"] = True
        kinds = [k for k in kinds if k != "null"]
    if len(kinds) == 1:
        out["type"] = kinds[0]
    elif kinds:
        out.setdefault("anyOf", []).extend({"type": k} for k in kinds)
    elif out.get("nullable"):
        out["enum"] = [None]


def _bound(schema: Mapping[str, Any], out: dict[str, Any], bound: str, exclusive: str) -> None:
    """``exclusiveMinimum: 5`` (3.1) -> ``minimum: 5, exclusiveMinimum: true`` (3.0),
    keeping whichever of the two bounds is stricter."""
    limit = schema.get(exclusive)
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        return
    inclusive = schema.get(bound)
    lower = bound == "minimum"
    if isinstance(inclusive, (int, float)) and (inclusive > limit if lower else inclusive < limit):
        return  # the inclusive bound is the stricter one: it stays as it is
    out[bound] = limit
    out[exclusive] = True


def schema30(schema: Any) -> Any:
    """One JSON Schema 2020-12 schema as an OpenAPI 3.0 schema object."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    if not isinstance(schema, Mapping):
        return schema
    if "$ref" in schema:
        ref = {"$ref": schema["$ref"]}
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        if not rest:
            return ref
        converted = schema30(rest)
        converted["allOf"] = [ref, *converted.get("allOf", [])]
        return converted
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _KEPT or key.startswith("x-"):
            out[key] = value
        elif key == "type":
            _types(value, out)
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {name: schema30(item) for name, item in value.items()}
        elif key == "additionalProperties":
            out[key] = value if isinstance(value, bool) else schema30(value)
        elif key in _ONE_SCHEMA:
            out[key] = schema30(value)
        elif key in _LISTS and isinstance(value, list):
            members = [schema30(item) for item in value]
            if any(_is_null(m) for m in members):
                out["nullable"] = True
                members = [m for m in members if not _is_null(m)]
            if members:
                out.setdefault(key, []).extend(members)
        elif key == "const":
            out["enum"] = [value]
        elif key == "examples" and isinstance(value, list) and value:
            out.setdefault("example", value[0])
        elif key == "prefixItems" and isinstance(value, list) and "items" not in schema:
            out["items"] = {"anyOf": [schema30(item) for item in value]} if value else {}
        elif key == "contentEncoding" and value == "base64":
            out["format"] = "byte"
        elif key == "contentMediaType" and "contentEncoding" not in schema:
            out.setdefault("format", "binary")
    _bound(schema, out, "minimum", "exclusiveMinimum")
    _bound(schema, out, "maximum", "exclusiveMaximum")
    if isinstance(out.get("enum"), list) and None in out["enum"]:
        out["nullable"] = True
    if out.get("required") == []:
        del out["required"]
    for key in _LISTS:  # anyOf: [X] alone left after taking the null out: X, nullable
        listed = out.get(key)
        if isinstance(listed, list) and len(listed) == 1 and out.get("nullable"):
            only = listed[0]
            if isinstance(only, Mapping) and "$ref" not in only and not set(only) & set(out):
                del out[key]
                out.update(only)
    return out
