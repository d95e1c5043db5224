"""Where an action's calls run: on the relay's lanes, or inline on the event loop.

Every action starts on the lanes. One that has shown itself fast, ``PROMOTE_AFTER`` lane
calls in a row that each used at most ``INLINE_MAX`` of its thread's CPU time, neither
slept nor opened a socket, and ended within ``LANE_WALL_MAX``, is *proven*, and then runs
inline, after the loop's next turn (``app._next_turn``), unless it waits on the network:
an action that names ``http``, or ``db`` over SQLAlchemy (``database_url``), never runs
inline (``pace_for``). Measured against a hand-written Sanic app doing the same work
(``bench/run.py``, CPU per request): inline, the employee lookup costs about 0.85x the
bare app with 50 callers and 1.0x with 4; on a lane 1.6-1.8x (the SQLite driver hands the
GIL back to the loop inside every statement, and getting it back costs a thread switch).
The calculator costs the same inline as on a lane with 50 callers, and less inline with 4
(a lane call then wakes two threads).

CPU time, not wall time, because a lane's wall time includes its waits for the GIL, which
the loop holds while it serves other calls: under load a 30 µs lookup can take 20 ms on a
lane. (The two clock reads a call this needs are paid only until the action is proven.)

Inline, it goes back to the lanes, no longer proven, when the relay's monitor sees one
call still running after two of its ticks (10 ms), or when one of every ``SAMPLE_EVERY``
calls, timed, took longer than ``INLINE_MAX``, or a call slept or opened a socket. The call
that showed it was slow has held the loop for its own duration (a time-out still ends it
with a 504 at its limit); the next ones do not. Each demotion doubles the run of fast lane
calls needed to be proven again (up to ``PROMOTE_AFTER << MAX_BACKOFF``), so an action that
is slow now and then stays on the lanes, while one demoted by a hiccup of the machine
comes back.

The counters are read and written by the loop and the lanes without a lock: a lost
update only delays or repeats a promotion, which is harmless.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import CodeType
from typing import Any

__all__ = [
    "INLINE_MAX",
    "LANE_WALL_MAX",
    "MAX_BACKOFF",
    "PROMOTE_AFTER",
    "SAMPLE_EVERY",
    "Pace",
    "local_db",
    "pace_for",
    "reads_names",
]

PROMOTE_AFTER = 32  # fast lane calls in a row before the first promotion
LANE_WALL_MAX = 0.05  # seconds from start to end on a lane, GIL waits included
NOT_INLINE = frozenset(("http",))  # an action that names these waits on the network
_DB = frozenset(("db",))
INLINE_MAX = 0.002  # seconds: a timed inline call longer than this is slow
SAMPLE_EVERY = 32  # one inline call in this many is timed (two clock reads)
MAX_BACKOFF = 6  # demotions that double the run needed to come back: 32 << 6 = 2048


def pace_for(fn: Any, db_is_local: bool) -> Pace:
    """The pace of a new action: never inline if it waits on the network (it names
    ``http``, or ``db`` while ``db`` is not the local SQLite file: ``local_db``); inline
    once proven otherwise."""
    if reads_names(fn, NOT_INLINE):
        return Pace(eligible=False)
    if not db_is_local and reads_names(fn, _DB):  # a database over the network
        return Pace(eligible=False)
    return Pace()


def local_db(settings: Mapping[str, Any]) -> bool:
    """Whether ``db`` is the local SQLite file (no ``database_url``, or a ``sqlite:///``
    one) rather than a database over the network."""
    url = settings.get("database_url") or ""
    return not url or url.startswith("sqlite:///")


def reads_names(fn: Any, names: frozenset[str]) -> bool:
    """Whether ``fn``'s code, or that of a function of its module it calls (a user
    function), names one of ``names`` as a global."""
    seen: set[int] = set()
    todo = [fn]
    while todo:
        item = todo.pop()
        code = item if isinstance(item, CodeType) else getattr(item, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        if names.intersection(code.co_names):
            return True
        scope = getattr(fn, "__globals__", {})
        todo.extend(f for n in code.co_names if callable(f := scope.get(n)))
        todo.extend(c for c in code.co_consts if isinstance(c, CodeType))
    return False


class Pace:
    """The running record of one compiled action in one worker (see the module doc).
    ``inline`` is what the request path reads."""

    __slots__ = ("calls", "demotions", "eligible", "inline", "streak")

    def __init__(self, eligible: bool = True) -> None:
        self.eligible = eligible  # may run inline at all
        self.inline = False
        self.streak = 0  # fast lane calls in a row
        self.demotions = 0
        self.calls = 0  # inline calls, for sampling

    def lane_call_ended(self, wall: float, cpu: float = 0.0, waited: bool = False) -> None:
        """A lane call ended ``wall`` seconds after it started, having used ``cpu``
        seconds of its thread's time; ``waited``: it slept or opened a socket."""
        if waited or cpu > INLINE_MAX or wall > LANE_WALL_MAX:
            self.streak = 0
            return
        self.streak += 1
        if self.eligible and self.streak >= PROMOTE_AFTER << min(self.demotions, MAX_BACKOFF):
            self.inline = True

    def demote(self) -> None:
        """An inline call was slow: back to the lanes, to be proven again."""
        if self.inline:
            self.inline = False
            self.streak = 0
            self.demotions += 1

    def __repr__(self) -> str:
        where = "inline" if self.inline else "lanes"
        return f"<Pace {where} streak={self.streak} demotions={self.demotions}>"
