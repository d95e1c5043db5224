"""A server's processes as the kernel lists them: which are its HTTP workers, the action
processes, and how much CPU the whole tree used."""

from __future__ import annotations

import os
from pathlib import Path

WORKER = b"notebook_kit.runtime.process.worker"
ZYGOTE = b"notebook_kit.sandbox.inside.zygote"


def descendants(pid: int) -> list[int]:
    """``pid``'s processes below it, children first."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for thread in threads:
            try:
                children = Path(f"/proc/{parent}/task/{thread}/children").read_text().split()
            except OSError:
                continue
            found.extend(int(c) for c in children)
            todo.extend(int(c) for c in children)
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def worker_pids(server_pid: int) -> set[int]:
    """The HTTP workers of the server whose supervisor is ``server_pid``."""
    return {p for p in descendants(server_pid) if WORKER in cmdline(p)}


def action_pids(server_pid: int) -> set[int]:
    """The action processes (the zygote's children) of that server."""
    zygotes = [p for p in descendants(server_pid) if ZYGOTE in cmdline(p)]
    return {c for z in zygotes for c in descendants(z)}


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and every process below it."""
    total = 0.0
    for each in (pid, *descendants(pid)):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total
