"""Take back the SQLite locks a server process holds on the store, should they be dropped.

POSIX record locks belong to a process, not to a descriptor: closing *any* descriptor of
a file drops every lock the process holds on it. The store guard refuses action code
opening the store, but an action can still close a copy (``os.dup``) of one of the
server's own descriptors, which opens nothing. Measured: after that, another process
(``notebook-kit keys --rotate``) finding no lock on the store checkpointed and deleted
its WAL and ``-shm`` on close, and the server, still reading the deleted ones, followed
1 of 5 key rotations and no deploy after.

``keep_store_locks(path)`` opens the store and its ``-shm`` once (descriptors it never
closes) and, every ``INTERVAL`` seconds on a daemon thread, takes again the two read
locks SQLite's unix VFS keeps for as long as a connection is open: the *shared* range of
the database file (the lock that tells another process's last connection not to delete
the WAL) and the ``-shm``'s *DMS* byte (the one that tells a new connection not to
rebuild the shared memory under this process). Both are read locks this process
already holds in normal times, so taking them again changes nothing; after a drop it
restores them within ``INTERVAL``. Only action code can drop them, so the thread waits
until a relay starts in this process (``pause_while``: never in the main process of a
server with several workers, which runs no action), and while the relay's monitor sleeps
(nothing has run for a second) it takes them once more and waits until the monitor wakes
for the next call (``wake``). Byte positions are
SQLite's file format (the lock-byte page at 1 GiB; ``-shm`` lock bytes 120-127 plus DMS at
128), fixed across versions so that processes on different SQLite versions can share a
database.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import threading
from collections.abc import Callable

__all__ = ["INTERVAL", "keep_store_locks", "pause_while", "wake"]

INTERVAL = 0.05
_SHARED_FIRST = 0x40000000 + 2  # PENDING_BYTE + 2
_SHARED_SIZE = 510
_SHM_DMS = 128  # (22 + 8) * 4 + 8: after the eight WAL locks

_kept: dict[str, list[tuple[int, int, int]]] = {}  # real path -> (fd, start, length)
_lock = threading.Lock()
_stop = threading.Event()
_woken = threading.Event()
_idle: list[Callable[[], bool]] = []  # while it says True, no action runs: no re-take


def pause_while(idle: Callable[[], bool]) -> None:
    """Actions may run in this process from now on: re-take the locks every ``INTERVAL``,
    except while ``idle()`` is true (``wake()`` when it turns false)."""
    _idle[:] = [idle]
    _woken.set()


def wake() -> None:
    """Something may run again: re-take the locks every ``INTERVAL``."""
    _woken.set()


def keep_store_locks(real_path: str) -> None:
    """Keep this process's read locks on the store at ``real_path`` (idempotent)."""
    with _lock:
        if real_path in _kept:
            return
        _kept[real_path] = open_lock_holders(real_path)
        if len(_kept) == 1:
            atexit.register(_stop.set)  # before the interpreter closes the connections
            atexit.register(_woken.set)
            threading.Thread(target=_keep, name="store-locks", daemon=True).start()


def open_lock_holders(real_path: str) -> list[tuple[int, int, int]]:
    """Descriptors on the store and its ``-shm`` with the lock ranges to keep on each
    (the store guard lets this open the store)."""
    holders = []
    for suffix, start, length in (("", _SHARED_FIRST, _SHARED_SIZE), ("-shm", _SHM_DMS, 1)):
        with contextlib.suppress(OSError):
            fd = os.open(real_path + suffix, os.O_RDONLY | os.O_CLOEXEC)
            holders.append((fd, start, length))
    return holders


def _keep() -> None:
    while not _stop.wait(INTERVAL):
        with _lock:
            holders = [holder for kept in _kept.values() for holder in kept]
        for fd, start, length in holders:
            with contextlib.suppress(OSError):  # held elsewhere for a moment: next time
                fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, length, start, os.SEEK_SET)
        if not _idle or _idle[0]():  # no action can run here yet, or none runs now (taken
            _woken.wait()  # once more after the last call): wait until one may
            _woken.clear()
