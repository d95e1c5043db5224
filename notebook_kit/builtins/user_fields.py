"""Checking what actions pass to the user directory: emails, names, groups, paging.

Each check returns the clean value or raises ``BuiltinError`` saying what is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import BuiltinError

__all__ = [
    "MAX_LIMIT",
    "check_attributes",
    "check_email",
    "check_emails",
    "check_group_name",
    "check_paging",
    "check_param",
    "check_password",
    "check_text",
]

_EMAIL = re.compile(r"^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$")
_GROUP = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MIN_PASSWORD, _MAX_PASSWORD = 8, 1024
DEFAULT_LIMIT, MAX_LIMIT = 100, 1000


def check_text(value: Any, what: str, max_len: int) -> str:
    if not isinstance(value, str):
        raise BuiltinError(f"{what} must be text, not {type(value).__name__}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise BuiltinError(f"{what} must not contain control characters (CR, LF, ...)")
    if len(value) > max_len:
        raise BuiltinError(f"{what} is longer than {max_len} characters")
    return value


def check_email(value: Any) -> str:
    """The email trimmed, or BuiltinError saying what is wrong with it."""
    email = check_text(value, "email", 254).strip()
    if not _EMAIL.match(email):
        raise BuiltinError(f"{email!r} is not a valid email address")
    return email


def check_password(value: Any) -> str:
    password = value if isinstance(value, str) else None
    if password is None or not _MIN_PASSWORD <= len(password) <= _MAX_PASSWORD:
        raise BuiltinError(
            f"a password must be text of {_MIN_PASSWORD} to {_MAX_PASSWORD} characters"
        )
    return password


def check_group_name(value: Any) -> str:
    name = check_text(value, "groupName", 64)
    if not _GROUP.match(name):
        raise BuiltinError(
            f"group name {name!r} must be 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def check_param(param: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(param, Mapping):
        raise BuiltinError(f"{what} takes a dict of parameters, not {type(param).__name__}")
    return param


def check_attributes(value: Any) -> str:
    if not isinstance(value, Mapping):
        raise BuiltinError("attributes must be a dict")
    try:
        text = json.dumps(dict(value), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise BuiltinError(f"attributes must be JSON data: {exc}") from None
    if len(text) > 16_384:
        raise BuiltinError("attributes take at most 16 KiB as JSON")
    return text


def check_paging(option: Any) -> tuple[int, int]:
    option = {} if option is None else check_param(option, "option")
    offset, limit = option.get("offset", 0), option.get("limit", DEFAULT_LIMIT)
    for name, value, low in (("offset", offset, 0), ("limit", limit, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise BuiltinError(f"option.{name} must be a whole number >= {low}")
    if limit > MAX_LIMIT:
        raise BuiltinError(f"option.limit is at most {MAX_LIMIT}")
    return offset, limit


def check_emails(param: Mapping[str, Any]) -> list[str]:
    emails = param.get("emails")
    if isinstance(emails, str):
        emails = [emails]
    if not isinstance(emails, list) or not emails:
        raise BuiltinError("give 'emails': a list of user emails")
    return [check_email(e).casefold() for e in emails]
