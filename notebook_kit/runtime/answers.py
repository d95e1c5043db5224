"""The one mapping from outcomes to HTTP answers, without a web framework.

Every answer the runtime makes itself (403, 404, 405, 413, 500, presigned-file errors) is
JSON ``{"message": ...}`` with ``Access-Control-Allow-Origin: *``, so a browser caller on
any origin reads the real error. Domain errors map to statuses here and only here; the
Sanic glue in ``app.py`` turns an ``Answer`` into its response.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ..errors import ConflictError, NotFoundError, ValidationError

__all__ = ["CORS", "Answer", "error_status", "message"]

CORS = {"Access-Control-Allow-Origin": "*"}

# Domain refusals a caller caused; anything else is the server's fault (500).
_ERROR_STATUS = ((ValidationError, 400), (NotFoundError, 404), (ConflictError, 409))


class Answer(NamedTuple):
    """An HTTP answer as plain parts."""

    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str | None


def message(
    status: int,
    text: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Answer:
    """JSON ``{"message": text, **extra}`` that a browser on any origin may read."""
    body = json.dumps({"message": text, **(extra or {})}).encode()
    return Answer(status, {**CORS, **(headers or {})}, body, "application/json")


def error_status(exc: BaseException) -> int | None:
    """The status of a domain refusal (400, 404, 409), or None for an unexpected error."""
    return next((status for kind, status in _ERROR_STATUS if isinstance(exc, kind)), None)
