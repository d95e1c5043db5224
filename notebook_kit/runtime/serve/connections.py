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

``raise_descriptor_limit`` lifts the soft ``RLIMIT_NOFILE`` to the hard limit at start.

The head's first sighting is kept in ``Http.perft0``: Sanic resets it to None for every
request and sets it (its handler-stage start, a ``perf_counter`` time) only once the head
is complete, so it tells one request's head from the next without any per-request work.
"""

from __future__ import annotations

import contextlib
import resource
import time
from typing import Any

from sanic.exceptions import RequestTimeout
from sanic.http import Stage
from sanic.server.protocols.http_protocol import HttpProtocol

__all__ = [
    "GuardedProtocol",
    "apply_connection_settings",
    "connection_limit",
    "raise_descriptor_limit",
    "stop_keeping_alive",
]

_monotonic = time.monotonic
_perf_counter = time.perf_counter


class GuardedProtocol(HttpProtocol):
    """Sanic's HTTP/1 protocol with whole-head and whole-body deadlines and a connection
    cap (see the module docstring). The cap is ``app.config.NK_CONNECTION_LIMIT``."""

    __slots__ = ()

    def connection_made(self, transport: Any) -> None:
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
            elif stage is Stage.IDLE and self.signal.stopped:
                return self.close()
        return super().check_timeouts()

    def _cut(self, http: Any) -> None:
        http.exception = RequestTimeout("Request Timeout")
        http.keep_alive = False
        self._task.cancel("Cancel connection task with a timeout")  # type: ignore[union-attr]


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
    """The request, body and keep-alive timeouts and the connection cap, from settings."""
    config.REQUEST_TIMEOUT = settings["request_timeout"]
    config.RESPONSE_TIMEOUT = settings["request_timeout"]
    config.KEEP_ALIVE_TIMEOUT = settings["keep_alive_timeout"]
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
