"""The one place that leans on Sanic's private shape: building an action's response.

``HTTPResponse.__init__`` builds an empty ``Header`` and then copies the given headers into
a second one. An action's ``res.headers`` (a ``CIMultiDict``, which offers all Sanic does
with response headers) is spent once the action returns, so the fast answer hands it over
as it is and sets the response's slots itself: about 0.6 µs a request.

That is only right while ``BaseHTTPResponse`` has exactly the slots set here. ``answer_
classes`` checks that at import; a Sanic of another shape gets its own constructor (slower,
never wrong). ``tests/runtime/serve/test_responses.py`` fails when Sanic changes shape, and runs the
fallback too.

``processed_headers`` is the other: Sanic formats each header line by line (a generator, a
``str.translate`` per name and per value, an encode each: about 6 µs for the four lines of a
usual answer, more than the rest of the runtime's own work). ``wire_headers`` checks the
whole block at once and hands Sanic's formatter one pair that already holds every line:
the same bytes, a third of the time. A block holding CR, LF or NUL inside a name or value,
or any non-ASCII, goes the generic way (Sanic strips those characters: no header injection).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sanic.helpers import has_message_body
from sanic.response import HTTPResponse
from sanic.response.types import BaseHTTPResponse

from ...domain.answers import Answer

__all__ = [
    "RESPONSE_SLOTS",
    "ActionAnswer",
    "RuntimeAnswer",
    "UntypedActionAnswer",
    "answer_classes",
    "to_response",
    "wire_headers",
]

#: The slots the fast answer sets: all of ``BaseHTTPResponse``'s in the Sanic it was built for.
RESPONSE_SLOTS = frozenset(
    {"asgi", "body", "content_type", "stream", "status", "headers", "_cookies"}
)


def wire_headers(headers: Any) -> Iterable[tuple[bytes, bytes]]:
    """``headers`` as Sanic's ``format_http1_response`` takes them (pairs it writes as
    ``name: value`` lines), the bytes on the wire the same as Sanic's own
    ``processed_headers`` gives. The usual block (ASCII, no CR, LF or NUL of its own) goes as
    one pair holding every line; anything else goes Sanic's way, which strips CR, LF, NUL."""
    lines = [f"{name}: {value}" for name, value in headers.items()]
    block = "\r\n".join(lines)
    joins = len(lines) - 1
    if (
        joins >= 0
        and block.isascii()
        and block.count("\n") == joins
        and block.count("\r") == joins
        and "\x00" not in block
    ):
        name, _, rest = block.partition(": ")
        return ((name.encode(), rest.encode()),)
    clean = BaseHTTPResponse._sanitize_header_value
    return [
        (clean(name).encode("ascii"), clean(f"{value}").encode(errors="surrogateescape"))
        for name, value in headers.items()
    ]


class RuntimeAnswer(HTTPResponse):
    """Any answer of the runtime, its headers formatted by ``wire_headers``. Sanic sets an
    empty ``alt-svc`` header on every HTTP/1 response and relies on its TouchUp to delete
    that line at start-up; where TouchUp is off (a notebook kernel,
    ``create_app(touchup=False)``) the empty header would be sent, so it is dropped here
    (one lookup a response)."""

    __slots__ = ()

    @property
    def processed_headers(self) -> Any:
        headers = self.headers
        if "alt-svc" in headers and not headers["alt-svc"]:
            del headers["alt-svc"]
        if has_message_body(self.status):
            headers.setdefault("content-type", self.content_type)
        return wire_headers(headers)


class _FastAnswer(RuntimeAnswer):
    """An action's answer, made without Sanic's header copies."""

    __slots__ = ()

    def __init__(self, body: bytes, status: int, headers: Any, content_type: str | None) -> None:
        self.asgi = False
        self.body = body
        self.content_type = content_type
        self.stream = None
        self.status = status
        self.headers = headers
        self._cookies = None


def _untyped(base: type[HTTPResponse]) -> type[HTTPResponse]:
    class Untyped(base):  # type: ignore[valid-type,misc]
        """An answer without a content type: no Content-Type is sent (Sanic would send the
        text 'None'). A class of its own, so the common answer keeps Sanic's
        ``processed_headers`` as it is."""

        __slots__ = ()

        @property
        def processed_headers(self) -> Any:
            if "alt-svc" in self.headers and not self.headers["alt-svc"]:
                del self.headers["alt-svc"]  # as ``RuntimeAnswer`` does
            return wire_headers(self.headers)

    return Untyped


def answer_classes(
    slots: frozenset[str] | set[str],
) -> tuple[type[HTTPResponse], type[HTTPResponse]]:
    """(answer with a content type, answer without) for a Sanic whose base response has
    ``slots``: the fast pair when they are the ones known here, else Sanic's own."""
    base: type[HTTPResponse] = _FastAnswer if set(slots) == RESPONSE_SLOTS else RuntimeAnswer
    return base, _untyped(base)


ActionAnswer, UntypedActionAnswer = answer_classes(set(BaseHTTPResponse.__slots__))


def to_response(answer: Answer) -> HTTPResponse:
    """An answer the server decided (``domain.answers``) as Sanic's response."""
    return RuntimeAnswer(answer.body, answer.status, answer.headers, answer.content_type)
