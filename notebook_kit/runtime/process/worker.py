"""An HTTP worker: the sandboxed process that reads requests and answers them.

Started by the supervisor (``workers.WorkerProcess``) as a fresh interpreter holding only
what it was handed: the listening socket, its control and service channels, the node's
page (read-only), its own page, and the node's wake-up eventfd. The first thing it does
is confine itself (``sandbox.inside.confine``): from then on it cannot open the store,
read the supervisor's memory, environment or descriptors, or signal it. It never holds a
key: the supervisor sends key digests. Then it waits for its first snapshot, builds it,
and serves on the inherited socket (Sanic's ``create_server``, on uvloop where
installed) until SIGTERM, when it stops taking connections, lets its calls finish (at
most ``GRACEFUL_STOP_SECONDS``), sends the last log entries, and exits. It also exits
when its parent dies (``PR_SET_PDEATHSIG``) or its control channel closes.

Control messages (JSON both ways; ``runtime.process.workers`` is the other end):
supervisor -> worker ``snapshot``, ``commit``, ``process`` (an action process's calls
channel, as a descriptor), ``quarantine``, ``allotted`` (units of a consumer's limits);
worker -> supervisor ``built``, ``log``, ``process`` (asks for one), ``kill``, ``allot``
(asks for units, ``serve.allotments``), ``give_back`` (units it did not spend).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...builtins import outbound
from ...builtins.context import BuiltinContext
from ...builtins.environment import ActionEnvironment
from ...domain.clock import iso_time
from ...sandbox.inside.confine import confine
from ...sandbox.inside.service_link import ServiceLink
from ...sandbox.plan import SandboxPlan
from ...sandbox.protocol import AsyncChannel, ChannelClosed, receive
from ...sandbox.serving import IDLE_SECONDS, ActionPool
from ...store.log_batches import encode_batch
from ...store.request_log import action_counters, consumer_counters
from ..reload.builder import LiveBuilder, freeze_heap
from ..reload.follower import Follower
from ..reload.live import LiveState, LogEntry
from ..serve.allotments import Allotments
from ..serve.connections import GuardedProtocol, stop_keeping_alive
from ..serve.dispatch import Dispatcher
from ..serve.http_app import GRACEFUL_STOP_SECONDS, apply_settings, create_app
from ..serve.reserved import ReservedPaths
from .pages import attach

__all__ = ["main"]

log = logging.getLogger("notebook_kit.runtime")

_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """SIGKILL when the supervisor goes (also if it was killed): a worker never outlives
    it, holding the port with nobody to watch it."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


class Worker:
    """One worker's life (see the module docstring)."""

    def __init__(self, hello: dict[str, Any], fds: dict[str, int]) -> None:
        self.plan = SandboxPlan.from_dict(hello["plan"])
        self.index = int(hello["index"])
        self.loop = asyncio.get_running_loop()
        self.channel = AsyncChannel(socket.socket(fileno=fds["control"]), self.loop)
        self.services = ServiceLink(socket.socket(fileno=fds["services"]))
        self.listener = socket.socket(fileno=fds["listen"])
        self.committed = attach(fds["node"], writable=False)
        self.page = attach(fds["page"], writable=True)
        self.wake_fd = fds["wake"]
        self.settings: dict[str, Any] = {}
        context = BuiltinContext(Path(self.plan.home), lambda: self.settings, self.services)
        self.environment = ActionEnvironment(context)
        self.follower = Follower(LiveBuilder(self._names), self.committed)
        self._asked: dict[int, asyncio.Future[tuple[int, socket.socket]]] = {}
        self._allotting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.allotments = Allotments(self._allot, self._give_back)
        self._giving: set[asyncio.Task[None]] = set()
        self._seq = 0
        self._stop = asyncio.Event()
        self._live = asyncio.Event()  # set once a state is in service
        self._snapshots: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.dispatcher: Dispatcher | None = None

    def _names(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """What actions compile with under ``settings`` (in force from now on: a build
        is about to serve them)."""
        self.settings = dict(settings)
        return self.environment.names()

    # -- what the supervisor sends ------------------------------------------------------

    async def _build(self) -> None:
        """Build each snapshot in turn, off the loop (each may carry bodies the next
        ones refer to), and say so."""
        while True:
            snapshot = await self._snapshots.get()
            state = await self.loop.run_in_executor(None, self.follower.build, snapshot)
            self.follower.ready(state)
            await self._send({"op": "built", "generation": state.generation})
            self._advance()

    def _advance(self) -> None:
        """Serve the newest state the node committed (the first one: start serving)."""
        if self.follower.advance():
            self._live.set()

    async def _listen(self) -> None:
        """Every message from the supervisor, until the channel closes (then stop)."""
        try:
            while True:
                message = await self.channel.receive()
                header = message.header
                op = header.get("op")
                if op == "snapshot":
                    self._snapshots.put_nowait(header)
                elif op == "commit":
                    self._advance()
                elif op == "process":
                    self._granted(header, message.fds)
                elif op == "flush":  # the supervisor's sync(): send what is buffered now
                    if self.dispatcher is not None:
                        entries = self.dispatcher.take_log()
                        if entries:
                            await self._send_log(entries)
                    await self._send({"op": "flushed"})
                elif op == "allotted":
                    waiter = self._allotting.pop(int(header.get("n", -1)), None)
                    if waiter is not None and not waiter.done():
                        waiter.set_result(header)
                elif op == "quarantine":
                    self.follower.builder.quarantine([int(v) for v in header["versions"]])
        except ChannelClosed:
            self._stop.set()

    def _granted(self, header: dict[str, Any], fds: list[int]) -> None:
        waiter = self._asked.pop(int(header.get("n", -1)), None)
        if waiter is None or waiter.done():
            for fd in fds:
                os.close(fd)
            return
        if not fds:
            waiter.set_exception(RuntimeError(str(header.get("error") or "no action process")))
            return
        waiter.set_result((int(header["id"]), socket.socket(fileno=fds[0])))

    # -- what the worker asks -----------------------------------------------------------

    async def _acquire(self, app: str, stage: str) -> tuple[int, socket.socket]:
        self._seq += 1
        n = self._seq
        waiter = self.loop.create_future()
        self._asked[n] = waiter
        await self.channel.send({"op": "process", "n": n, "app": app, "stage": stage})
        return await waiter

    async def _allot(self, consumer: str, want: int) -> dict[str, Any]:
        """Units of ``consumer``'s limits, from the store through the supervisor."""
        self._seq += 1
        n = self._seq
        waiter = self.loop.create_future()
        self._allotting[n] = waiter
        try:
            await self.channel.send({"op": "allot", "n": n, "consumer": consumer, "want": want})
            return await waiter
        finally:
            self._allotting.pop(n, None)  # this ask's own: others may be on their way

    def _give_back(self, consumer: str, period: Any, tick: Any, units: int) -> None:
        header = {"op": "give_back", "consumer": consumer, "period": period, "tick": tick}
        task = self.loop.create_task(self._send({**header, "units": units}))
        self._giving.add(task)  # awaited at the stop, so the last ones go out
        task.add_done_callback(self._giving.discard)

    def _kill(self, process_id: int) -> None:
        self.loop.create_task(self._send({"op": "kill", "id": process_id}))

    async def _send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        with contextlib.suppress(ChannelClosed):
            await self.channel.send(header, payload)

    async def _send_log(self, entries: list[LogEntry]) -> None:
        """One batch of log entries (``store.log_batches``) and the counters they add."""
        wall = time.time() - time.perf_counter()
        stats = [list(row) for row in action_counters(entries, wall)]
        header: dict[str, Any] = {"op": "log", "stats": stats}
        usage = consumer_counters(entries, wall)
        if usage:
            header["usage"] = [list(row) for row in usage]
        dispatcher = self.dispatcher
        if dispatcher is not None and dispatcher.used:
            used, dispatcher.used = dispatcher.used, {}
            header["used"] = {digest: iso_time(wall + at) for digest, at in used.items()}
        traced: list[Any] = entries
        if traced and len(traced[-1]) > 10:  # tracing: each call's parent and calls
            header["spans"] = [
                [i, e[10][0], [list(c) for c in e[10][1]]]
                for i, e in enumerate(traced)
                if e[10][0] is not None or e[10][1]
            ]
        await self._send(header, encode_batch(entries))

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.eventfd_write(self.wake_fd, 1)

    def _activate(self, state: LiveState) -> None:
        """Serve ``state`` from now on (on the loop, between requests)."""
        dispatcher = self.dispatcher
        changed = dispatcher is not None and state.settings != dispatcher.live.settings
        self.settings = dict(state.settings)
        outbound.record(state.tracing)  # inline actions' http and db calls, for the trace
        if dispatcher is None:
            return
        dispatcher.live = state
        dispatcher.pool.cap = state.max_concurrent_actions
        if changed:  # action processes bound the old settings: new ones get the new
            dispatcher.pool.retire()
            apply_settings(dispatcher.app, state.settings)

    # -- the worker's life --------------------------------------------------------------

    async def run(self) -> None:
        listening = self.loop.create_task(self._listen())
        building = self.loop.create_task(self._build())
        await self._live.wait()
        state = self.follower.catch_up()
        self.settings = dict(state.settings)
        outbound.record(state.tracing)
        pool = ActionPool(self.loop, self._acquire, self._kill, state.max_concurrent_actions)
        reserved = ReservedPaths(self.services, Path(self.plan.home), lambda: self.settings)
        dispatcher = Dispatcher(
            state, pool, self.page, reserved, self._wake, self._send_log, self.allotments
        )
        dispatcher.committed = self.committed
        dispatcher.catch_up = self.follower.catch_up
        self.dispatcher = dispatcher
        self.follower.activate = self._activate
        app = create_app(dispatcher, name=f"notebook_kit_worker_{self.index}")
        dispatcher.app = app
        server: Any = await app.create_server(sock=self.listener, protocol=GuardedProtocol)
        await server.startup()
        await server.before_start()
        await server.after_start()
        freeze_heap()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stop.set)
        reaping = self.loop.create_task(self._reap(pool))
        await self._stop.wait()
        await self._drain(app, server)
        for task in (reaping, listening, building):
            task.cancel()
        pool.close()

    async def _reap(self, pool: ActionPool) -> None:
        while True:
            await asyncio.sleep(IDLE_SECONDS / 4)
            pool.reap(time.monotonic())

    async def _drain(self, app: Any, server: Any) -> None:
        """Stop: no new connections, the calls in flight finish (bounded), the log goes."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)
        await server.before_stop()
        server.server.close()
        stop_keeping_alive(app)
        deadline = self.loop.time() + GRACEFUL_STOP_SECONDS
        while server.connections and self.loop.time() < deadline:
            await asyncio.sleep(0.02)
        for connection in list(server.connections):
            connection.close()
        await server.after_stop()
        assert self.dispatcher is not None
        self.allotments.give_back_all()
        await asyncio.gather(*self._giving)
        entries = self.dispatcher.take_log()
        if entries:
            await self._send_log(entries)


def main() -> None:
    """``python -m notebook_kit.runtime.process.worker CONTROL SERVICES LISTEN NODE PAGE
    WAKE`` (descriptor numbers), as the supervisor starts it."""
    names = ("control", "services", "listen", "node", "page", "wake")
    fds = dict(zip(names, (int(a) for a in sys.argv[1:7]), strict=True))
    control = socket.socket(fileno=fds["control"])
    hello = receive(control).header
    control.detach()
    _die_with(int(hello["parent"]))
    confine(SandboxPlan.from_dict(hello["plan"]))
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s worker {hello['index']} %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor stops workers with SIGTERM
    try:
        import uvloop

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    async def serve() -> None:
        await Worker(hello, fds).run()

    try:
        loop.run_until_complete(serve())
    finally:
        loop.close()


if __name__ == "__main__":
    main()
