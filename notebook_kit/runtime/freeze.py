"""The GIL watchdog: a worker frozen with the GIL held past its limit ends, to be replaced.

C code that never releases the GIL (a catastrophic regex, ``re.match(r'(a+)+$', 'a' * 30
+ 'b')``) stops every Python thread of the worker: the event loop, the relay's monitor,
signal handlers. Nothing written in Python can notice, so the watchdog is the kernel's:
the process's real-time interval timer (``ITIMER_REAL``). The relay's monitor (sysmon)
re-arms it every ``REARM_SECONDS``; if sysmon cannot run for the timer's whole delay, the
timer fires: SIGALRM reaches faulthandler's C handler (no GIL needed), which writes every
thread's stack to stderr, the server's log, and then lets the signal's default action end
the process. So a frozen worker dies *killed by SIGALRM* (status 142 in a shell, "status
14/ALRM" under systemd), and is replaced: by the server's main process with ``--workers
2`` or more (``supervisor``), by its own supervisor (systemd ``Restart=always``) with one.

The delay (``delay``): the default limit (``action_timeout``) plus the relay's grace and
the re-arm period, or less when a running action's own limit plus the grace ends sooner.
Re-arming is one system call (about a microsecond; faulthandler's own
``dump_traceback_later`` starts a thread and joins the previous one with the GIL held,
which on a busy machine stalled the loop for up to 20-35 ms every time). While sysmon
sleeps (an idle worker) the timer is disarmed; the first call re-arms it.

Only in a server process of its own: a notebook kernel's in-thread server has none.
"""

from __future__ import annotations

import faulthandler
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .relay import Relay

__all__ = ["REARM_SECONDS", "arm", "delay", "disarm", "install", "uninstall"]

REARM_SECONDS = 0.1


def install() -> None:
    """SIGALRM: every thread's stack to stderr, then the default action (the end)."""
    faulthandler.register(signal.SIGALRM, all_threads=True, chain=True)


def arm(seconds: float) -> None:
    signal.setitimer(signal.ITIMER_REAL, seconds)


def disarm() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)


def uninstall() -> None:
    disarm()
    faulthandler.unregister(signal.SIGALRM)


def delay(relay: Relay, now: float) -> float:
    """The timer's delay from ``now`` (sysmon's clock): see the module docstring."""
    assert relay.gil_freeze_exit is not None
    seconds = relay.gil_freeze_exit + REARM_SECONDS
    for lane in (relay.loop_lane, *relay.lanes):
        job = lane.job
        if job is not None and job.seen and not job.timed_out_at:
            seconds = min(seconds, job.seen + job.limit + relay.grace - now)
    return seconds
