"""How the Test tab reads headers and shows an answer: headers, the body (JSON indented),
what the action printed and its traceback."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus

from ...errors import ValidationError

__all__ = ["format_result", "parse_headers", "phrase"]


def parse_headers(text: str) -> dict[str, str]:
    """``Name: value`` lines (blank lines skipped) as a dict."""
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon or not name.strip() or " " in name.strip():
            raise ValidationError(
                f"header line {number} {line!r} must be written 'Name: value'", field="headers"
            )
        headers[name.strip()] = value.strip()
    return headers


def _pretty(body: bytes, content_type: str | None) -> str:
    text = body.decode("utf-8", "replace")
    if "json" in (content_type or "") or text[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    return text


def format_result(
    headers: Mapping[str, str],
    body: bytes,
    content_type: str | None,
    stdout: str = "",
    error: str | None = None,
) -> str:
    """What the output shows for one answer: headers, body, printed output, traceback."""
    lines = [f"Content-Type: {content_type}"] if content_type else []
    lines += [
        f"{name}: {value}" for name, value in headers.items() if name.lower() != "content-type"
    ]
    lines += ["", _pretty(body, content_type) if body else "(empty body)"]
    if stdout:
        lines += ["", "--- printed by the action ---", stdout.rstrip("\n")]
    if error:
        lines += ["", "--- traceback ---", error.rstrip("\n")]
    return "\n".join(lines) + "\n"


def phrase(status: int) -> str:
    """The reason phrase of ``status`` ("Not Found"), empty for a code HTTP does not name."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
