"""A worker's live state: immutable, compiled routing tables, swapped whole on reload.

``LiveState`` is what one request reads (once, at its start): per stage a ``StageTable``
(the compiled route tree, the stage's API key, what it publishes for OpenAPI) plus the
limits in force. A reload builds a new one beside it and replaces the reference, so a
request in flight always sees one consistent state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ..domain.actions import CompiledAction
from ..domain.models import Application, Definition
from ..domain.routing import Match, RouteTable
from .limits import RateLimiter

__all__ = ["LiveState", "LogEntry", "Memo", "StageTable"]

_MATCHES_KEPT = 4096

# Started and ended (perf_counter times), stage, (method, path), status, (stage, app, API
# ID) of the action that ran or None, error or None. The stage, the (method, path) pair and
# the action's key are objects the stage keeps per path, shared by every entry of that
# path: the pickled batch stores each once, and the flush counts without building keys
# (see request_log.py for how entries are read back).
LogEntry = tuple[
    float, float, str, tuple[str, str], int, "tuple[str, str, str] | None", "str | None"
]
# What a stage remembers of a path: the match, (method, path), the action's log key.
Memo = tuple["Match[CompiledAction] | None", tuple[str, str], "tuple[str, str, str] | None"]


@dataclass(frozen=True, slots=True)
class StageTable:
    name: str
    table: RouteTable[CompiledAction]
    key: bytes
    debug: bool
    # app ID -> (application, deployment id, served definitions): the OpenAPI source
    published: dict[str, tuple[Application, int, list[Definition]]]
    # (method, raw path) -> what it matched, with the request log's shared keys: most calls
    # repeat a few paths, so the tree is walked once per path. Bounded; it lives and dies
    # with this stage's table.
    matches: dict[tuple[str, str], Memo] = field(default_factory=dict)
    # the stage's rate limit in this worker, or None (see limits.py)
    limiter: RateLimiter | None = None

    def match(self, method: str, path: str, parts: list[str]) -> Memo:
        """Walk the table for a path split on '/' (stage first) and remember the answer."""
        segments = [unquote(p) if "%" in p else p for p in parts[2:]]
        if len(segments) > 1 and not segments[-1]:
            segments.pop()  # tolerate one trailing slash
        key = (method, path)
        found = self.table.match(method, segments)
        action = found.endpoint if found is not None else None
        memo = (found, key, None if action is None else (self.name, *action.ident))
        if len(self.matches) >= _MATCHES_KEPT:
            self.matches.clear()
        self.matches[key] = memo
        return memo


@dataclass(frozen=True, slots=True)
class LiveState:
    generation: int
    stages: dict[str, StageTable]
    max_body_bytes: int
    request_log_size: int
    reload_interval: float
    action_timeout: float  # seconds, for definitions without their own
    max_concurrent_actions: int
    request_timeout: float = 60.0
    settings: Mapping[str, Any] = field(default_factory=dict)  # all of them, as read
