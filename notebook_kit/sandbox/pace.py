"""Where a server's call runs: in an action process, or inline in the worker that read it.

Every action starts in the worker's action processes (``serving.ActionPool``): a process
hop a call, but a heavy or stuck action there slows nothing else, and is killed at its
limit. One that has shown itself fast, ``PROMOTE_AFTER`` calls in a row that each used
at most ``INLINE_MAX`` of CPU time, never waited (no voluntary context switch: it
neither slept nor read a socket or a cold file) and ended within ``POOL_WALL_MAX``, is
*proven* and runs inline, in the worker itself, after
the loop's next turn (``dispatch._next_turn``): no hop at all. The worker is a sandboxed
process too, so inline code is kept from the store like any other action code.

Never inline, whatever they measure: async actions; actions that name ``http`` (each call
waits on the network), ``db`` over a database server (``database_url``), or a built-in
answered by the trusted side (users, mail, presigned links, OAuth2: a round trip each),
or ``secrets`` (a worker never holds their values), in the action or anywhere in its
user functions (read from the compiled code, nothing run); every action of a deployment
that pins secrets (``runtime/reload/builder.py``);
and an action that once held a worker past ``STALL_SECONDS`` (the supervisor killed that
worker and *quarantined* the action's versions).

Inline, it goes back to the action processes, no longer proven, when one call held the
loop longer than ``INLINE_WALL_MAX``, or one of every ``SAMPLE_EVERY`` calls, timed, used
more than ``INLINE_MAX`` of CPU. Each demotion doubles the run of fast calls needed to be
proven again (up to ``PROMOTE_AFTER << MAX_BACKOFF``), so an action that is slow now and
then stays in the processes, while one demoted by a hiccup of the machine comes back. A
call that never ends inline freezes its worker: the supervisor, which watches from
outside the worker (``runtime.process``), kills it after ``STALL_SECONDS`` and starts
another.

The counters are read and written on the worker's loop only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..builtins.services import USER_CALLS

__all__ = [
    "INLINE_MAX",
    "INLINE_WALL_MAX",
    "MAX_BACKOFF",
    "POOL_WALL_MAX",
    "PROMOTE_AFTER",
    "SAMPLE_EVERY",
    "STALL_SECONDS",
    "Pace",
    "local_db",
    "pace_for",
]

PROMOTE_AFTER = 32  # fast calls in a row in an action process before the first promotion
INLINE_MAX = 0.002  # seconds of CPU: a call using more is not fast
POOL_WALL_MAX = 0.05  # seconds from start to end in its process, preemptions included
INLINE_WALL_MAX = 0.01  # seconds an inline call may hold the loop before it is sent back
SAMPLE_EVERY = 32  # one inline call in this many has its CPU time read
MAX_BACKOFF = 6  # demotions that double the run needed to come back: 32 << 6 = 2048
STALL_SECONDS = 1.0  # an inline call this long has frozen its worker: it is replaced

# Names whose use means a call waits on something: the network, the trusted side.
_WAITS = frozenset(
    ("http", *USER_CALLS, "sendMail", "getPresignedUrl", "oauth2", "actions", "artifacts")
)
# ``secrets``: a worker never holds their values; code that reads them runs in its
# application's action processes (so does every action of a deployment with secrets).
_NEVER_INLINE = _WAITS | {"secrets"}
_DB = frozenset(("db",))


def pace_for(names: frozenset[str], is_async: bool, db_is_local: bool) -> Pace:
    """The pace of a new action whose code (its user functions' included) reads
    ``names`` (see the module docstring for which never run inline)."""
    if is_async or not names.isdisjoint(_NEVER_INLINE):
        return Pace(eligible=False)
    if not db_is_local and not names.isdisjoint(_DB):  # a database over the network
        return Pace(eligible=False)
    return Pace()


def local_db(settings: Mapping[str, Any]) -> bool:
    """Whether ``db`` is a local SQLite file (no ``database_url``, or a ``sqlite:///``
    one) rather than a database over the network."""
    url = settings.get("database_url") or ""
    return not url or url.startswith("sqlite:///")


class Pace:
    """The running record of one compiled action in one worker (see the module doc).
    ``inline`` is what the request path reads."""

    __slots__ = ("calls", "demotions", "eligible", "inline", "streak")

    def __init__(self, eligible: bool = True) -> None:
        self.eligible = eligible  # may run inline at all
        self.inline = False
        self.streak = 0  # fast calls in a row in an action process
        self.demotions = 0
        self.calls = 0  # inline calls, for sampling

    def pool_call_ended(self, wall: float, cpu: float, waits: int) -> None:
        """A call in an action process ended, having taken ``wall`` seconds there, used
        ``cpu`` seconds of CPU and waited ``waits`` times."""
        if waits or cpu > INLINE_MAX or wall > POOL_WALL_MAX:
            self.streak = 0
            return
        self.streak += 1
        if self.eligible and self.streak >= PROMOTE_AFTER << min(self.demotions, MAX_BACKOFF):
            self.inline = True

    def demote(self) -> None:
        """An inline call was slow: back to the action processes, to be proven again."""
        if self.inline:
            self.inline = False
            self.streak = 0
            self.demotions += 1

    def quarantine(self) -> None:
        """This action froze a worker: never inline again."""
        self.eligible = False
        self.inline = False

    def __repr__(self) -> str:
        where = "inline" if self.inline else "processes"
        return f"<Pace {where} streak={self.streak} demotions={self.demotions}>"
