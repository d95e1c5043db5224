"""Typed constants of an action (``const``): a name, one of the spec's types, a value.

A constant validates its value against its type when built, so ``const.NAME`` in an
action always holds what its type promises.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import ValidationError

__all__ = ["CONSTANT_TYPES", "Constant"]

CONSTANT_TYPES = ("String", "Integer", "Decimal", "Boolean", "JSON")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: 'a String', 'an Integer'."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _check_constant_value(name: str, type_: str, value: Any) -> Any:
    bad = ValidationError(f"constant {name}: {value!r} is not {_a(type_)}", field="constants")
    if type_ == "String":
        if not isinstance(value, str):
            raise bad
        return value
    if type_ == "Integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return value
    if type_ == "Decimal":
        if isinstance(value, bool) or not isinstance(value, (int, str, Decimal, float)):
            raise bad
        try:
            number = Decimal(repr(value) if isinstance(value, float) else value)
        except InvalidOperation:
            raise bad from None
        if not number.is_finite():
            raise bad
        return number
    if type_ == "Boolean":
        if not isinstance(value, bool):
            raise bad
        return value
    try:  # JSON
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise bad from None
    return value


@dataclass(frozen=True)
class Constant:
    """A named, typed constant of an action, reachable as ``const.NAME``."""

    name: str
    type: str
    value: Any

    def __post_init__(self) -> None:
        if (
            not isinstance(self.name, str)
            or not _IDENTIFIER.fullmatch(self.name)
            or (keyword.iskeyword(self.name))
        ):
            raise ValidationError(
                f"constant name {self.name!r} must be an identifier, like MESSAGE_NOT_FOUND",
                field="constants",
            )
        if self.type not in CONSTANT_TYPES:
            raise ValidationError(
                f"constant {self.name}: type {self.type!r} is not one of "
                + ", ".join(CONSTANT_TYPES),
                field="constants",
            )
        object.__setattr__(self, "value", _check_constant_value(self.name, self.type, self.value))

    @classmethod
    def from_text(cls, spec: str) -> Constant:
        """Parse ``NAME:TYPE=VALUE`` (the CLI's ``--const``); VALUE is read per TYPE."""
        head, sep, text = spec.partition("=")
        name, colon, type_ = head.partition(":")
        if not sep or not colon:
            raise ValidationError(
                f"constant {spec!r} must be written NAME:TYPE=VALUE", field="constants"
            )
        return cls.parse(name.strip(), type_.strip(), text)

    @classmethod
    def parse(cls, name: str, type_: str, text: str) -> Constant:
        """Build a constant from the text a person typed for its value."""
        value: Any = text
        try:
            if type_ == "Integer":
                value = int(text.strip())
            elif type_ == "Boolean":
                lowered = text.strip().lower()
                if lowered not in ("true", "false"):
                    raise ValueError
                value = lowered == "true"
            elif type_ == "JSON":
                value = json.loads(text)
        except ValueError:
            raise ValidationError(
                f"constant {name}: {text!r} is not {_a(type_)}", field="constants"
            ) from None
        return cls(name, type_, value)

    def to_dict(self) -> dict[str, Any]:
        value = str(self.value) if self.type == "Decimal" else self.value
        return {"name": self.name, "type": self.type, "value": value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Constant:
        return cls(data["name"], data["type"], data["value"])
