"""The relay's monitor thread (*sysmon*): it looks at every lane once a tick.

What it does on each look, for the job a lane (or the loop, for an inline call) runs:

* stamps the job the first time it sees it, so durations are known to one tick without a
  clock read per job;
* a lane job seen again has run over a tick: its lane is *detached* and another lane
  drains the queue; an inline job seen on a third tick sends its action to the lanes;
* past its limit the job is answered ``TIMED_OUT`` (a lane's caller gets its 504 at once)
  and poked until it ends; still running ``grace`` s later it is a *zombie*;
* re-arms the GIL watchdog (``freeze``), and shortens the switch interval while a long
  action competes with the loop for the GIL;
* with nothing to watch for ``idle_after`` s it stops ticking until the next call.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from . import freeze, store_locks
from .interrupts import poke, real_sleep

if TYPE_CHECKING:
    from .relay import Relay

__all__ = ["watch"]


SLOW_TICK = 0.05  # seconds between looks while only inline calls run
SLOW_AFTER = 0.5  # seconds without a lane job before sysmon looks less often


def watch(relay: Relay) -> None:
    """sysmon's thread: one look at every lane each tick (see ``relay``).

    Each look takes the GIL from the loop, which costs the loop a thread switch. Lane jobs
    need a look every ``tick`` (a slow one must be detached at once: calls queue behind
    it); inline calls only need their time limit watched, so while no lane job runs or
    waits sysmon looks every ``SLOW_TICK`` instead, and a lane job submitted meanwhile
    wakes it (``relay.slow``)."""
    tick = relay.tick
    mono = time.monotonic
    next_arm = 0.0
    expires = 0.0  # when the GIL watchdog's timer fires
    default_switch = sys.getswitchinterval()
    fast_switch = False
    loop_lane = relay.loop_lane
    calls = relay.calls
    store_locks.pause_while(lambda: relay.sleeping)  # nothing runs: no lock to take back
    slow = False
    last_call = lanes_used = mono()
    while not relay.stopping:
        if slow:
            relay.wake.wait(SLOW_TICK)
            relay.wake.clear()  # a lane job that set it is in the queue: seen below
        else:
            real_sleep(tick)
        now = mono()
        long_running = False
        busy = False
        for lane in (loop_lane, *relay.lanes):
            job = lane.job
            if job is None:
                continue
            busy = True
            if not job.seen:
                job.seen = now
                if now + job.limit + relay.grace < expires:  # a tighter limit: re-arm now
                    next_arm = 0.0
                continue
            long_running = True
            if lane is loop_lane:
                # Seen on a second tick: slow, unless the machine held the thread up.
                # On a third: slow. Its next calls go to the lanes.
                if job.long and job.pace is not None:
                    job.pace.demote()
                job.long = True
            elif not lane.detached and relay.add_drainer():  # ran over a tick: detach
                lane.detached = True
            if not job.timed_out_at:
                if now - job.seen >= job.limit:
                    job.timed_out_at = now
                    if job.fut is not None:  # a lane's caller gets its 504 now
                        relay.post((job, None, None))
                    poke(lane, job, now)
            elif not job.zombie:
                if now - lane.last_poke >= relay.poke_every:
                    poke(lane, job, now)
                if now - job.timed_out_at >= relay.grace:
                    job.zombie = True
                    relay.zombies += 1
                    relay.report_zombie(job)
        if relay.gil_freeze_exit and now >= next_arm:  # the GIL watchdog: see freeze.py
            seconds = freeze.delay(relay, now)
            freeze.arm(seconds)
            expires, next_arm = now + seconds, now + freeze.REARM_SECONDS
        # A long action competes with the loop for the GIL; while one runs, let the
        # loop get it back sooner (each hand-over waits up to one switch interval).
        if long_running != fast_switch:
            fast_switch = long_running
            sys.setswitchinterval(relay.fast_switch_interval if fast_switch else default_switch)
        if _lanes_busy(relay):
            lanes_used = now
            if slow:
                relay.slow = slow = False
        elif not slow and now - lanes_used >= SLOW_AFTER:
            relay.slow = True  # set first, then look again: run() puts, then reads it
            slow = not _lanes_busy(relay)
            relay.slow = slow
        if busy or calls != relay.calls:
            calls, last_call = relay.calls, now
        elif now - last_call >= relay.idle_after:
            relay.slow = slow = False
            _sleep_until_called(relay, calls)
            last_call, next_arm = mono(), 0.0


def _lanes_busy(relay: Relay) -> bool:
    """A lane runs a job, or one waits in the queue."""
    return not relay.jobs.empty() or any(lane.job is not None for lane in relay.lanes)


def _sleep_until_called(relay: Relay, calls: int) -> None:
    """With nothing to watch: wait for the next call. ``sleeping`` is set before the call
    counter is read once more, and a call bumps the counter before it reads the flag, so
    either this sees the call or the call sees the flag (and sets ``wake``)."""
    relay.wake.clear()
    relay.sleeping = True
    if relay.calls != calls or relay.stopping:  # a call came as the flag was set
        relay.sleeping = False
        return
    if relay.gil_freeze_exit:
        freeze.disarm()  # the call that wakes sysmon re-arms it
    relay.wake.wait()
    store_locks.wake()
