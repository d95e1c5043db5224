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

from . import freeze
from .interrupts import poke, real_sleep

if TYPE_CHECKING:
    from .relay import Relay

__all__ = ["watch"]


def watch(relay: Relay) -> None:
    """sysmon's thread: one look at every lane each tick (see ``relay``)."""
    tick = relay.tick
    mono = time.monotonic
    next_arm = 0.0
    expires = 0.0  # when the GIL watchdog's timer fires
    default_switch = sys.getswitchinterval()
    fast_switch = False
    loop_lane = relay.loop_lane
    quiet = 0  # ticks in a row that saw no call
    calls = relay.calls
    while not relay.stopping:
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
        if busy or calls != relay.calls:
            calls, quiet = relay.calls, 0
        else:
            quiet += 1
            if quiet >= relay.idle_ticks:
                _sleep_until_called(relay, calls)
                quiet, next_arm = 0, 0.0


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
