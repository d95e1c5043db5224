"""Recorded requests: what the request log keeps of a call when its stage records them.

With ``record_requests_dev`` / ``record_requests_prod`` on, a log entry carries the
request as data (``record_request``): method, path, query string, every header (the
credentials among them redacted) and the body, cut to ``record_max_bytes``. A recorded
call can be replayed (``workspace.replay``) and opened in the studio's Test tab.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "REDACTED_HEADERS", "record_request"]

#: Headers whose values are never kept (compared in lower case).
REDACTED_HEADERS = frozenset({"x-api-key", "authorization", "cookie"})
#: What a redacted header's value reads.
REDACTED = "[redacted]"


def record_request(
    method: str,
    path: str,
    query: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    limit: int,
) -> dict[str, Any]:
    """A request as the log keeps it: ``headers`` in order (credentials redacted), the body
    cut to ``limit`` bytes (``body_size`` is its whole size, ``truncated`` says whether
    it was cut)."""
    return {
        "method": method,
        "path": path,
        "query": query,
        "headers": [
            [name, REDACTED if name.lower() in REDACTED_HEADERS else value]
            for name, value in headers
        ],
        "body": bytes(body[:limit]),
        "body_size": len(body),
        "truncated": len(body) > limit,
    }
