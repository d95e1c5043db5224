"""The supervisor's side of the request log: workers' batches into the store.

Each worker sends its entries every ``FLUSH_SECONDS`` while busy, as one batch
(``store.log_batches``: columns the supervisor stores as they came, after checking their
shape) with the per-action counters it summed, the calls it counted per consumer, and
when consumer keys (by digest) were last used. The writer stores what came, in a thread,
at most every ``FLUSH_SECONDS``; a store that is away keeps the batches in memory (up to
``BACKLOG_LIMIT`` entries; past it the oldest go, counted and said when the store is
back). After a write, canaries that roll back on errors are judged (at most once a
second; the core decides: ``CanaryReleases.check``); entries written inside that second are
judged when it ends, even if no other entry comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from ...errors import StoreError
from ...store.consumers import UsageRow
from ...store.log_batches import stamp
from ...store.request_log import ActionStats
from ...workspace.workspace import Workspace
from ..reload.store_link import StoreLink

__all__ = ["BACKLOG_LIMIT", "FLUSH_SECONDS", "LogWriter"]

log = logging.getLogger("notebook_kit.runtime")

BACKLOG_LIMIT = 100_000  # entries kept in memory while the store is away
FLUSH_SECONDS = 0.25
_JUDGE_SECONDS = 1.0


def _stats(raw: Any) -> list[ActionStats]:
    """A worker's counters, checked field by field (a malformed row is dropped)."""
    found: list[ActionStats] = []
    for row in raw if isinstance(raw, list) else ():
        try:
            stage, app, api_id, requests, errors, status, at, error, error_at, timeouts = row
            found.append(
                (
                    str(stage),
                    str(app),
                    str(api_id),
                    int(requests),
                    int(errors),
                    int(status),
                    str(at),
                    None if error is None else str(error)[:2000],
                    None if error_at is None else str(error_at),
                    int(timeouts),
                )
            )
        except (TypeError, ValueError):
            continue
    return found


def _usage(raw: Any) -> list[UsageRow]:
    """A worker's per-consumer counts, checked field by field (a malformed row is dropped)."""
    found: list[UsageRow] = []
    for row in raw if isinstance(raw, list) else ():
        try:
            consumer, app, stage, day, calls, client, server = row
            found.append(
                (str(consumer), str(app), str(stage), str(day)[:10], int(calls), int(client),
                 int(server))
            )  # fmt: skip
        except (TypeError, ValueError):
            continue
    return found


def _used(raw: Any) -> dict[str, str]:
    """When keys were last used: digest (hex) -> ISO time."""
    if not isinstance(raw, dict):
        return {}
    return {str(k)[:64]: str(v)[:40] for k, v in raw.items()}


Pending = tuple[bytes, int, list[ActionStats], list[UsageRow], dict[str, str]]


class LogWriter:
    """Writes workers' batches to the store (see the module docstring). ``settings()``
    are the settings of the feed's last read, ``canaries()`` whether a canary that may
    roll back runs: neither is a store query."""

    def __init__(
        self,
        workspace: Workspace,
        link: StoreLink,
        settings: Callable[[], Mapping[str, Any]],
        canaries: Callable[[], bool],
        limit: int = BACKLOG_LIMIT,
    ) -> None:
        self.workspace = workspace
        self.limit = limit
        self.link = link
        self._settings = settings
        self._canaries = canaries
        self._pending: deque[Pending] = deque()
        self._entries = 0
        self.dropped = 0  # since the store went away (said when it is back)
        self.dropped_total = 0  # since the start (the metrics)
        self.written = 0
        self.error: str | None = None  # the store's refusal of the last write, until one lands
        self._arrived = asyncio.Event()
        self._next_judging = 0.0
        self._owed = False  # entries written since the last judgement, not yet judged
        self._writing = threading.Lock()

    def add(self, batch: bytes, stats: Any, usage: Any = None, used: Any = None) -> int:
        """A worker's batch (ValueError when it is malformed) and what it adds to the
        consumers' counts; returns its entry count."""
        offset = time.time() - time.perf_counter()  # the worker's clock is this one
        stamped, count = stamp(batch, offset)
        self._pending.append((stamped, count, _stats(stats), _usage(usage), _used(used)))
        self._entries += count
        while self._entries > self.limit and len(self._pending) > 1:
            lost = self._pending.popleft()[1]
            self._entries -= lost
            self.dropped += lost
            self.dropped_total += lost
        self._arrived.set()
        return count

    def write(self) -> bool:
        """Write what is pending (in a thread: store writes). False if the store failed
        (what was not written stays pending)."""
        keep = int(self._settings()["request_log_size"])
        with self._writing:  # sync() writes too, from another thread
            return self._write(keep)

    def _write(self, keep: int) -> bool:
        while self._pending:
            batch, count, stats, usage, used = self._pending[0]
            try:
                self.workspace.store.append_batch(batch, count, keep, stats, usage, used)
            except StoreError as exc:
                self.link.failed(exc)
                self.error = str(exc)
                return False
            self._pending.popleft()
            self._entries -= count
            self.written += count
        self.error = None
        return True

    @property
    def backlog(self) -> int:
        """Entries waiting in memory for the store."""
        return self._entries

    async def run(self) -> None:
        """Write batches as they come, every ``FLUSH_SECONDS`` at most; never stops on
        an error (a defect is logged, the store's absence waited out)."""
        loop = asyncio.get_running_loop()
        while True:
            await self._next_turn(loop)
            self._arrived.clear()
            try:
                if await loop.run_in_executor(None, self.write):
                    self._answered()
                    await self._judge(loop)
            except Exception:
                log.exception("writing the request log failed")
            await asyncio.sleep(FLUSH_SECONDS)
            if self._pending:
                self._arrived.set()

    async def _next_turn(self, loop: asyncio.AbstractEventLoop) -> None:
        """Until a batch comes, or the second ends in which a judgement was put off."""
        if not self._owed:
            await self._arrived.wait()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._arrived.wait(), max(0.0, self._next_judging - loop.time()))

    def _answered(self) -> None:
        if self.link.lost:
            dropped, self.dropped = self.dropped, 0
            self.link.answered(dropped)

    async def _judge(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        if not self._canaries():
            self._owed = False
        elif now < self._next_judging:
            self._owed = True
        else:
            self._owed = False
            self._next_judging = now + _JUDGE_SECONDS
            await loop.run_in_executor(None, self.workspace.canaries.check)

    def write_now(self) -> None:
        """The last write, at the stop: a store that is away loses these (logged)."""
        if not self.write():
            log.warning("could not write the last %d request-log entries", self._entries)
            self.dropped_total += self._entries
