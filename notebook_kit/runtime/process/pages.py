"""Shared memory between the supervisor and its workers: two small pages of int64.

The *node page* holds the generation every worker has built (``COMMITTED``): a worker
reads it on each request (one memory read) and, when it has moved past what it serves,
swaps in the state it has ready, so no worker answers from an older state once another
answered from a newer one. Only the supervisor writes it: the worker maps it read-only,
and the memfd is sealed against any new writable mapping (``F_SEAL_FUTURE_WRITE``), so
action code in a worker cannot change what the others read.

Each worker's own page is how the supervisor watches it from outside its GIL:
``INLINE`` is the version of the action the worker runs inline right now (0: none) and
``SEQ`` counts those calls, so the same (version, seq) seen for ``STALL_SECONDS`` is a
worker frozen in one call; ``SLEEPING`` is set by a supervisor that stopped looking
(nothing ran for a while): the worker's next inline call clears it and writes the
node's wake-up ``eventfd`` first, before anything can freeze it.
"""

from __future__ import annotations

import fcntl
import mmap
import os
from typing import Any

__all__ = ["COMMITTED", "INLINE", "SEQ", "SLEEPING", "Page", "attach"]

COMMITTED = 0  # node page
INLINE, SEQ, SLEEPING = 0, 1, 2  # a worker's page

_SIZE = mmap.PAGESIZE
_F_SEAL_FUTURE_WRITE = getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x0010)
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW


class Page:
    """A page the supervisor made (and writes): ``fd`` to hand to a worker, ``words``
    (a memoryview of int64) to read and write here."""

    def __init__(self, name: str, *, worker_writes: bool) -> None:
        self.fd = os.memfd_create(name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
        os.ftruncate(self.fd, _SIZE)
        self._map = mmap.mmap(self.fd, _SIZE)
        self.words: Any = memoryview(self._map).cast("q")
        seals = _SEALS if worker_writes else _SEALS | _F_SEAL_FUTURE_WRITE
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, seals)

    def close(self) -> None:
        self.words.release()
        self._map.close()
        os.close(self.fd)


def attach(fd: int, *, writable: bool) -> Any:
    """In a worker: the page behind ``fd`` as a memoryview of int64."""
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    mapped = mmap.mmap(fd, _SIZE, mmap.MAP_SHARED, prot)
    os.close(fd)
    return memoryview(mapped).cast("q")
