"""One node's life in its process: the admin listener, the store awaited, the supervisor.

A node is started with its workspace, or with a way to open it: ``notebook-kit serve``
on a PostgreSQL store that is down does not exit (a service manager would restart it in
a loop): it waits, trying again every ``RETRY_SECONDS``, its admin listener (when asked
for, ``admin``) answering ``/live`` 200 and ``/ready`` 503 ``store unreachable: ...``
meanwhile; once the store answers, the supervisor starts, and itself waits out a store
that goes away again (``Supervisor``). The admin listener lives as long as the node, so
``/ready`` says ``stopping`` while the calls in flight drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable

from ...errors import StoreError
from ...workspace.workspace import Workspace
from .admin import AdminListener, Answer
from .metrics import Metrics, Sample
from .supervisor import Supervisor

__all__ = ["RETRY_SECONDS", "Node", "is_unreachable"]

log = logging.getLogger("notebook_kit.runtime")

RETRY_SECONDS = 1.0
_METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def is_unreachable(exc: StoreError) -> bool:
    """Whether opening the store failed for want of its server (worth waiting for)."""
    return "cannot reach the store" in str(exc)


class Node:
    """A server over ``workspace`` (or what ``workspace()`` opens, once the store answers)
    on ``listener`` with ``workers`` HTTP workers, and the admin listener on ``admin``
    (a bound socket) when given."""

    def __init__(
        self,
        workspace: Workspace | Callable[[], Workspace],
        listener: socket.socket,
        workers: int = 1,
        admin: socket.socket | None = None,
    ) -> None:
        self.listener = listener
        self.workers = workers
        self.admin = admin
        self._open = workspace if not isinstance(workspace, Workspace) else None
        self.supervisor: Supervisor | None = None
        if isinstance(workspace, Workspace):
            self.supervisor = Supervisor(workspace, listener, workers)
        self.store_error: str | None = None  # while the store is awaited before the start
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stop_asked = False
        self._idle = Metrics(lambda: 1, frozenset)  # before the supervisor: no calls yet

    def stop(self) -> None:
        """Stop (from any thread)."""
        self._stop_asked = True
        if self.supervisor is not None:
            self.supervisor.stop()
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)

    async def run(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until ``stop()`` (see the module docstring)."""
        self._loop = loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._stop_asked:
            self._stop.set()
        admin = None
        if self.admin is not None:
            routes = {"/live": self.live, "/ready": self.ready, "/metrics": self.metrics}
            admin = AdminListener(self.admin, routes)
            await admin.start()
        try:
            if self.supervisor is None:
                assert self._open is not None
                workspace = await self._wait_for_store(loop, self._open)
                if workspace is None:
                    return
                self.supervisor = Supervisor(workspace, self.listener, self.workers)
                if self._stop_asked:
                    return
            await self.supervisor.run(on_ready)
        finally:
            if admin is not None:
                await admin.close()

    async def _wait_for_store(
        self, loop: asyncio.AbstractEventLoop, opening: Callable[[], Workspace]
    ) -> Workspace | None:
        assert self._stop is not None
        said = None
        while not self._stop.is_set():
            try:
                workspace = await loop.run_in_executor(None, opening)
            except StoreError as exc:
                if not is_unreachable(exc):
                    raise
                self.store_error = str(exc)
                if said != self.store_error:  # once, and again when the reason changes
                    said = self.store_error
                    log.warning("%s; waiting for it (the admin /ready says so)", exc)
            else:
                if said is not None:
                    log.warning("the store answers: starting")
                self.store_error = None
                return workspace
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), RETRY_SECONDS)
        return None

    # -- what the admin listener answers -------------------------------------------------

    def readiness(self) -> tuple[bool, list[str]]:
        """Whether the node is ready, and the lines that say why (or why not)."""
        supervisor = self.supervisor
        if self._stop_asked or (supervisor is not None and supervisor.stopping):
            return False, ["stopping"]
        if supervisor is None:
            if self.store_error is not None:
                return False, [f"store unreachable: {self.store_error}"]
            return False, ["starting: opening the store"]
        error = supervisor.store_error
        if error is not None:
            return False, [f"store unreachable: {error}"]
        if not supervisor.ready.is_set():
            return False, [f"starting: {supervisor.phase}"]
        lines = ["ready"]
        writer = getattr(supervisor, "log", None)
        if writer is not None and (writer.backlog or writer.dropped_total):
            lines.append(
                f"request log backlog: {writer.backlog} entries waiting, "
                f"{writer.dropped_total} dropped"
                + (f" (the store refuses writes: {writer.error})" if writer.error else "")
            )
        return True, lines

    def live(self) -> Answer:
        return Answer(200, "live\n")

    def ready(self) -> Answer:
        ok, lines = self.readiness()
        return Answer(200 if ok else 503, "\n".join(lines) + "\n")

    def metrics(self) -> Answer:
        ok, _ = self.readiness()
        supervisor = self.supervisor
        gauges: list[Sample] = [
            ("notebook_kit_ready", "gauge", "1 while /ready answers 200.", [({}, float(ok))]),
        ]
        if supervisor is None or supervisor.metrics is None:
            return Answer(200, self._idle.render(gauges), _METRICS_TYPE)
        generation, committed_at = supervisor.committed
        age = time.time() - committed_at if committed_at else 0.0
        writer = supervisor.log
        gauges += [
            ("notebook_kit_reload_generation", "gauge", "The store generation the node "
             "serves.", [({}, float(generation))]),
            ("notebook_kit_reload_age_seconds", "gauge", "Seconds since the node began to "
             "serve that generation.", [({}, age)]),
            ("notebook_kit_request_log_backlog_entries", "gauge", "Request-log entries "
             "waiting in memory for the store.", [({}, float(writer.backlog))]),
            ("notebook_kit_request_log_dropped_total", "counter", "Request-log entries "
             "dropped (the backlog past its limit, or lost at a stop).",
             [({}, float(writer.dropped_total))]),
            ("notebook_kit_request_log_written_total", "counter", "Request-log entries "
             "written to the store.", [({}, float(writer.written))]),
            ("notebook_kit_workers", "gauge", "HTTP workers running.",
             [({}, float(sum(1 for w in supervisor.workers if not w.ended)))]),
        ]  # fmt: skip
        return Answer(200, supervisor.metrics.render(gauges), _METRICS_TYPE)
