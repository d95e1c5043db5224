"""Watching the HTTP workers from outside their GIL: a worker frozen in one inline call.

A worker writes on its page (``pages``) which action runs inline and a sequence number
per call; the supervisor reads the pages here, from its own process, so no action can
keep it from looking. A worker whose page names the same call for ``STALL_SECONDS`` is
frozen: ``on_stuck`` replaces it (and quarantines the action). While the node is idle
(no inline call, nothing said by a worker for ``ACTIVE_SECONDS``) it does not poll: the
pages say the supervisor sleeps, and a worker's first call wakes it (``wake()``); it
still looks every ``IDLE_LOOK_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from ...sandbox.pace import STALL_SECONDS
from .pages import INLINE, SEQ, SLEEPING
from .workers import WorkerProcess

__all__ = ["ACTIVE_SECONDS", "WorkerWatch"]

ACTIVE_SECONDS = 2.0  # a node is busy this long after a worker last said anything
_WATCH_SECONDS = 0.1  # how often a busy node's pages are looked at
_IDLE_LOOK_SECONDS = 10.0  # an idle node's pages are still looked at this often


class WorkerWatch:
    """The watch over ``workers()`` (see the module docstring); ``busy(now)`` marks the
    node busy (a worker said something), ``wake()`` ends an idle wait."""

    def __init__(
        self,
        workers: Callable[[], list[WorkerProcess]],
        on_stuck: Callable[[WorkerProcess, int], None],
    ) -> None:
        self._workers = workers
        self._on_stuck = on_stuck
        self._frozen: dict[int, tuple[int, int, float]] = {}
        self._active_until = 0.0
        self._woken = asyncio.Event()

    def busy(self, now: float) -> None:
        self._active_until = now + ACTIVE_SECONDS

    def wake(self) -> None:
        self._woken.set()

    def forget(self, worker: WorkerProcess) -> None:
        self._frozen.pop(worker.index, None)

    async def run(self, loop: asyncio.AbstractEventLoop) -> None:
        """Look at every worker's page while the node is busy; when it is idle, wait for
        a worker's wake-up (and still look every ``_IDLE_LOOK_SECONDS``)."""
        while True:
            now = loop.time()
            inline = False
            for worker in list(self._workers()):
                if worker.page is None or worker.ended:
                    continue
                words = worker.page.words
                version, seq = words[INLINE], words[SEQ]
                if not version:
                    self._frozen.pop(worker.index, None)
                    continue
                inline = True
                seen = self._frozen.get(worker.index)
                if seen is None or seen[:2] != (version, seq):
                    self._frozen[worker.index] = (version, seq, now)
                elif now - seen[2] >= STALL_SECONDS:
                    self._frozen.pop(worker.index, None)
                    self._on_stuck(worker, version)
            if inline or now < self._active_until:
                await asyncio.sleep(_WATCH_SECONDS)
                continue
            pages = [w.page.words for w in self._workers() if w.page is not None]
            for words in pages:
                words[SLEEPING] = 1
            self._woken.clear()
            if not any(words[INLINE] for words in pages):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._woken.wait(), _IDLE_LOOK_SECONDS)
            for words in pages:
                words[SLEEPING] = 0
