"""Slow and idle clients: bounded in time, and never holding every descriptor.

Sanic's own ``REQUEST_TIMEOUT`` measures inactivity: a head sent one byte a second was
never cut. ``GuardedProtocol`` (the server's protocol class) adds, in Sanic's periodic
per-connection timeout check, so nothing is added per request:

* **the whole head** must arrive within ``request_timeout`` of the first check that saw it
  arriving, and **the whole body** within ``request_timeout`` of the end of the head, else
  ``408 Request Timeout`` and the connection is closed. Checks run every half of the
  shortest timeout (keep-alive included), so a head is cut within ``request_timeout`` plus
  one to two check intervals.
* an **idle keep-alive connection** is closed after ``keep_alive_timeout`` (Sanic's
  default was 120 s), and at once when the server is stopping.
* a **connection cap** per worker, below the descriptor limit: ``connection_limit``
  keeps ``descriptor_reserve`` descriptors free for the worker itself (store, actions'
  files and sockets). A new connection past the cap closes the connection that has been
  idle, or sending its head or body, the longest; if every connection is busy with a
  call, the new one is closed instead. So slow connections cannot take the descriptors
  that real callers, who send a whole request at once, need.

* **an answer to a slow reader** goes out whole as long as the reader keeps reading.
  Sanic wrote an answer in one piece and then counted the connection idle: a reader
  still taking a large answer was cut after the keep-alive timeout and Sanic's 5 s close
  grace, silently (a 50 MB answer read at 1 MB/s ended after about 15 MB). An answer
  over ``PACED_BYTES`` is sent by ``send_paced``, a piece at a time, each once the
  previous has left the write buffer; a reader that takes nothing for ``send_timeout``
  seconds is cut: the connection aborted, a warning logged, and the call's request-log
  entry says so (``SendTimeout: ...``). While any answer's bytes are still leaving, the
  connection is not idle (the periodic check sees the write buffer shrink).

``raise_descriptor_limit`` lifts the soft ``RLIMIT_NOFILE`` to the hard limit at start.

The head's first sighting is kept in ``Http.perft0``: Sanic resets it to None for every
request and sets it (its handler-stage start, a ``perf_counter`` time) only once the head
is complete, so it tells one request's head from the next without any per-request work.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import resource
import struct
import termios
import time
from typing import Any

from sanic.exceptions import RequestTimeout
from sanic.helpers import has_message_body
from sanic.http import Stage
from sanic.server.protocols.http_protocol import HttpProtocol

__all__ = [
    "PACED_BYTES",
    "GuardedProtocol",
    "apply_connection_settings",
    "connection_limit",
    "is_paced",
    "raise_descriptor_limit",
    "send_paced",
    "stop_keeping_alive",
]

log = logging.getLogger("notebook_kit.runtime")

_monotonic = time.monotonic
_perf_counter = time.perf_counter

# An answer larger than this goes out paced (``send_paced``): the high-water mark of a
# transport's write buffer (Sanic's 64 KiB), past which a write can be left waiting in it.
PACED_BYTES = 1 << 16
_PIECE = 1 << 18  # what one write of a paced answer hands the transport


class GuardedProtocol(HttpProtocol):
    """Sanic's HTTP/1 protocol with whole-head and whole-body deadlines and a connection
    cap (see the module docstring). The cap is ``app.config.NK_CONNECTION_LIMIT``."""

    __slots__ = ("_unsent",)

    @property  # type: ignore[override]
    def request_max_size(self) -> int:
        """The live body limit (``max_body_bytes``), read at each request: Sanic copies it
        once per connection, so a kept-alive connection kept the limit it was opened with."""
        return self.app.ctx.max_body_bytes  # (Sanic's config reads cost a microsecond)

    @request_max_size.setter
    def request_max_size(self, value: int) -> None:
        """Sanic's ``__init__`` copies the setting here; the getter reads it live instead."""

    def connection_made(self, transport: Any) -> None:
        self._unsent = 0  # the write buffer's size at the last check
        super().connection_made(transport)
        connections = self.connections
        self.app.ctx.connections = connections  # for stop_keeping_alive
        if len(connections) > self.app.config.NK_CONNECTION_LIMIT and not self._make_room():
            transport.abort()  # every connection is busy with a call: refuse this one

    def _make_room(self) -> bool:
        """Close the connection idle, or receiving a request, the longest. False if none."""
        offset = _monotonic() - _perf_counter()  # Sanic's perft0 is a perf_counter time
        oldest, victim = float("inf"), None
        for connection in self.connections:
            http = connection.http if connection is not self else None
            if http is None:
                continue
            stage = http.stage
            if stage is Stage.IDLE:
                since = connection._time
            elif stage is Stage.REQUEST:
                since = http.perft0 if http.perft0 is not None else connection._time
            elif stage is Stage.HANDLER and http.request_body and http.perft0 is not None:
                since = http.perft0 + offset
            else:
                continue
            if since < oldest:
                oldest, victim = since, connection
        if victim is None:
            return False
        victim.close()
        return True

    def check_timeouts(self) -> None:
        """Sanic's inactivity checks, after the whole-head and whole-body deadlines."""
        http = self._http if self._task else None
        if http is not None:
            stage = http.stage
            if stage is Stage.REQUEST:
                if http.perft0 is None:
                    http.perft0 = _monotonic()  # first seen; Sanic overwrites it later
                elif _monotonic() - http.perft0 > self.request_timeout:
                    return self._cut(http)
            elif stage is Stage.HANDLER:
                if http.request_body and _perf_counter() - http.perft0 > self.request_timeout:
                    return self._cut(http)
            elif stage is Stage.RESPONSE:
                self._time = _monotonic()  # a paced answer: send_paced bounds its wait
            elif stage is Stage.IDLE:
                if self.signal.stopped:
                    return self.close()
                transport = self.transport
                unsent = transport.get_write_buffer_size() if transport is not None else 0
                if unsent or self._unsent:  # an answer still leaving: idle once it stops
                    unsent = _unsent(transport) if transport is not None else 0
                    if unsent != self._unsent:
                        self._unsent = unsent
                        self._time = _monotonic()
        return super().check_timeouts()

    def _cut(self, http: Any) -> None:
        http.exception = RequestTimeout("Request Timeout")
        http.keep_alive = False
        self._task.cancel("Cancel connection task with a timeout")  # type: ignore[union-attr]


def is_paced(request: Any, response: Any) -> bool:
    """Whether ``response`` (its body over ``PACED_BYTES``) goes out by ``send_paced``:
    a body that is sent (not to HEAD, not a status without one), on an HTTP/1 stream."""
    stream = request.stream
    return (
        stream is not None
        and not stream.head_only
        and has_message_body(response.status)
        and getattr(stream, "protocol", None) is not None
    )


async def send_paced(request: Any, response: Any) -> str | None:
    """Send ``response`` a piece at a time, each once the previous one has left the write
    buffer, so a reader gets the whole answer however slowly it reads. A reader that
    takes nothing for ``send_timeout`` seconds is cut (module docstring): returns the
    request log's error then, else None."""
    stream = request.stream
    protocol = stream.protocol
    timeout = protocol.app.config.NK_SEND_TIMEOUT
    view = memoryview(response.body)
    size = len(view)
    response.headers["content-length"] = str(size)  # Sanic sends the pieces as they come
    await request.respond(response)
    for start in range(0, size, _PIECE):
        if not await _drained(protocol, timeout):
            unsent = size - start + _unsent(protocol.transport)
            why = (
                f"SendTimeout: the caller read nothing of the answer for {timeout:g} s; "
                f"{unsent} of its {size} bytes unsent"
            )
            log.warning("answer to %s %s cut: %s", request.method, request.path, why)
            stream.keep_alive = False
            stream.response_func = None  # nothing more of it goes out
            protocol.abort()
            return why
        await response.send(view[start : start + _PIECE], end_stream=start + _PIECE >= size)
    return None


async def _drained(protocol: Any, timeout: float) -> bool:
    """Wait until the write buffer is below its low-water mark (the transport then lets
    the protocol write again); False once it has not shrunk for ``timeout`` seconds."""
    can_write = protocol._can_write
    if can_write.is_set():
        return True
    transport = protocol.transport
    left = _unsent(transport)
    step = min(1.0, timeout / 4)
    quiet = 0.0
    while True:
        try:
            await asyncio.wait_for(can_write.wait(), step)
            return True
        except TimeoutError:
            now = _unsent(transport)
            if now < left:
                left, quiet = now, 0.0
            else:
                quiet += step
                if quiet >= timeout:
                    return False


def _unsent(transport: Any) -> int:
    """Bytes written but not yet taken by the reader: the transport's write buffer, and the
    socket's send queue (Linux ``SIOCOUTQ``). The write buffer alone moves only when the
    kernel frees a third of its send buffer (megabytes on a fast link); the queue moves
    with every window the reader opens."""
    left: int = transport.get_write_buffer_size()
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError, ValueError):
            left += _INT.unpack(fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, _INT_BYTES))[0]
    return left


_INT = struct.Struct("i")
_INT_BYTES = bytes(_INT.size)


def connection_limit(reserve: int) -> int:
    """Connections one worker accepts: its descriptor limit less ``reserve``, and at
    least half the limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 20
    return max(soft - reserve, soft // 2)


def raise_descriptor_limit() -> int:
    """Lift the soft RLIMIT_NOFILE to the hard limit; returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def apply_connection_settings(config: Any, settings: Any) -> None:
    """The request, body, keep-alive and send timeouts and the connection cap, from
    settings."""
    config.REQUEST_TIMEOUT = settings["request_timeout"]
    config.RESPONSE_TIMEOUT = settings["request_timeout"]
    config.KEEP_ALIVE_TIMEOUT = settings["keep_alive_timeout"]
    config.NK_SEND_TIMEOUT = settings["send_timeout"]
    config.NK_CONNECTION_LIMIT = connection_limit(settings["descriptor_reserve"])


def stop_keeping_alive(app: Any) -> None:
    """At the stop: answers still to come say ``Connection: close`` and idle connections
    close, so the drain ends with the last call instead of the keep-alive timeout."""
    app.config.KEEP_ALIVE = False  # heads parsed from now on
    for connection in list(getattr(app.ctx, "connections", ())):
        http = connection.http
        if http is None or http.stage is Stage.IDLE:
            connection.close()
        else:
            http.keep_alive = False
