"""What Sanic's HTTP/1 parser lets through, refused where Sanic already builds the request.

``GuardedRequest`` is the app's request class. Sanic builds one per request from the raw
head it has just split (``head``), so the checks here are a few C-level scans of bytes
already in hand (well under a microsecond; no per-request middleware, no signal):

* a NUL byte anywhere in the head (request target or a header value) -> 400;
* a bare CR or a bare LF inside a header line (RFC 9112 5: only CRLF ends a line) -> 400;
* a header line with an empty name (``: value``) -> 400;
* a request target that is not a path (``/...``) or ``*``: the absolute form
  (``GET http://host/path``, meant for proxies; it would let the URL's host and the
  ``Host`` header disagree), or anything else (``GET foo``) -> 400.

Without it Sanic accepts the header cases, answers ``GET http://host`` with a 500 and a NUL
in the target or ``GET foo`` with nothing (its error path rebuilds the request from the
same bad URL and fails again); the placeholder request of that error path gets a URL that
parses here, so the 400 is sent.

Timeouts: ``request_timeout`` bounds the whole head and the whole body (``connections``);
Sanic reads the body in its handler stage, under ``RESPONSE_TIMEOUT`` (also
``request_timeout``, measuring inactivity). A caller that stops sending mid-body gets
``408 Request Timeout`` (``timeout_status``) instead of Sanic's 503 (which the runtime's
catch-all turned into a 500).
"""

from __future__ import annotations

import re
from typing import Any

from sanic.exceptions import BadRequest, ServiceUnavailable
from sanic.request import Request

__all__ = ["GuardedRequest", "timeout_status"]

_UNSAFE_URL = re.compile(rb"[\x00-\x20\x7f]")


class GuardedRequest(Request):
    """Sanic's request, refusing a malformed head (see the module docstring)."""

    __slots__ = ()

    def __init__(
        self,
        url_bytes: bytes,
        headers: Any,
        version: str,
        method: str,
        transport: Any,
        app: Any,
        head: bytes = b"",
        stream_id: int = 0,
    ) -> None:
        if head:
            if url_bytes[:1] != b"/" and url_bytes != b"*":
                raise BadRequest("Bad Request: the request target must be a path (/...)")
            # Every CR, LF and NUL removed must be one of a CRLF pair's two: one C pass.
            crlf = head.count(b"\r\n")
            if len(head) - len(head.translate(None, b"\r\n\x00")) != 2 * crlf:
                raise BadRequest("Bad Request: NUL, or bare CR or LF, in the request head")
            if b"\n:" in head:
                raise BadRequest("Bad Request: empty header name")
        elif url_bytes[:1] != b"/":  # Sanic's placeholder for an error answer
            url_bytes = b"*"  # its own default; any other non-path may not parse
        elif _UNSAFE_URL.search(url_bytes):
            url_bytes = _UNSAFE_URL.sub(lambda m: b"%%%02X" % m.group()[0], url_bytes)
        _init(self, url_bytes, headers, version, method, transport, app, head, stream_id)


_init = Request.__init__


def timeout_status(request: Request | None, exc: BaseException) -> int | None:
    """408 when Sanic's timeout struck while the caller still owed body bytes."""
    if not isinstance(exc, ServiceUnavailable) or request is None:
        return None
    stream = getattr(request, "stream", None)
    return 408 if stream is not None and getattr(stream, "request_body", None) else None
