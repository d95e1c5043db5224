"""``notebook-kit serve`` as a child in its own session (so a test can signal its whole
process group, as systemd does), optionally with a low descriptor limit."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    port: int
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def serve_child(
    home: Path,
    workers: int = 1,
    nofile: tuple[int, int] | None = None,
    timeout: float = 30.0,
) -> Iterator[Served]:
    """Start the server (with ``nofile``: that soft and hard descriptor limit) and wait
    until it answers; kill its whole group at the end."""
    port = free_port()
    command = [sys.executable, "-m", "notebook_kit", "--home", str(home), "serve"]
    command += ["--port", str(port), "--workers", str(workers)]

    def limit_descriptors() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

    log_path = home.parent / f"serve-{port}.log"  # beside the test's workspace
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=limit_descriptors,
        )
    served = Served(process, f"http://127.0.0.1:{port}", port, log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert process.poll() is None, served.log()
            try:
                httpx.get(served.url + "/", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, served.log()
                time.sleep(0.05)
        yield served
    finally:
        with contextlib.suppress(ProcessLookupError):  # the workers may outlive the main
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
