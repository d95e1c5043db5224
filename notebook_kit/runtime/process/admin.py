"""The admin listener: what a load balancer and a scraper ask a node, on a port of its own.

``notebook-kit serve --admin-port PORT`` opens it in the supervisor (the trusted process,
never a worker) on a second socket, so no definition on the API's port can shadow it. It
answers three paths, ``GET`` (or ``HEAD``) only:

* ``/live``: 200 ``live`` while the supervisor's loop answers at all;
* ``/ready``: 200 while the store answers and every worker serves what is live; 503
  otherwise, the reason in the body (``store unreachable: ...``, ``starting: ...``,
  ``stopping``). A request-log backlog (the store refuses writes, a full disk say) keeps
  the node ready, as it still serves: its second line names the backlog;
* ``/metrics``: the node's metrics in the Prometheus text format (``metrics``).

The body is plain text (UTF-8), one fact a line. Any other path is 404, another method
405. Each connection carries one request (``Connection: close``): a head over
``_HEAD_LIMIT`` bytes or slower than ``_READ_SECONDS`` is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AdminListener", "Answer"]

_HEAD_LIMIT = 8192
_READ_SECONDS = 5.0
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            503: "Service Unavailable"}  # fmt: skip
_TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    """What the listener sends: a status, a body and its type."""

    status: int
    body: str
    content_type: str = _TEXT


class AdminListener:
    """Serves ``routes`` (path -> a function that answers it, called on the loop) on
    ``sock``, a bound socket, until ``close()``."""

    def __init__(self, sock: socket.socket, routes: dict[str, Callable[[], Answer]]) -> None:
        self.sock = sock
        self.routes = routes
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self.sock.listen(64)
        self.sock.setblocking(False)
        self._server = await asyncio.start_server(self._serve, sock=self.sock)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_SECONDS)
            except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError):
                return
            if len(head) > _HEAD_LIMIT:
                return
            method, path = _request_line(head)
            answer = self._answer(method, path)
            writer.write(_encode(answer, method == "HEAD"))
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, method: str, path: str) -> Answer:
        if not method:
            return Answer(400, "bad request\n")
        route = self.routes.get(path.partition("?")[0])
        if route is None:
            return Answer(404, "not found: the admin listener answers /live, /ready, /metrics\n")
        if method not in ("GET", "HEAD"):
            return Answer(405, "method not allowed: GET only\n")
        return route()


def _request_line(head: bytes) -> tuple[str, str]:
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return "", ""
    return parts[0], parts[1]


def _encode(answer: Answer, head_only: bool) -> bytes:
    body = answer.body.encode()
    lines = [
        f"HTTP/1.1 {answer.status} {_REASONS.get(answer.status, '')}",
        f"Content-Type: {answer.content_type}",
        f"Content-Length: {len(body)}",
        "Cache-Control: no-store",
        "Connection: close",
    ]
    if answer.status == 405:
        lines.append("Allow: GET, HEAD")
    return "\r\n".join(lines).encode() + b"\r\n\r\n" + (b"" if head_only else body)
