"""``notebook-kit serve`` where it cannot serve (issue 9): a busy port or a bad host is
one line on stderr and exit 1, with no "serving" line first; when it can, the "serving"
line comes only once the port accepts connections. Real processes, real sockets."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.processes import free_port, run_cli


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port some other program is listening on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "serving" not in result.stdout
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_busy_port_is_one_line(tmp_path: Path, held_port: int, workers: str) -> None:
    result = run_cli("serve", "--port", str(held_port), "--workers", workers, home=tmp_path)
    assert one_line_failure(result) == f"notebook-kit: port {held_port} is already in use"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_bad_host_is_one_line(tmp_path: Path, workers: str) -> None:
    port = free_port()
    result = run_cli(
        "serve", "--host", "256.1.1.1", "--port", str(port), "--workers", workers, home=tmp_path
    )
    line = one_line_failure(result)
    assert line.startswith(f"notebook-kit: cannot serve on 256.1.1.1:{port}: "), line


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serving_line_only_once_listening(tmp_path: Path, workers: str) -> None:
    port = free_port()
    command = [sys.executable, "-m", "notebook_kit", "--home", str(tmp_path), "serve"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--workers", workers],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith(f"notebook-kit serving {tmp_path} at http://127.0.0.1:{port}")
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # already listening when the line was printed
    finally:
        # The whole group: a SIGTERM while a worker is still starting can leave Sanic's
        # manager waiting, so what does not stop in time is killed.
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        assert process.stdout is not None
        rest = process.stdout.read()
        process.stdout.close()
    assert "serving" not in rest  # printed once, not once per worker


def test_an_admin_port_that_cannot_be_served_is_one_line(tmp_path: Path, held_port: int) -> None:
    port = free_port()
    same = run_cli("serve", "--port", str(port), "--admin-port", str(port), home=tmp_path)
    assert one_line_failure(same) == (
        f"notebook-kit: the admin port {port} is the API's port: choose another"
    )
    busy = run_cli("serve", "--port", str(port), "--admin-port", str(held_port), home=tmp_path)
    assert one_line_failure(busy) == f"notebook-kit: admin port {held_port} is already in use"
