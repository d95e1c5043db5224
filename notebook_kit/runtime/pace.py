"""Where an action's calls run: on the relay's lanes, or inline on the event loop.

Every action starts on the lanes. One that has shown itself fast, ``PROMOTE_AFTER`` lane
calls in a row that each used at most ``INLINE_MAX`` of its thread's CPU time, neither
slept nor opened a socket, and ended within ``LANE_WALL_MAX``, is *proven*, and may then
run inline. Where it does depends on its kind (``pace_for``), measured against a
hand-written Sanic app doing the same work (``bench/run.py``):

* An action that reads the local SQLite ``db`` (its code, or its user functions', names
  ``db``) runs inline once proven. The driver hands the GIL back to the loop inside every
  SQLite statement, and getting it back costs a thread switch: on a lane the employee
  lookup cost 1.6-1.8x the bare app's CPU; inline 1.1-1.2x.
* A pure-Python action (the sample's calculator) runs where its worker's ``Placement``
  says, which measures both ways under the load of the moment: on a lane a batch of calls
  runs beside the loop's I/O when many callers wait (0.86x there), inline is cheaper when
  few do (1.07x against 1.44x on a lane). See ``placement``.
* An action that names ``http``, or ``db`` over SQLAlchemy (``database_url``), waits on
  the network: never inline.

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
    "inline_names",
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


def pace_for(fn: Any, names: frozenset[str], placement: Any) -> Pace:
    """The pace of a new action: inline once proven if it names one of ``names`` (the
    local ``db``: ``inline_names``); where ``placement`` says once proven if it names
    neither ``db`` nor ``http``; never inline otherwise (it waits on the network)."""
    if reads_names(fn, NOT_INLINE):
        return Pace(eligible=False)
    if names and reads_names(fn, names):
        return Pace()
    if reads_names(fn, _DB):  # a database over the network (database_url)
        return Pace(eligible=False)
    return Pace(placement=placement)


def inline_names(settings: Mapping[str, Any]) -> frozenset[str]:
    """The names that make an action eligible to run inline: ``db`` while it is the local
    SQLite file (no ``database_url``, or a ``sqlite:///`` one), else none."""
    url = settings.get("database_url") or ""
    return frozenset(("db",)) if not url or url.startswith("sqlite:///") else frozenset()


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

    ``inline`` is what the request path reads: proven, and (for an action that follows a
    ``Placement``) placed inline now. The placement switches it for its proven actions."""

    __slots__ = ("calls", "demotions", "eligible", "inline", "placement", "proven", "streak")

    def __init__(self, eligible: bool = True, placement: Any = None) -> None:
        self.eligible = eligible  # may run inline at all
        self.placement = placement  # None: inline whenever proven
        self.proven = False
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
            self.proven = True
            self.inline = self.placement is None or self.placement.inline

    def demote(self) -> None:
        """An inline call was slow: back to the lanes, to be proven again."""
        if self.inline:
            self.inline = self.proven = False
            self.streak = 0
            self.demotions += 1

    def __repr__(self) -> str:
        where = "inline" if self.inline else "lanes"
        proven, streak, demotions = self.proven, self.streak, self.demotions
        return f"<Pace {where} {proven=} {streak=} {demotions=}>"
