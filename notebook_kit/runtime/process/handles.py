"""Running a server: in the foreground for callers (``serve``), from a background thread
of a notebook kernel or a test (``BackgroundServer``), or as a child process of a notebook
(``ServerProcess``). Both background kinds are ``ServerHandle``s and share one registry,
so running a notebook cell again replaces the server it started instead of failing with
"address already in use" or leaving a thread or a process behind.

Whichever way, the server is a ``Supervisor`` (the trusted side, which holds the store)
and HTTP workers in sandboxed processes of their own: ``serve`` runs the supervisor as
the main process (signals: the first SIGTERM or SIGINT stops it, within
``STOP_SECONDS``); ``BackgroundServer`` runs it on a thread of its own event loop (its
workers end with the kernel: they die with the thread that started them,
``PR_SET_PDEATHSIG``). The child process dies with its parent the same way.

Nothing heavy is imported here, so the CLI's import stays light.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ...domain.models import Stage
from ...errors import ServerError

if TYPE_CHECKING:
    from ...workspace.workspace import Workspace
    from .node import Node
    from .supervisor import Supervisor

__all__ = [
    "BackgroundServer",
    "ServerHandle",
    "ServerProcess",
    "answers_http",
    "check_address",
    "replace_server",
    "running_servers",
    "serve",
]


def serve(
    workspace: Workspace | Callable[[], Workspace],
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    on_ready: Callable[[], None] | None = None,
    admin_host: str = "127.0.0.1",
    admin_port: int | None = None,
) -> None:
    """Serve ``workspace`` (or what ``workspace()`` opens, waiting for a PostgreSQL store
    that does not answer yet) in the foreground until SIGTERM or SIGINT (the first one
    stops the server within ``STOP_SECONDS``; the others are ignored). ``on_ready`` runs
    once, when the workers serve. ``admin_port``: the admin listener's (``/live``,
    ``/ready``, ``/metrics``) on ``admin_host``. Raises ServerError when HOST:PORT (or the
    admin address) cannot be served."""
    from ..serve.connections import raise_descriptor_limit
    from .descendants import become_subreaper, end_descendants
    from .node import Node

    listener = _bind(host, port, busy=f"port {port} is already in use")
    try:
        admin = _admin_socket(admin_host, admin_port, host, port)
    except ServerError:
        listener.close()
        raise
    listener.listen(socket.SOMAXCONN)
    raise_descriptor_limit()  # the workers inherit it
    become_subreaper()  # what actions start comes back here when orphaned: ended at the stop
    node = Node(workspace, listener, workers, admin)
    loop = asyncio.new_event_loop()
    stopping: list[int] = []

    def stop(signum: int) -> None:
        if not stopping:
            stopping.append(signum)
            node.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum)
    try:
        loop.run_until_complete(node.run(on_ready))
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        listener.close()
        if admin is not None:
            admin.close()
        end_descendants()


def _admin_socket(
    host: str, port: int | None, api_host: str, api_port: int
) -> socket.socket | None:
    """The admin listener's socket (None: none asked for); never the API's port."""
    if port is None:
        return None
    if port == api_port and port != 0:
        raise ServerError(f"the admin port {port} is the API's port: choose another")
    return _bind(host, port, busy=f"admin port {port} is already in use")


def answers_http(host: str, port: int) -> bool:
    """Whether something at ``host:port`` answers an HTTP request (any status)."""
    connection = http.client.HTTPConnection(host, port, timeout=1)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()


def check_address(host: str, port: int) -> None:
    """Raise ServerError (one line) unless HOST:PORT can be bound right now."""
    _bind(host, port, busy=f"port {port} is already in use").close()


def _bind(host: str, port: int, busy: str | None = None) -> socket.socket:
    """A socket bound to ``port`` (0: a free one). Raises ServerError when it is taken
    (with the message ``busy`` when given and the address is in use)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if busy and exc.errno == errno.EADDRINUSE:
            raise ServerError(busy) from None
        raise ServerError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None
    return sock


class ServerHandle(ABC):
    """A server this process started: its base ``url``, whether it is ``running``, and
    ``stop()``. A context manager too."""

    home: Path
    host: str
    port: int
    admin_host: str = "127.0.0.1"
    admin_port: int | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def admin_url(self) -> str | None:
        """The admin listener's base URL (None: none was asked for)."""
        if self.admin_port is None:
            return None
        return f"http://{self.admin_host}:{self.admin_port}"

    @property
    @abstractmethod
    def running(self) -> bool: ...

    def endpoint(self, stage: Stage | str, app: str, resource: str) -> str:
        return f"{self.url}/{Stage.parse(stage)}/{app}/{resource.strip('/')}"

    @abstractmethod
    def start(self, timeout: float = 10.0) -> ServerHandle: ...

    @abstractmethod
    def stop(self, timeout: float = 5.0) -> None: ...

    def __enter__(self) -> ServerHandle:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url} ({'running' if self.running else 'stopped'})>"


class BackgroundServer(ServerHandle):
    """A server over ``workspace`` run from a background thread of this process (its
    supervisor on the thread, its worker in a sandboxed process). ``port=0``: a free
    port."""

    def __init__(
        self,
        workspace: Workspace,
        host: str = "127.0.0.1",
        port: int = 0,
        workers: int = 1,
        admin_port: int | None = None,
        admin_host: str = "127.0.0.1",
    ) -> None:
        self.workspace = workspace
        self.home = workspace.home
        self.host = host
        self.port = port
        self.workers = workers
        self.admin_host = admin_host
        self.admin_port = admin_port  # 0: a free one (the port chosen once started)
        self._thread: threading.Thread | None = None
        self.supervisor: Supervisor | None = None
        self.node: Node | None = None
        self._error: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        if self.running:
            return self
        from .node import Node

        listener = _bind(self.host, self.port)  # bound here: a taken port fails in the caller
        try:
            admin = _admin_socket(self.admin_host, self.admin_port, self.host, self.port)
        except ServerError:
            listener.close()
            raise
        listener.listen(socket.SOMAXCONN)
        self.port = listener.getsockname()[1]
        if admin is not None:
            self.admin_port = admin.getsockname()[1]
        self.node = node = Node(self.workspace, listener, self.workers, admin)
        assert node.supervisor is not None
        self.supervisor = supervisor = node.supervisor
        self._error = None
        self._thread = threading.Thread(
            target=self._run,
            args=(node, listener, admin),
            daemon=True,
            name=f"notebook-kit-server-{self.port}",
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not supervisor.ready.wait(0.05):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                error = self._error
                why = f": {error}" if error is not None else f" within {timeout} s"
                waited = "" if error is not None else f" (still {supervisor.phase})"
                raise ServerError(f"the server did not start{why}{waited}") from error
        return self

    def _run(self, node: Node, listener: socket.socket, admin: socket.socket | None) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(node.run())
        except BaseException as exc:
            self._error = exc
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())  # no thread left
            loop.close()
            listener.close()
            if admin is not None:
                admin.close()

    def sync(self, timeout: float = 10.0) -> None:
        """Return once the server serves what the store has live now (a deploy just made
        from this process, say) and every call it answered so far is in the request log."""
        if self.supervisor is None or not self.running:
            raise ServerError("the server is not running")
        self.supervisor.sync(timeout)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop serving and release the port. Safe to call twice."""
        if self.node is not None:
            self.node.stop()
        if self._thread is not None:
            self._thread.join(timeout)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):  # no libc.so.6: stop() is then the only guard
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ServerProcess(ServerHandle):
    """``notebook-kit serve`` over the workspace at ``home``, as a child process; ``store``
    is its store URL (None: the child's own default), handed over in its environment so
    the password shows on no command line."""

    def __init__(
        self,
        home: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        workers: int = 1,
        store: str | None = None,
        admin_port: int | None = None,
        admin_host: str = "127.0.0.1",
    ) -> None:
        self.home = Path(home)
        self.store = store
        self.host = host
        if not port:
            with _bind(host, 0) as sock:
                port = sock.getsockname()[1]
        self.port = port
        if admin_port == 0:  # a free one, chosen now
            with _bind(admin_host, 0) as sock:
                admin_port = sock.getsockname()[1]
        self.admin_host = admin_host
        self.admin_port = admin_port
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="notebook-kit-serve-", suffix=".log")[1])

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the server and wait until it answers HTTP (or raise, with its log)."""
        if self.running:
            return self
        _bind(self.host, self.port).close()  # the readiness check must not find another server
        # --create: as ``Workspace(home)`` does, the Python caller's home is made if missing
        command = [sys.executable, "-m", "notebook_kit", "--home", str(self.home), "--create"]
        command += ["serve"]
        command += ["--host", self.host, "--port", str(self.port), "--workers", str(self.workers)]
        if self.admin_port is not None:
            command += ["--admin-host", self.admin_host, "--admin-port", str(self.admin_port)]
        env = None if self.store is None else {**os.environ, "NOTEBOOK_KIT_STORE": self.store}
        with self.log_path.open("wb") as log:  # a file, not a pipe: a full pipe would block
            self.process = subprocess.Popen(
                command,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                reason = self.log_path.read_text(errors="replace").strip().splitlines()
                raise ServerError(f"notebook-kit serve exited: {reason[-1] if reason else '?'}")
            if self._answers():
                return self
            time.sleep(0.05)
        self.stop()
        raise ServerError(f"notebook-kit serve did not answer on {self.url} within {timeout} s")

    def _answers(self) -> bool:
        return answers_http(self.host, self.port)

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

    def __repr__(self) -> str:
        return super().__repr__()[:-2] + f", {self.workers} worker(s))>"


# The servers this process started, by (kind, workspace, host, requested port).
_SERVERS: dict[tuple[str, str, str, int], ServerHandle] = {}
_SERVERS_LOCK = threading.Lock()


_Handle = TypeVar("_Handle", bound=ServerHandle)


def replace_server(handle: _Handle, requested_port: int) -> _Handle:
    """Start ``handle``, first stopping the server of its kind this process started for the
    same workspace, host and requested port, and any of its servers holding that port or no
    longer running. Returns the started handle."""
    kind = type(handle).__name__
    key = (kind, str(handle.home.resolve()), handle.host, requested_port)
    with _SERVERS_LOCK:
        for old_key, old in list(_SERVERS.items()):
            same_port = requested_port != 0 and old.host == handle.host and old.port == handle.port
            if old_key == key or same_port or not old.running:
                old.stop()
                del _SERVERS[old_key]
        handle.start()
        _SERVERS[key] = handle
    return handle


def running_servers(home: Path, kind: type[ServerHandle] = ServerHandle) -> list[ServerHandle]:
    """The running servers of ``kind`` this process started for the workspace at ``home``."""
    resolved = str(home.resolve())
    with _SERVERS_LOCK:
        return [
            s
            for (_, h, _, _), s in _SERVERS.items()
            if h == resolved and s.running and isinstance(s, kind)
        ]
