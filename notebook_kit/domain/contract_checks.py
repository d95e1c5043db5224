"""Checking calls against a definition's contract (``domain.contracts``).

The runtime checks a request before the action runs (``compile_contract`` ->
``CompiledContract.check_request``): every violation is listed (where: body, query,
header or path; a JSON pointer; the rule; a message), and the caller gets one 422
(``answers.unprocessable``). An answer is checked against the declared response of its
status (``check_response``): at deploy, a failing example; when serving, a note in the
request log, the answer unchanged. A contract is compiled once per deployed version
(jsonschema-rs validators), never per call; a valid call costs one validator call per
location declared (well under a microsecond each for small objects).

Parameters arrive as text: a value whose schema's ``type`` is ``integer``, ``number`` or
``boolean`` is read as one when it can be (``"3"`` -> ``3``), else kept as text so the
``type`` rule names the mismatch; an ``array`` parameter takes every value of its name
(a header's, split at commas). A form body (``application/x-www-form-urlencoded``) is
checked as an object of its fields, read the same way; a JSON body as parsed JSON; any
other media type as text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from .contracts import Contract, Parameter, is_json_media_type, media_type_of, pointer

__all__ = ["CompiledContract", "Violation", "compile_contract"]

_INTEGER = re.compile(r"[+-]?[0-9]+")


class Violation(NamedTuple):
    """One way a request (or an answer) breaks its contract."""

    location: str  # body, query, header, path (a request); response (an answer)
    pointer: str  # a JSON pointer into the body, or to the parameter ("/page")
    rule: str  # the JSON Schema keyword that failed ("type", "required"), or ours
    message: str

    def to_dict(self) -> dict[str, str]:
        return {
            "in": self.location,
            "pointer": self.pointer,
            "rule": self.rule,
            "message": self.message,
        }

    def __str__(self) -> str:
        return f"{self.location} {self.pointer or '/'}: {self.message}"


def _coerce(value: str, schema: Mapping[str, Any]) -> Any:
    """A parameter's text as its schema's simple type, when it reads as one; else the text
    (so the schema's ``type`` rule names the mismatch)."""
    kind = schema.get("type")
    if kind == "integer" and _INTEGER.fullmatch(value):
        return int(value)
    if kind == "number":
        if _INTEGER.fullmatch(value):
            return int(value)
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def _violations(
    validator: Any, instance: Any, location: str, prefix: Sequence[str] = ()
) -> list[Violation]:
    found = []
    for error in validator.iter_errors(instance):
        path = [*prefix, *error.instance_path]
        kind = error.kind
        schema_path = list(error.schema_path)
        rule = str(schema_path[-1]) if schema_path and isinstance(schema_path[-1], str) else ""
        name = type(kind).__name__
        if name == "Required":
            path.append(kind.property)
            rule = "required"
        found.append(Violation(location, pointer(path), rule or name.lower(), error.message))
    return found


class _Parameters:
    """The declared parameters of one location, checked as one object in one call."""

    __slots__ = ("arrays", "location", "names", "schemas", "validator")

    def __init__(self, location: str, parameters: Sequence[Parameter]) -> None:
        import jsonschema_rs

        self.location = location
        self.names = tuple(p.name for p in parameters)
        self.schemas = {p.name: p.schema for p in parameters}
        self.arrays = frozenset(p.name for p in parameters if p.schema.get("type") == "array")
        schema = {
            "type": "object",
            "properties": {p.name: dict(p.schema) for p in parameters},
            "required": [p.name for p in parameters if p.required],
        }
        self.validator = jsonschema_rs.validator_for(schema, validate_formats=True)

    def instance(self, values: Mapping[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in self.names:
            value = values.get(name)
            if value is None:
                continue
            schema = self.schemas[name]
            if name in self.arrays:
                items = schema.get("items")
                items = items if isinstance(items, Mapping) else {}
                found[name] = [_coerce(v, items) for v in value]
            else:
                found[name] = _coerce(value, schema)
        return found

    def check(self, values: Mapping[str, Any]) -> list[Violation]:
        instance = self.instance(values)
        if self.validator.is_valid(instance):
            return []
        return _violations(self.validator, instance, self.location)


class CompiledContract:
    """A contract made ready to check calls: built once per deployed version."""

    __slots__ = (
        "_body",
        "_body_validator",
        "_header",
        "_path",
        "_query",
        "_responses",
        "checks_requests",
        "checks_responses",
        "contract",
    )

    def __init__(self, contract: Contract) -> None:
        import jsonschema_rs

        self.contract = contract
        self._query = self._group(contract, "query")
        self._header = self._group(contract, "header")
        self._path = self._group(contract, "path")
        self._body = contract.body
        self._body_validator = (
            None
            if contract.body is None or contract.body.schema is None
            else jsonschema_rs.validator_for(dict(contract.body.schema), validate_formats=True)
        )
        self._responses = {
            spec.status: (
                spec,
                None
                if spec.schema is None
                else jsonschema_rs.validator_for(dict(spec.schema), validate_formats=True),
            )
            for spec in contract.responses
        }
        # read per call: plain attributes
        self.checks_requests = contract.checks_requests
        # whether an answer can break a declared response (one with a media type)
        self.checks_responses = any(spec.media_type is not None for spec in contract.responses)

    @staticmethod
    def _group(contract: Contract, location: str) -> _Parameters | None:
        declared = contract.parameters_in(location)
        return _Parameters(location, declared) if declared else None

    def check_request(
        self,
        path_parameters: Mapping[str, str],
        query_string: str,
        headers: Any,
        body: bytes,
    ) -> list[Violation]:
        """Every violation of the request (none: the action may run). ``headers``: a
        case-insensitive mapping (``get``, ``getall``)."""
        violations: list[Violation] = []
        if self._path is not None:
            violations += self._path.check(path_parameters)
        if self._query is not None:
            query: dict[str, Any] = {}
            arrays = self._query.arrays
            for name, value in parse_qsl(query_string, keep_blank_values=True):
                if name in arrays:
                    query.setdefault(name, []).append(value)
                else:
                    query[name] = value  # a repeated name keeps its last value, as req does
            violations += self._query.check(query)
        if self._header is not None:
            values: dict[str, Any] = {}
            for name in self._header.names:
                if name in self._header.arrays:
                    found = headers.getall(name, None)
                    if found:
                        values[name] = [v.strip() for item in found for v in item.split(",")]
                else:
                    value = headers.get(name)
                    if value is not None:
                        values[name] = value
            violations += self._header.check(values)
        if self._body is not None:
            violations += self._check_body(headers.get("content-type"), body)
        return violations

    def _check_body(self, content_type: str | None, body: bytes) -> list[Violation]:
        declared = self._body
        assert declared is not None
        if not body:
            if declared.required:
                return [Violation("body", "", "required", "a request body is required")]
            return []
        media_type = media_type_of(content_type)
        if media_type != declared.media_type:
            given = f"not {media_type}" if media_type else "none was given"
            message = f"the body must be sent as {declared.media_type} ({given})"
            return [Violation("header", "/content-type", "mediaType", message)]
        validator = self._body_validator
        if validator is None:
            return []
        try:
            instance = _read_body(body, declared.media_type, declared.schema)
        except ValueError as exc:
            return [Violation("body", "", "syntax", str(exc))]
        if validator.is_valid(instance):
            return []
        return _violations(validator, instance, "body")

    def check_response(self, status: int, content_type: str | None, body: bytes) -> list[Violation]:
        """How an answer breaks its declared response (none where nothing is declared
        for its status, or it holds)."""
        found = self._responses.get(str(status)) or self._responses.get("default")
        if found is None:
            return []
        spec, validator = found
        if spec.media_type is None:
            return []
        media_type = media_type_of(content_type)
        if media_type != spec.media_type:
            given = f"is {media_type}" if media_type else "has no Content-Type"
            message = f"the answer {status} {given}; its contract declares {spec.media_type}"
            return [Violation("response", "/content-type", "mediaType", message)]
        if validator is None:
            return []
        try:
            instance = _read_body(body, spec.media_type, spec.schema)
        except ValueError as exc:
            return [Violation("response", "", "syntax", str(exc))]
        if validator.is_valid(instance):
            return []
        return _violations(validator, instance, "response")


def _read_body(body: bytes, media_type: str, schema: Mapping[str, Any] | None = None) -> Any:
    """The body as the value its ``schema`` is checked against: JSON parsed, a form as an
    object of its fields (read as their properties' simple types), text as a string.
    Raises ValueError naming what is wrong."""
    if is_json_media_type(media_type):
        try:
            return json.loads(body)
        except ValueError as exc:
            text = getattr(exc, "msg", str(exc))
            raise ValueError(f"the body is not JSON: {text}") from None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the body is not UTF-8 text") from None
    if media_type == "application/x-www-form-urlencoded":
        properties = (schema or {}).get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        return {
            name: _coerce(value, properties.get(name) or {})
            for name, value in parse_qsl(text, keep_blank_values=True)
        }
    return text


def compile_contract(contract: Contract) -> CompiledContract | None:
    """The contract ready to check calls, or None when nothing is declared."""
    return None if contract.is_empty else CompiledContract(contract)
