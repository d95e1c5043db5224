"""Reading a request's body: only once it is needed, and a chunked body's trailer section.

Sanic reads a body before the handler runs, through the request class's ``receive_body``
(``http_guard.GuardedRequest``, which is ``receive`` here). Two things change:

* **100 Continue only for a body that is read.** A caller that sends ``Expect:
  100-continue`` waits for it before sending its body. Sanic sent it as it read the body,
  before the handler, and put it before any answer sent without reading: a 403, 404,
  405 or 429 that the head alone decides came after a ``100 Continue``, and the caller
  sent its body for nothing. Here such a body is **held** (``hold``): not read, and the
  connection marked to close after the answer (RFC 9110 10.1.1: the caller may then
  never send the body). The dispatcher reads it (``read_held``, which sends the 100)
  once it will run the action or record the call; every other answer goes out with
  ``Connection: close`` and no 100. A ``Content-Length`` over ``max_body_bytes`` is
  answered 413 at once, without a 100. A caller that sends its body without waiting
  (RFC 9110 allows it) is read as usual, without a 100; without ``Expect`` nothing
  changes.
* **A chunked body's trailer section** (RFC 9112 7.1.2) is accepted, read and dropped
  (Sanic answered 400 to any). Trailer fields are not merged into the headers: the key,
  the route and the checks were decided on the head, and RFC 9110 6.5.1 lets a recipient
  discard them. They are checked as a head is (only CRLF ends a line, no NUL, each line a
  ``name: value``) and may take as many bytes as a head.

``receive`` costs an ordinary body two attribute reads more than Sanic's own.
"""

from __future__ import annotations

from typing import Any

from sanic.exceptions import BadRequest
from sanic.http.http1 import HTTP_CONTINUE

__all__ = ["HELD", "hold", "read_held", "receive"]


class _Held(bytes):
    """The body of a request while it is held: empty, and only ever this one object."""

    __slots__ = ()


#: ``request.body`` while the body is held (``dispatch`` tests ``request.body is HELD``).
HELD = _Held()


async def receive(request: Any) -> None:
    """Read ``request``'s body (Sanic calls this before the handler), or hold it when the
    caller waits for ``100 Continue``."""
    stream = request.stream
    if stream.expecting_continue:
        if stream.request_bytes > stream.request_max_size:
            stream.expecting_continue = False  # 413 from the head: Sanic's read raises it
        elif len(stream.recv_buffer) > (2 if stream.request_body == "chunked" else 0):
            stream.expecting_continue = False  # its body is coming already: no need of 100
        else:
            return hold(request)
    await _read(request, stream)


def hold(request: Any) -> None:
    """Leave the body unread for now: no 100 Continue, and the connection closes after
    the answer unless ``read_held`` reads it first."""
    stream = request.stream
    request.ctx.held_body = (stream.request_body, stream.keep_alive)
    stream.request_body = None  # nothing for Sanic to read or to drain after the answer
    stream.keep_alive = False
    stream.expecting_continue = False
    request.body = HELD


async def read_held(request: Any) -> bytes:
    """Read the held body (``100 Continue`` first) and keep the connection as it was."""
    stream = request.stream
    kind, keep_alive = request.ctx.held_body
    stream.request_body = kind
    stream.keep_alive = keep_alive and request.app.config.KEEP_ALIVE  # unless stopping
    stream.expecting_continue = True
    request.body = b""
    await _read(request, stream)
    body: bytes = request.body
    return body


async def _read(request: Any, stream: Any) -> None:
    if stream.request_body == "chunked":
        request.body = await _read_chunked(stream)
    else:  # Sanic's own read (it sends a 100 Continue the caller waits for)
        request.body = b"".join([data async for data in stream])


async def _read_chunked(stream: Any) -> bytes:
    """A chunked body's data: Sanic's read for each chunk, the last one and its trailer
    section read here."""
    if stream.expecting_continue:
        stream.expecting_continue = False
        await stream._send(HTTP_CONTINUE)
    buf = stream.recv_buffer
    parts = []
    while stream.request_body:
        if not stream.request_bytes_left and await _at_last_chunk(stream, buf):
            break
        data = await stream.read()
        if data:
            parts.append(data)
    return b"".join(parts)


async def _at_last_chunk(stream: Any, buf: bytearray) -> bool:
    """Whether the next chunk is the last one (size 0); if it is, it and the trailer
    section are consumed. False for anything else, which Sanic's read then parses (and
    refuses if it is malformed)."""
    # As Sanic reads it: the CRLF that ended the head or the previous chunk, the size line.
    while (end := buf.find(b"\r\n", 3)) == -1:
        if len(buf) > 64:
            return False
        await stream._receive_more()
    try:
        if stream._safe_int(buf[2:end].split(b";", 1)[0].decode(), 16) != 0:
            return False
    except ValueError:
        return False
    del buf[: end + 2]
    limit = type(stream).HEADER_MAX_SIZE
    while True:  # the trailer section: field lines, then an empty line
        if buf[:2] == b"\r\n":
            section = b""
            break
        if (end := buf.find(b"\r\n\r\n")) != -1:
            section = bytes(buf[: end + 2])
            break
        if len(buf) > limit:
            stream.keep_alive = False
            raise BadRequest(
                f"Bad Request: the chunked body's trailer section is longer than {limit} bytes"
            )
        await stream._receive_more()
    if len(section) > limit or not _is_field_section(section):
        stream.keep_alive = False  # never read what follows as a request
        raise BadRequest("Bad Request: malformed trailer section in the chunked body")
    del buf[: len(section) + 2]
    stream.request_body = None
    return True


def _is_field_section(section: bytes) -> bool:
    """Field lines, each ``name: value`` and ended by CRLF, as ``http_guard`` checks a head."""
    crlf = section.count(b"\r\n")
    if len(section) - len(section.translate(None, b"\r\n\x00")) != 2 * crlf:
        return False  # a bare CR or LF, or a NUL
    for line in section.split(b"\r\n")[:-1]:
        name, colon, _ = line.partition(b":")
        if not colon or not name or name != name.strip():
            return False
    return True
