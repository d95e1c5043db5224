"""The main process of ``serve --workers N`` (N >= 2): it refuses new connections the
moment it is told to stop, and replaces a worker that died.

Sanic's main process binds the listening socket, starts the workers (which accept on it)
and, on SIGTERM or SIGINT, forwards SIGINT to each worker and waits for them. Two gaps:

* Its copy of the listening socket stays open until every worker has exited, so while
  the workers drain, the kernel still completes new connections into the backlog and no
  one ever answers them (a caller hangs until its own timeout). ``Supervisor`` shuts the
  socket down (``SHUT_RDWR``) on the first stop signal, before forwarding it: every
  process's copy stops listening at once and a new connection is refused, as with one
  worker. Connections already accepted are not touched; the workers drain them.
* A worker that exits on its own (frozen past its limit and ended by its watchdog's
  SIGALRM, see ``relay.Relay``; killed by the kernel; an action calling ``os._exit``)
  is marked failed
  and never started again: the server runs one worker short, or with none. ``Supervisor``
  polls the workers every ``POLL_SECONDS`` and has the manager start a replacement for any
  that is gone while the server is not stopping (at most one a second per worker).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from .graceful import STOP_SIGNALS

if TYPE_CHECKING:
    from sanic import Sanic

__all__ = ["POLL_SECONDS", "Supervisor"]

log = logging.getLogger("notebook_kit.runtime")

POLL_SECONDS = 0.25
_REPLACE_EVERY = 1.0  # seconds between two replacements of the same worker


class Supervisor:
    """Installed in the main process by ``install`` (a ``main_process_ready`` listener)."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.manager: Any = None
        self.listeners: list[socket.socket] = []
        self._replaced: dict[str, float] = {}  # worker process name -> when last replaced
        self._seen_dead: set[int] = set()  # pids already replaced

    def install(self, app: Sanic) -> None:
        self.manager = app.manager
        self.listeners = [
            info.settings["sock"]
            for info in app.state.server_info
            if isinstance(info.settings.get("sock"), socket.socket)
        ]
        for sig in STOP_SIGNALS:  # replaces the manager's own handler, which it then calls
            signal.signal(sig, self._on_signal)
        threading.Thread(target=self._watch, name="worker-supervisor", daemon=True).start()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            for sock in self.listeners:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self.manager.shutdown_signal(signum, frame)

    def _watch(self) -> None:
        while not self.stopping.wait(POLL_SECONDS):
            if getattr(self.manager, "_shutting_down", False):
                return
            try:
                self._replace_dead()
            except Exception:  # the manager's state changed under us: look again next time
                log.exception("checking the workers failed")

    def _replace_dead(self) -> None:
        from sanic.worker.process import WorkerProcess

        now = time.monotonic()
        for worker in list(self.manager.transient.values()):
            if not worker.name.startswith(WorkerProcess.SERVER_LABEL):
                continue
            for process in list(worker.processes):
                pid = process.pid
                if not pid or pid in self._seen_dead or process.is_alive():
                    continue
                if now - self._replaced.get(process.name, -_REPLACE_EVERY) < _REPLACE_EVERY:
                    continue
                if self.stopping.is_set():
                    return
                self._seen_dead.add(pid)
                self._replaced[process.name] = now
                log.error(
                    "worker %s (pid %d) %s: starting a replacement",
                    process.name,
                    pid,
                    _how_it_ended(process.exitcode),
                )
                # Through the manager's own channel: its monitor loop does the restart.
                self.manager.monitor_publisher.send(process.name)


def _how_it_ended(code: int | None) -> str:
    if code is None or code >= 0:
        return f"exited with status {code}"
    name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
    frozen = " (frozen past its time limit)" if -code == signal.SIGALRM else ""
    return f"was ended by {name}{frozen}"
