"""A server process stops once, gracefully, however many stop signals it gets.

Sanic stops a server process on SIGTERM or SIGINT: its loop stops, the calls in flight
finish (up to ``GRACEFUL_SHUTDOWN_TIMEOUT``), the ``before``/``after_server_stop``
listeners flush the request log. With ``serve --workers N`` a worker usually gets two
signals: SIGTERM sent to the whole process group (what systemd does) and the SIGINT the
main process forwards. Sanic handles each one by stopping the loop again, so the second
stop broke the drain (``Event loop stopped before Future completed``): the calls in flight
were dropped and never logged. A signal arriving once Sanic has removed its handlers (it
does, before draining) killed the worker outright.

``stop_once_on_signal`` replaces Sanic's handlers in the worker: the first SIGTERM or
SIGINT starts the graceful stop and sets both signals to be ignored, so nothing after it
(a forwarded signal, a second Ctrl+C, a supervisor's repeat) interrupts the drain. The
drain stays bounded (``GRACEFUL_SHUTDOWN_TIMEOUT``; SIGKILL still ends the process).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sanic import Sanic

__all__ = ["STOP_SIGNALS", "stop_once_on_signal"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def stop_once_on_signal(app: Sanic, loop: asyncio.AbstractEventLoop) -> None:
    """In a server process, after Sanic has installed its handlers (``after_server_start``):
    the first stop signal stops ``app`` gracefully; the others are ignored. A no-op off the
    main thread (a server in a notebook's thread has no signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return
    stopping: list[int] = []

    def on_signal(signum: int) -> None:
        if stopping:  # queued by the loop before the first one ran
            return
        stopping.append(signum)
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
            signal.signal(sig, signal.SIG_IGN)
        app.stop(terminate=False)

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
