"""What actions start does not outlive the server.

An action may start programs (``subprocess``, ``os.fork``); they run confined like the
action (the kernel's rules are inherited). ``notebook-kit serve`` makes its process a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``): a descendant orphaned by its parent (an
action process that was killed, say) comes back to the supervisor, not to init, and
``end_descendants`` at the stop sends every remaining child SIGTERM, then SIGKILL after a
grace period, and reaps them. Action processes are sessions of their own, so killing
one also kills its process group.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

__all__ = ["become_subreaper", "end_descendants"]

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Linux only; returns whether this process is a subreaper now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        )
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    """The processes whose parent is this one (read from ``/proc``)."""
    me = os.getpid()
    found = []
    with contextlib.suppress(OSError):
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


def end_descendants(grace: float = 1.0) -> int:
    """SIGTERM this process's children, SIGKILL those left after ``grace`` seconds, and
    reap them; returns how many there were."""
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
