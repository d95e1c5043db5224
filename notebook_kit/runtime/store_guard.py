"""Keep code other than the store's own away from the workspace store's files.

Why: the store holds the API keys, the presign secret and the SMTP password; and closing
any descriptor of a file drops every POSIX lock the process holds on it, so opening and
closing ``workspace.sqlite3`` (by any name) would silently break the runtime's own store
connection (it stops following key rotations and deploys). SQLite's ``EXCLUSIVE``
locking mode is no answer: the CLI, notebooks and every server worker share the store.

``protect_store(path, strict=...)`` installs, once per process:

* an audit hook (PEP 578) on ``open`` (``open``, ``os.open``, ``io.open``, ``os.fdopen``),
  ``sqlite3.connect``, ``os.truncate``, ``os.remove``, ``os.rename``/``os.replace`` and
  ``os.link``: each file named is resolved to its identity (device and inode; a
  descriptor is ``fstat``-ed, a ``file:`` URI parsed, a relative name also read against
  every open directory, as a ``dir_fd`` may have been passed) and compared with the
  store's and its ``-wal``/``-shm``/``-journal``'s, so a symlink, a hard link or
  ``/proc/self/fd/N`` names the same store;
* ``sqlite_open_check``: the same identity check on every file SQLite itself opens
  (a private connection's ``ATTACH``, a ``file:`` URI, any VFS), after it opened it.

In a server process, ``store_locks`` also takes back the read locks SQLite holds on the
store should an action drop them by a route this guard cannot see (closing a copy of
one of the server's own descriptors).

A match is refused unless the store's own opening code (``StoreConnection._open``,
``store._create_private_file``, the lock keeper's opener: matched by code object, not by
file name) is on the stack, or SQLite opens the WAL or journal of a database that is the
store (that connection's own open was checked). In a server process of its own
(``strict``) that is the whole rule: nothing else in that process has a reason to open
the store, so an action cannot slip past it with a thread or a thread pool. In a
notebook kernel (not strict) only code on a stack that holds an action's frame is
refused: the notebook's own code keeps its access. It is a guard in the process, not a
sandbox (see docs/trust-model.md for what stays open).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
from pathlib import Path
from types import CodeType, FrameType
from typing import Any
from urllib.parse import unquote, urlsplit

from ..store import store as store_module
from ..store.connection import StoreConnection
from .sqlite_open_check import install_open_check
from .store_locks import keep_store_locks, open_lock_holders

__all__ = ["is_protected", "protect_store", "sqlite_check_active"]

_SUFFIXES = ("", "-wal", "-shm", "-journal")
_ACTION_FILES = ("<action ", "<functions ")
_STORE_CODE: frozenset[CodeType] = frozenset(
    (
        StoreConnection._open.__code__,
        store_module._create_private_file.__code__,
        open_lock_holders.__code__,
    )
)

_stores: list[tuple[str, int, int]] = []  # (real path, st_dev, st_ino) of each store
_devices: set[int] = set()  # their devices: the cheap first test
_O_PATH = getattr(os, "O_PATH", 0)
_COMPANION_FLAGS = 0x00000800 | 0x00080000  # SQLITE_OPEN_MAIN_JOURNAL, SQLITE_OPEN_WAL
_lock = threading.Lock()
_state = {"installed": False, "strict": False, "sqlite": False}


def protect_store(store_path: Path, *, strict: bool) -> None:
    """Refuse opening ``store_path`` and its companion files from anything but the store's
    own code (``strict``: a server process of its own) or from action code (a notebook
    kernel). Idempotent; once strict, a process stays strict."""
    real = os.path.realpath(store_path)
    status = os.stat(real)  # the store exists: the workspace opened it
    with _lock:
        if all(entry[0] != real for entry in _stores):
            _stores.append((real, status.st_dev, status.st_ino))
            _devices.add(status.st_dev)
        _state["strict"] = _state["strict"] or strict
        if not _state["installed"]:
            sys.addaudithook(_audit)
            _state["sqlite"] = install_open_check(_refuse_sqlite_file)
            _state["installed"] = True
    if strict:  # a server: take back the store's locks should an action drop them
        keep_store_locks(real)


def sqlite_check_active() -> bool:
    """Whether every file SQLite opens is checked (False where ctypes cannot reach it)."""
    return _state["sqlite"]


def is_protected(status: os.stat_result) -> bool:
    """Whether the file with this ``stat`` is a protected store or one of its companions
    (the companions are looked up now: SQLite makes and removes them)."""
    if status.st_dev not in _devices:
        return False
    identity = (status.st_dev, status.st_ino)
    for real, dev, ino in _stores:
        if identity == (dev, ino):
            return True
        for suffix in _SUFFIXES[1:]:
            try:
                companion = os.stat(real + suffix)
            except OSError:
                continue
            if identity == (companion.st_dev, companion.st_ino):
                return True
    return False


def _refuse_sqlite_file(fd: int, name: bytes, flags: int) -> bool:
    if not is_protected(os.fstat(fd)):
        return False
    if flags & _COMPANION_FLAGS and _is_store_main(name):
        return False  # the WAL or journal of a connection whose store open was allowed
    return _refused_here(sys._getframe(1))


def _is_store_main(name: bytes) -> bool:
    """Whether ``name`` is ``<database>-wal``/``-journal`` of a database that is a store."""
    for suffix in (b"-wal", b"-journal"):
        if name.endswith(suffix):
            try:
                status = os.stat(name[: -len(suffix)])
            except OSError:
                return False
            identity = (status.st_dev, status.st_ino)
            return any(identity == (dev, ino) for _, dev, ino in _stores)
    return False


# The audited events that reach a file by name or descriptor: how many of their first
# arguments are files, and whether a symlink there is followed (a removed or renamed
# symlink is the link itself, not the store).
_EVENTS = {
    "open": (1, True),
    "sqlite3.connect": (1, True),
    "os.truncate": (1, True),
    "os.link": (2, True),
    "os.remove": (1, False),
    "os.rename": (2, False),  # os.replace too; the second name would be replaced
}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    spec = _EVENTS.get(event)
    if spec is None or not _stores:
        return
    if event == "open" and len(args) > 2 and isinstance(args[2], int) and args[2] & _O_PATH:
        return  # names a file, reads nothing, drops no lock; reopening it is checked
    frame = sys._getframe(1)
    if not _state["strict"] and not _refused_here(frame):
        return  # a kernel's own code: not even a stat
    count, follow = spec
    sqlite = event == "sqlite3.connect"
    for target in args[:count]:
        if any(is_protected(status) for status in _named(target, sqlite, follow)):
            if _refused_here(frame):
                verb = "open" if event in ("open", "sqlite3.connect") else event[3:]
                raise PermissionError(f"actions may not {verb} the workspace store ({target})")
            return


def _named(target: object, sqlite: bool, follow: bool) -> list[os.stat_result]:
    """The files ``target`` (a path, a descriptor, a ``file:`` URI) may name now. A
    relative path is also read against every open directory: the audit events do not
    say which ``dir_fd`` a call passed."""
    if isinstance(target, int):
        with contextlib.suppress(OSError):
            return [os.fstat(target)]
        return []
    if isinstance(target, Path):
        target = str(target)
    elif isinstance(target, bytes):
        target = os.fsdecode(target)
    if not isinstance(target, str) or not target:
        return []
    if sqlite and target.startswith("file:"):
        target = unquote(urlsplit(target).path)
    if sqlite and target == ":memory:":
        return []
    names = [target]
    if not sqlite and not os.path.isabs(target):
        names += [f"{folder}/{target}" for folder in _open_folders()]
    found = []
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            status = os.stat(name) if follow else os.lstat(name)
            if stat.S_ISREG(status.st_mode):
                found.append(status)
    return found


def _open_folders() -> list[str]:
    """``/proc/self/fd/N`` of each directory this process holds open (Linux)."""
    folders = []
    with contextlib.suppress(OSError):
        for fd in os.listdir("/proc/self/fd"):
            name = f"/proc/self/fd/{fd}"
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.stat(name).st_mode):
                    folders.append(name)
    return folders


def _refused_here(frame: FrameType | None) -> bool:
    """Whether this stack may not open the store: it holds no store code and (when not
    strict) holds an action's code."""
    seen_action = False
    while frame is not None:
        code = frame.f_code
        if code in _STORE_CODE:
            return False
        if code.co_filename.startswith(_ACTION_FILES):
            seen_action = True
        frame = frame.f_back
    return _state["strict"] or seen_action
