"""``notebook-kit serve`` started from Python as a child process (what a notebook uses to
serve callers for real): it answers, is replaced on a re-run, stops, and dies with its
parent even when the parent is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from notebook_kit import Workspace
from notebook_kit.errors import ServerError
from notebook_kit.runtime.process.handles import ServerProcess


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
        return True
    except httpx.TransportError:
        return False


def test_serve_process_answers_with_the_sample_and_stops(sample_workspace: Workspace) -> None:
    server = sample_workspace.serve_process(port=0)
    try:
        key = sample_workspace.keys()["prod"]
        answer = httpx.post(
            f"{server.url}/prod/restapi_sample/calculator",
            content=b'{"arg1": 1, "arg2": 2, "operation": "plus"}',
            headers={"x-api-key": key},
        )
        assert (answer.status_code, answer.text) == (200, "3")
    finally:
        server.stop()
    assert not server.running
    assert not _answers(server.url)


def test_serve_process_again_replaces_the_running_child(sample_workspace: Workspace) -> None:
    port = ServerProcess(sample_workspace.home).port  # a free port, not started
    first = sample_workspace.serve_process(port=port)
    second = sample_workspace.serve_process(port=port)  # a re-run cell: no "address in use"
    try:
        assert not first.running and second.running
        assert _answers(second.url + "/")
    finally:
        second.stop()


def test_serve_process_failure_is_a_clear_error(sample_workspace: Workspace) -> None:
    with ServerProcess(sample_workspace.home) as holder:
        taken = ServerProcess(sample_workspace.home, port=holder.port)
        with pytest.raises(ServerError, match="in use"):
            taken.start(timeout=20)
        assert not taken.running


def test_child_dies_when_its_parent_is_killed(sample_workspace: Workspace, tmp_path: Path) -> None:
    parent_code = textwrap.dedent(
        f"""
        import sys, time
        from notebook_kit.runtime.process.handles import ServerProcess
        server = ServerProcess({str(sample_workspace.home)!r}).start()
        print(server.process.pid, server.url, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True
    )
    try:
        child_pid, url = parent.stdout.readline().split()  # type: ignore[union-attr]
        assert _answers(url + "/")
        os.kill(parent.pid, signal.SIGKILL)  # a crashed kernel: no clean-up code runs
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _answers(url + "/") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _answers(url + "/")
        with pytest.raises(ProcessLookupError):
            for _ in range(100):  # the child may take a moment to be reaped by init
                os.kill(int(child_pid), 0)
                time.sleep(0.1)
    finally:
        if parent.poll() is None:
            parent.kill()
        if parent.stdout:
            parent.stdout.close()
