"""Where a worker runs its proven-fast pure-Python actions: measured, not guessed.

Measured against the hand-written Sanic app (``bench/run.py``), the sample's calculator
costs, in CPU per request, about 0.86x the bare app on a lane and 1.08x inline under 50
concurrent callers, but 1.44x on a lane and 1.07x inline under 4. Many callers keep a
lane busy: it runs a batch of actions beside the loop's I/O on the other core, and the
hand-offs are batched. A few callers leave it waiting: each call then costs two thread
wake-ups. The number of callers does not show from inside the worker (a connection's
next request waits in its socket while the loop works), so the worker measures.

``Placement`` holds one choice, lanes or inline, for every action it covers (a proven-fast
action that neither reads ``db`` nor names ``http``: ``pace.pace_for``). The watch loop
calls ``step`` at each of its ticks (every 0.1 s under load): it reads the process's CPU
time and the relay's call count, so each tick closes a window with a CPU time per call.
Now and then (``PROBE_FIRST`` s, then doubling up to ``PROBE_MAX`` s while the choice
holds) one window runs the other way; if that window cost at least ``MARGIN`` less per
call, the other way is kept, else the choice goes back. A window with fewer than
``MIN_CALLS`` calls decides nothing. Process CPU time counts every thread: the loop's
HTTP work, the lanes, the log writer, which is what the choice changes.

A probe costs little: one window in ``PROBE_MAX`` s run the dearer way once the choice
has settled. Safety does not depend on it: an action runs inline only once proven fast,
and the first slow call sends it back to the lanes (``pace``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["MARGIN", "MIN_CALLS", "PROBE_FIRST", "PROBE_MAX", "Placement"]

PROBE_FIRST = 1.0  # seconds between the first probes, doubled while the choice holds
PROBE_MAX = 16.0
MIN_CALLS = 200  # a window with fewer calls decides nothing
MARGIN = 0.05  # the other way must cost this much less per call to be kept


class Placement:
    """Lanes or inline for the actions that follow it (see the module docstring)."""

    __slots__ = ("_before", "_clock", "_interval", "_mark", "_next", "_probing", "inline")

    def __init__(self, clock: Callable[[], float] = time.process_time) -> None:
        self.inline = False
        self._clock = clock
        self._mark: tuple[int, float] | None = None  # (calls, CPU) at the window's start
        self._probing = False  # the window now ending ran the other way
        self._before = 0.0  # CPU per call of the window before the probe
        self._interval = PROBE_FIRST
        self._next = 0.0  # when the next probe may start (loop time)

    def step(self, now: float, calls: int, paces: Iterable[Any]) -> None:
        """End a window at loop time ``now``, ``calls`` relay calls so far; ``paces``:
        every pace of the worker (those that follow this placement are switched)."""
        cpu = self._clock()
        mark, self._mark = self._mark, (calls, cpu)
        if mark is None:
            return
        count = calls - mark[0]
        per_call = (cpu - mark[1]) / count if count >= MIN_CALLS else None
        if self._probing:
            self._probing = False
            if per_call is not None and per_call < self._before * (1 - MARGIN):
                self._interval = PROBE_FIRST  # a better way: look again soon
            else:
                self._switch(paces)  # no better: back, and probe less often
                self._interval = min(self._interval * 2, PROBE_MAX)
            self._next = now + self._interval
            return
        if per_call is None or now < self._next:
            return
        paces = list(paces)
        if not any(p.placement is self and p.proven for p in paces):
            return  # nothing to place
        self._before = per_call
        self._probing = True
        self._switch(paces)

    def _switch(self, paces: Iterable[Any]) -> None:
        self.inline = not self.inline
        for pace in paces:
            if pace.placement is self and pace.proven:
                pace.inline = self.inline

    def __repr__(self) -> str:
        where = "inline" if self.inline else "lanes"
        return f"<Placement {where}{' probing' if self._probing else ''}>"
