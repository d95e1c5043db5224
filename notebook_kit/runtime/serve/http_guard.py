"""What Sanic's HTTP/1 parser lets through, refused where Sanic already builds the request.

``GuardedRequest`` is the app's request class. Sanic builds one per request from the raw
head it has just split (``head``), so the checks here are a few C-level scans of bytes
already in hand (well under a microsecond; no per-request middleware, no signal):

* a NUL byte anywhere in the head (request target or a header value) -> 400;
* a bare CR or a bare LF inside a header line (RFC 9112 5: only CRLF ends a line) -> 400;
* a header line with an empty name (``: value``) -> 400;
* a request target that is not a path (``/...``) or ``*``: the absolute form
  (``GET http://host/path``, meant for proxies; it would let the URL's host and the
  ``Host`` header disagree), the authority form (``CONNECT host:443``), or anything else
  (``GET foo``) -> 400;
* an HTTP/1.1 request without ``Host`` (RFC 9112 3.2) -> 400. An HTTP/1.0 request may
  send none: its ``host`` is then the address the connection came in on
  (``127.0.0.1:8000``), so the links and documents built from it stay valid URLs.

Without it Sanic accepts the header cases, answers ``GET http://host`` with a 500 and a NUL
in the target or ``GET foo`` with nothing (its error path rebuilds the request from the
same bad URL and fails again); the placeholder request of that error path gets a URL that
parses here, so the 400 is sent.

A head too large for Sanic (``REQUEST_MAX_HEADER_SIZE``, 8 KiB) reached the runtime as
Sanic's 413 for a body; ``oversized_head`` tells it apart: 414 when the request line alone
fills the limit (the target is too long), else 431.

The body is read by ``request_body.receive`` (``receive_body``): held back while a caller
waits for ``100 Continue``, and a chunked body's trailer section accepted.

Timeouts: ``request_timeout`` bounds the whole head and the whole body (``connections``);
Sanic reads the body in its handler stage, under ``RESPONSE_TIMEOUT`` (also
``request_timeout``, measuring inactivity). A caller that stops sending mid-body gets
``408 Request Timeout`` (``timeout_status``) instead of Sanic's 503 (which the runtime's
catch-all turned into a 500).

``ip`` is the caller's address: the connection's, or, when the connection comes from a
proxy the ``trusted_proxies`` setting names, the one its ``X-Forwarded-For`` gives
(``domain.forwarded``); every use of the caller's address reads it.
"""

from __future__ import annotations

import re
from typing import Any

from sanic.exceptions import BadRequest, ServiceUnavailable
from sanic.request import Request

from ...domain import answers
from ...domain.forwarded import caller_address
from .request_body import receive

__all__ = ["GuardedRequest", "oversized_head", "timeout_status"]

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
            if version == "1.1" and "host" not in headers:
                raise BadRequest("Bad Request: an HTTP/1.1 request must send a Host header")
        elif url_bytes[:1] != b"/":  # Sanic's placeholder for an error answer
            url_bytes = b"*"  # its own default; any other non-path may not parse
        elif _UNSAFE_URL.search(url_bytes):
            url_bytes = _UNSAFE_URL.sub(lambda m: b"%%%02X" % m.group()[0], url_bytes)
        _init(self, url_bytes, headers, version, method, transport, app, head, stream_id)

    receive_body = receive  # Sanic's read before the handler (request_body.py)

    @property
    def host(self) -> str:
        """Sanic's host (the Host header, or a proxy's forwarded host), else the address
        the connection came in on (an HTTP/1.0 request may send no Host)."""
        host: str = _host(self)
        if not host and self.conn_info is not None:
            host = self.conn_info.server
        return host

    @property
    def ip(self) -> str:
        """The caller's address: the connection's, or behind a proxy of the
        ``trusted_proxies`` setting the one its ``X-Forwarded-For`` names (what keyless
        rate limits and canary shares count by)."""
        peer: str = self.conn_info.client_ip if self.conn_info else ""
        trusted = getattr(self.app.config, "NK_TRUSTED_PROXIES", ())
        if not trusted:
            return peer
        return caller_address(peer, self.headers.getall("x-forwarded-for", []), trusted)


_init = Request.__init__
_host = Request.host.fget  # type: ignore[attr-defined]


def oversized_head(request: Request | None) -> answers.Answer | None:
    """414 or 431 for a head Sanic refused as too large (its request is the placeholder
    of an error answer, without a head); None for a body too large."""
    stream = getattr(request, "stream", None)
    if request is None or request.head or stream is None:
        return None
    limit = type(stream).HEADER_MAX_SIZE
    if stream.recv_buffer.find(b"\r\n", 0, limit) == -1:  # the request line fills it
        return answers.uri_too_long(limit)
    return answers.header_fields_too_large(limit)


def timeout_status(request: Request | None, exc: BaseException) -> int | None:
    """408 when Sanic's timeout struck while the caller still owed body bytes."""
    if not isinstance(exc, ServiceUnavailable) or request is None:
        return None
    stream = getattr(request, "stream", None)
    return 408 if stream is not None and getattr(stream, "request_body", None) else None
