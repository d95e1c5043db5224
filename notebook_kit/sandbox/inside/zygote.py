"""The zygote: a clean, warm process that forks action processes in a few milliseconds.

Started by the trusted side (``sandbox.processes.Zygote``) as a fresh interpreter: no
descriptor of the store, none of the trusted side's memory, an environment without
notebook_kit's settings. It imports what actions need once (the built-ins, the
compiler), then waits on its control channel for

    {"op": "fork", "plan": {...}, "app": ..., "settings": {...}}  + two descriptors

and forks: the child becomes a session of its own at a lower priority (``nice`` 10: a
heavy action leaves the CPU to the HTTP workers first), moves to the plan's temporary folder,
confines itself by the plan (its own Landlock domain: siblings cannot signal or trace
each other), drops to the memory limit and runs
``action_process.serve_calls`` on the two channels it was handed. The zygote answers
``{"pid": n}`` with a pidfd of the child, so the trusted side can kill exactly that
process (no race with a reused pid) and see it end.

The zygote itself runs no action code and stays unconfined, so each child's domain is
its own. Children are reaped at once (``SIGCHLD`` ignored). When the control channel
closes (the trusted side stopped, or died: even killed with SIGKILL), the zygote kills
its children and their process groups (what their actions started), and exits.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import sys
from pathlib import Path
from typing import Any, NoReturn

from ..plan import SandboxPlan
from ..protocol import ChannelClosed, Message, receive, send

__all__ = ["main"]

_NICENESS = 10


def _preload() -> None:
    """What every action process needs, imported once here and shared with the forks."""
    import httpx  # noqa: F401  (the http built-in's client)

    from ...builtins import functions, http  # noqa: F401
    from ...domain import actions, messages  # noqa: F401
    from . import action_process, confine  # noqa: F401


def _child(control: socket.socket, message: Message) -> NoReturn:
    """In the forked child: become an action process (never returns)."""
    code = 1
    try:
        control.close()
        plan = SandboxPlan.from_dict(message.header["plan"])
        os.setsid()
        os.nice(_NICENESS)  # a heavy action yields the CPU to the workers serving everyone
        os.chdir(plan.tmp)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        from .action_process import serve_calls
        from .confine import confine, set_memory_limit

        confine(plan)
        set_memory_limit(plan.memory_mb)
        calls, services = (socket.socket(fileno=fd) for fd in message.fds[:2])
        header = message.header
        settings: dict[str, Any] = dict(header.get("settings") or {})
        serve_calls(calls, services, Path(plan.home), settings)
    except BaseException as exc:  # a child must never return into the zygote
        with contextlib.suppress(Exception):
            print(f"notebook-kit: an action process could not start: {exc}", file=sys.stderr)
    finally:
        os._exit(code)


class _Children:
    """The children alive, by pidfd (pruned as they end)."""

    def __init__(self) -> None:
        self.pidfds: dict[int, int] = {}  # pidfd -> pid

    def add(self, pid: int) -> int | None:
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            return None
        self.pidfds[pidfd] = pid
        return pidfd

    def prune(self) -> None:
        if not self.pidfds:
            return
        ended, _, _ = select.select(list(self.pidfds), [], [], 0)
        for pidfd in ended:
            os.close(pidfd)
            del self.pidfds[pidfd]

    def kill_all(self) -> None:
        """Kill every child and what it started (each is a session: its process group)."""
        for pidfd, pid in self.pidfds.items():
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    control = socket.socket(fileno=int(args[0]))
    _preload()
    gc.collect()
    gc.freeze()  # the children share what was built: the collector copies none of it
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl+C is the trusted side's to handle
    children = _Children()
    send(control, {"ready": True})
    while True:
        try:
            message = receive(control)
        except ChannelClosed:
            break
        if message.header.get("op") != "fork" or len(message.fds) < 2:
            for fd in message.fds:
                os.close(fd)
            send(control, {"error": "the zygote forks action processes only"})
            continue
        children.prune()
        pid = os.fork()
        if pid == 0:
            _child(control, message)
        for fd in message.fds:
            os.close(fd)
        pidfd = children.add(pid)
        send(control, {"pid": pid}, fds=[pidfd] if pidfd is not None else [])
    children.kill_all()


if __name__ == "__main__":
    main()
