"""Secrets: the rules a secret's name and value follow, what an action sees of them
(``secrets.NAME``), and taking their values out of text that leaves an action process.

A secret belongs to an application and a stage; its value is write-only everywhere but
in that application's action processes. ``Secrets`` is what an action reads: attribute
access gives a value, its ``repr`` names the secrets and never shows one. ``redact``
replaces each value (and its ``repr``-escaped form) in a text with ``[secret NAME]``:
an action process runs every error, traceback and printed line through it before the
text leaves the process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ValidationError

__all__ = [
    "SECRET_NAME",
    "SecretInfo",
    "SecretNotLiveWarning",
    "Secrets",
    "check_secret_name",
    "check_secret_value",
    "redact",
]

SECRET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_VALUE_BYTES = 64 * 1024


class SecretNotLiveWarning(UserWarning):
    """A secret changed on a stage whose live deployment keeps serving the values it was
    deployed with (until the next deploy)."""


def check_secret_name(name: str) -> str:
    """``name`` if it is a secret name (an identifier of 1 to 64 characters), else
    ValidationError."""
    if not isinstance(name, str) or not SECRET_NAME.fullmatch(name):
        raise ValidationError(
            f"secret name {name!r} is not 1 to 64 of A-Za-z0-9_ starting with a letter or _",
            field="name",
        )
    return name


def check_secret_value(name: str, value: str) -> str:
    """``value`` if it can be a secret's value (a non-empty string of at most 64 KiB),
    else ValidationError (which never shows the value)."""
    if not isinstance(value, str):
        raise ValidationError(f"the value of secret {name} must be text", field="value")
    if value == "":
        raise ValidationError(f"the value of secret {name} is empty", field="value")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_BYTES:
        raise ValidationError(
            f"the value of secret {name} is longer than {MAX_VALUE_BYTES} bytes", field="value"
        )
    return value


@dataclass(frozen=True)
class SecretInfo:
    """What anyone but the application's actions may know of a secret: never its value.
    ``version`` is the stored version's number (each set makes a new one)."""

    app: str
    name: str
    stage: str
    set_at: str
    version: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "name": self.name,
            "stage": self.stage,
            "set_at": self.set_at,
            "version": self.version,
        }


class Secrets:
    """An application's secrets as its action code reads them: ``secrets.NAME``,
    ``"NAME" in secrets``, ``secrets.get("NAME", default)``. Its ``repr`` and ``dir`` name
    them; no value is shown by anything but reading it."""

    __slots__ = ("_label", "_values")
    _label: str
    _values: dict[str, str]

    def __init__(self, values: Mapping[str, str], label: str = "") -> None:
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_label", label)

    def __getattr__(self, name: str) -> str:
        values: dict[str, str] = object.__getattribute__(self, "_values")
        try:
            return values[name]
        except KeyError:
            label = object.__getattribute__(self, "_label")
            where = f" of {label}" if label else ""
            raise AttributeError(
                f"no secret {name!r}{where} (set one: notebook-kit secret set APP {name} "
                "--stage dev|prod, then deploy)"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("secrets are read-only in action code")

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._values.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def __dir__(self) -> list[str]:
        return sorted(self._values)

    def __repr__(self) -> str:
        return f"<secrets: {', '.join(sorted(self._values)) or 'none'}>"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("secrets cannot be pickled")


def redact(text: str, pairs: Iterable[tuple[str, str]]) -> str:
    """``text`` with each secret's value (``pairs``: (name, value); as is, and as
    ``repr`` escapes it) replaced by ``[secret NAME]``; longer values first, so one
    inside another goes whole."""
    if not text:
        return text
    for name, value in sorted(pairs, key=lambda pair: -len(pair[1])):
        if not value:
            continue
        mark = f"[secret {name}]"
        text = text.replace(value, mark)
        escaped = repr(value)[1:-1]
        if escaped != value:
            text = text.replace(escaped, mark)
    return text
