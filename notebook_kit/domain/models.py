"""The domain records and their rules: applications, definitions, constants, deployments.

Pure: no I/O. Every record validates itself when built, so an invalid one cannot exist.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ValidationError
from .clock import now
from .constants import CONSTANT_TYPES, Constant
from .contracts import EMPTY, Contract

__all__ = [
    "APPLICATION_TYPE",
    "CONSTANT_TYPES",
    "MAX_DESCRIPTION",
    "MAX_TIMEOUT",
    "METHODS",
    "Application",
    "Constant",
    "Definition",
    "Deployment",
    "Stage",
    "endpoint_url",
    "normalize_resource",
    "now",
    "split_resource",
    "validate_description",
    "validate_id",
    "validate_timeout",
]

APPLICATION_TYPE = "REST API"
METHODS = ("GET", "POST", "PUT", "DELETE", "OPTIONS")

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_LITERAL = re.compile(r"[A-Za-z0-9._~-]+")
_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"
_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(\s*;\s*{_TOKEN}=(\"[^\"\r\n]*\"|{_TOKEN}))*")


class Stage(enum.StrEnum):
    """A deploy environment, named by the URL's first segment."""

    DEV = "dev"  # debug deploy
    PROD = "prod"  # release deploy

    @classmethod
    def parse(cls, value: str | Stage) -> Stage:
        try:
            return cls(value)
        except ValueError:
            raise ValidationError(
                f"stage must be 'dev' or 'prod', not {value!r}", field="stage"
            ) from None


def validate_id(value: str, what: str = "API ID") -> str:
    """An application or API ID: 1 to 64 of A-Z a-z 0-9 _ -."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValidationError(
            f"{what} {value!r} must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'",
            field="id" if what == "API ID" else "app",
        )
    return value


def split_resource(resource: str) -> tuple[str, ...]:
    """Check a resource path and return its segments (leading/trailing '/' tolerated)."""
    if not isinstance(resource, str):
        raise ValidationError("resource must be a string such as 'employee/{id}'", field="resource")
    text = resource.strip().strip("/")
    if not text:
        raise ValidationError(
            "resource is empty; give at least one segment, such as 'employee/{id}'",
            field="resource",
        )
    segments = tuple(text.split("/"))
    seen: set[str] = set()
    for number, segment in enumerate(segments, start=1):
        where = f"resource segment {number} {segment!r}"
        if not segment:
            raise ValidationError(f"resource segment {number} is empty ('//')", field="resource")
        if segment.startswith("{") or segment.endswith("}"):
            if not segment.endswith("}"):
                raise ValidationError(f"{where} has an unclosed brace", field="resource")
            if not segment.startswith("{"):
                raise ValidationError(f"{where} has a '}}' without its '{{'", field="resource")
            match = _PARAM.fullmatch(segment)
            if not match:
                raise ValidationError(
                    f"{where}: a parameter name must be an identifier, like {{id}}",
                    field="resource",
                )
            name = match.group(1)
            if name in seen:
                raise ValidationError(f"{where} repeats the parameter {{{name}}}", field="resource")
            seen.add(name)
        elif not _LITERAL.fullmatch(segment):
            raise ValidationError(
                f"{where} may only hold A-Z a-z 0-9 . _ ~ - (or be a {{parameter}})",
                field="resource",
            )
    return segments


def normalize_resource(resource: str) -> str:
    return "/".join(split_resource(resource))


def param_name(segment: str) -> str | None:
    """The parameter name of a ``{name}`` segment, else None."""
    return segment[1:-1] if segment.startswith("{") else None


def endpoint_url(base_url: str, stage: Stage | str, app: str, resource: str) -> str:
    return f"{base_url.rstrip('/')}/{Stage.parse(stage)}/{app}/{resource}"


@dataclass(frozen=True)
class Application:
    """An application definition of type "REST API"; its ID is the URL's {rest_api_id}."""

    id: str
    label: str = ""
    type: str = APPLICATION_TYPE

    def __post_init__(self) -> None:
        validate_id(self.id, "application ID")
        if self.type != APPLICATION_TYPE:
            raise ValidationError(
                f"application type must be {APPLICATION_TYPE!r}, not {self.type!r}", field="type"
            )
        if self.label is not None and not isinstance(self.label, str):
            raise ValidationError("application label must be text", field="label")
        if not (self.label or "").strip():
            object.__setattr__(self, "label", self.id)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "label": self.label}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Application:
        return cls(data["id"], data.get("label") or "", data.get("type", APPLICATION_TYPE))


MAX_TIMEOUT = 3600


def validate_timeout(value: object) -> float | None:
    """A definition's time limit: None (the setting's), or seconds in (0, 3600]."""
    if value is None or value == "":
        return None
    try:
        seconds = float(value) if isinstance(value, (str, int, float)) else None
    except ValueError:
        seconds = None
    if seconds is None or isinstance(value, bool) or not 0 < seconds <= MAX_TIMEOUT:
        raise ValidationError(
            f"timeout must be seconds, more than 0 and at most {MAX_TIMEOUT}", field="timeout"
        )
    return seconds


MAX_DESCRIPTION = 200


def validate_description(value: str) -> str:
    """A deployment's description: one line of at most 200 characters, trimmed ('' for
    none)."""
    text = value.strip()
    if "\n" in text or "\r" in text:
        raise ValidationError("a deployment description is one line", field="description")
    if len(text) > MAX_DESCRIPTION:
        raise ValidationError(
            f"a deployment description is at most {MAX_DESCRIPTION} characters ({len(text)} given)",
            field="description",
        )
    return text


@dataclass(frozen=True)
class Definition:
    """A REST API definition: one method on one resource, and the action that answers it."""

    app: str
    id: str
    label: str
    method: str
    resource: str
    action: str = ""
    content_type: str | None = None
    requires_auth: bool = True
    functions: str = ""
    constants: tuple[Constant, ...] = ()
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)
    # Seconds the action may run (a 504 past it); None: the action_timeout setting.
    timeout: float | None = None
    # What it declares it accepts and answers (domain.contracts); empty: nothing checked.
    contract: Contract = field(default=EMPTY, hash=False)

    def __post_init__(self) -> None:
        validate_id(self.app, "application ID")
        validate_id(self.id)
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValidationError("label must not be empty", field="label")
        method = self.method.upper() if isinstance(self.method, str) else self.method
        if method not in METHODS:
            raise ValidationError(
                f"method {self.method!r} is not one of {', '.join(METHODS)}", field="method"
            )
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "resource", normalize_resource(self.resource))
        content_type = (self.content_type or "").strip() or None
        if content_type is not None and not _MEDIA_TYPE.fullmatch(content_type):
            raise ValidationError(
                f"content type {content_type!r} is not a media type like 'application/json'",
                field="content_type",
            )
        object.__setattr__(self, "content_type", content_type)
        if not isinstance(self.requires_auth, bool):
            raise ValidationError("requires_auth must be true or false", field="requires_auth")
        for name, text in (("action", self.action), ("functions", self.functions)):
            if not isinstance(text, str):
                raise ValidationError(f"{name} must be Python source text", field=name)
        constants = tuple(self.constants)
        for item in constants:
            if not isinstance(item, Constant):
                raise ValidationError("constants must be Constant records", field="constants")
        names = [c.name for c in constants]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValidationError(f"constant {duplicates[0]} is defined twice", field="constants")
        object.__setattr__(self, "constants", constants)
        object.__setattr__(self, "timeout", validate_timeout(self.timeout))
        contract = self.contract
        if not isinstance(contract, Contract):
            contract = Contract.from_dict(contract)
        contract.check_fits(method, self.path_parameters)
        object.__setattr__(self, "contract", contract)

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.resource.split("/"))

    @property
    def path_parameters(self) -> tuple[str, ...]:
        return tuple(name for s in self.segments if (name := param_name(s)))

    def matches(self, text: str) -> bool:
        """True if ``text`` is found (case-insensitive) in the label, the API ID or the
        resource path (with or without its leading '/')."""
        needle = text.strip().casefold().lstrip("/")
        return any(needle in field.casefold() for field in (self.label, self.id, self.resource))

    def summary(self) -> dict[str, Any]:
        """The fields a listing shows (what ``notebook-kit list --json`` prints)."""
        return {
            "app": self.app,
            "id": self.id,
            "label": self.label,
            "method": self.method,
            "resource": self.resource,
            "content_type": self.content_type,
            "requires_auth": self.requires_auth,
        }

    def with_changes(self, **changes: Any) -> Definition:
        """A copy with ``changes`` applied, validated, and ``updated_at`` set to now."""
        return replace(self, **changes, updated_at=now())

    def to_dict(self) -> dict[str, Any]:
        data = {
            **self.summary(),
            "action": self.action,
            "functions": self.functions,
            "constants": [c.to_dict() for c in self.constants],
            "timeout": self.timeout,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        if not self.contract.is_empty:  # absent when undeclared: older records stay the same
            data["contract"] = self.contract.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Definition:
        extra = {k: data[k] for k in ("created_at", "updated_at") if data.get(k)}
        return cls(
            app=data["app"],
            id=data["id"],
            label=data["label"],
            method=data["method"],
            resource=data["resource"],
            action=data.get("action", ""),
            content_type=data.get("content_type"),
            requires_auth=data.get("requires_auth", True),
            functions=data.get("functions", ""),
            constants=tuple(Constant.from_dict(c) for c in data.get("constants", ())),
            timeout=data.get("timeout"),
            contract=Contract.from_dict(data.get("contract")),
            **extra,
        )


@dataclass(frozen=True)
class Deployment:
    """One deploy of an application to a stage; ``active`` if the stage serves it now.
    ``forced``: deployed with force (past failing examples); ``checks``: what its run of
    the application's examples found (``CheckReport.to_dict()``), None when there were
    none to run."""

    id: int
    app: str
    stage: Stage
    deployed_at: str
    host: str
    active: bool = False
    forced: bool = False
    checks: dict[str, Any] | None = field(default=None, hash=False)
    description: str = ""  # what the person deploying said it was for ('' if nothing)

    def checks_summary(self) -> str:
        """'3 pass', '1 of 3 fail', or '' (no examples ran); ', forced' when forced."""
        said = ""
        if self.checks:
            total, failed = self.checks.get("total", 0), self.checks.get("failed", 0)
            said = f"{failed} of {total} fail" if failed else f"{total} pass"
        return f"{said}, forced" if self.forced and said else ("forced" if self.forced else said)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "app": self.app,
            "stage": str(self.stage),
            "deployed_at": self.deployed_at,
            "host": self.host,
            "active": self.active,
            "forced": self.forced,
            "checks": self.checks,
            "description": self.description,
        }
