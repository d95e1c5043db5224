"""A server that outlives the command that started it: ``notebook-kit serve --detach``
and ``notebook-kit stop``.

The server is an ordinary ``notebook-kit serve`` process in a session of its own (closing
the terminal does not end it). Its output goes to ``<home>/serve-<port>.log`` and a record
of it (process ID, URL, log) to ``<home>/serve-<port>.pid``, which ``stop`` reads.
Starting returns once the server answers HTTP, so the next command can call it; a server
that exits instead is reported with its own last line. Stopping sends SIGTERM (the server
finishes its calls in flight) and waits for the process to end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ...errors import NotFoundError, ServerError
from .handles import answers_http, check_address

__all__ = ["Detached", "detached_servers", "start_detached", "stop_detached"]

STOP_SECONDS = 30.0  # a draining server gets this long before SIGKILL


@dataclass(frozen=True)
class Detached:
    """A detached server: its base ``url``, process ``pid`` and ``log`` file."""

    url: str
    pid: int
    log: Path
    record: Path


def _record(home: Path, port: int) -> Path:
    return home / f"serve-{port}.pid"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _last_line(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1] if lines else "no output"


def start_detached(
    home: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    store: str | None = None,
    timeout: float = 30.0,
    admin: tuple[str, int] | None = None,
) -> Detached:
    """Start ``notebook-kit serve`` for the workspace at ``home`` in the background and
    return once it answers HTTP (port 0: a free one). ``store``: its store URL, handed
    over in the environment (None: the child's default). Raises ServerError, with the
    server's own last line, when it cannot start."""
    check_address(host, port)
    port = port or _free_port(host)
    log = home / f"serve-{port}.log"
    command = [sys.executable, "-m", "notebook_kit", "--home", str(home), "serve"]
    command += ["--host", host, "--port", str(port), "--workers", str(workers)]
    if admin is not None:  # the admin listener (``node``): its host and port
        command += ["--admin-host", admin[0], "--admin-port", str(admin[1])]
    env = None if store is None else {**os.environ, "NOTEBOOK_KIT_STORE": store}
    with log.open("ab") as out:  # a file, not a pipe: nobody reads a pipe once we return
        process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://{host}:{port}"
    deadline = time.monotonic() + timeout
    while not answers_http(host, port):
        if process.poll() is not None:
            raise ServerError(f"notebook-kit serve exited: {_last_line(log)}")
        if time.monotonic() > deadline:
            process.terminate()
            raise ServerError(f"notebook-kit serve did not answer on {url} within {timeout:g} s")
        time.sleep(0.05)
    if process.poll() is not None:  # what answered was another server, taking the port
        raise ServerError(f"notebook-kit serve exited: {_last_line(log)}")
    record = _record(home, port)
    record.write_text(json.dumps({"pid": process.pid, "url": url, "log": str(log)}) + "\n")
    return Detached(url, process.pid, log, record)


def _is_server(pid: int) -> bool:
    """Whether ``pid`` is alive and (where /proc tells) a ``notebook-kit serve``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.exists():
        return True
    try:
        argv = cmdline.read_bytes().split(b"\0")
    except OSError:  # it has just ended
        return False
    return b"notebook_kit" in argv and b"serve" in argv


def detached_servers(home: Path, port: int | None = None) -> list[Detached]:
    """The detached servers recorded in ``home`` (of ``port`` only, when given)."""
    records = [_record(home, port)] if port is not None else sorted(home.glob("serve-*.pid"))
    found = []
    for record in records:
        try:
            data = json.loads(record.read_text())
            found.append(Detached(data["url"], int(data["pid"]), Path(data["log"]), record))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def stop_detached(home: Path, port: int | None = None) -> list[Detached]:
    """Stop the detached servers of ``home`` (the one on ``port``, when given): SIGTERM,
    then SIGKILL after ``STOP_SECONDS``. Returns those stopped; a record whose process
    is gone is removed. Raises NotFoundError when none was running."""
    stopped = []
    for server in detached_servers(home, port):
        if _is_server(server.pid):
            os.kill(server.pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_SECONDS
            while _is_server(server.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _is_server(server.pid):
                os.kill(server.pid, signal.SIGKILL)
            stopped.append(server)
        server.record.unlink(missing_ok=True)
    if not stopped:
        where = f" on port {port}" if port is not None else ""
        raise NotFoundError(f"no server started by serve --detach is running for {home}{where}")
    return stopped
