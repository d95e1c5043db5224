"""A worker's side of following deploys: build what the supervisor pushes, switch when
the node has committed it.

The supervisor sends each worker a snapshot whenever the store's generation moves
(``feed``). The worker builds it off its loop (``LiveBuilder``, compiling only what is
new), says so (``built``), and keeps it *ready*. It serves a ready state only once the
node's committed generation (the node page, written by the supervisor when every worker
has built it) reaches it: ``catch_up`` runs when the commit arrives and, on the request
path, whenever a request sees the page ahead of the state it would answer from. So no
worker answers from an older state once another has answered from a newer one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...domain.models import Stage
from ..serve.limits import RateLimiter, limiter_for
from .builder import LiveBuilder
from .live import LiveState

__all__ = ["Follower"]


class Follower:
    """Builds pushed snapshots and serves the newest the node committed (see the module
    docstring); ``activate(state)`` is called on the loop for each state put in service."""

    def __init__(self, builder: LiveBuilder, committed: Any) -> None:
        self.builder = builder
        self.committed = committed  # the node page: committed generation at [0]
        self.live: LiveState | None = None
        self.activate: Callable[[LiveState], None] = lambda state: None
        self._ready: list[LiveState] = []  # built, not yet served (oldest first)
        self._limiters: dict[Stage, RateLimiter | None] = {}  # kept across reloads

    def build(self, snapshot: Mapping[str, Any]) -> LiveState:
        """Build ``snapshot`` (in a thread: it compiles)."""
        settings = snapshot["settings"]
        burst = settings["rate_limit_burst"]
        limiters = {
            s: limiter_for(settings[f"rate_limit_{s}"], burst, self._limiters.get(s)) for s in Stage
        }
        state = self.builder.build(snapshot, limiters)
        self._limiters = limiters
        return state

    def ready(self, state: LiveState) -> None:
        """``state`` is built (on the loop): keep it until the node commits it."""
        self._ready = [*self._ready[-3:], state]

    def advance(self) -> bool:
        """Switch to the newest ready state the node has committed; whether it did."""
        limit = self.committed[0]
        ready = [s for s in self._ready if s.generation <= limit]
        live = self.live
        if ready and (live is None or ready[-1].generation > live.generation):
            self._switch(ready[-1])
            return True
        return False

    def catch_up(self) -> LiveState:
        """The state to serve now (the request path's call, once serving)."""
        self.advance()
        assert self.live is not None
        return self.live

    def _switch(self, state: LiveState) -> None:
        self.live = state
        self._ready = [s for s in self._ready if s.generation > state.generation]
        self.activate(state)
