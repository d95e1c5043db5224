"""The relay: synchronous actions run off the event loop, cheaply, with time limits.

One ``Relay`` per worker, made on the loop thread. Why this shape (measured with wrk
-t2 -c50 against a bare Sanic app: the relay costs about the same CPU per request as
running the action inline; ``run_in_executor`` costs 1.6x):

* The loop puts a ``Job`` on a C ``SimpleQueue`` and awaits its future: no timer, no clock
  read, no syscall unless the drainer lane sleeps.
* One *drainer* lane runs jobs back to back. Results go to a deque and the loop is woken
  by ONE ``call_soon_threadsafe`` per batch (a flag coalesces them).
* A *sysmon* thread ticks every ``tick`` s and stamps a job the first time it sees it, so
  durations are known to one tick without a clock read per job. A drainer whose job
  outlives a tick is *detached* (it finishes its job, then parks) and another lane drains
  the queue: a slow action never holds the others up, and no work is lost or run twice.
* Past its limit a job is answered ``TIMED_OUT`` by sysmon (the caller gets its 504 at
  once) and the lane is poked (``interrupts.poke``) every ``poke_every`` s until it ends.
  A lane still busy ``grace`` s after its time-out is a *zombie*: ``on_zombie`` is called
  once (the worker asks to be replaced).
* Admission: at most ``cap`` jobs admitted (queued or running, zombies included). Past it
  a caller waits up to ``admit_wait`` s for a slot, then gets ``BUSY`` (a 503).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from contextvars import copy_context
from queue import SimpleQueue
from typing import Any

from .interrupts import (
    ActionTimeout,
    Lane,
    install_process_hooks,
    poke,
    real_sleep,
    register,
    unpoke,
)

__all__ = ["BUSY", "TIMED_OUT", "Busy", "Job", "Relay"]

log = logging.getLogger("notebook_kit.runtime")

TIMED_OUT: Any = object()  # a job's result: it ran past its limit
BUSY: Any = object()  # run()'s result: no slot within admit_wait


class Busy(Exception):
    """``call``: no slot for the action within ``admit_wait`` (a 503)."""


class Job:
    __slots__ = (
        "args",
        "context",
        "fn",
        "fut",
        "limit",
        "released",
        "seen",
        "timed_out_at",
        "zombie",
    )

    def __init__(
        self, fut: asyncio.Future[Any], fn: Callable[..., Any], args: tuple[Any, ...], limit: float
    ) -> None:
        self.fut = fut
        # The caller's context variables (Sanic's current request, for presigned links):
        # the action sees them as if it ran on the loop. Copying is O(1).
        self.context = copy_context()
        self.fn = fn
        self.args = args
        self.limit = limit
        self.seen = 0.0  # sysmon: when it first saw the job running
        self.timed_out_at = 0.0
        self.zombie = False
        self.released = False  # loop thread: its slot was given back


class Relay:
    """Runs ``fn(*args)`` on lane threads for the loop; see the module docstring."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        cap: int = 64,
        tick: float = 0.005,
        admit_wait: float = 1.0,
        grace: float = 2.0,
        poke_every: float = 0.05,
        on_zombie: Callable[[Job], None] | None = None,
        gil_freeze_exit: float | None = None,
        fast_switch_interval: float = 0.001,
    ) -> None:
        install_process_hooks()
        self.loop = loop
        self.cap = cap
        self.tick = tick
        self.admit_wait = admit_wait
        self.grace = grace
        self.poke_every = poke_every
        self.on_zombie = on_zombie
        self.gil_freeze_exit = gil_freeze_exit
        self.fast_switch_interval = fast_switch_interval
        self.jobs: SimpleQueue[Job | None] = SimpleQueue()
        self.results: deque[tuple[Job, bool | None, Any]] = deque()
        self.scheduled = False
        self.inflight = 0  # loop thread only: admitted and not yet released by a lane
        self.slot_waiters: deque[asyncio.Future[bool]] = deque()  # loop thread only
        self.lanes: list[Lane] = []
        self._threads: list[threading.Thread] = []
        self.idle: list[Lane] = []
        self.lock = threading.Lock()
        self.zombies = 0
        self.stopping = False
        self._deliver_soon = loop.call_soon_threadsafe
        self._start_lane()  # the first drainer
        self._start_lane(parked=True)  # a spare, so the first detach starts no thread
        self._sysmon = threading.Thread(target=self._sysmon_main, name="relay-sysmon", daemon=True)
        self._sysmon.start()

    # -- loop side ---------------------------------------------------------------------

    async def run(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float) -> Any:
        """``fn(*args)`` on a lane: its value, or raises what it raised, or ``TIMED_OUT``
        / ``BUSY``."""
        if self.inflight < self.cap:
            self.inflight += 1
        elif not await self._admit():  # True: a slot was reserved for this caller
            return BUSY
        fut = self.loop.create_future()
        self.jobs.put(Job(fut, fn, args, limit))
        return await fut

    async def call(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float) -> Any:
        """``run``, with ``TIMED_OUT`` raised as ``ActionTimeout`` and ``BUSY`` as ``Busy``
        (the rare outcomes cost an exception, the common one nothing more)."""
        value = await self.run(fn, args, limit)
        if value is TIMED_OUT:
            raise ActionTimeout(limit)
        if value is BUSY:
            raise Busy()
        return value

    async def _admit(self) -> bool:
        waiter: asyncio.Future[bool] = self.loop.create_future()
        self.slot_waiters.append(waiter)
        handle = self.loop.call_later(self.admit_wait, _expire, waiter)
        try:
            return await waiter
        except BaseException:  # cancelled (the client left): give back a slot given to us
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.inflight -= 1
                self._wake_waiter()
            raise
        finally:
            handle.cancel()

    def _deliver(self) -> None:
        """On the loop: hand results to their futures, release slots."""
        self.scheduled = False
        results = self.results
        while results:
            job, ok, value = results.popleft()
            fut = job.fut
            if ok is None:  # sysmon: timed out (the lane still holds the slot)
                if not fut.done():
                    fut.set_result(TIMED_OUT)
                continue
            if job.released:
                continue
            job.released = True
            self.inflight -= 1
            if self.slot_waiters:
                self._wake_waiter()
            if not fut.done():
                if ok:
                    fut.set_result(value)
                else:
                    fut.set_exception(value)

    def _wake_waiter(self) -> None:
        while self.slot_waiters and self.inflight < self.cap:
            waiter = self.slot_waiters.popleft()
            if not waiter.done():
                self.inflight += 1  # reserved for the waiter
                waiter.set_result(True)

    def _post(self, item: tuple[Job, bool | None, Any]) -> None:
        """From a lane or sysmon: queue a result and wake the loop once per batch."""
        self.results.append(item)
        if not self.scheduled:
            self.scheduled = True
            self._deliver_soon(self._deliver)

    # -- lanes -------------------------------------------------------------------------

    def _start_lane(self, parked: bool = False) -> Lane:
        lane = Lane()
        lane.detached = parked
        self.lanes.append(lane)
        thread = threading.Thread(
            target=self._lane_main, args=(lane,), name="relay-lane", daemon=True
        )
        thread.start()
        self._threads.append(thread)
        return lane

    def _lane_main(self, lane: Lane) -> None:
        register(lane)
        get = self.jobs.get
        while True:
            try:
                while not lane.detached:
                    job = get()
                    if job is None:
                        return
                    lane.job = job
                    try:
                        value = job.context.run(job.fn, *job.args)
                        ok = True
                    except BaseException as exc:  # handed to the caller
                        value = exc
                        ok = False
                    lane.tail = job  # from here a late stop is finished by _late_stop
                    with lane.lock:
                        lane.job = None  # no poke for this job after this line
                    if lane.poked:
                        unpoke(lane)
                    if lane.resources:
                        lane.resources.clear()
                    self._post((job, ok, value))
                    lane.tail = None
                with self.lock:  # detached: park until sysmon needs a drainer again
                    self.idle.append(lane)
                lane.park.acquire()
                if self.stopping:
                    return
            except ActionTimeout:
                # A stop that landed in this loop's own bookkeeping after the action ended
                # (its 504 is already sent). Finish the job; _deliver ignores a repeat.
                self._late_stop(lane)

    def _late_stop(self, lane: Lane) -> None:
        while True:
            try:
                job = lane.job or lane.tail
                with lane.lock:
                    lane.job = None
                unpoke(lane)
                lane.resources.clear()
                if job is not None:
                    self._post((job, False, ActionTimeout("action timed out")))
                    lane.tail = None
                return
            except ActionTimeout:
                continue

    # -- sysmon ------------------------------------------------------------------------

    def _promote(self) -> bool:
        """Get another lane draining the queue. False when at the cap of lanes."""
        with self.lock:
            lane = self.idle.pop() if self.idle else None
        if lane is not None:
            lane.detached = False
            lane.park.release()
            return True
        if len(self.lanes) < self.cap + 1:
            self._start_lane()
            return True
        return False

    def _sysmon_main(self) -> None:
        tick = self.tick
        mono = time.monotonic
        next_arm = 0.0
        default_switch = sys.getswitchinterval()
        fast_switch = False
        while not self.stopping:
            real_sleep(tick)
            now = mono()
            if self.gil_freeze_exit and now >= next_arm:
                # A C thread that needs no GIL: if the GIL stays held (C code that never
                # releases it), the process dumps every thread's stack and exits.
                faulthandler.dump_traceback_later(self.gil_freeze_exit, exit=True)
                next_arm = now + 1.0
            long_running = False
            for lane in self.lanes:
                job = lane.job
                if job is None:
                    continue
                if not job.seen:
                    job.seen = now
                    continue
                long_running = True
                if not lane.detached and self._promote():  # ran over a tick: detach
                    lane.detached = True
                if not job.timed_out_at:
                    if now - job.seen >= job.limit:
                        job.timed_out_at = now
                        self._post((job, None, None))
                        poke(lane, job, now)
                elif not job.zombie:
                    if now - lane.last_poke >= self.poke_every:
                        poke(lane, job, now)
                    if now - job.timed_out_at >= self.grace:
                        job.zombie = True
                        self.zombies += 1
                        self._report_zombie(job)
            # A long action competes with the loop for the GIL; while one runs, let the
            # loop get it back sooner (each hand-over waits up to one switch interval).
            if long_running != fast_switch:
                fast_switch = long_running
                sys.setswitchinterval(self.fast_switch_interval if fast_switch else default_switch)

    def _report_zombie(self, job: Job) -> None:
        if self.on_zombie is None:
            return
        try:
            self.on_zombie(job)
        except Exception:
            log.exception("reporting a stuck action failed")

    def close(self) -> None:
        """Stop the lanes when they are idle (a stuck one is a daemon thread: left)."""
        self.stopping = True
        if self.gil_freeze_exit:
            faulthandler.cancel_dump_traceback_later()
        for _ in self.lanes:
            self.jobs.put(None)
        for lane in self.lanes:
            if lane.park.locked():
                with contextlib.suppress(RuntimeError):
                    lane.park.release()
        # Idle lanes end at once: wait for them (a notebook restarting its server must not
        # collect threads). A lane still running an action is left; it is a daemon.
        self._sysmon.join(1.0)
        for thread in self._threads:
            thread.join(0.05)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)
