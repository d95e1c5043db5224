"""Confining the process that is about to run action code (runs inside it, first thing).

``confine(plan)``, in this order, each step kept by the kernel for the process and every
process it starts:

1. **capabilities** (only when running as root): the bounding set is emptied and the
   process keeps none, so it is a plain user that cannot regain them (not even by
   running a setuid program) and cannot reach files through handles
   (``open_by_handle_at``) or raw devices;
2. **no new privileges** (``PR_SET_NO_NEW_PRIVS``);
3. **no Unix-domain sockets** (a seccomp filter: ``socket(AF_UNIX, ...)`` and a
   datagram ``socketpair`` fail with EPERM): a pathname socket is not a file Landlock
   guards, and through one a process of the owner's user could reach the PostgreSQL
   server by peer authentication, the Docker daemon, the session bus or the system log.
   Stream and packet socket pairs (what asyncio uses inside a process), connected to
   each other only, stay allowed. System calls of another architecture (32-bit on
   x86-64) are refused;
4. **Landlock** (``landlock.restrict``): the file rules of the plan, and no signals or
   abstract sockets to processes outside this one's domain;
5. a private ``TMPDIR``, no core dumps, and with ``memory_mb`` a data limit
   (``RLIMIT_DATA``) that much above what the process uses now: an allocation past it
   raises ``MemoryError`` in the action.

``Confinement`` says what was enforced (the Landlock ABI, 0 where the kernel has none).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
import sys
import tempfile
from dataclasses import dataclass

from ...errors import SandboxError
from ..plan import SandboxPlan
from . import landlock

__all__ = ["Confinement", "confine", "set_memory_limit"]

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_AF_UNIX = 1
_EPERM = 1

# seccomp_data: nr (u32), arch (u32), ip (u64), args[6] (u64): offsets of what is read
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24
_LD_W_ABS, _AND_K, _JEQ_K, _RET_K = 0x20, 0x54, 0x15, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_SOCK_TYPE_MASK, _SOCK_STREAM, _SOCK_SEQPACKET = 0xF, 1, 5
_X32 = 0x40000000
# machine -> (AUDIT_ARCH of its native calls, socket's number, socketpair's, x32 calls)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 53, True),
    "aarch64": (0xC00000B7, 198, 199, False),
}


@dataclass(frozen=True)
class Confinement:
    """What ``confine`` enforced: the Landlock ABI (0: none), the socket filter, and
    whether capabilities were dropped (only ever needed as root)."""

    landlock_abi: int
    socket_filter: bool
    dropped_capabilities: bool


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _drop_capabilities(libc: ctypes.CDLL) -> bool:
    if os.geteuid() != 0:
        return False
    for capability in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", _CAPABILITY_VERSION_3, 0)
    data = bytes(24)  # two {effective, permitted, inheritable}: all empty
    if libc.capset(header, data) != 0:
        raise SandboxError(f"cannot drop capabilities: {os.strerror(ctypes.get_errno())}")
    return True


def _socket_filter(libc: ctypes.CDLL) -> bool:
    found = _ARCHES.get(platform.machine())
    if found is None:
        return False
    arch, socket_nr, pair_nr, x32 = found
    deny = _ERRNO | _EPERM
    # (label or None, code, jump-if-true label, jump-if-false label, k)
    program: list[tuple[str | None, int, str | None, str | None, int]] = [
        (None, _LD_W_ABS, None, None, _ARCH),
        (None, _JEQ_K, "native", "deny", arch),  # another architecture's calls: refused
        ("native", _LD_W_ABS, None, None, _NR),
        (None, _JEQ_K, "socket", None, socket_nr),
        (None, _JEQ_K, "socket", None, socket_nr | _X32 if x32 else socket_nr),
        (None, _JEQ_K, "pair", None, pair_nr),
        (None, _JEQ_K, "pair", "allow", pair_nr | _X32 if x32 else pair_nr),
        # socket(AF_UNIX, ...): refused, whatever its type
        ("socket", _LD_W_ABS, None, None, _ARG0),
        (None, _JEQ_K, "deny", "allow", _AF_UNIX),
        # socketpair(AF_UNIX, ...): only a connected stream or packet pair (what asyncio
        # and the channels use); a datagram one could send to any named socket
        ("pair", _LD_W_ABS, None, None, _ARG0),
        (None, _JEQ_K, None, "allow", _AF_UNIX),
        (None, _LD_W_ABS, None, None, _ARG1),
        (None, _AND_K, None, None, _SOCK_TYPE_MASK),
        (None, _JEQ_K, "allow", None, _SOCK_STREAM),
        (None, _JEQ_K, "allow", "deny", _SOCK_SEQPACKET),
        ("deny", _RET_K, None, None, deny),
        ("allow", _RET_K, None, None, _ALLOW),
    ]
    at = {label: i for i, (label, *_) in enumerate(program) if label is not None}

    def jump(here: int, label: str | None) -> int:
        return 0 if label is None else at[label] - here - 1

    code = b"".join(
        struct.pack("HBBI", op, jump(i, jt), jump(i, jf), k)
        for i, (_, op, jt, jf, k) in enumerate(program)
    )
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("HxxxxxxP", len(program), ctypes.addressof(buffer))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        raise SandboxError(f"cannot filter sockets: {os.strerror(ctypes.get_errno())}")
    return True


def confine(plan: SandboxPlan) -> Confinement:
    """Confine this process by ``plan`` (see the module docstring). Linux only; elsewhere
    nothing is enforced and the ``Confinement`` says so."""
    os.environ["TMPDIR"] = plan.tmp
    tempfile.tempdir = plan.tmp
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not sys.platform.startswith("linux"):
        return Confinement(0, False, False)
    libc = _libc()
    dropped = _drop_capabilities(libc)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SandboxError(f"no_new_privs refused: {os.strerror(ctypes.get_errno())}")
    filtered = _socket_filter(libc)
    version = landlock.restrict(plan.readable, plan.writable)
    return Confinement(version, filtered, dropped)


def set_memory_limit(megabytes: int | None) -> None:
    """Let this process allocate at most ``megabytes`` MiB more than it holds now (its
    data segment and private mappings, ``RLIMIT_DATA``)."""
    if megabytes is None:
        return
    used = 0
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    used = int(line.split()[1]) * 1024
    except OSError:
        used = 0
    limit = used + megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
