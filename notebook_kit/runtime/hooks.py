"""What a stage with hooks does to a call before routing it: record it, pick its side.

A ``StageTable`` has ``hooks`` only where a canary runs (docs/canary.md) or calls are
recorded (docs/replay.md); ``Runtime.handle`` calls ``Hooks.before`` for those stages
only. A recorded request waits here, keyed by its entry's start time, until the watch
loop takes the log buffer and ``attach`` adds it to its entry (a ninth item).

The watch loop also asks here when to judge canaries that roll back on errors
(``judging_due``): after this worker wrote log entries, at most once a second, and only
while such a canary runs (the core decides: ``CanaryReleases.check``).
"""

from __future__ import annotations

import time
from typing import Any

from ..domain.recording import record_request
from .live import LiveState, StageTable

__all__ = ["Hooks"]

_SPARE_SECONDS = 60.0  # beyond twice the request timeout, a record's entry will not come
_JUDGE_SECONDS = 1.0  # at most this often, a worker judges canaries after writing the log


class Hooks:
    """One worker's pending recordings and the per-call work of hooked stages."""

    def __init__(self) -> None:
        self.records: dict[float, dict[str, Any]] = {}
        self._unjudged = False  # log entries written since canaries were last judged
        self._next_judging = 0.0

    def wrote(self) -> list[Any]:
        """Note that log entries were written (returns the emptied pending list)."""
        self._unjudged = True
        return []

    def judging_due(self, live: LiveState, now: float) -> bool:
        """Whether to judge canaries now (``now``: the loop's clock)."""
        if not (self._unjudged and live.canary_check and now >= self._next_judging):
            return False
        self._unjudged, self._next_judging = False, now + _JUDGE_SECONDS
        return True

    def before(
        self, stage: StageTable, request: Any, parts: list[str], started: float
    ) -> StageTable:
        """Record the call if the stage records, then the table that answers it."""
        hooks = stage.hooks
        assert hooks is not None
        if hooks.record_bytes:
            self.records[started] = record_request(
                request.method,
                request.path,
                request.query_string,
                request.headers.items(),
                request.body,
                hooks.record_bytes,
            )
        return stage.side(request, parts) if hooks.canaries else stage

    def attach(self, pending: list[Any], request_timeout: float) -> list[Any]:
        """``pending`` with each recorded request added to its entry; records whose entry
        never came (a call cut short) are dropped once it cannot come any more."""
        records = self.records
        if not records:
            return pending
        joined = [(*e, records.pop(e[0])) if e[0] in records else e for e in pending]
        if records:
            horizon = time.perf_counter() - 2 * request_timeout - _SPARE_SECONDS
            for started in [t for t in records if t < horizon]:
                del records[started]
        return joined
