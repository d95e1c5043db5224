"""A draft contract inferred from calls seen: the examples' requests, recorded calls, and
the answers the definition gave them.

The draft is a starting point to read and edit, never saved by itself (the studio and
``notebook-kit contract infer`` show it; ``--save`` or the studio's Save keep it):

- a **query parameter** or a **header** seen in the requests (headers HTTP clients set by
  themselves, such as ``Accept`` or ``x-api-key``, are left out), typed ``integer``,
  ``number`` or ``boolean`` when every value seen reads as one, else ``string``;
  required when every request had it;
- the **body**: its media type, and for JSON (or a form) a schema of the values seen;
- a **response** per status seen: its media type, and for JSON a schema of the bodies.

A schema of JSON values keeps each value's type (``integer`` widens to ``number`` when
both are seen; other mixes give a list of types), an object's properties (required:
those every object had) and an array's items. Descriptions are left for the person.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from .contracts import (
    BODY_METHODS,
    Contract,
    Parameter,
    RequestBody,
    ResponseSpec,
    is_json_media_type,
    media_type_of,
    transport_header,
)

__all__ = ["SampleAnswer", "SampleRequest", "infer_contract", "infer_schema"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class SampleRequest:
    """A request seen: its path parameters, query string, headers and body."""

    path_parameters: Mapping[str, str] = field(default_factory=dict, hash=False)
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, hash=False)
    body: bytes = b""


@dataclass(frozen=True)
class SampleAnswer:
    """An answer the definition gave."""

    status: int
    content_type: str | None
    body: bytes


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() and math.isfinite(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def infer_schema(values: Sequence[Any]) -> dict[str, Any]:
    """A JSON Schema every one of ``values`` (parsed JSON) fits."""
    if not values:
        return {}
    types = {_json_type(v) for v in values}
    if types == {"integer", "number"}:
        types = {"number"}
    schema: dict[str, Any] = {}
    if len(types) == 1:
        schema["type"] = next(iter(types))
    else:
        schema["type"] = sorted(types)
    if "object" in types:
        objects = [v for v in values if isinstance(v, dict)]
        keys: list[str] = []
        for item in objects:
            keys += [k for k in item if k not in keys]
        schema["properties"] = {
            k: infer_schema([item[k] for item in objects if k in item]) for k in keys
        }
        required = [k for k in keys if all(k in item for item in objects)]
        if required:
            schema["required"] = required
    if "array" in types:
        items = [x for v in values if isinstance(v, list) for x in v]
        if items:
            schema["items"] = infer_schema(items)
    return schema


def _text_type(values: Sequence[str]) -> str:
    """The simple type every text value reads as."""
    if values and all(_INTEGER.fullmatch(v) for v in values):
        return "integer"
    if values and all(_NUMBER.fullmatch(v) for v in values):
        return "number"
    if values and all(v in ("true", "false") for v in values):
        return "boolean"
    return "string"


def _parameters(location: str, seen: Sequence[Mapping[str, str]]) -> list[Parameter]:
    names: list[str] = []
    for values in seen:
        names += [n for n in values if n not in names]
    return [
        Parameter(
            name,
            location,
            {"type": _text_type([v[name] for v in seen if name in v])},
            required=all(name in v for v in seen),
        )
        for name in names
    ]


def _body(requests: Sequence[SampleRequest]) -> RequestBody | None:
    sent = [r for r in requests if r.body]
    if not sent:
        return None
    types = [
        media_type_of(next((v for k, v in r.headers.items() if k.lower() == "content-type"), ""))
        for r in sent
    ]
    typed = [t for t in types if t]
    media_type = max(set(typed), key=typed.count) if typed else "application/json"
    # the bodies sent as that media type (all of them when none said what it sent)
    bodies = [r.body for r, t in zip(sent, types, strict=True) if t == media_type or not typed]
    required = len(sent) == len(requests)
    if is_json_media_type(media_type):
        try:
            parsed = [json.loads(b) for b in bodies]
        except ValueError:
            return RequestBody(media_type, None, required)
        return RequestBody(media_type, infer_schema(parsed), required)
    if media_type == "application/x-www-form-urlencoded":
        forms = [dict(parse_qsl(b.decode("utf-8", "replace"))) for b in bodies]
        properties = {
            name: {"type": "string"} for form in forms for name in form
        }  # a form's values are text
        required_names = [n for n in properties if all(n in f for f in forms)]
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required_names:
            schema["required"] = required_names
        return RequestBody(media_type, schema, required)
    return RequestBody(media_type, None, required)


def _responses(answers: Sequence[SampleAnswer]) -> list[ResponseSpec]:
    specs = []
    for status in sorted({a.status for a in answers}):
        mine = [a for a in answers if a.status == status]
        media_types = [media_type_of(a.content_type) for a in mine if a.content_type]
        if not media_types or not any(a.body for a in mine):
            specs.append(ResponseSpec(str(status)))
            continue
        media_type = max(set(media_types), key=media_types.count)
        schema = None
        if is_json_media_type(media_type):
            try:
                schema = infer_schema(
                    [
                        json.loads(a.body)
                        for a in mine
                        if media_type_of(a.content_type) == media_type
                    ]
                )
            except ValueError:
                schema = None
        specs.append(ResponseSpec(str(status), media_type, schema))
    return specs


def infer_contract(
    method: str,
    path_parameters: Sequence[str],
    requests: Sequence[SampleRequest],
    answers: Sequence[SampleAnswer],
) -> Contract:
    """A draft contract of a ``method`` definition with ``path_parameters`` from what it
    was sent and answered (see the module docstring)."""
    queries = [dict(parse_qsl(r.query, keep_blank_values=True)) for r in requests]
    headers = [
        {k.lower(): v for k, v in r.headers.items() if not transport_header(k)} for r in requests
    ]
    paths = [{k: v for k, v in r.path_parameters.items() if k in path_parameters} for r in requests]
    parameters = [
        Parameter(name, "path", {"type": _text_type([p[name] for p in paths if name in p])}, True)
        for name in path_parameters
    ]
    parameters += _parameters("query", queries) + _parameters("header", headers)
    body = _body(requests) if method in BODY_METHODS else None
    return Contract(tuple(parameters), body, tuple(_responses(answers)))
