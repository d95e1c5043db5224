"""A server worker's calls to action processes: ``ActionPool``, on the worker's loop.

A worker keeps action processes per application and stage (a process runs one
application's code on one stage only, so one application's action cannot reach another's
calls or data through it, nor its dev code the values its prod calls are given, such as
its prod secrets), each one call at a time. A call takes an idle process of its
application and stage, or asks the supervisor for a new one (``acquire``: forked from the
zygote in a few milliseconds), sends the request and waits for the answer up to the
call's limit. Past it, the process
is killed (``kill``: the supervisor does it; a process cannot be stopped from inside) and
the call ends ``TIMED_OUT``; a process that dies under a call ends it ``CRASHED``; one
past its memory limit ends it ``MEMORY`` and exits. Either way the worker goes on, and
the next call gets a fresh process.

At most ``cap`` calls run at once (``max_concurrent_actions``); past it a call waits up
to ``admit_wait`` seconds for a slot, then ``Busy`` (a 503). A process idle for
``IDLE_SECONDS`` is let go (it ends when its channel closes); ``retire()`` lets every
process go (new settings: the next calls get processes that have them).
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable

from ..domain.answers import CRASHED, MEMORY, TIMED_OUT, limit_text
from ..domain.messages import ActionRequest
from .outcome import Outcome, call_header
from .protocol import AsyncChannel, ChannelClosed

__all__ = ["IDLE_SECONDS", "ActionPool", "Busy", "ProcessLink"]

IDLE_SECONDS = 60.0

Acquire = Callable[[str, str], Awaitable[tuple[int, socket.socket]]]  # (app, stage)


class Busy(Exception):
    """No slot for a call within ``admit_wait`` (a 503)."""


class ProcessLink:
    """One action process as a worker holds it: the supervisor's ``id`` for it, the
    ``group`` (application, stage) whose code it runs, its calls channel."""

    __slots__ = ("channel", "group", "id", "last_used", "retired")

    def __init__(self, process_id: int, group: tuple[str, str], channel: AsyncChannel) -> None:
        self.id = process_id
        self.group = group
        self.channel = channel
        self.last_used = time.monotonic()
        self.retired = False


class ActionPool:
    """The worker's action processes (see the module docstring)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        acquire: Acquire,
        kill: Callable[[int], None],
        cap: int,
        admit_wait: float = 1.0,
    ) -> None:
        self.loop = loop
        self._acquire = acquire
        self._kill = kill
        self.cap = cap
        self.admit_wait = admit_wait
        self.idle: dict[tuple[str, str], list[ProcessLink]] = {}
        self.busy: set[ProcessLink] = set()
        self.inflight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def call(
        self, app: str, key: str, req: ActionRequest, limit: float, base: str | None
    ) -> Outcome:
        """Run code ``key`` of ``app`` on ``req`` in an action process of that application
        and of the key's stage (``stage:...``; see the module docstring); raises ``Busy``
        when no slot frees up in time."""
        group = (app, key.partition(":")[0])
        await self._admit()
        try:
            try:
                async with asyncio.timeout(limit):
                    link = await self._link(group)
            except (TimeoutError, RuntimeError) as exc:
                return Outcome(CRASHED, error=f"no action process could be started ({exc})")
            self.busy.add(link)
            try:
                await link.channel.send(
                    call_header(req, key, base=base, capture=False), req.raw_body
                )
                async with asyncio.timeout(limit):
                    reply = await link.channel.receive()
            except TimeoutError:
                self._discard(link)
                return Outcome(TIMED_OUT, error=limit_text(limit))
            except ChannelClosed:
                self._discard(link)
                return Outcome(CRASHED, error="its process ended")
            except BaseException:  # cancelled (the caller left): the call is abandoned
                self._discard(link)
                raise
            finally:
                self.busy.discard(link)
            outcome = Outcome.from_header(reply.header, reply.payload)
            if outcome.kind in (MEMORY, CRASHED) or link.retired:
                self._discard(link)
            else:
                link.last_used = time.monotonic()
                self.idle.setdefault(group, []).append(link)
            return outcome
        finally:
            self._release()

    async def _link(self, group: tuple[str, str]) -> ProcessLink:
        idle = self.idle.get(group)
        if idle:
            return idle.pop()
        process_id, sock = await self._acquire(*group)
        return ProcessLink(process_id, group, AsyncChannel(sock, self.loop))

    def _discard(self, link: ProcessLink) -> None:
        link.channel.close()
        self._kill(link.id)

    async def _admit(self) -> None:
        if self.inflight < self.cap:
            self.inflight += 1
            return
        waiter: asyncio.Future[None] = self.loop.create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(self.admit_wait):
                await waiter  # the slot is handed over already counted
        except TimeoutError:
            raise Busy() from None
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self._release()  # a slot handed to a caller that left
            raise

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot passes on: inflight stays
                return
        self.inflight -= 1

    def reap(self, now: float, idle_seconds: float = IDLE_SECONDS) -> None:
        """Let go of processes idle for ``idle_seconds``."""
        for group, links in list(self.idle.items()):
            keep = [link for link in links if now - link.last_used < idle_seconds]
            for link in links:
                if link not in keep:
                    self._discard(link)
            if keep:
                self.idle[group] = keep
            else:
                del self.idle[group]

    def retire(self) -> None:
        """Let every process go: the idle ones now, the busy ones after their call."""
        for links in self.idle.values():
            for link in links:
                self._discard(link)
        self.idle.clear()
        for link in self.busy:
            link.retired = True

    @property
    def size(self) -> int:
        return sum(len(links) for links in self.idle.values())

    def close(self) -> None:
        self.retire()

    def __repr__(self) -> str:
        return f"<ActionPool {self.inflight} in flight, {self.size} idle>"
