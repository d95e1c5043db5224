"""``notebook-kit serve`` as a child process of a notebook (or any Python program).

The in-kernel ``BackgroundServer`` is for prototyping; a separate process is how callers
are served for real, with several workers if wanted. A child started here dies with its
parent: on Linux it asks the kernel for SIGTERM when the parent exits
(``PR_SET_PDEATHSIG``), so a crashed or killed kernel leaves no orphan holding the port.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import StoreError

__all__ = ["ServerProcess", "start_server_process"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):  # no libc.so.6: stop() is then the only guard
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _bind(host: str, port: int) -> int:
    """Bind ``port`` (0: any free one) and let it go again; returns the port. Raises
    OSError when it is taken."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        return int(sock.getsockname()[1])


class ServerProcess:
    """A running ``notebook-kit serve`` over one workspace. ``url`` is its base URL."""

    def __init__(
        self, home: str | Path, host: str = "127.0.0.1", port: int = 0, workers: int = 1
    ) -> None:
        self.home = Path(home)
        self.host = host
        self.port = port or _bind(host, 0)
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="notebook-kit-serve-", suffix=".log")[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the server and wait until it answers HTTP (or raise, with its log)."""
        if self.running:
            return self
        try:  # the readiness check below must not mistake another server for this one
            _bind(self.host, self.port)
        except OSError as exc:
            raise StoreError(f"cannot serve on {self.host}:{self.port}: {exc.strerror}") from None
        command = [
            sys.executable,
            "-m",
            "notebook_kit",
            "--home",
            str(self.home),
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
        ]
        with self.log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block
            self.process = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                reason = self.log_path.read_text(errors="replace").strip().splitlines()
                raise StoreError(f"notebook-kit serve exited: {reason[-1] if reason else '?'}")
            if self._answers():
                return self
            time.sleep(0.05)
        self.stop()
        raise StoreError(f"notebook-kit serve did not answer on {self.url} within {timeout} s")

    def _answers(self) -> bool:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=1)
        try:
            connection.request("GET", "/")
            connection.getresponse().read()
            return True
        except OSError:
            return False
        finally:
            connection.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``). Safe to call twice."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ServerProcess {self.url} ({state}, {self.workers} worker(s))>"


# One child per (workspace, host, port) started by this process: a re-run notebook cell
# replaces its server instead of failing on a busy port.
_CHILDREN: dict[tuple[str, str, int], ServerProcess] = {}
_CHILDREN_LOCK = threading.Lock()


def start_server_process(
    home: str | Path, host: str = "127.0.0.1", port: int = 8000, workers: int = 1
) -> ServerProcess:
    """Start ``notebook-kit serve`` for ``home``, first stopping the one this process
    started earlier for the same workspace, host and port."""
    key = (str(Path(home).resolve()), host, port)
    with _CHILDREN_LOCK:
        old = _CHILDREN.pop(key, None)
        if old is not None:
            old.stop()
        server = ServerProcess(home, host, port, workers).start()
        _CHILDREN[key] = server
    return server
