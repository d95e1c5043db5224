"""A definition's contract: what it accepts and what it answers, declared.

A contract is optional. A definition without one behaves exactly as before: the runtime
passes every request to the action and never looks at the answer. A contract declares

- **parameters**: query, header and path parameters, each with a name, a JSON Schema for
  its value (``{"type": "integer"}``; ``type`` alone is the shorthand), whether it is
  required, and a description;
- a **request body**: its media type (``application/json`` by default), a JSON Schema,
  whether it is required;
- **responses**: per status (``"200"``, ``"404"``, or ``"default"``), a media type, a JSON
  Schema and a description.

Here is the declaration and its rules; ``contract_checks`` checks calls against it.
Schemas are JSON Schema 2020-12 (local ``$ref`` only), validated when the contract is
built, so a saved contract always compiles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError

__all__ = [
    "BODY_METHODS",
    "EMPTY",
    "LOCATIONS",
    "SIMPLE_TYPES",
    "Contract",
    "Parameter",
    "RequestBody",
    "ResponseSpec",
    "is_json_media_type",
    "media_type_of",
    "pointer",
    "transport_header",
]

LOCATIONS = ("query", "header", "path")
SIMPLE_TYPES = ("string", "integer", "number", "boolean", "array")
BODY_METHODS = frozenset({"POST", "PUT", "DELETE"})
MAX_CONTRACT_BYTES = 256 * 1024  # a contract as JSON: generous for hand-written schemas

_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")
_QUERY_NAME = re.compile(r"[^\x00-\x20\x7f&=#]{1,128}")
_STATUS = re.compile(r"[1-5][0-9][0-9]")
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"
_BARE_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}")
# Headers a caller's client sets by itself: never required of a contract, never inferred.
_TRANSPORT_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "connection",
        "content-length",
        "content-type",
        "expect",
        "host",
        "origin",
        "referer",
        "transfer-encoding",
        "user-agent",
        "x-api-key",
    }
)


def media_type_of(content_type: str | None) -> str:
    """``application/json; charset=utf-8`` -> ``application/json`` ('' for none)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def is_json_media_type(media_type: str) -> bool:
    """``application/json`` and the ``+json`` structured suffix (``application/problem+json``)."""
    return media_type == "application/json" or media_type.endswith("+json")


def pointer(parts: Iterable[Any]) -> str:
    """A JSON pointer (RFC 6901) of path parts: ``["items", 0]`` -> ``/items/0``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _text(value: object, what: str, limit: int = 2000) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit:
        raise ValidationError(
            f"{what} must be text of at most {limit} characters", field="contract"
        )
    return value.strip()


def _check_schema(schema: object, what: str) -> dict[str, Any]:
    """``schema`` if it is a JSON Schema (2020-12) that compiles, as a plain dict."""
    if not isinstance(schema, Mapping):
        raise ValidationError(f"{what} must be a JSON Schema object", field="contract")
    try:
        text = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} is not JSON: {exc}", field="contract") from None
    plain: dict[str, Any] = json.loads(text)
    for ref in _refs(plain):
        if not ref.startswith("#"):
            raise ValidationError(
                f"{what}: $ref {ref!r} points outside the schema; only local references "
                "('#/$defs/...') are allowed",
                field="contract",
            )
    import jsonschema_rs

    try:
        jsonschema_rs.meta.validate(plain)
        jsonschema_rs.validator_for(plain, validate_formats=True)
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValidationError(
            f"{what} is not a valid JSON Schema: {first}", field="contract"
        ) from None
    return plain


def _refs(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _check_media_type(value: object, what: str) -> str:
    text = media_type_of(value) if isinstance(value, str) else ""
    if not _BARE_MEDIA_TYPE.fullmatch(text):
        raise ValidationError(
            f"{what} {value!r} is not a media type like 'application/json'", field="contract"
        )
    return text


def _check_bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{what} must be true or false", field="contract")
    return value


def _known(data: Mapping[str, Any], allowed: Sequence[str], what: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ValidationError(
            f"{what} has no field {unknown[0]!r}; its fields are {', '.join(allowed)}",
            field="contract",
        )


@dataclass(frozen=True)
class Parameter:
    """A query, header or path parameter: its value's JSON Schema, whether required."""

    name: str
    location: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "string"}, hash=False)
    required: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if self.location not in LOCATIONS:
            raise ValidationError(
                f"a parameter is in one of {', '.join(LOCATIONS)}, not {self.location!r}",
                field="contract",
            )
        pattern = _HEADER_NAME if self.location == "header" else _QUERY_NAME
        if not isinstance(self.name, str) or not pattern.fullmatch(self.name):
            raise ValidationError(
                f"{self.location} parameter name {self.name!r} is not a valid name",
                field="contract",
            )
        if self.location == "header":
            object.__setattr__(self, "name", self.name.lower())
            if self.name in ("content-type", "accept", "authorization"):
                raise ValidationError(
                    f"header {self.name!r} is described by the body and the responses, "
                    "not declared as a parameter",
                    field="contract",
                )
        what = f"the schema of {self.location} parameter {self.name!r}"
        object.__setattr__(self, "schema", _check_schema(self.schema, what))
        required = _check_bool(self.required, f"'required' of parameter {self.name!r}")
        if self.location == "path" and not required:
            required = True  # a path parameter is always there
        object.__setattr__(self, "required", required)
        object.__setattr__(self, "description", _text(self.description, "a description"))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "in": self.location,
            "schema": dict(self.schema),
            "required": self.required,
        }
        if self.description:
            data["description"] = self.description
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Parameter:
        """From ``{"name", "in", "schema" | "type", "required", "description"}``."""
        if not isinstance(data, Mapping):
            raise ValidationError("a parameter must be an object", field="contract")
        _known(data, ("name", "in", "schema", "type", "required", "description"), "a parameter")
        if "name" not in data or "in" not in data:
            raise ValidationError("a parameter needs a 'name' and an 'in'", field="contract")
        schema = data.get("schema")
        if schema is None:
            kind = data.get("type", "string")
            if kind not in SIMPLE_TYPES:
                raise ValidationError(
                    f"parameter {data['name']!r}: type {kind!r} is not one of "
                    f"{', '.join(SIMPLE_TYPES)}",
                    field="contract",
                )
            schema = (
                {"type": kind, "items": {"type": "string"}} if kind == "array" else {"type": kind}
            )
        elif "type" in data:
            raise ValidationError(
                f"parameter {data['name']!r}: give 'type' or 'schema', not both", field="contract"
            )
        return cls(
            data["name"],
            data["in"],
            schema,
            data.get("required", data["in"] == "path"),
            data.get("description") or "",
        )


@dataclass(frozen=True)
class RequestBody:
    """The request body a definition accepts: one media type and its JSON Schema."""

    media_type: str = "application/json"
    schema: Mapping[str, Any] | None = field(default=None, hash=False)
    required: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "media_type", _check_media_type(self.media_type, "the body's media type")
        )
        if self.schema is not None:
            object.__setattr__(self, "schema", _check_schema(self.schema, "the body schema"))
        object.__setattr__(self, "required", _check_bool(self.required, "the body's 'required'"))
        object.__setattr__(self, "description", _text(self.description, "a description"))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"media_type": self.media_type, "required": self.required}
        if self.schema is not None:
            data["schema"] = dict(self.schema)
        if self.description:
            data["description"] = self.description
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestBody:
        if not isinstance(data, Mapping):
            raise ValidationError("the body must be an object", field="contract")
        _known(data, ("media_type", "schema", "required", "description"), "the body")
        return cls(
            data.get("media_type") or "application/json",
            data.get("schema"),
            data.get("required", True),
            data.get("description") or "",
        )


@dataclass(frozen=True)
class ResponseSpec:
    """One declared answer: its status (``"200"`` or ``"default"``), media type, schema."""

    status: str
    media_type: str | None = None
    schema: Mapping[str, Any] | None = field(default=None, hash=False)
    description: str = ""

    def __post_init__(self) -> None:
        status = str(self.status).strip() if isinstance(self.status, (str, int)) else ""
        if isinstance(self.status, bool) or not (status == "default" or _STATUS.fullmatch(status)):
            raise ValidationError(
                f"a response's status is 100 to 599 or 'default', not {self.status!r}",
                field="contract",
            )
        object.__setattr__(self, "status", status)
        if self.media_type is not None:
            what = f"the media type of response {status}"
            object.__setattr__(self, "media_type", _check_media_type(self.media_type, what))
        if self.schema is not None:
            if self.media_type is None:
                object.__setattr__(self, "media_type", "application/json")
            what = f"the schema of response {status}"
            object.__setattr__(self, "schema", _check_schema(self.schema, what))
        object.__setattr__(self, "description", _text(self.description, "a description"))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status}
        if self.media_type is not None:
            data["media_type"] = self.media_type
        if self.schema is not None:
            data["schema"] = dict(self.schema)
        if self.description:
            data["description"] = self.description
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResponseSpec:
        if not isinstance(data, Mapping) or "status" not in data:
            raise ValidationError("a response must be an object with a 'status'", field="contract")
        _known(data, ("status", "media_type", "schema", "description"), "a response")
        return cls(
            data["status"],
            data.get("media_type"),
            data.get("schema"),
            data.get("description") or "",
        )


@dataclass(frozen=True)
class Contract:
    """What a definition declares it accepts and answers (see the module docstring)."""

    parameters: tuple[Parameter, ...] = ()
    body: RequestBody | None = None
    responses: tuple[ResponseSpec, ...] = ()

    def __post_init__(self) -> None:
        parameters = tuple(self.parameters)
        if not all(isinstance(p, Parameter) for p in parameters):
            raise ValidationError("parameters must be Parameter records", field="contract")
        seen: set[tuple[str, str]] = set()
        for p in parameters:
            if (p.location, p.name) in seen:
                raise ValidationError(
                    f"{p.location} parameter {p.name!r} is declared twice", field="contract"
                )
            seen.add((p.location, p.name))
        object.__setattr__(self, "parameters", parameters)
        if self.body is not None and not isinstance(self.body, RequestBody):
            raise ValidationError("the body must be a RequestBody record", field="contract")
        responses = tuple(sorted(self.responses, key=lambda r: (r.status == "default", r.status)))
        statuses = [r.status for r in responses]
        if len(set(statuses)) != len(statuses):
            twice = next(s for s in statuses if statuses.count(s) > 1)
            raise ValidationError(f"response {twice} is declared twice", field="contract")
        object.__setattr__(self, "responses", responses)
        if len(json.dumps(self.to_dict())) > MAX_CONTRACT_BYTES:
            raise ValidationError(
                f"the contract is larger than {MAX_CONTRACT_BYTES // 1024} KiB as JSON",
                field="contract",
            )

    @property
    def is_empty(self) -> bool:
        return not (self.parameters or self.body or self.responses)

    @property
    def checks_requests(self) -> bool:
        """Whether the runtime checks a request before the action (anything declared of
        the request)."""
        return bool(self.parameters or self.body)

    def parameters_in(self, location: str) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.location == location)

    def response(self, status: int | str) -> ResponseSpec | None:
        """The declared response for ``status`` (its own, else ``default``), or None."""
        code = str(status)
        found = None
        for spec in self.responses:
            if spec.status == code:
                return spec
            if spec.status == "default":
                found = spec
        return found

    def check_fits(self, method: str, path_parameters: Sequence[str]) -> None:
        """Refuse a contract that does not fit its definition: a path parameter the
        resource does not have, a body on a method that takes none."""
        for p in self.parameters_in("path"):
            if p.name not in path_parameters:
                raise ValidationError(
                    f"path parameter {p.name!r} is not in the resource (its parameters: "
                    f"{', '.join(path_parameters) or 'none'})",
                    field="contract",
                )
        if self.body is not None and method not in BODY_METHODS:
            raise ValidationError(
                f"a {method} takes no request body; only {', '.join(sorted(BODY_METHODS))} do",
                field="contract",
            )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.parameters:
            data["parameters"] = [p.to_dict() for p in self.parameters]
        if self.body is not None:
            data["body"] = self.body.to_dict()
        if self.responses:
            data["responses"] = [r.to_dict() for r in self.responses]
        return data

    @classmethod
    def from_dict(cls, data: Contract | Mapping[str, Any] | None) -> Contract:
        """From ``{"parameters": [...], "body": {...}, "responses": [...]}`` (each
        optional; None or ``{}``: nothing declared). ``responses`` may also map a status to
        its declaration (``{"200": {"schema": ...}}``)."""
        if data is None:
            return EMPTY
        if isinstance(data, Contract):
            return data
        if not isinstance(data, Mapping):
            raise ValidationError("a contract must be an object", field="contract")
        _known(data, ("parameters", "body", "responses"), "a contract")
        parameters = data.get("parameters") or []
        if not isinstance(parameters, list):
            raise ValidationError("the contract's parameters must be a list", field="contract")
        responses = data.get("responses") or []
        if isinstance(responses, Mapping):
            responses = [
                {**(value if isinstance(value, Mapping) else {}), "status": status}
                for status, value in responses.items()
            ]
        if not isinstance(responses, list):
            raise ValidationError("the contract's responses must be a list", field="contract")
        body = data.get("body")
        return cls(
            tuple(Parameter.from_dict(p) for p in parameters),
            None if body is None else RequestBody.from_dict(body),
            tuple(ResponseSpec.from_dict(r) for r in responses),
        )


EMPTY = Contract()


def transport_header(name: str) -> bool:
    """Whether ``name`` is a header HTTP clients set by themselves (never inferred)."""
    return name.lower() in _TRANSPORT_HEADERS
