"""A wake-up the moment the SQLite store's files change, so an idle worker need not poll.

A server notices deploys made by other processes by reading the store's generation. On
PostgreSQL the store tells (NOTIFY); on SQLite the watch loop polled, several times a
second, which was most of what an idle server did. Every commit to a SQLite file writes
the file or its write-ahead log, and every process that writes it is on this machine (WAL
mode needs shared memory), so Linux's inotify sees each one: ``FileWatch`` watches the
store's directory and sets an ``asyncio.Event`` when a file named like the store (the
file, ``-wal``, ``-journal``) is written, created, moved in or removed. The watch loop
then polls once, as before, and keeps polling for a moment (the commit's last step, the
WAL index in shared memory, is not a file write), then waits for the next event.

The watch loop disarms it (``arm(False)``) while it has request-log entries to write, or
each of its own flushes would wake it for the next one; a change seen meanwhile wakes it
when it is armed again.

``FileWatch.start`` returns None where inotify is missing (not Linux, no libc, no
descriptors left): the loop polls every reload interval, as without it. An overflowed
event queue counts as a change.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import struct
from pathlib import Path

__all__ = ["FileWatch"]

_IN_MODIFY = 0x002
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_Q_OVERFLOW = 0x4000
_WATCHED = _IN_MODIFY | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name


class FileWatch:
    """Sets ``wake`` when one of the store's files changes (see the module docstring)."""

    def __init__(
        self, fd: int, name: bytes, loop: asyncio.AbstractEventLoop, wake: asyncio.Event
    ) -> None:
        self._fd = fd
        self._name = name
        self._loop = loop
        self._wake = wake
        self._armed = True
        self._missed = False  # a change seen while disarmed
        loop.add_reader(fd, self._read)

    @classmethod
    def start(
        cls, path: str | Path, loop: asyncio.AbstractEventLoop, wake: asyncio.Event
    ) -> FileWatch | None:
        """Watch the SQLite file ``path`` (and its journals); None where that cannot be."""
        libc_name = ctypes.util.find_library("c")
        if libc_name is None:
            return None
        try:
            libc = ctypes.CDLL(libc_name, use_errno=True)
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        path = Path(path).resolve()
        if add(fd, os.fsencode(path.parent), _WATCHED) < 0:
            os.close(fd)
            return None
        return cls(fd, os.fsencode(path.name), loop, wake)

    def _read(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError:  # the descriptor broke: poll as without a watch
            self.close()
            self._wake.set()
            return
        if self.touched(data, self._name):
            if self._armed:
                self._wake.set()
            else:
                self._missed = True

    @property
    def watching(self) -> bool:
        """False once closed (or its descriptor broke): the loop must poll again."""
        return self._fd >= 0

    def arm(self, armed: bool) -> None:
        """Wake on changes (True) or only note them, to wake when armed again (False)."""
        self._armed = armed
        if armed and self._missed:
            self._missed = False
            self._wake.set()

    @staticmethod
    def touched(data: bytes, name: bytes) -> bool:
        """Whether the inotify events in ``data`` name the file ``name`` or one of its
        journals (``name-wal``, ``name-journal``; not ``-shm``, written through memory),
        or the queue overflowed."""
        offset = 0
        while offset + _EVENT.size <= len(data):
            _, mask, _, size = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size
            event = data[offset : offset + size].rstrip(b"\0")
            offset += size
            if mask & _IN_Q_OVERFLOW:
                return True
            if event == name or (event.startswith(name + b"-") and not event.endswith(b"-shm")):
                return True
        return False

    def close(self) -> None:
        """Stop watching (the descriptor closed)."""
        if self._fd >= 0:
            with contextlib.suppress(Exception):  # the loop may be closed already
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
