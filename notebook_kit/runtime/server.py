"""Running the runtime: in the foreground for callers (``serve``), in a background thread of
a notebook kernel or a test (``BackgroundServer``), or as a child process of a notebook
(``ServerProcess``). Both background kinds are ``ServerHandle``s and share one registry,
so running a notebook cell again replaces the server it started instead of failing with
"address already in use" or leaving a thread or a process behind.

The background thread runs Sanic's ``create_server`` on its own event loop: it starts in
milliseconds, can be stopped and started again on the same port, and dies with the kernel
(``app.run`` cannot be used there: it installs signal handlers, which only the main thread
may do). The child process dies with its parent: on Linux it asks the kernel for SIGTERM
when the parent exits (``PR_SET_PDEATHSIG``).

Sanic is imported on first use, so importing this module (the CLI does) stays light.
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
from typing import TYPE_CHECKING, Any, TypeVar

from ..domain.models import Stage
from ..errors import ServerError
from .supervisor import Supervisor
from .watchdog import exit_status

if TYPE_CHECKING:
    from sanic import Sanic

    from ..workspace.workspace import Workspace

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
    app_factory: Callable[[], Sanic],
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serve in the foreground until interrupted. ``app_factory`` builds the app in each
    worker (a picklable callable: workers are processes of their own, each reading the
    workspace store, so deploys from anywhere reach every worker). ``on_ready`` runs once,
    in this process, when the port is listening. Raises ServerError when HOST:PORT cannot
    be served (checked before Sanic starts)."""
    from sanic import Sanic
    from sanic.worker.loader import AppLoader

    from .connections import GuardedProtocol, raise_descriptor_limit

    check_address(host, port)
    raise_descriptor_limit()  # before the workers start: they inherit it
    loader = AppLoader(factory=app_factory)
    app = loader.load()
    if on_ready is not None:
        # One worker: this process is the server. More: this process binds the listening
        # socket before it starts the workers, then is "ready" (once, not per worker).
        event = "after_server_start" if workers == 1 else "main_process_ready"
        app.register_listener(lambda *_: on_ready(), event)
    if workers > 1:  # the main process: refuse at the stop, replace a worker that died
        app.register_listener(Supervisor().install, "main_process_ready")
    app.prepare(
        host=host,
        port=port,
        workers=workers,
        single_process=workers == 1,
        protocol=GuardedProtocol,
        access_log=False,
        motd=False,
    )
    if workers == 1:  # one process, like a plain app.run: no manager, no spawned worker
        Sanic.serve_single(primary=app)
    else:
        Sanic.serve(primary=app, app_loader=loader)
    status = exit_status()
    if status:  # an action could not be stopped: ask a supervisor for a fresh process
        raise SystemExit(status)


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

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

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
    """The runtime serving ``workspace`` in a background thread. ``port=0``: a free port."""

    def __init__(self, workspace: Workspace, host: str = "127.0.0.1", port: int = 0) -> None:
        self.workspace = workspace
        self.home = workspace.home
        self.host = host
        self.port = port
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self.app: Sanic | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        if self.running:
            return self
        from .application import create_app

        self._ready.clear()
        self._error = None
        self.app = create_app(self.workspace, name=f"notebook_kit_bg_{id(self)}", touchup=False)
        listener = _bind(self.host, self.port)  # bound here: a taken port fails in the caller
        self.port = listener.getsockname()[1]
        self._thread = threading.Thread(
            target=self._run, args=(listener,), daemon=True, name=f"notebook-kit-server-{self.port}"
        )
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServerError(f"the server did not start within {timeout} s")
        if self._error is not None:
            self._thread.join(timeout)  # it is ending: leave no thread behind
            error, self._error = self._error, None
            raise ServerError(f"cannot serve on {self.host}:{self.port}: {error}") from error
        return self

    def _run(self, listener: socket.socket) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main(listener))
        except BaseException as exc:
            self._error = exc
            self._ready.set()
        finally:
            listener.close()
            self._loop.close()

    async def _main(self, listener: socket.socket) -> None:
        assert self.app is not None
        self._stop_event = asyncio.Event()
        listener.listen(128)
        from .connections import GuardedProtocol

        server: Any = await self.app.create_server(
            sock=listener, protocol=GuardedProtocol, return_asyncio_server=True
        )
        if server is None:
            raise OSError("address already in use or not available")
        await server.startup()
        await server.before_start()
        await server.after_start()
        self._ready.set()
        await self._stop_event.wait()
        await server.before_stop()
        server.server.close()
        for connection in list(server.connections):  # keep-alive clients would hang
            connection.close_if_idle()
        await asyncio.sleep(0.05)
        for connection in list(server.connections):
            connection.close()
        await server.server.wait_closed()
        await server.after_stop()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and release the port. Safe to call twice."""
        if self.running and self._loop is not None and self._stop_event is not None:
            self._loop.call_soon_threadsafe(self._stop_event.set)
            self._thread.join(timeout)  # type: ignore[union-attr]
        if self.app is not None:
            from sanic import Sanic

            Sanic.unregister_app(self.app)


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
    ) -> None:
        self.home = Path(home)
        self.store = store
        self.host = host
        if not port:
            with _bind(host, 0) as sock:
                port = sock.getsockname()[1]
        self.port = port
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
