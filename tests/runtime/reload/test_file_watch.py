"""An idle server on a SQLite store waits for the store's files to change (inotify)
instead of polling them: a real ``notebook-kit serve``, deploys from this process."""

from __future__ import annotations

import asyncio
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.tree import worker_pids

from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.runtime.reload.file_watch import FileWatch
from notebook_kit.runtime.reload.store_link import WATCHED_IDLE_SECONDS, StoreLink
from notebook_kit.workspace.workspace import Workspace

APP = "watched"


def _event(name: bytes, mask: int = 0x002) -> bytes:
    padded = name + b"\0" * (16 - len(name) % 16)
    return struct.pack("iIII", 1, mask, 0, len(padded)) + padded


def test_the_events_that_count_as_a_change_of_the_store() -> None:
    name = b"workspace.sqlite3"
    assert FileWatch.touched(_event(b"workspace.sqlite3-wal"), name)
    assert FileWatch.touched(_event(b"other") + _event(b"workspace.sqlite3"), name)
    assert FileWatch.touched(_event(b"workspace.sqlite3-journal", 0x100), name)  # created
    assert not FileWatch.touched(_event(b"workspace.sqlite3-shm"), name)  # through memory
    assert not FileWatch.touched(_event(b"environment.sqlite3-wal"), name)
    assert not FileWatch.touched(_event(b"workspace.sqlite3x"), name)
    assert FileWatch.touched(struct.pack("iIII", -1, 0x4000, 0, 0), name)  # overflow
    assert not FileWatch.touched(b"", name)


def test_the_loop_waits_long_only_while_the_watch_works(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    try:
        link = StoreLink(Workspace(tmp_path / "h").store, loop)
        assert link.files is not None and link.files.watching
        later = loop.time() + 5  # past the polls that follow the start
        assert link.tick(False, 0.25, later) == WATCHED_IDLE_SECONDS
        assert link.tick(True, 0.25, later) == 0.25  # its own log writes would wake it
        link.files.close()  # as when its descriptor breaks: poll again
        assert link.tick(False, 0.25, later) == 0.25
        link.close()
    finally:
        loop.close()


@pytest.fixture
def slow_poll_home(tmp_path: Path) -> Path:
    home = tmp_path / "workspace"
    ws = Workspace(home)
    # A poll every 30 s: only the file watch can notice a deploy within a second or two.
    ws.set_setting("reload_interval", "30")
    ws.create(APP, "hello", label="hello", method="GET", resource="hello", action=_says(1))
    ws.edit(APP, "hello", requires_auth=False)
    ws.deploy(APP, "dev")
    return home


def _says(version: int) -> str:
    return f"res.body = {{'version': {version}}}\n"


@pytest.fixture
def server(slow_poll_home: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(slow_poll_home).start()
    yield process
    process.stop()


def test_a_deploy_from_another_process_goes_live_without_a_poll(
    server: ServerProcess, slow_poll_home: Path
) -> None:
    ws = Workspace(slow_poll_home)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert client.get(f"/dev/{APP}/hello").json() == {"version": 1}
        time.sleep(1.5)  # idle: past the polls that follow the server's own start
        for version in (2, 3):
            ws.edit(APP, "hello", action=_says(version))
            ws.deploy(APP, "dev")
            deadline = time.monotonic() + 3
            while client.get(f"/dev/{APP}/hello").json() != {"version": version}:
                assert time.monotonic() < deadline, "the deploy did not go live"
                time.sleep(0.05)
            time.sleep(1.5)


def _trace(pid: int, seconds: int) -> str:
    """What ``pid`` (every thread) asks the kernel for ``seconds``: file status and event
    waits, as strace writes them."""
    run = subprocess.run(
        ["timeout", str(seconds), "strace", "-f", "-e",
         "trace=newfstatat,stat,statx,epoll_wait,epoll_pwait", "-p", str(pid)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert "attached" in run.stderr, run.stderr
    return run.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_an_idle_server_does_not_poll_the_store(tmp_path: Path) -> None:
    """Neither the supervisor (which follows the store) nor the worker wakes up while
    nothing happens: the store's files are watched, not polled."""
    ws = Workspace(tmp_path / "workspace")
    ws.install_sample()
    process = ServerProcess(ws.home).start()
    try:
        assert process.process is not None
        time.sleep(3)  # past the polls after its start, and its first call's busy window
        workers = worker_pids(process.process.pid)
        assert len(workers) == 1
        supervisor = _trace(process.process.pid, 3)
        worker = _trace(workers.pop(), 3)
    finally:
        process.stop()
    assert "sqlite3" not in supervisor, supervisor  # no stat of the store's files
    waits = supervisor.count("epoll_wait(") + supervisor.count("epoll_pwait(")
    assert waits <= 3, supervisor  # it sleeps (a look at the pages every 10 s at most)
    assert worker.count("epoll_wait(") + worker.count("epoll_pwait(") <= 2, worker
