"""The supervisor's handle on one HTTP worker and on the action processes it uses.

``WorkerProcess.start`` spawns ``runtime.process.worker`` as a fresh interpreter with
only what it needs open (the listening socket, its control and service channels, the
node's page, its own page, the wake-up eventfd), sends it its ``hello`` (the sandbox
plan, its index, the supervisor's pid), and from then on it is watched by its pidfd. The
supervisor keeps, per worker, what it sent (``sent``: the definition bodies the worker
has), what the worker built, and the action processes it made for it (``actions``), so
that a worker's end ends them too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from typing import Any

from ...sandbox.plan import SandboxPlan
from ...sandbox.processes import ActionProcessHandle, spawn_python
from ...sandbox.protocol import AsyncChannel, send
from .pages import Page

__all__ = ["WorkerProcess"]


class WorkerProcess:
    """One HTTP worker as the supervisor holds it (see the module docstring)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.process: Any = None
        self.pid = 0
        self.pidfd: int | None = None
        self.channel: AsyncChannel | None = None
        self.services: AsyncChannel | None = None
        self.page: Page | None = None
        self.sent: frozenset[int] = frozenset()
        self.built = -1
        # the action processes made for it, by pid: each with the channel its requests
        # come in on (the supervisor serves it)
        self.actions: dict[int, tuple[ActionProcessHandle, AsyncChannel]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.started_at = 0.0
        self.ended = False

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        plan: SandboxPlan,
        listener: socket.socket,
        node_fd: int,
        wake_fd: int,
    ) -> None:
        """Spawn the worker and hand it its ``hello``."""
        control, control_child = socket.socketpair()
        services, services_child = socket.socketpair()
        self.page = Page(f"notebook-kit-worker-{self.index}", worker_writes=True)
        keep = [
            control_child.fileno(),
            services_child.fileno(),
            listener.fileno(),
            node_fd,
            self.page.fd,
            wake_fd,
        ]
        try:
            self.process = spawn_python(
                "notebook_kit.runtime.process.worker", keep, plan.tmp, [str(fd) for fd in keep]
            )
        finally:
            control_child.close()
            services_child.close()
        self.pid = self.process.pid
        self._loop = loop
        hello = {"plan": plan.to_dict(), "index": self.index, "parent": os.getpid()}
        send(control, hello)
        self.channel = AsyncChannel(control, loop)
        self.services = AsyncChannel(services, loop)
        with contextlib.suppress(OSError, AttributeError):
            self.pidfd = os.pidfd_open(self.pid)
        self.started_at = loop.time()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, signum: int) -> None:
        with contextlib.suppress(OSError):
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signum)
            elif self.pid:
                os.kill(self.pid, signum)

    def end_action(self, pid: int) -> None:
        """Kill one of its action processes and what that started (its session's
        process group), and forget it (the loop first stops watching its descriptors)."""
        found = self.actions.pop(pid, None)
        if found is None:
            return
        handle, channel = found
        if handle.pidfd is not None and self._loop is not None:
            self._loop.remove_reader(handle.pidfd)
        channel.close()
        handle.kill()  # with its process group

    def end_actions(self) -> None:
        """Kill every action process made for this worker."""
        for pid in list(self.actions):
            self.end_action(pid)

    def close(self) -> None:
        """Kill it (if it still runs) and everything it used; reap it."""
        self.ended = True
        self.signal(signal.SIGKILL)
        if self.pidfd is not None and self._loop is not None:
            self._loop.remove_reader(self.pidfd)
        self.end_actions()
        for channel in (self.channel, self.services):
            if channel is not None:
                channel.close()
        if self.process is not None:
            with contextlib.suppress(Exception):
                self.process.wait(5)
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
        if self.page is not None:
            self.page.close()
            self.page = None

    def __repr__(self) -> str:
        return f"<WorkerProcess {self.index} pid {self.pid} built {self.built}>"
