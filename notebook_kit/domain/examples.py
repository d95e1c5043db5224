"""Examples: a saved request of one definition and what its answer must hold.

An ``Example`` belongs to one definition (``app``, ``api_id``) and is named there
(``name``, unique per definition). Its ``request`` is what the studio's Test tab sends
(path parameters, query, headers, body); its ``expect`` what must hold of the answer: the
status, JSON fields by path, and a maximum duration (``checks.compare`` lists how an
answer differs from it). docs/examples.md is the contract.

Field paths (``JSON paths``) are dot-separated: ``items.0.name`` is the ``name`` of the
first element of the ``items`` array. A segment of digits indexes an array (it is a key
of an object when the value there is an object); ``$`` alone is the whole body, and a
leading ``$.`` is allowed (``$.items.0.name``). Keys holding a dot cannot be addressed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError
from .models import validate_id

__all__ = [
    "MAX_DURATION_MS",
    "Example",
    "ExampleRequest",
    "Expectation",
    "parse_field",
    "parse_pair",
    "parse_path",
    "validate_name",
]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_DURATION_MS = 3_600_000.0


def validate_name(value: object) -> str:
    """An example's name: 1 to 64 of A-Z a-z 0-9 _ - (it names a file in a commit)."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValidationError(
            f"example name {value!r} must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'",
            field="name",
        )
    return value


def parse_path(path: object) -> tuple[str, ...]:
    """The segments of a field path (``()`` for ``$``, the whole body)."""
    if not isinstance(path, str) or not path.strip():
        raise ValidationError(
            "a JSON field path must be text such as 'items.0.name' ('$' is the whole body)",
            field="expect",
        )
    text = path.strip()
    if text == "$":
        return ()
    if text.startswith("$."):
        text = text[2:]
    segments = tuple(text.split("."))
    for number, segment in enumerate(segments, start=1):
        if not segment.strip():
            raise ValidationError(
                f"JSON field path {path!r}: segment {number} is empty "
                "(write 'items.0.name': names and array indexes joined by single dots)",
                field="expect",
            )
    return segments


def parse_field(text: str) -> tuple[str, Any]:
    """``PATH=VALUE`` (the CLI's ``--json-field`` and the studio's lines) as (path,
    value): VALUE is read as JSON when it is JSON (``34``, ``true``, ``null``,
    ``"34"``, ``[1, 2]``), else taken as a string (``name=Alice``)."""
    path, sep, raw = text.partition("=")
    if not sep:
        raise ValidationError(
            f"JSON field {text!r} must look like PATH=VALUE, such as name=Alice or items.0.age=34",
            field="expect",
        )
    parse_path(path)
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return path.strip(), value


def parse_pair(text: str, separator: str, what: str) -> tuple[str, str]:
    """``NAME=VALUE`` (path parameters) or ``Name: value`` (headers) as (name, value)."""
    name, sep, value = text.partition(separator)
    if not sep or not name.strip() or " " in name.strip():
        shape = "NAME=VALUE" if separator == "=" else "'Name: value'"
        raise ValidationError(f"{what} {text!r} must be written {shape}", field=what)
    return name.strip(), value.strip()


def _text_map(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in value.items()
    ):
        raise ValidationError(f"the example's {what} must map names to text values", field=what)
    return {k: str(v) for k, v in value.items()}


def _known(data: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ValidationError(
            f"the example's {what} has no field {unknown[0]!r}; its fields are "
            + ", ".join(allowed),
            field=what,
        )


@dataclass(frozen=True)
class ExampleRequest:
    """What the example sends: as the Test tab's inputs (the body as text; a dict or a
    list given here is written as JSON)."""

    path_parameters: Mapping[str, str] = field(default_factory=dict, hash=False)
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict, hash=False)
    body: Any = ""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "path_parameters", _text_map(self.path_parameters, "path_parameters")
        )
        object.__setattr__(self, "headers", _text_map(self.headers, "headers"))
        if not isinstance(self.query, str):
            raise ValidationError("the example's query must be text like 'a=1&b=2'", field="query")
        object.__setattr__(self, "query", self.query.strip().lstrip("?"))
        body = self.body
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if body is None:
            body = ""
        if not isinstance(body, str):
            raise ValidationError(
                "the example's body must be text (or a JSON object)", field="body"
            )
        object.__setattr__(self, "body", body)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path_parameters": dict(self.path_parameters),
            "query": self.query,
            "headers": dict(self.headers),
            "body": self.body,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ExampleRequest:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ValidationError("the example's request must be an object", field="request")
        _known(data, ("path_parameters", "query", "headers", "body"), "request")
        return cls(
            data.get("path_parameters") or {},
            data.get("query") or "",
            data.get("headers") or {},
            data.get("body") or "",
        )


@dataclass(frozen=True)
class Expectation:
    """What must hold of the answer: its ``status``, the value at each JSON field path
    (``json``: path -> expected JSON value, compared exactly; ``true`` is not ``1``),
    and that the run took at most ``max_ms`` milliseconds (None: any time)."""

    status: int = 200
    json: Mapping[str, Any] = field(default_factory=dict, hash=False)
    max_ms: float | None = None

    def __post_init__(self) -> None:
        status = self.status
        if isinstance(status, str) and status.strip().isdigit():
            status = int(status)
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            raise ValidationError(
                f"the expected status must be an HTTP status from 100 to 599, not {status!r}",
                field="status",
            )
        object.__setattr__(self, "status", status)
        if not isinstance(self.json, Mapping):
            raise ValidationError(
                "the expected JSON fields must map paths to values, like {'name': 'Alice'}",
                field="expect",
            )
        fields = {}
        for path, value in self.json.items():
            parse_path(path)
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                raise ValidationError(
                    f"the expected value at {path!r} is not JSON: {value!r}", field="expect"
                ) from None
            fields[path.strip()] = value
        object.__setattr__(self, "json", fields)
        object.__setattr__(self, "max_ms", _duration(self.max_ms))

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "json": dict(self.json), "max_ms": self.max_ms}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Expectation:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ValidationError("the example's expect must be an object", field="expect")
        _known(data, ("status", "json", "max_ms"), "expect")
        return cls(data.get("status", 200), data.get("json") or {}, data.get("max_ms"))


def _duration(value: object) -> float | None:
    if value is None or value == "":
        return None
    try:
        ms = float(value) if isinstance(value, (int, float, str)) else None
    except ValueError:
        ms = None
    if ms is None or isinstance(value, bool) or not 0 < ms <= MAX_DURATION_MS:
        raise ValidationError(
            f"the maximum duration must be milliseconds, more than 0 and at most "
            f"{MAX_DURATION_MS:.0f}, not {value!r}",
            field="max_ms",
        )
    return ms


@dataclass(frozen=True)
class Example:
    """A saved example of definition ``api_id`` of application ``app``."""

    app: str
    api_id: str
    name: str
    request: ExampleRequest = field(default_factory=ExampleRequest)
    expect: Expectation = field(default_factory=Expectation)

    def __post_init__(self) -> None:
        validate_id(self.app, "application ID")
        validate_id(self.api_id)
        validate_name(self.name)
        if not isinstance(self.request, ExampleRequest):
            raise ValidationError("the example's request must be an object", field="request")
        if not isinstance(self.expect, Expectation):
            raise ValidationError("the example's expect must be an object", field="expect")

    @classmethod
    def of(
        cls,
        app: str,
        api_id: str,
        name: str,
        request: ExampleRequest | Mapping[str, Any] | None = None,
        expect: Expectation | Mapping[str, Any] | None = None,
    ) -> Example:
        """An example from records or mappings (``ExampleRequest.from_dict`` and
        ``Expectation.from_dict`` read the mappings; None is the default)."""
        return cls(
            app,
            api_id,
            name,
            request if isinstance(request, ExampleRequest) else ExampleRequest.from_dict(request),
            expect if isinstance(expect, Expectation) else Expectation.from_dict(expect),
        )

    @property
    def key(self) -> str:
        """``api_id/name``: how lines and tables name it within its application."""
        return f"{self.api_id}/{self.name}"

    def check_parameters(self, path_parameters: tuple[str, ...]) -> None:
        """Refuse a request whose path parameters are not exactly ``path_parameters``
        (the definition's), each with a value."""
        given = self.request.path_parameters
        for name in path_parameters:
            if not given.get(name):
                raise ValidationError(
                    f"example {self.key}: give a value for the path parameter {{{name}}}",
                    field="path_parameters",
                )
        extra = sorted(set(given) - set(path_parameters))
        if extra:
            raise ValidationError(
                f"example {self.key}: the definition has no path parameter {{{extra[0]}}}",
                field="path_parameters",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "api_id": self.api_id,
            "name": self.name,
            "request": self.request.to_dict(),
            "expect": self.expect.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Example:
        if not isinstance(data, Mapping):
            raise ValidationError("an example must be an object")
        missing = [k for k in ("app", "api_id", "name") if k not in data]
        if missing:
            raise ValidationError(f"an example lacks {', '.join(missing)}")
        _known(data, ("app", "api_id", "name", "request", "expect"), "record")
        return cls(
            data["app"],
            data["api_id"],
            data["name"],
            ExampleRequest.from_dict(data.get("request")),
            Expectation.from_dict(data.get("expect")),
        )
