"""Ways to stop a synchronous action that ran past its time limit, from another thread.

Python cannot kill a thread. What it can do, and what ``poke`` does, every time it is
called, until the action ends:

* ``PyThreadState_SetAsyncExc(ActionTimeout)``: raised at the action's next bytecode, so
  pure-Python code (loops, ``time.sleep`` below) stops.
* The lane's ``cancel`` event: ``time.sleep`` is replaced process-wide by a sleep that waits
  on it when called from a lane, so a sleeping action wakes at once.
* ``shutdown()`` of every socket the action opened and ``interrupt()`` of every SQLite
  connection its lane opened (an audit hook records them): a read from a silent upstream
  returns, a runaway query is abandoned by SQLite. Connections opened elsewhere (a pool
  filled by another thread, a PostgreSQL driver) are not reached this way.
* ``pthread_kill(SIGUSR1)``: a C call that returns on EINTR (libc ``sleep``, ``read``)
  returns, and the pending exception is raised as it re-enters Python.

An async action runs on the loop: ``within`` cancels it at its limit instead.

What none of these reach: C code that retries on EINTR and waits forever (e.g.
``pthread_cond_wait``), and C code that never releases the GIL (a catastrophic regex).
The relay reports the first as a zombie lane (the worker is then replaced); the second
freezes the whole worker (see ``Relay``'s GIL watchdog).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import socket
import sqlite3
import sys
import threading
import time
from _thread import allocate_lock, get_ident
from collections import deque
from typing import Any

__all__ = ["ActionTimeout", "Lane", "install_process_hooks", "poke", "unpoke", "within"]


class ActionTimeout(BaseException):
    """Raised inside an action past its time limit. A BaseException, so ``except
    Exception`` in an action does not swallow it."""


# PYFUNCTYPE keeps the GIL held during the call, as the C API requires. Two prototypes of
# one function: setting passes the exception class, clearing passes NULL.
_set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_clear_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class Lane:
    """One thread that runs actions, and what a poke needs to reach its current one."""

    __slots__ = (
        "cancel",
        "databases",
        "detached",
        "ident",
        "job",
        "last_poke",
        "lock",
        "park",
        "poked",
        "resources",
        "tail",
        "waited",
    )

    def __init__(self) -> None:
        self.ident = 0
        self.job: Any = None  # the job running now (set and cleared by the lane only)
        self.tail: Any = None  # the job just finished, until its result is handed over
        self.lock = allocate_lock()  # orders "job ended" against pokes
        self.park = allocate_lock()  # a detached lane waits here until needed again
        self.park.acquire()
        self.detached = False
        self.cancel = threading.Event()
        self.waited = False  # its job called time.sleep (see pace.py)
        self.poked = False
        self.resources: list[Any] = []  # sockets the job opened
        # SQLite connections the lane opened: kept past their job, since ``db`` keeps one
        # per thread; interrupting an idle one is a no-op. Bounded (they are not weak-
        # referenceable): a lane that opens many keeps the newest.
        self.databases: deque[sqlite3.Connection] = deque(maxlen=8)
        self.last_poke = 0.0


_LANES: dict[int, Lane] = {}  # thread ident -> lane (lane threads only)
_real_sleep = time.sleep
_hooks_installed = False
_signal_installed = False  # SIGUSR1's default action kills the process: only with a handler


def register(lane: Lane) -> None:
    """Called by the lane's own thread when it starts."""
    lane.ident = get_ident()
    _LANES[lane.ident] = lane


def real_sleep(seconds: float) -> None:
    _real_sleep(seconds)


def _sleep(seconds: float) -> None:
    """``time.sleep`` that a timed-out action's lane is woken from."""
    lane = _LANES.get(get_ident())
    if lane is None or lane.job is None:
        return _real_sleep(seconds)
    lane.waited = True
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    if lane.cancel.wait(seconds):
        raise ActionTimeout("action timed out")
    return None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Every audit event of the process passes here: two string compares for the others.
    if event == "socket.__new__":
        lane = _LANES.get(get_ident())
        if lane is not None and lane.job is not None:
            lane.resources.append(args[0])
    elif event == "sqlite3.connect/handle":
        lane = _LANES.get(get_ident())
        if lane is not None:
            lane.databases.append(args[0])


def install_process_hooks() -> None:
    """Once per process, from the main thread: a SIGUSR1 handler (so ``pthread_kill``
    interrupts a lane's C call), the interruptible ``time.sleep``, the audit hook."""
    global _hooks_installed, _signal_installed
    if not _signal_installed and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, lambda signum, frame: None)
        signal.siginterrupt(signal.SIGUSR1, True)
        _signal_installed = True
    if _hooks_installed:
        return
    _hooks_installed = True
    time.sleep = _sleep  # type: ignore[assignment]
    sys.addaudithook(_audit)


def poke(lane: Lane, job: Any, now: float) -> None:
    """Try every way to stop ``job`` on ``lane`` (a no-op if it already ended)."""
    with lane.lock:
        if lane.job is not job:
            return
        lane.poked = True
        lane.last_poke = now
        _set_async_exc(lane.ident, ActionTimeout)
        lane.cancel.set()
        for thing in [*lane.resources, *lane.databases]:
            try:
                if isinstance(thing, sqlite3.Connection):
                    thing.interrupt()
                elif isinstance(thing, socket.socket):
                    thing.shutdown(socket.SHUT_RDWR)
            except Exception:
                pass
        if _signal_installed:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pthread_kill(lane.ident, signal.SIGUSR1)


def unpoke(lane: Lane) -> None:
    """Clear what a poke left pending, once the lane's job ended."""
    _clear_async_exc(lane.ident, None)
    lane.cancel.clear()
    lane.poked = False


async def within(action: Any, limit: float) -> None:
    """Await an async action for at most ``limit`` seconds: past it the action is
    cancelled and ``ActionTimeout`` raised (its own ``TimeoutError`` stays its own)."""
    scope = asyncio.timeout(limit)
    try:
        async with scope:
            await action
    except TimeoutError:
        if not scope.expired():
            raise
    if scope.expired():  # also when the action swallowed the cancellation
        raise ActionTimeout(limit)
