"""Reading a file by what it is, not by its name.

``LocalFileStorage.read`` pins a file with an ``O_PATH`` descriptor (Linux): it names the
file and reads nothing, so checking the file behind it (which folder it lies in, how many
names it has, whether it is the workspace store) opens nothing for reading, and closing it
drops none of the POSIX locks this process holds on that file (a plain descriptor's close
would drop them all). ``read_pinned`` then reads the very file checked.
"""

from __future__ import annotations

import os

__all__ = ["O_PATH", "is_file_of", "read_pinned"]

O_PATH: int = getattr(os, "O_PATH", 0)  # 0 where the system has none: plain descriptors
_COMPANIONS = ("", "-wal", "-shm", "-journal")


def read_pinned(pinned: int) -> bytes:
    """The content of the file behind ``pinned`` (an ``O_PATH`` descriptor is reopened
    for reading through ``/proc/self/fd``: the very file checked, whatever its name is now)."""
    fd = pinned
    if O_PATH:
        fd = os.open(f"/proc/self/fd/{pinned}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        if fd != pinned:
            os.close(fd)


def is_file_of(status: os.stat_result, guarded: str) -> bool:
    """Whether ``status`` is the file ``guarded`` or one of its SQLite companions."""
    for suffix in _COMPANIONS:
        try:
            other = os.stat(guarded + suffix)
        except OSError:
            continue
        if (status.st_dev, status.st_ino) == (other.st_dev, other.st_ino):
            return True
    return False
