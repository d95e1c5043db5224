"""The supervisor: the trusted process of a server, the only one that holds the store.

It runs no action code, so nothing an action does can stop it, read its memory or reach
the store through it. It:

* binds the port (the caller did) and starts the HTTP workers (``workers``), sandboxed
  processes that accept on it, and a zygote for action processes (``sandbox``);
* follows the store (``reload.store_link``: NOTIFY, inotify or polling) and pushes every
  new generation to the workers as a snapshot (``reload.feed``); when every worker has
  built it, it commits it on the node page, and they switch together;
* answers what sandboxed processes ask (``grants``: the services only it can answer,
  an action process's code, action processes forked for a worker, units of consumers'
  limits taken from the store), and kills action processes a worker says ran past their
  limit;
* writes the request log the workers send (``log_writer``);
* runs the deployed schedules' ticks this node claims in the store (``scheduler``);
* watches each worker from outside its GIL (``worker_watch``): a worker frozen in one
  inline call for ``STALL_SECONDS`` is killed, the action quarantined (never inline
  again) and the worker replaced; a worker that exits is replaced (at most once a
  second);
* stops within ``STOP_SECONDS`` whatever the workers do: no new connections at once,
  the calls in flight finish, the log is written, what is left is killed.

It runs as ``notebook-kit serve``'s main process, or on a thread of a notebook kernel
(``handles.BackgroundServer``): the same code either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from ...errors import NotebookKitError, SandboxError, StoreError
from ...sandbox.inside.landlock import abi
from ...sandbox.pace import STALL_SECONDS
from ...sandbox.plan import PLAN_SETTINGS, SandboxPlan, plan_for
from ...sandbox.processes import zygote
from ...sandbox.protocol import ChannelClosed, Message
from ...store.file_stamp import FileStamp
from ...store.log_batches import decode_batch
from ...workspace.workspace import Workspace
from ..reload.feed import Feed, LiveRead
from ..reload.secret_feed import SecretFeed
from ..reload.store_link import StoreLink
from .grants import Grants, send
from .log_writer import LogWriter
from .metrics import Metrics
from .pages import COMMITTED, Page
from .scheduler import Scheduler
from .tracing import Tracing
from .worker_watch import WorkerWatch
from .workers import WorkerProcess

__all__ = ["STOP_SECONDS", "Supervisor", "sandbox_warning"]

log = logging.getLogger("notebook_kit.runtime")

STOP_SECONDS = 9.0  # a stop ends within this (then every process left is killed)
_FULL_ABI = 6  # Landlock scopes signals and abstract sockets from ABI 6 (Linux 6.12)
_REPLACE_EVERY = 1.0  # seconds between two starts of the same worker


def sandbox_warning(version: int | None = None) -> str | None:
    """The line a server logs at start where the kernel (Landlock ABI ``version``, this
    one's by default) cannot confine actions fully; None where it can."""
    version = abi() if version is None else version
    if version >= _FULL_ABI:
        return None
    if version == 0:
        lost = (
            "this kernel has no Landlock (Linux 5.13+): action code runs in processes of "
            "their own but is not kept from the workspace store"
        )
    else:
        missing = ["signals to the server", "abstract Unix sockets"]
        if version < 3:
            missing.insert(0, "truncating files by name")
        lost = (
            f"this kernel's Landlock (ABI {version}) does not keep action code from "
            f"{', '.join(missing[:-1])} or {missing[-1]} (Linux 6.12+ does)"
        )
    return f"{lost} (see docs/trust-model.md)"


class Supervisor:
    """A server's trusted process over ``workspace``, serving on ``listener`` with
    ``workers`` HTTP workers (see the module docstring)."""

    def __init__(self, workspace: Workspace, listener: socket.socket, workers: int = 1) -> None:
        self.workspace = workspace
        self.listener = listener
        self.count = workers
        self.feed = Feed(workspace)
        self.secret_feed = SecretFeed(workspace)
        self.workers: list[WorkerProcess] = []
        self._retiring: list[WorkerProcess] = []  # replaced, still draining
        self.ready = threading.Event()  # the first generation is served
        self.phase = "starting"  # what a start waits for, until ready (for its errors)
        self.stopping = False
        self._stop_asked = False  # stop() before run() made its loop: run() stops at once
        self.failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._read: LiveRead | None = None
        self._plan: SandboxPlan | None = None
        self._node: Page | None = None
        self._wake_fd = -1
        self._tasks: set[asyncio.Task[Any]] = set()
        current, plan = (lambda: self._current), (lambda: self._plan)
        self.grants = Grants(workspace, self.feed, self.secret_feed, current, plan, self._spawn)
        self.watch = WorkerWatch(lambda: self.workers, self._stuck)
        self._flushed: dict[int, asyncio.Future[None]] = {}  # sync(): the workers' answers
        self.store_error: str | None = None  # why the store did not answer, until it does
        self.metrics: Metrics | None = None  # once running (``metrics``)
        self.scheduler: Scheduler | None = None  # once running
        self.committed: tuple[int, float] = (-1, 0.0)  # generation served, since (epoch)
        self._apps: tuple[int, frozenset[tuple[str, str]]] = (-1, frozenset())
        self.tracing = Tracing()

    # -- life ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop (from any thread): see ``STOP_SECONDS``."""
        self._stop_asked = True
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)

    def sync(self, timeout: float = 10.0) -> None:
        """From another thread: return once every worker serves what the store has live
        now and every call answered so far is in the request log (what a test, or a
        notebook about to read the log, waits for). Raises TimeoutError."""
        loop = self._loop
        if loop is None or loop.is_closed():
            raise RuntimeError("the server is not running")
        asyncio.run_coroutine_threadsafe(self._sync(), loop).result(timeout)

    async def _sync(self) -> None:
        assert self._loop is not None and self._node is not None
        loop = self._loop
        generation = await loop.run_in_executor(None, self.feed.generation)
        if generation != self._current.generation:
            await self._publish(await loop.run_in_executor(None, self.feed.read))
        while self._node.words[COMMITTED] < generation:
            await asyncio.sleep(0.005)
        live = [w for w in self.workers if not w.ended]
        self._flushed = {w.index: loop.create_future() for w in live}
        for worker in live:
            await send(worker.channel, {"op": "flush"})
        await asyncio.gather(*self._flushed.values())
        await loop.run_in_executor(None, self.log.write)

    async def run(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until ``stop()``; ``on_ready`` runs once the workers serve."""
        loop = self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._stop_asked:
            self._stop.set()
        self.grants.loop = loop
        read = await self._first_read(loop)
        if read is None:
            return  # stopped while the store was away
        self._read = read
        self.link = StoreLink(self.workspace.store, loop)
        self._plan = self._plan_for(read)
        warning = sandbox_warning()
        if warning:
            log.warning(warning)
        self.phase = "starting the process that forks action processes"
        self.grants.zygote = await loop.run_in_executor(None, zygote)
        self._node = Page("notebook-kit-node", worker_writes=False)
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        loop.add_reader(self._wake_fd, self._on_wake)
        self.log = LogWriter(
            self.workspace,
            self.link,
            lambda: self._current.settings,
            lambda: self._current.canary_check,
        )
        self.metrics = Metrics(
            lambda: int(self._current.settings["metrics_max_series"]), self._live_apps
        )
        try:
            self.phase = "the HTTP workers starting and building what is live"
            for index in range(self.count):
                self._start_worker(index)
            self._spawn(self._follow())
            self._spawn(self.log.run())
            self.scheduler = Scheduler(self.workspace)
            self._spawn(self.scheduler.run())  # the deployed schedules' ticks
            self._spawn(self.watch.run(loop))
            ready = self._spawn(self._wait_ready(on_ready))
            await self._stop.wait()
            ready.cancel()
        finally:
            await self._shutdown()

    async def _first_read(self, loop: asyncio.AbstractEventLoop) -> LiveRead | None:
        """What is live, read once the store answers (None: stopped before it did)."""
        assert self._stop is not None
        while True:
            self.phase = "reading what is live from the store"
            try:
                read = await loop.run_in_executor(None, self.feed.read)
            except StoreError as exc:
                if self.store_error is None:
                    log.warning("the store does not answer (%s): waiting for it", exc)
                self.store_error = str(exc)
                self.phase = f"waiting for the store ({exc})"
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 1.0)
                if self._stop.is_set():
                    return None
                continue
            self.store_error = None
            return read

    def _live_apps(self) -> frozenset[tuple[str, str]]:
        """The (stage, application) pairs live now (for the metrics' labels)."""
        read = self._current
        if self._apps[0] != read.generation:
            self._apps = (read.generation, frozenset((str(p[0]), str(p[1])) for p in read.live))
        return self._apps[1]

    async def _wait_ready(self, on_ready: Callable[[], None] | None) -> None:
        while not self.ready.is_set():
            await asyncio.sleep(0.01)
        if on_ready is not None:
            on_ready()

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        assert self._loop is not None
        task = self._loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def _current(self) -> LiveRead:
        assert self._read is not None
        return self._read

    def _plan_for(self, read: LiveRead) -> SandboxPlan:
        settings = read.settings
        return plan_for(
            self.workspace.home, settings, memory_mb=int(settings["action_memory_limit"])
        )

    async def _shutdown(self) -> None:
        """No new connections; the workers drain; the log is written; all else ends."""
        loop = asyncio.get_running_loop()
        self.stopping = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # every copy stops listening at once
        for worker in self.workers:
            worker.signal(signal.SIGTERM)
        deadline = loop.time() + STOP_SECONDS - 1
        while any(w.alive for w in [*self.workers, *self._retiring]) and loop.time() < deadline:
            await asyncio.sleep(0.05)  # their last log entries still come in meanwhile
        await asyncio.sleep(0.05)
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for worker in [*self.workers, *self._retiring]:
            self._forget(worker)
        self._retiring.clear()
        with contextlib.suppress(Exception):
            await loop.run_in_executor(None, self.log.write_now)
        with contextlib.suppress(Exception):
            await loop.run_in_executor(None, self.tracing.close)
        if self._wake_fd >= 0:
            loop.remove_reader(self._wake_fd)
            os.close(self._wake_fd)
        if self._node is not None:
            self._node.close()
        self.link.close()
        if self._plan is not None:
            self._plan.discard()
        log.info("stopped serving %s", self.workspace.home)

    # -- workers ------------------------------------------------------------------------

    def _start_worker(self, index: int) -> WorkerProcess:
        assert self._loop is not None and self._plan is not None and self._node is not None
        worker = WorkerProcess(index)
        worker.start(self._loop, self._plan, self.listener, self._node.fd, self._wake_fd)
        self.workers.append(worker)
        if worker.pidfd is not None:
            self._loop.add_reader(worker.pidfd, self._worker_ended, worker)
        self._spawn(self._listen(worker))
        self._spawn(self.grants.serve(worker.services, None))
        self._spawn(self._send_snapshot(worker, self._current))
        return worker

    def _retire(self, worker: WorkerProcess) -> None:
        """A worker replaced by a new plan, given its time to drain: ended now."""
        if worker in self._retiring:
            self._retiring.remove(worker)
            self._forget(worker)

    def _forget(self, worker: WorkerProcess) -> None:
        if worker.pidfd is not None and self._loop is not None:
            self._loop.remove_reader(worker.pidfd)
        worker.close()

    def _worker_ended(self, worker: WorkerProcess) -> None:
        """A worker's process ended: start another in its place (unless stopping)."""
        assert self._loop is not None
        if worker.pidfd is not None:
            self._loop.remove_reader(worker.pidfd)
        if self.stopping or worker.ended:
            return
        code = worker.process.poll() if worker.process is not None else None
        log.error("worker %d (pid %d) %s: starting another", worker.index, worker.pid, _how(code))
        self._replace(worker)

    def _replace(self, worker: WorkerProcess) -> None:
        assert self._loop is not None
        if worker in self.workers:
            self.workers.remove(worker)
        self._forget(worker)
        wait = worker.started_at + _REPLACE_EVERY - self._loop.time()
        if wait > 0:
            self._loop.call_later(wait, self._restart, worker.index)
        else:
            self._restart(worker.index)

    def _restart(self, index: int) -> None:
        if not self.stopping:
            self._start_worker(index)

    async def _listen(self, worker: WorkerProcess) -> None:
        """Every message of one worker, until its channel closes."""
        assert worker.channel is not None
        try:
            while True:
                message = await worker.channel.receive()
                try:
                    self._on_message(worker, message)
                except Exception:  # a worker runs action code: what it says is checked
                    log.exception("worker %d sent a message that was refused", worker.index)
        except ChannelClosed:
            pass
        except SandboxError as exc:  # not a message at all: the worker is broken
            log.error("worker %d sent what is not a message (%s): replacing it", worker.index, exc)
            worker.signal(signal.SIGKILL)

    def _on_message(self, worker: WorkerProcess, message: Message) -> None:
        header = message.header
        op = header.get("op")
        assert self._loop is not None
        self.watch.busy(self._loop.time())
        if op == "log":
            try:
                self.log.add(
                    message.payload, header.get("stats"), header.get("usage"), header.get("used")
                )
                self._observe(message.payload, header.get("spans"))
            except ValueError as exc:
                log.warning("worker %d sent a malformed log batch (%s)", worker.index, exc)
        elif op == "built":
            worker.built = max(worker.built, _int(header.get("generation"), -1))
            self._commit(worker)
        elif op == "process":
            self._spawn(self.grants.process(worker, header))
        elif op == "flushed":
            waiter = self._flushed.pop(worker.index, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        elif op == "kill":
            worker.end_action(_int(header.get("id"), -1))
        elif op == "allot":
            self._spawn(self.grants.allot(worker, header))
        elif op == "give_back":
            self._spawn(self.grants.give_back(header))
        for fd in message.fds:  # a worker hands the supervisor no descriptor
            os.close(fd)

    def _observe(self, batch: bytes, spans: Any) -> None:
        """A log batch counted in the metrics, and traced while tracing is on."""
        _, entries = decode_batch(batch)
        assert self.metrics is not None
        self.metrics.count(entries)
        if self._current.settings.get("tracing"):
            self.tracing.emit(entries, spans, time.time() - time.perf_counter())

    def _commit(self, worker: WorkerProcess) -> None:
        """Commit the newest generation once every worker has built it; a worker that
        has built what is committed (a new one) is told at once."""
        assert self._node is not None
        words = self._node.words
        target = self._current.generation
        live = [w for w in self.workers if not w.ended]
        if all(w.built >= target for w in live) and words[COMMITTED] < target:
            self.feed.committed(words[COMMITTED])  # what was served until now: still asked for
            words[COMMITTED] = target
            self.committed = (target, time.time())
            for each in live:
                self._spawn(send(each.channel, {"op": "commit", "generation": target}))
        elif 0 <= worker.built <= words[COMMITTED]:
            self._spawn(send(worker.channel, {"op": "commit", "generation": words[COMMITTED]}))
        if words[COMMITTED] >= 0 and all(w.built >= 0 for w in live) and live:
            self.phase = "serving"
            self.ready.set()

    async def _send_snapshot(self, worker: WorkerProcess, read: LiveRead) -> None:
        header = self.feed.snapshot(read, worker.sent)
        worker.sent = read.referenced
        await send(worker.channel, header)

    # -- following the store ------------------------------------------------------------

    async def _follow(self) -> None:
        """Push each new generation to the workers; never stops on an error."""
        assert self._loop is not None
        loop, link = self._loop, self.link
        path = self.workspace.store.path
        stamp = FileStamp(path) if path is not None else None
        while True:
            busy = bool(self.log._pending)
            tick = link.tick(busy, float(self._current.settings["reload_interval"]), loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(link.wake.wait(), tick)
            link.woken(loop.time())
            if stamp is not None and not link.lost and not stamp.changed():
                continue
            try:
                generation = await loop.run_in_executor(None, self.feed.generation)
                self.store_error = None
                if generation != self._current.generation or link.lost:
                    read = await loop.run_in_executor(None, self.feed.read)
                    link.answered(self.log.dropped)
                    await self._publish(read)
            except StoreError as exc:
                self.store_error = str(exc)
                link.failed(exc)
            except Exception:
                log.exception("reading what is live failed; still serving the previous state")

    async def _publish(self, read: LiveRead) -> None:
        """Send ``read`` to every worker (a new sandbox plan first, if its paths moved)."""
        previous = self._current
        self._read = read
        if self.scheduler is not None:
            self.scheduler.wake()  # schedules deployed or gone, perhaps
        if any(previous.settings[n] != read.settings[n] for n in PLAN_SETTINGS):
            try:
                plan = self._plan_for(read)
            except NotebookKitError as exc:  # a files root holding the workspace, say
                log.error("the sandbox keeps its paths: the new settings are refused: %s", exc)
            else:
                await self._replan(plan)
                return
        for worker in list(self.workers):
            await self._send_snapshot(worker, read)

    async def _replan(self, plan: SandboxPlan) -> None:
        """New paths for the sandbox (a files root, an environment database moved): each
        worker replaced by one confined to them, and action processes too."""
        assert self._loop is not None
        old_plan, self._plan = self._plan, plan
        for worker in list(self.workers):
            self.workers.remove(worker)
            worker.signal(signal.SIGTERM)  # it drains; its replacement starts meanwhile
            worker.ended = True
            self._retiring.append(worker)
            self._start_worker(worker.index)
            self._loop.call_later(STOP_SECONDS, self._retire, worker)
        if old_plan is not None:
            self._loop.call_later(STOP_SECONDS + 1, old_plan.discard)

    # -- watching the workers -----------------------------------------------------------

    def _on_wake(self) -> None:
        with contextlib.suppress(OSError):
            os.eventfd_read(self._wake_fd)
        self.watch.wake()

    def _stuck(self, worker: WorkerProcess, version: int) -> None:
        """A worker frozen in one inline call: quarantine the action, replace the worker."""
        log.error(
            "worker %d (pid %d) held its loop in one call of definition version %d for %g s: "
            "replacing it; that action now runs in action processes only",
            worker.index,
            worker.pid,
            version,
            STALL_SECONDS,
        )
        self.feed.quarantined.add(version)
        for other in self.workers:
            if other is not worker:
                self._spawn(send(other.channel, {"op": "quarantine", "versions": [version]}))
        self._replace(worker)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) else default


def _how(code: int | None) -> str:
    if code is None or code >= 0:
        return f"exited with status {code}"
    name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
    return f"was ended by {name}"
