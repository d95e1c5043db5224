"""Where an action's calls run: inline on the event loop while it is fast, else on a lane.

Handing a call to a lane thread and back costs two thread wake-ups, and an action that
reads SQLite also hands the GIL back and forth with the loop on every statement (the
driver releases it inside ``sqlite3_step``). For a call that takes 30 µs that is most of
its cost. So each compiled action, in each worker, keeps a ``Pace``:

* It starts on the lanes, where a slow call stalls nothing.
* After ``PROMOTE_AFTER`` lane calls in a row that each ended within ``LANE_FAST`` of
  starting, its calls run inline on the loop, as a hand-written Sanic handler's would.
  ``LANE_FAST`` is generous because a lane's wall time includes its waits for the GIL,
  which the loop holds while it serves other calls: under load a 30 µs lookup can take
  several milliseconds on a lane. An action that sleeps, waits on the network or computes
  for longer than that never qualifies.
* Inline, it goes back to the lanes when the relay's monitor sees one call still running
  after two of its ticks (10 ms), or when one of every ``SAMPLE_EVERY`` calls, timed,
  took longer than ``INLINE_MAX``. The call that showed it was slow has held the loop for
  its own duration (a time-out still ends it with a 504 at its limit); the next ones do
  not. Each demotion doubles the run of fast lane calls needed to come back (up to
  ``PROMOTE_AFTER << MAX_BACKOFF``), so an action that is slow now and then stays on the
  lanes, while one demoted by a hiccup of the machine (a busy host can stop any thread
  for milliseconds) comes back.

The counters are read and written by the loop and the lanes without a lock: a lost
update only delays or repeats a promotion, which is harmless.
"""

from __future__ import annotations

__all__ = [
    "INLINE_MAX",
    "LANE_FAST",
    "MAX_BACKOFF",
    "PROMOTE_AFTER",
    "SAMPLE_EVERY",
    "Pace",
]

PROMOTE_AFTER = 32  # fast lane calls in a row before the first promotion
LANE_FAST = 0.02  # seconds from start to end on a lane, GIL waits included
INLINE_MAX = 0.002  # seconds: a timed inline call longer than this is slow
SAMPLE_EVERY = 32  # one inline call in this many is timed (two clock reads)
MAX_BACKOFF = 6  # demotions that double the run needed to come back: 32 << 6 = 2048


class Pace:
    """The running record of one compiled action in one worker (see the module doc)."""

    __slots__ = ("calls", "demotions", "inline", "streak")

    def __init__(self) -> None:
        self.inline = False
        self.streak = 0  # fast lane calls in a row
        self.demotions = 0
        self.calls = 0  # inline calls, for sampling

    def lane_call_ended(self, seconds: float) -> None:
        """A lane call ended ``seconds`` after it started."""
        if seconds > LANE_FAST:
            self.streak = 0
            return
        self.streak += 1
        if self.streak >= PROMOTE_AFTER << min(self.demotions, MAX_BACKOFF):
            self.inline = True

    def demote(self) -> None:
        """An inline call was slow: back to the lanes."""
        if self.inline:
            self.inline = False
            self.streak = 0
            self.demotions += 1

    def __repr__(self) -> str:
        where = "inline" if self.inline else "lanes"
        return f"<Pace {where} streak={self.streak} demotions={self.demotions}>"
