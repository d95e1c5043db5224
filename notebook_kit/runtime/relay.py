"""The relay: synchronous actions run off the event loop, cheaply, with time limits.

One ``Relay`` per worker, made on the loop thread:

* The loop puts a ``Job`` on a C ``SimpleQueue`` and awaits its future: no timer, no clock
  read, no syscall unless the drainer lane sleeps.
* One *drainer* lane runs jobs back to back. Results go to a deque and the loop is woken
  by ONE ``call_soon_threadsafe`` per batch (a flag coalesces them).
* A *sysmon* thread (``sysmon``) looks at every lane each ``tick``: a drainer whose job
  outlives a tick is *detached* and another lane drains the queue, so a slow action never
  holds the others up; past its limit a job is answered ``TIMED_OUT`` (a 504) and poked
  (``interrupts.poke``) until it ends; a lane still busy ``grace`` s later is a *zombie*
  (``on_zombie``: the worker asks to be replaced).
* Admission: at most ``cap`` jobs admitted (queued or running, zombies included). Past it
  a caller waits up to ``admit_wait`` s for a slot, then gets ``BUSY`` (a 503).
* Inline calls (``run_inline``; which and when: ``pace``) run on the loop thread, watched
  by sysmon as a lane is. Idle (no call for ``idle_after`` s), sysmon waits for a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from contextvars import Context, copy_context
from dataclasses import dataclass
from queue import SimpleQueue
from time import perf_counter, thread_time
from typing import Any

from . import freeze
from .interrupts import (
    ActionTimeout,
    Lane,
    install_process_hooks,
    register,
    unpoke,
)
from .pace import INLINE_MAX, SAMPLE_EVERY, Pace, pace_for
from .sysmon import watch

__all__ = ["BUSY", "TIMED_OUT", "Busy", "Job", "Relay"]

log = logging.getLogger("notebook_kit.runtime")

TIMED_OUT: Any = object()  # a job's result: it ran past its limit
BUSY: Any = object()  # run()'s result: no slot within admit_wait


class Busy(Exception):
    """``call``: no slot for the action within ``admit_wait`` (a 503)."""


@dataclass(slots=True, eq=False)
class Job:
    """One call of an action: what runs, and what sysmon learns of it."""

    fut: asyncio.Future[Any] | None  # None: an inline call (no one awaits it)
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    limit: float
    pace: Pace | None = None
    context: Context | None = None  # the caller's context variables, seen on a lane
    seen: float = 0.0  # sysmon: when it first saw the job running
    long: bool = False  # sysmon saw an inline call running on a second tick
    timed_out_at: float = 0.0
    zombie: bool = False
    released: bool = False  # loop thread: its slot was given back


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
        idle_after: float = 1.0,
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
        if gil_freeze_exit:
            freeze.install()
        self.loop_lane = Lane()  # the loop thread, for inline calls: pokes reach it too
        register(self.loop_lane)
        self.paces: dict[Callable[..., Any], Pace] = {}  # an action's run -> its pace
        self.calls = 0  # for the idle sysmon: see ``sysmon._sleep_until_called``
        self.sleeping = False
        self.wake = threading.Event()
        self.idle_after = idle_after
        self.slow = False  # sysmon looks every SLOW_TICK: a lane job must wake it
        self._start_lane()  # the first drainer
        self._start_lane(parked=True)  # a spare, so the first detach starts no thread
        self._sysmon = threading.Thread(
            target=watch, args=(self,), name="relay-sysmon", daemon=True
        )
        self._sysmon.start()

    # -- loop side ---------------------------------------------------------------------

    def pace_of(self, fn: Callable[..., Any], db_is_local: bool) -> Pace:
        """The pace of the action whose function is ``fn`` (made on its first call; which
        kind: ``pace.pace_for``)."""
        pace = self.paces.get(fn)
        if pace is None:
            if len(self.paces) >= 65536:  # functions of long-replaced deployments
                self.paces.clear()
            pace = self.paces[fn] = pace_for(fn, db_is_local)
        return pace

    async def run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float, pace: Pace | None = None
    ) -> Any:
        """``fn(*args)`` on a lane: its value, or raises what it raised, or ``TIMED_OUT``
        / ``BUSY``."""
        if self.inflight < self.cap:
            self.inflight += 1
        elif not await self._admit():  # True: a slot was reserved for this caller
            return BUSY
        self.calls += 1
        if self.sleeping:
            self._wake_sysmon()
        fut = self.loop.create_future()
        self.jobs.put(Job(fut, fn, args, limit, pace, copy_context()))
        if self.slow:  # after the put: sysmon, setting the flag, looks at the queue again
            self.wake.set()
        return await fut

    async def call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float, pace: Pace | None = None
    ) -> Any:
        """``run``, with ``TIMED_OUT`` raised as ``ActionTimeout`` and ``BUSY`` as ``Busy``
        (the rare outcomes cost an exception, the common one nothing more)."""
        value = await self.run(fn, args, limit, pace)
        if value is TIMED_OUT:
            raise ActionTimeout(limit)
        if value is BUSY:
            raise Busy()
        return value

    def run_inline(
        self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float, pace: Pace
    ) -> Any:
        """``fn(*args)`` on the loop thread, watched by sysmon: its value, or raises what it
        raised (``ActionTimeout`` past ``limit``). A slow call sends the action back to the
        lanes (see ``pace``)."""
        lane = self.loop_lane
        self.calls += 1
        if self.sleeping:
            self._wake_sysmon()
        lane.job = job = Job(None, fn, args, limit, pace)
        pace.calls += 1
        sampled = not pace.calls % SAMPLE_EVERY  # its CPU time read (wall time counts
        cpu = thread_time() if sampled else 0.0  # the machine preempting the loop)
        try:
            return fn(*args)
        finally:
            lane.job = None
            if job.timed_out_at or lane.resources or lane.waited:
                self._inline_waited(pace)
            if sampled and thread_time() - cpu > INLINE_MAX:
                pace.demote()

    def _inline_waited(self, pace: Pace) -> None:
        """An inline call was stopped, slept or opened a socket: back to the lanes."""
        pace.demote()
        self.loop_lane.waited = False
        self.end_inline()

    def end_inline(self) -> None:
        """No poke reaches the loop thread after this returns (a stop landing in here is
        the one it clears: retried, never escapes). An inline call that was never timed
        out needs none of it: sysmon pokes only a job whose ``timed_out_at`` it has set,
        and only while it is the lane's job, so clearing ``lane.job`` first suffices."""
        lane = self.loop_lane
        while True:
            try:
                with lane.lock:
                    lane.job = None
                if lane.poked:
                    unpoke(lane)
                if lane.resources:
                    lane.resources.clear()
                return
            except ActionTimeout:
                continue

    def _wake_sysmon(self) -> None:
        """On the loop, the first call after sysmon went idle: wake it, and re-arm the GIL
        watchdog here, since sysmon needs the GIL before it can."""
        self.sleeping = False
        if self.gil_freeze_exit:
            freeze.arm(self.gil_freeze_exit + freeze.REARM_SECONDS)
        self.wake.set()

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
            if fut is None:  # an inline call: no one awaits it
                continue
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

    def post(self, item: tuple[Job, bool | None, Any]) -> None:
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
                    pace = job.pace
                    if pace is not None and (pace.inline or not pace.eligible):
                        pace = None
                    if pace is not None:  # learning whether it may run inline: timed
                        lane.waited = False
                        started, cpu = perf_counter(), thread_time()
                    try:
                        value = job.context.run(job.fn, *job.args)  # type: ignore[union-attr]
                        ok = True
                    except BaseException as exc:  # handed to the caller
                        value = exc
                        ok = False
                    lane.tail = job  # from here a late stop is finished by _late_stop
                    with lane.lock:
                        lane.job = None  # no poke for this job after this line
                    if pace is not None:
                        waited = lane.waited or bool(lane.resources)  # slept, or a socket
                        cpu, wall = thread_time() - cpu, perf_counter() - started
                        pace.lane_call_ended(wall, cpu, waited)
                    if lane.poked:
                        unpoke(lane)
                    if lane.resources:
                        lane.resources.clear()
                    self.post((job, ok, value))
                    lane.tail = None
                with self.lock:  # detached: park until sysmon needs a drainer again
                    self.idle.append(lane)
                lane.park.acquire()
                if self.stopping:
                    return
            except ActionTimeout:
                # A stop that landed here after the action ended (its 504 is sent).
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
                    self.post((job, False, ActionTimeout("action timed out")))
                    lane.tail = None
                return
            except ActionTimeout:
                continue

    # -- for sysmon --------------------------------------------------------------------

    def add_drainer(self) -> bool:
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

    def report_zombie(self, job: Job) -> None:
        if self.on_zombie is None:
            return
        try:
            self.on_zombie(job)
        except Exception:
            log.exception("reporting a stuck action failed")

    def close(self) -> None:
        """Stop the lanes when they are idle (a stuck one is a daemon thread: left)."""
        self.stopping = True
        self.wake.set()
        for _ in self.lanes:
            self.jobs.put(None)
        for lane in self.lanes:
            if lane.park.locked():
                with contextlib.suppress(RuntimeError):
                    lane.park.release()
        # Idle lanes end at once: wait for them (a notebook restarting its server must not
        # collect threads). A lane still running an action is left (a daemon).
        self._sysmon.join(1.0)
        if self.gil_freeze_exit:  # once sysmon has ended: it re-arms the timer
            freeze.uninstall()
        for thread in self._threads:
            thread.join(0.05)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)
