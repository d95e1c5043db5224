"""Linux Landlock through ctypes: a process restricts its own file access, for good.

Landlock (Linux 5.13+) lets an unprivileged process give up file rights: after
``restrict``, the process and every process it starts may open only what the rules name,
whatever their user, capabilities or descriptors opened later. It cannot be undone. From
ABI 6 the same call also *scopes* signals and abstract Unix sockets: the process can no
longer signal, or connect to an abstract socket of, a process outside its own domain
(the supervisor, another application's action process). Landlock's ptrace rule needs no
asking: a sandboxed process can never trace (or read ``/proc/<pid>/mem`` or ``environ``
of) a process outside its domain.

Each ``restrict`` makes a new domain nested in the current one; two sibling processes
that each restrict themselves after a fork are in sibling domains and cannot reach each
other that way either.

``abi()`` says which ABI the kernel offers (0: none). Every file right the ABI knows is
*handled* (a right left unhandled would stay allowed everywhere), then granted again
beneath the paths given: read-only (execute, read files, list folders) or read-write
(every right).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable

from ...errors import SandboxError

__all__ = ["abi", "restrict"]

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# File rights, by the ABI that introduced them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_RIGHTS = (1 << 13) - 1  # execute ... make_sym
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # on a non-folder
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = _EXECUTE | _READ_FILE | _READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def abi() -> int:
    """The Landlock ABI this kernel offers, or 0 when it has none (not Linux, too old,
    or switched off)."""
    libc = _libc()
    if libc is None:
        return 0
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _handled(version: int) -> int:
    rights = _ABI1_RIGHTS
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    if version >= 5:
        rights |= _IOCTL_DEV
    return rights


def restrict(readable: Iterable[str], writable: Iterable[str]) -> int:
    """Keep this process (and all it starts) to reading beneath ``readable`` and doing
    anything beneath ``writable``; paths that do not exist are skipped. Returns the ABI
    used; raises SandboxError when the kernel has Landlock but refuses the rules."""
    version = abi()
    libc = _libc()
    if not version or libc is None:
        return 0
    handled = _handled(version)
    attr = _RulesetAttr(handled, 0, _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if version >= 6 else 0)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise SandboxError(f"landlock: cannot create a ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for paths, rights in ((readable, READ), (writable, handled)):
            for path in paths:
                _allow(libc, ruleset, path, rights & handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise SandboxError(f"no_new_privs refused: {os.strerror(ctypes.get_errno())}")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise SandboxError(f"landlock: restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    return version


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # nothing there to allow
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= _FILE_RIGHTS  # a file or device: no folder rights (EINVAL otherwise)
        rule = _PathBeneathAttr(rights, fd)
        if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            error = os.strerror(ctypes.get_errno())
            raise SandboxError(f"landlock: cannot allow {path}: {error}")
    finally:
        os.close(fd)
