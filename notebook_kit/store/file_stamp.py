"""Whether a SQLite store's files may have changed: a poll that costs two ``stat`` calls.

A server watches the store's generation counter to notice deploys made by other
processes. On SQLite that is a query run off the event loop, several times a second,
which is most of what an idle server does. Every commit writes the database file or its
write-ahead log, so when neither file's (inode, size, modification time) moved since the
last look, the store did not change and the query can be skipped.

File times come from a coarse clock (a few milliseconds), so a commit landing in the same
tick as a look could leave the stamp as it was. A stamp younger than ``SETTLE_NS`` at the
time of the look is therefore not trusted: the next look reports a change again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["SETTLE_NS", "FileStamp"]

SETTLE_NS = 100_000_000  # 0.1 s


class FileStamp:
    """``changed()``: True unless the files are as they were at the previous call."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        self._paths = (str(path), f"{path}-wal")
        self._last: tuple[tuple[int, int, int], ...] | None = None

    def changed(self) -> bool:
        stamp = tuple(_stat(p) for p in self._paths)
        newest = max(mtime for _, _, mtime in stamp)
        settled = time.time_ns() - newest >= SETTLE_NS
        changed = stamp != self._last
        self._last = stamp if settled else None
        return changed


def _stat(path: str) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:  # no WAL file (yet): a state of its own
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)
