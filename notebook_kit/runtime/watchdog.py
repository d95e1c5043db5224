"""What a worker does when an action cannot be stopped: it gets itself replaced.

The relay reports a *zombie*: an action still running ``grace`` seconds after its 504,
through every poke (see ``interrupts``). Its lane and its admission slot are lost for as
long as it runs, and nothing in the process can end it, so the worker is replaced:

* Under Sanic's worker manager (``serve --workers N``, N >= 2), the worker asks the manager
  for a zero-downtime restart (``app.multiplexer.restart``): a fresh worker starts, then
  this one gets SIGTERM and drains its other calls. The other workers serve meanwhile.
* In a single process (``--workers 1``: no manager), the process stops gracefully (its own
  SIGTERM: in-flight calls finish, the request log is flushed) and then exits with status
  ``STUCK_EXIT_STATUS`` so that a supervisor (systemd, Docker's restart policy, ...) starts
  it again. Run ``--workers 2`` or more to be replaced without a gap.

Either way, if the process has not exited ``LAST_RESORT_SECONDS`` later it leaves at once
(``os._exit``): a replacement matters more than the calls still pending on it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from sanic import Sanic

    from .relay import Job

__all__ = ["LAST_RESORT_SECONDS", "STUCK_EXIT_STATUS", "StuckWorker", "exit_status"]

log = logging.getLogger("notebook_kit.runtime")

STUCK_EXIT_STATUS = 70  # EX_SOFTWARE
LAST_RESORT_SECONDS = 20.0
_exit_status: list[int] = []  # set when this process stops because a worker got stuck


def exit_status() -> int:
    """The status ``serve`` should exit with: 0, or ``STUCK_EXIT_STATUS``."""
    return _exit_status[0] if _exit_status else 0


class StuckWorker:
    """The relay's ``on_zombie``: called from its sysmon thread, once per stuck action."""

    def __init__(self, app: Sanic, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop
        self.replacing = False

    def __call__(self, job: Job) -> None:
        what = _describe(job)
        multiplexer: Any = getattr(self.app, "multiplexer", None)
        if self.replacing:
            log.error("%s cannot be stopped either (this worker is being replaced)", what)
            return
        self.replacing = True
        threading.Thread(target=_last_resort, daemon=True, name="stuck-worker-exit").start()
        if multiplexer is not None:
            log.error(
                "%s cannot be stopped: worker %s (pid %d) asks to be replaced",
                what,
                multiplexer.name,
                os.getpid(),
            )
            self.loop.call_soon_threadsafe(multiplexer.restart, "", False, True)
            return
        log.error(
            "%s cannot be stopped: stopping this server (pid %d) with exit status %d so a "
            "supervisor restarts it (serve --workers 2 or more replaces a worker without a gap)",
            what,
            os.getpid(),
            STUCK_EXIT_STATUS,
        )
        _exit_status.append(STUCK_EXIT_STATUS)
        os.kill(os.getpid(), signal.SIGTERM)  # Sanic's own graceful stop


def _describe(job: Job) -> str:
    request = job.args[0] if job.args else None
    path = getattr(request, "path", "?")
    return f"the action answering {path} ({job.limit:g} s limit)"


def _last_resort() -> None:
    time.sleep(LAST_RESORT_SECONDS)
    log.error("the stuck worker (pid %d) did not stop: exiting now", os.getpid())
    logging.shutdown()
    os._exit(STUCK_EXIT_STATUS)
