"""Processes an action starts neither outlive the server nor keep its port.

Measured before this module: a child an action forked (``os.fork``) kept a copy of the
listening socket, so after ``notebook-kit serve`` stopped the port still accepted
connections nobody answered and a new server could not bind it; a program it spawned
(``subprocess``) kept no socket (Python's descriptors are close-on-exec) but ran on
after the server. So, in a server process of its own (Linux):

* ``guard_children()`` makes the process a *child subreaper* (``PR_SET_CHILD_SUBREAPER``:
  a descendant orphaned by its parent comes back to the server, not to init) and
  registers an at-fork handler: a forked child at once closes the server's sockets (the
  listening ones and the connections accepted on them) and is killed when the thread
  that forked it ends (``PR_SET_PDEATHSIG``; the server's end ends every thread), even
  when the server itself is killed with SIGKILL;
* ``stop_children()``, when the server stops, sends SIGTERM to every remaining child
  (spawned programs, orphans that came back), SIGKILL to those still there after a
  grace period, and reaps them.

A program spawned by ``subprocess`` outlives a server killed with SIGKILL (no Python
runs between its fork and exec to ask for the signal); a supervisor's control group
(systemd) ends it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import stat
import sys
import time

__all__ = ["guard_children", "stop_children"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_state = {"installed": False, "parent": 0}


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def guard_children() -> bool:
    """Once per process: the subreaper and the at-fork handler (Linux only; returns
    whether they are in place)."""
    if _state["installed"]:
        return True
    if not sys.platform.startswith("linux") or not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
        return False
    os.register_at_fork(before=_before_fork, after_in_child=_in_forked_child)
    _state["installed"] = True
    return True


def _before_fork() -> None:
    _state["parent"] = os.getpid()


def _in_forked_child() -> None:
    """In the child, before any of its own code runs: die with the forking thread, and
    give back the server's sockets."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != _state["parent"]:  # the server ended before the signal was asked for
        os._exit(1)
    with contextlib.suppress(OSError):
        _close_server_sockets()


def _close_server_sockets() -> None:
    sockets: list[tuple[int, int, bool]] = []  # (fd, local port, listening)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=fd)
        except OSError:
            continue
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                port = sock.getsockname()[1]
                listening = bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))
                sockets.append((fd, port, listening))
        except OSError:
            pass
        finally:
            sock.detach()
    ports = {port for _, port, listening in sockets if listening}
    for fd, port, _ in sockets:
        if port in ports:
            with contextlib.suppress(OSError):
                os.close(fd)


def _children() -> list[int]:
    """The processes whose parent is this one (read from ``/proc``)."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != b"Z":
            found.append(int(name))
    return found


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def stop_children(grace: float = 1.0) -> int:
    """SIGTERM this process's children, SIGKILL those left after ``grace`` seconds, and
    reap them; returns how many there were. A no-op unless ``guard_children`` ran."""
    if not _state["installed"]:
        return 0
    seen: set[int] = set()
    deadline = time.monotonic() + grace
    give_up = deadline + 2.0  # children that keep forking new ones: stop trying then
    signum = signal.SIGTERM
    while True:
        _reap()
        children = _children()
        now = time.monotonic()
        if not children or now > give_up:
            return len(seen)
        if now > deadline:
            signum = signal.SIGKILL
        for pid in children:
            if pid not in seen or signum == signal.SIGKILL:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signum)
            seen.add(pid)
        time.sleep(0.02)
