"""Check every file SQLite opens in this process, whatever connection or statement asked.

An authorizer is per connection and its owner can remove it (``set_authorizer(None)``),
and a ``sqlite3.connect`` audit hook sees only the main database's name (not ``ATTACH``,
not what a ``file:`` URI or a symlink leads to). So ``install_open_check(refuse)`` wraps
SQLite's own unix file layer: each registered ``unix*`` VFS is replaced by a copy whose
``xOpen`` first opens the file as SQLite would, then asks ``refuse(fd, name, flags)`` about the
file actually opened (``fstat`` of its descriptor: its identity, not its name). A refused
file is closed again through SQLite (which keeps the descriptor open while this process
holds locks on the file, so refusing drops none) and the open fails with "authorization
denied" (main database) or "unable to open database" (``ATTACH``).

It reaches SQLite through ctypes, in the very library ``_sqlite3`` is linked to. Where
that is not possible (SQLite built into the interpreter without exported symbols), or
the probe at install does not see its own open pass through, it installs nothing and
returns False. The callback runs in Python only when SQLite opens a file (a connection,
an ``ATTACH``, a journal), never per statement.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
import threading
from collections.abc import Callable

__all__ = ["install_open_check"]

_SQLITE_OK = 0
_SQLITE_AUTH = 23
_SQLITE_ERROR = 1
_FD_OFFSET = 3 * ctypes.sizeof(ctypes.c_void_p)  # unixFile: pMethod, pVfs, pInode, int h
_CLOSE_OFFSET = ctypes.sizeof(ctypes.c_void_p)  # sqlite3_io_methods: int iVersion, xClose

_XOPEN = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p
)
_XCLOSE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


class _Vfs(ctypes.Structure):
    """``struct sqlite3_vfs`` (version 3): three ints, three pointers, 16 methods."""

    _fields_ = [
        ("iVersion", ctypes.c_int),
        ("szOsFile", ctypes.c_int),
        ("mxPathname", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("zName", ctypes.c_char_p),
        ("pAppData", ctypes.c_void_p),
        ("xOpen", _XOPEN),
        *[(f"method{n}", ctypes.c_void_p) for n in range(15)],
    ]


Refuse = Callable[[int, bytes, int], bool]

_lock = threading.Lock()
_installed: list[object] = []  # the shims, callbacks and library: alive as long as the process
_seen_probe: list[int] = []
_checking: list[bool] = [True]  # False once the probe showed the descriptor cannot be read


def install_open_check(refuse: Refuse) -> bool:
    """Route every SQLite file open in this process through ``refuse(fd, name, flags)``
    (True: refuse it; ``flags`` are SQLite's ``SQLITE_OPEN_*``, which say whether the file
    is a main database, its WAL or its journal). Once per process; returns whether the
    check is in force."""
    with _lock:
        if _installed:
            return bool(_installed[0])
        try:
            active = _install(refuse)
        except (OSError, ValueError, TypeError, AttributeError):
            active = False  # an unexpected SQLite build: the audit hook still guards
            _checking[0] = False
        _installed.insert(0, active)
        return active


def _library() -> ctypes.CDLL | None:
    import _sqlite3

    try:
        lib = ctypes.CDLL(_sqlite3.__file__)  # its symbols, or those of the SQLite it links
        lib.sqlite3_vfs_find.restype = ctypes.POINTER(_Vfs)
        lib.sqlite3_vfs_find.argtypes = [ctypes.c_char_p]
        lib.sqlite3_vfs_register.argtypes = [ctypes.POINTER(_Vfs), ctypes.c_int]
    except (OSError, AttributeError):
        return None
    return lib


def _install(refuse: Refuse) -> bool:
    lib = _library()
    if lib is None:
        return False
    default = lib.sqlite3_vfs_find(None)
    if not default or default.contents.zName != b"unix" or default.contents.szOsFile < 28:
        return False
    originals = []
    vfs = default
    while vfs:
        if (vfs.contents.zName or b"").startswith(b"unix"):
            originals.append(vfs.contents)
        vfs = ctypes.cast(vfs.contents.pNext, ctypes.POINTER(_Vfs))
    probe_dir = os.path.realpath(tempfile.mkdtemp(prefix="nk-open-check-"))  # as SQLite names it
    probe = os.path.join(probe_dir, "probe.sqlite3")
    for original in originals:
        shim = _Vfs.from_buffer_copy(original)
        callback = _XOPEN(_checked_open(original.xOpen, refuse, probe))
        shim.xOpen = callback
        _installed.extend((shim, callback))
        lib.sqlite3_vfs_register(ctypes.byref(shim), 1 if original.zName == b"unix" else 0)
    _installed.append(lib)
    _checking[0] = _probe(probe, probe_dir)
    return _checking[0]


def _probe(probe: str, probe_dir: str) -> bool:
    """Open a scratch database: the check is in force only if the shim saw that very file
    behind the descriptor it read (else the shims only pass opens on)."""
    import sqlite3

    try:
        sqlite3.connect(probe).close()
    except sqlite3.Error:
        pass
    finally:
        for name in os.listdir(probe_dir):
            os.unlink(os.path.join(probe_dir, name))
        os.rmdir(probe_dir)
    return bool(_seen_probe)


def _checked_open(original: Callable[..., int], refuse: Refuse, probe: str) -> Callable[..., int]:
    probe_name = probe.encode()

    def x_open(vfs: int, name: int | None, file: int, flags: int, out_flags: int) -> int:
        # Never let an exception through: ctypes would print it and answer 0 (opened).
        try:
            result: int = original(vfs, name, file, flags, out_flags)
            if result != _SQLITE_OK or not _checking[0]:
                return result
            path = ctypes.string_at(name) if name else b""
            fd = ctypes.c_int.from_address(file + _FD_OFFSET).value
            if path == probe_name:
                _see_probe(fd, probe)
                return _SQLITE_OK
            if not refuse(fd, path, flags):
                return _SQLITE_OK
            _close(file)
            return _SQLITE_AUTH
        except BaseException:
            with contextlib.suppress(BaseException):
                _close(file)
            return _SQLITE_ERROR

    return x_open


def _see_probe(fd: int, probe: str) -> None:
    try:
        status, named = os.fstat(fd), os.stat(probe)
    except OSError:
        return
    if (status.st_dev, status.st_ino) == (named.st_dev, named.st_ino):
        _seen_probe.append(fd)


def _close(file: int) -> None:
    """Close an opened ``sqlite3_file`` through its own methods (SQLite defers closing the
    descriptor while this process holds locks on the file) and mark it closed."""
    methods = ctypes.c_void_p.from_address(file).value
    if not methods:
        return
    close = ctypes.c_void_p.from_address(methods + _CLOSE_OFFSET).value
    if close:
        _XCLOSE(close)(file)
    ctypes.c_void_p.from_address(file).value = None
