"""What the supervisor grants the sandboxed processes that ask: the trusted side's answers.

A worker asks for an **action process** (one application, one stage: forked from the
zygote, confined by the sandbox plan, its calls channel handed to the worker) and for
**units** of a consumer's limits (taken from the store in one transaction, so every
node's workers share each limit exactly; handed back when unspent). Every sandboxed
process may ask the **services** only the trusted side can answer (``builtins.services``:
users, mail, presigned links, OAuth2), and an action process the **code** it is to run:
a live definition of its own application and stage only (with the secrets its deployment
pins, decrypted here). What a request holds is checked: a sandboxed process runs action
code, so nothing it says is trusted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ...builtins.services import answer
from ...domain.models import Stage
from ...domain.settings import for_actions
from ...errors import SandboxError, StoreError
from ...sandbox.plan import SandboxPlan
from ...sandbox.processes import Zygote
from ...sandbox.protocol import AsyncChannel, ChannelClosed
from ...workspace.workspace import Workspace
from ..reload.feed import Feed, LiveRead
from ..reload.secret_feed import SecretFeed, is_pinned_key
from .workers import WorkerProcess

__all__ = ["Grants", "send"]

log = logging.getLogger("notebook_kit.runtime")

_MAX_WANT = 4096  # units one ask may want
_STAGES = frozenset(str(s) for s in Stage)


async def send(channel: AsyncChannel | None, header: dict[str, Any]) -> None:
    """Send ``header`` on ``channel``, if it is still there and open."""
    if channel is not None:
        with contextlib.suppress(ChannelClosed):
            await channel.send(header)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) else default


class Grants:
    """The supervisor's answers to what sandboxed processes ask (see the module
    docstring). ``current()`` is what is live now, ``plan()`` the sandbox plan in force,
    ``spawn`` starts a task the supervisor ends at its stop; ``zygote`` and ``loop`` are
    set once the supervisor runs."""

    def __init__(
        self,
        workspace: Workspace,
        feed: Feed,
        secret_feed: SecretFeed,
        current: Callable[[], LiveRead],
        plan: Callable[[], SandboxPlan | None],
        spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]],
    ) -> None:
        self.workspace = workspace
        self.feed = feed
        self.secret_feed = secret_feed
        self._current = current
        self._plan = plan
        self._spawn = spawn
        self.loop: asyncio.AbstractEventLoop | None = None
        self.zygote: Zygote | None = None

    async def process(self, worker: WorkerProcess, header: dict[str, Any]) -> None:
        """A new action process for ``worker`` (for the application and stage it names:
        the process is given code of that stage only)."""
        loop, zygote, plan = self.loop, self.zygote, self._plan()
        assert loop is not None and zygote is not None and plan is not None
        n = header.get("n")
        app = str(header.get("app"))
        stage = str(header.get("stage"))
        if stage not in _STAGES:
            await send(worker.channel, {"op": "process", "n": n, "error": "no such stage"})
            return
        settings = for_actions(self._current().settings)
        try:
            handle = await loop.run_in_executor(None, zygote.fork, plan, app, settings)
        except Exception as exc:
            if not isinstance(exc, SandboxError):
                log.exception("starting an action process for %s failed", app)
            await send(worker.channel, {"op": "process", "n": n, "error": str(exc)})
            return
        if worker.ended or worker.channel is None:
            handle.kill()
            return
        channel = AsyncChannel(handle.services, loop)
        worker.actions[handle.pid] = (handle, channel)
        if handle.pidfd is not None:
            loop.add_reader(handle.pidfd, worker.end_action, handle.pid)  # it ended
        self._spawn(self.serve(channel, app, stage))
        reply = {"op": "process", "n": n, "id": handle.pid}
        with contextlib.suppress(ChannelClosed):
            await worker.channel.send(reply, fds=[handle.calls.fileno()])
        handle.calls.close()  # the worker's now

    async def allot(self, worker: WorkerProcess, header: dict[str, Any]) -> None:
        """Units of a consumer's limits for ``worker`` (a store transaction, in a thread;
        a store that fails grants nothing: its calls are refused for a second)."""
        assert self.loop is not None
        consumer = str(header.get("consumer"))
        want = min(max(_int(header.get("want"), 1), 1), _MAX_WANT)
        take = self.workspace.consumers.take
        try:
            grant = await self.loop.run_in_executor(None, take, consumer, want)
        except StoreError as exc:
            log.warning("cannot take units of consumer %s: %s", consumer, exc)
            grant = {"units": 0, "retry": 1.0}
        with contextlib.suppress(ChannelClosed):
            if worker.channel is not None:
                await worker.channel.send({**grant, "op": "allotted", "n": header.get("n")})

    async def give_back(self, header: dict[str, Any]) -> None:
        """Units a worker took and did not spend."""
        assert self.loop is not None
        units = _int(header.get("units"), 0)
        period, tick = header.get("period"), header.get("tick")
        if units <= 0 or not (period is None or isinstance(period, str)):
            return
        if not (tick is None or isinstance(tick, int)):
            return
        give_back = self.workspace.consumers.give_back
        args = (str(header.get("consumer")), period, tick, units)
        try:
            await self.loop.run_in_executor(None, give_back, *args)
        except StoreError as exc:
            log.warning("cannot hand back units of consumer %s: %s", args[0], exc)

    async def serve(
        self, channel: AsyncChannel | None, app: str | None, stage: str | None = None
    ) -> None:
        """Answer one sandboxed process's requests (``app`` and ``stage``: what an action
        process runs; None: a worker, which asks for no code)."""
        loop = self.loop
        assert loop is not None and channel is not None
        services = self.workspace.services
        try:
            while True:
                request = (await channel.receive()).header
                if request.get("op") == "code":
                    reply = self.code(request, app, stage)
                    key = str(request.get("key", ""))
                    if "definition" in reply and app is not None and is_pinned_key(key):
                        add = self.secret_feed.add  # decrypts on the trusted side
                        reply = await loop.run_in_executor(None, add, reply, key, app)
                else:
                    reply = await loop.run_in_executor(None, answer, services, request)
                await channel.send(reply)
        except (ChannelClosed, SandboxError):
            pass

    def code(self, request: dict[str, Any], app: str | None, stage: str | None) -> dict[str, Any]:
        """The definition an action process asks for: live, of its application, and
        served on its stage (a code key starts with the stage)."""
        key = str(request.get("key", ""))
        _, _, version = key.rpartition(":")
        body = None
        if app is not None and version.isdigit() and key.partition(":")[0] == stage:
            body = self.feed.definition(int(version), app)
        if body is None:
            return {"error": f"no code {key!r} for this process"}
        return {"definition": body}
