"""A worker's live state built in the test's own process: the supervisor's ``Feed`` and a
worker's ``LiveBuilder``, wired as a server wires them but without any process, so a
test can look at what a reload builds and reuses."""

from __future__ import annotations

from typing import Any

from notebook_kit.builtins.context import BuiltinContext
from notebook_kit.builtins.environment import ActionEnvironment
from notebook_kit.domain.models import Stage
from notebook_kit.runtime.reload.builder import LiveBuilder
from notebook_kit.runtime.reload.feed import Feed
from notebook_kit.runtime.reload.live import LiveState
from notebook_kit.runtime.serve.limits import limiter_for
from notebook_kit.workspace.workspace import Workspace


class LocalLive:
    """``live``: what a worker serves now; ``refresh()`` builds the store's new state if
    it changed (True) as a worker would on the supervisor's next snapshot."""

    def __init__(self, workspace: Workspace) -> None:
        self.feed = Feed(workspace)
        context = BuiltinContext(workspace.home, workspace.settings, workspace.services)
        names = ActionEnvironment(context).names
        self.builder = LiveBuilder(lambda settings: names())
        self._sent: frozenset[int] = frozenset()
        self._limiters: dict[Stage, Any] = {}
        self.live: LiveState = self._build()

    def _build(self) -> LiveState:
        read = self.feed.read()
        snapshot = self.feed.snapshot(read, self._sent)
        self._sent = read.referenced
        settings = snapshot["settings"]
        burst = settings["rate_limit_burst"]
        self._limiters = {
            s: limiter_for(settings[f"rate_limit_{s}"], burst, self._limiters.get(s)) for s in Stage
        }
        return self.builder.build(snapshot, self._limiters)

    def refresh(self) -> bool:
        if self.feed.generation() == self.live.generation:
            return False
        self.live = self._build()
        return True
