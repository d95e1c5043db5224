"""One node's workers switch deployments together: none answers from an older state
once another has answered from a newer one.

Each Sanic worker polls the store and builds new states on its own schedule. Alone, that
means flapping: worker A serves deployment 8 while worker B still serves 7. So a worker
builds a new state but *activates* it only once every worker of the node has built the
same generation. The node shares, in memory the manager process allocates before it
starts the workers (``main_process_start``, ``app.shared_ctx``), one array of int64:

    [0] committed   the generation every worker has built; each serves it (or older)
    [1] target      the newest generation any worker has built (the others reload now)
    then per slot:  pid, built generation, heartbeat (monotonic ms)

A request reads ``committed`` (one shared-memory read, no lock) and, when its worker's
state is behind, swaps in the state it prepared. Writers (slot claims, commits) take the
node's lock. A worker that stops releases its slot; one that dies without doing so (or
whose loop stalls for ``STALE_MS``) stops counting, so a stuck worker being replaced
(``watchdog``) never holds the others back for longer than that. A new worker starts
with the store's newest state, which may be ahead of ``committed`` until the others
build it too (they are told to, through ``target``). With one worker there is no sync.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

__all__ = ["STALE_MS", "WorkerSync", "allocate"]

STALE_MS = 2000  # a slot whose heartbeat is older than this does not hold commits back
_COMMITTED, _TARGET, _HEAD, _FIELDS = 0, 1, 2, 3  # _FIELDS per slot: pid, built, beat


def allocate(workers: int) -> tuple[Any, Any]:
    """The node's shared array and lock, for ``workers`` workers (and their stand-ins
    during zero-downtime replacements). Called in the manager process."""
    slots = 2 * workers + 2
    return multiprocessing.Array("q", _HEAD + _FIELDS * slots, lock=False), multiprocessing.Lock()


def _now_ms() -> int:
    return int(time.monotonic() * 1000)  # CLOCK_MONOTONIC: one clock for every process


class WorkerSync:
    """This worker's view of the node's shared array: ``committed`` is the raw shared
    int64 (read ``.value`` on the request path)."""

    def __init__(self, shared: Any, lock: Any) -> None:
        self._shared = shared
        self._lock = lock
        self._slots = (len(shared) - _HEAD) // _FIELDS
        self._slot: int | None = None
        self._pid = os.getpid()

    @property
    def committed(self) -> int:
        return int(self._shared[_COMMITTED])

    @property
    def target(self) -> int:
        return int(self._shared[_TARGET])

    def join(self, built: int) -> bool:
        """Claim a free (or abandoned) slot, having built ``built``. False if none is
        free: this worker then switches on its own (it cannot hold others back)."""
        shared, now = self._shared, _now_ms()
        with self._lock:
            for slot in range(self._slots):
                base = _HEAD + _FIELDS * slot
                if shared[base] == 0 or now - shared[base + 2] > STALE_MS:
                    shared[base], shared[base + 1], shared[base + 2] = self._pid, built, now
                    self._slot = slot
                    shared[_TARGET] = max(shared[_TARGET], built)
                    return True
        return False

    def leave(self) -> None:
        """Release this worker's slot (it stops serving)."""
        if self._slot is None:
            return
        base = _HEAD + _FIELDS * self._slot
        with self._lock:
            if self._shared[base] == self._pid:
                self._shared[base] = 0
        self._slot = None

    def beat(self) -> None:
        """Say this worker is alive (every watcher tick, on its event loop)."""
        if self._slot is not None:
            self._shared[_HEAD + _FIELDS * self._slot + 2] = _now_ms()

    def built(self, generation: int) -> int:
        """Record that this worker has built ``generation``; commit it if every live
        worker has built the same. Returns the committed generation."""
        shared = self._shared
        if self._slot is None:
            return generation
        base = _HEAD + _FIELDS * self._slot
        now = _now_ms()
        with self._lock:
            shared[base + 1], shared[base + 2] = generation, now
            shared[_TARGET] = max(shared[_TARGET], generation)
            built = {
                shared[_HEAD + _FIELDS * s + 1]
                for s in range(self._slots)
                if shared[_HEAD + _FIELDS * s] != 0
                and now - shared[_HEAD + _FIELDS * s + 2] <= STALE_MS
            }
            if built == {generation} and generation > shared[_COMMITTED]:
                shared[_COMMITTED] = generation
            return int(shared[_COMMITTED])
