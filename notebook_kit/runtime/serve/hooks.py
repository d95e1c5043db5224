"""What a stage with hooks does to a call before routing it: record it, pick its side.

A ``StageTable`` has ``hooks`` only where a canary runs (docs/canary.md) or calls are
recorded (docs/replay.md); ``Dispatcher.handle`` calls ``Hooks.before`` for those stages
only. A recorded request waits here, keyed by its entry's start time, until the worker
takes the log buffer and ``attach`` adds it to its entry (a ninth item).
"""

from __future__ import annotations

import time
from typing import Any

from ...domain.recording import record_request
from ..reload.live import StageTable

__all__ = ["Hooks"]

_SPARE_SECONDS = 60.0  # beyond twice the request timeout, a record's entry will not come


class Hooks:
    """One worker's pending recordings and the per-call work of hooked stages."""

    def __init__(self) -> None:
        self.records: dict[float, dict[str, Any]] = {}

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
