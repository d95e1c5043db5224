"""A worker's live state: immutable, compiled routing tables, swapped whole on reload.

``LiveState`` is what one request reads (once, at its start): per stage a ``StageTable``
(the compiled route tree, the callers it accepts by the SHA-256 of their keys, what it
publishes for OpenAPI) plus the limits in force. A reload builds a new one beside it and
replaces the reference, so a request in flight always sees one consistent state. The
worker never holds a key itself: the supervisor hands it digests (a key cannot be rebuilt from one;
``serve.callers``).

A route's endpoint is a ``LiveAction``: the action's code, compiled but not run (it is
loaded, user functions and all, only by its first inline call, under the page's watch),
the key its action processes know its code by, and its ``Pace``.

A stage where a canary runs (see docs/canary.md) or whose calls are recorded (see
docs/replay.md) has ``hooks``: per application with a canary, a ``CanarySplit`` holding a
second ``StageTable`` in which that application's routes are the canary deployment's, and
how many body bytes a recording keeps. Only then does a request pick a side
(``StageTable.side``) or get recorded; elsewhere ``hooks`` is None and costs the request
one check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ...domain.actions import ActionCode
from ...domain.canary import DEPLOYMENT_HEADER, caller_bucket, caller_identity
from ...domain.contract_checks import compile_contract
from ...domain.models import Application, Definition
from ...domain.routing import Match, RouteTable
from ...sandbox.pace import Pace
from ..serve.callers import Caller
from ..serve.limits import RateLimiter

__all__ = [
    "CanarySplit",
    "LiveAction",
    "LiveState",
    "LogEntry",
    "Memo",
    "StageHooks",
    "StageTable",
]


class LiveAction:
    """One deployed action as a worker serves it: its ``code`` (compiled, not run),
    where its calls go (``pace``), the ``key`` action processes know its code by
    (``stage:version``), the ``app``, and ``ident`` (app, API ID) for the log's counters.
    ``run`` is None until ``load()``: a worker runs no code of a definition (its user
    functions' top level included) before the first call it runs inline."""

    __slots__ = (
        "_env",
        "app",
        "code",
        "content_type",
        "contract",
        "definition",
        "ident",
        "is_async",
        "key",
        "pace",
        "run",
        "version",
    )

    def __init__(
        self,
        code: ActionCode,
        stage: str,
        version: int,
        pace: Pace,
        env: Callable[[], Mapping[str, Any]],
    ) -> None:
        definition = code.definition
        self.code = code
        self.definition: Definition = definition
        self.run: Callable[..., Any] | None = None
        self.is_async = code.is_async
        self.content_type = definition.content_type
        # its contract, compiled once per version (None: nothing declared, nothing checked)
        self.contract = compile_contract(definition.contract)
        self.ident = (definition.app, definition.id)
        self.app = definition.app
        self.key = f"{stage}:{version}"
        self.version = version
        self.pace = pace
        self._env = env

    def load(self) -> Callable[..., Any]:
        """The action's function, its user functions run first (``ValidationError``
        when they fail)."""
        self.run = self.code.load(self._env()).run
        return self.run

    def __repr__(self) -> str:
        return f"<LiveAction {self.app}/{self.definition.id} {self.key} {self.pace!r}>"


_MATCHES_KEPT = 4096

# Started and ended (perf_counter times), stage, (method, path), status, (stage, app, API
# ID) of the action that ran or None, error or None, the ID of the deployment that
# answered (of the application the path names) or None, the consumer's name or None. The
# stage, the (method, path) pair and the action's key are objects the stage keeps per path,
# shared by every entry of that path: the batch stores each once, and the flush counts
# without building keys (see request_log.py for how entries are read back).
LogEntry = tuple[
    float,
    float,
    str,
    tuple[str, str],
    int,
    "tuple[str, str, str] | None",
    "str | None",
    "int | None",
    "str | None",
]
# What a stage remembers of a path: the match, (method, path), the action's log key, the
# deployment serving the application the path names (a constant of the table).
Memo = tuple[
    "Match[LiveAction] | None",
    tuple[str, str],
    "tuple[str, str, str] | None",
    "int | None",
]


@dataclass(frozen=True, slots=True)
class StageTable:
    name: str
    table: RouteTable[LiveAction]
    callers: Mapping[bytes, Caller]  # SHA-256 of a key -> its caller (serve.callers)
    debug: bool
    # app ID -> (application, deployment id, served definitions): the OpenAPI source
    published: dict[str, tuple[Application, int, list[Definition]]]
    # (method, raw path) -> what it matched, with the request log's shared keys: most calls
    # repeat a few paths, so the tree is walked once per path. Bounded; it lives and dies
    # with this stage's table.
    matches: dict[tuple[str, str], Memo] = field(default_factory=dict)
    # the stage's rate limit in this worker, or None (see limits.py)
    limiter: RateLimiter | None = None
    # what only some stages do (a canary, recording calls), or None: nothing
    hooks: StageHooks | None = None

    def match(self, method: str, path: str, parts: list[str]) -> Memo:
        """Walk the table for a path split on '/' (stage first) and remember the answer."""
        segments = [unquote(p) if "%" in p else p for p in parts[2:]]
        if len(segments) > 1 and not segments[-1]:
            segments.pop()  # tolerate one trailing slash
        key = (method, path)
        found = self.table.match(method, segments)
        action = found.endpoint if found is not None else None
        published = self.published.get(segments[0]) if segments else None
        memo = (
            found,
            key,
            None if action is None else (self.name, *action.ident),
            None if published is None else published[1],
        )
        if len(self.matches) >= _MATCHES_KEPT:
            self.matches.clear()
        self.matches[key] = memo
        return memo

    def side(self, request: Any, parts: list[str]) -> StageTable:
        """The table that answers this request on a stage where canaries run: the
        canary's if the path's application has one and the caller falls in its share
        (or names its deployment in the header), else this one."""
        split = self.hooks.canaries.get(parts[2]) if self.hooks is not None else None
        if split is None:
            return self
        headers = request.headers
        asked = headers.get(DEPLOYMENT_HEADER)
        if asked is not None:
            if asked == split.canary_text:
                return split.table
            if asked == split.live_text:
                return self
        identity = caller_identity(headers.get("x-api-key"), request.ip)
        return split.table if caller_bucket(identity) < split.percent else self


@dataclass(frozen=True, slots=True)
class StageHooks:
    """What a stage does beyond routing, when it does: its canaries (app ID -> split) and
    how many body bytes a recorded call keeps (0: calls are not recorded)."""

    canaries: dict[str, CanarySplit]
    record_bytes: int = 0


@dataclass(frozen=True, slots=True)
class CanarySplit:
    """One application's canary on a stage: its share and the table serving it."""

    percent: int
    live_id: int
    canary_id: int
    table: StageTable  # the stage with this application's canary routes
    live_text: str = ""  # the IDs as the header carries them
    canary_text: str = ""

    @classmethod
    def of(cls, percent: int, live_id: int, canary_id: int, table: StageTable) -> CanarySplit:
        return cls(percent, live_id, canary_id, table, str(live_id), str(canary_id))


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
    # a canary with an automatic-rollback threshold runs: the watcher checks it
    canary_check: bool = False
    server_timing: bool = False  # the setting: a Server-Timing header on every answer
    tracing: bool = False  # the setting: each call's trace goes with its log entry
