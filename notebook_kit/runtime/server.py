"""Running the runtime: in the foreground for callers (``serve``), or in the background of
a notebook kernel or a test (``BackgroundServer``).

The background server runs Sanic's ``create_server`` on its own event loop in a daemon
thread: it starts in milliseconds, can be stopped and started again on the same port, and
dies with the kernel. (``app.run`` cannot be used there: it installs signal handlers,
which only the main thread may do.)
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from functools import partial
from typing import Any

from sanic import Sanic
from sanic.worker.loader import AppLoader

from ..domain.models import Stage
from ..workspace.workspace import Workspace
from .app import create_app

__all__ = ["BackgroundServer", "background_servers", "serve", "serve_in_background"]

log = logging.getLogger("notebook_kit.server")


def _app_for_home(home: str) -> Sanic:
    return create_app(home)


def serve(
    workspace: Workspace, host: str = "127.0.0.1", port: int = 8000, workers: int = 1
) -> None:
    """Serve in the foreground until interrupted. Each worker is a process of its own that
    reads the workspace store, so deploys from anywhere reach every worker."""
    loader = AppLoader(factory=partial(_app_for_home, str(workspace.home)))
    app = loader.load()
    app.prepare(
        host=host,
        port=port,
        workers=workers,
        single_process=workers == 1,
        access_log=False,
        motd=False,
    )
    if workers == 1:  # one process, like a plain app.run: no manager, no spawned worker
        Sanic.serve_single(primary=app)
    else:
        Sanic.serve(primary=app, app_loader=loader)


class BackgroundServer:
    """The runtime serving in a background thread. ``url`` is its base URL.

    Use as a context manager, or call ``stop()``. ``port=0`` picks a free port.
    """

    def __init__(self, workspace: Workspace, host: str = "127.0.0.1", port: int = 0) -> None:
        self.workspace = workspace
        self.host = host
        self.port = port
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self.app: Sanic | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def endpoint(self, stage: Stage | str, app: str, resource: str) -> str:
        return f"{self.url}/{Stage.parse(stage)}/{app}/{resource.strip('/')}"

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        if self.running:
            return self
        self._ready.clear()
        self._error = None
        self.app = create_app(self.workspace, name=f"notebook_kit_bg_{id(self)}", touchup=False)
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"notebook-kit-server-{self.port}"
        )
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the server did not start within {timeout} s")
        if self._error is not None:
            self._thread.join(timeout)  # it is ending: leave no thread behind
            error, self._error = self._error, None
            raise OSError(f"cannot serve on {self.host}:{self.port}: {error}") from error
        return self

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _main(self) -> None:
        assert self.app is not None
        self._stop_event = asyncio.Event()
        listener = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))  # port 0: the OS picks a free one
        except OSError:
            listener.close()
            raise
        listener.listen(128)
        self.port = listener.getsockname()[1]
        threading.current_thread().name = f"notebook-kit-server-{self.port}"
        server: Any = await self.app.create_server(sock=listener, return_asyncio_server=True)
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
            Sanic._app_registry.pop(self.app.name, None)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<BackgroundServer {self.url} ({state})>"


# One background server per (workspace, host, requested port) in this process, so that
# running a notebook cell again replaces the server it started instead of failing with
# "address already in use" or leaving a thread behind.
_BACKGROUND: dict[tuple[str, str, int], BackgroundServer] = {}
_BACKGROUND_LOCK = threading.Lock()


def serve_in_background(
    workspace: Workspace, host: str = "127.0.0.1", port: int = 0
) -> BackgroundServer:
    """Start a background server, first stopping the one this process started earlier for
    the same workspace and port (or any of its servers holding that port)."""
    key = (str(workspace.home.resolve()), host, port)
    with _BACKGROUND_LOCK:
        for old_key, old in list(_BACKGROUND.items()):
            same_port = port != 0 and old.host == host and old.port == port
            if old_key == key or same_port or not old.running:
                old.stop()
                del _BACKGROUND[old_key]
        server = BackgroundServer(workspace, host, port).start()
        _BACKGROUND[key] = server
    return server


def background_servers(workspace: Workspace) -> list[BackgroundServer]:
    """The running servers ``serve_in_background`` started for ``workspace``."""
    home = str(workspace.home.resolve())
    with _BACKGROUND_LOCK:
        return [s for (h, _, _), s in _BACKGROUND.items() if h == home and s.running]
