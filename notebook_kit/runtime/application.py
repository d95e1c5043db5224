"""``create_app``: a ``Runtime`` wired into a Sanic application.

The routes (every path goes to ``Runtime.handle``), the errors Sanic raises before the
handler runs, and the server's life: the workers' shared generation array, the watch loop
and heartbeat, the relay, the graceful stop that flushes the request log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from sanic import Sanic
from sanic.exceptions import PayloadTooLarge, SanicException
from sanic.request import Request
from sanic.response import HTTPResponse

from ..builtins.presign import use_serving_request
from .app import Runtime
from .builder import freeze_heap
from .children import guard_children, stop_children
from .connections import apply_connection_settings, stop_keeping_alive
from .graceful import stop_once_on_signal
from .http_guard import GuardedRequest, timeout_status
from .relay import Relay
from .reserved import runtime_answer
from .store_guard import protect_store
from .store_link import flush_quietly
from .watchdog import StuckWorker
from .worker_sync import STALE_MS, allocate

if TYPE_CHECKING:
    from ..workspace.workspace import Workspace

__all__ = ["GRACEFUL_STOP_SECONDS", "create_app"]

log = logging.getLogger("notebook_kit.runtime")

_TIMEOUT = "Request Timeout"
GRACEFUL_STOP_SECONDS = 10.0
_GRACE = 2.0  # seconds a timed-out action may still run before its worker is replaced
_ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD"]


def _serving_request() -> Request | None:
    """The request Sanic is answering in this context, if any."""
    try:
        return Request.get_current()
    except SanicException:
        return None


def create_app(workspace: Workspace, name: str = "notebook_kit", *, touchup: bool = True) -> Sanic:
    """The Sanic application serving ``workspace``'s deployments.

    ``touchup`` keeps Sanic's TouchUp, which strips per-request signal dispatch (about 30 µs
    of CPU a request). Turn it off only where several Sanic apps share one process (a
    notebook kernel, a test run): TouchUp breaks the second app there.
    """
    use_serving_request(_serving_request)  # fn.getPresignedUrl's link base
    if workspace.store.path is not None:
        # Only the store's code opens its files: in a server process of its own, anything
        # else is refused; in a notebook kernel, action code is.
        protect_store(workspace.store.path, strict=touchup)
    runtime = Runtime(workspace)
    with contextlib.suppress(SanicException):  # a notebook may build the app again
        Sanic.unregister_app(Sanic.get_app(name))
    app = Sanic(name, configure_logging=False, request_class=GuardedRequest)
    app.config.MOTD = False
    app.config.ACCESS_LOG = False
    app.config.TOUCHUP = touchup
    app.config.REQUEST_MAX_SIZE = runtime.live.max_body_bytes
    apply_connection_settings(app.config, runtime.live.settings)
    # SIGTERM: stop accepting, let calls in flight finish up to this, flush the log, exit 0.
    app.config.GRACEFUL_SHUTDOWN_TIMEOUT = GRACEFUL_STOP_SECONDS
    app.ctx.runtime = runtime
    runtime.app = app
    app.add_route(runtime.handle, "/", methods=_ALL_METHODS, name="root")
    app.add_route(runtime.handle, "/<rest:path>", methods=_ALL_METHODS, name="everything")

    @app.exception(PayloadTooLarge)
    async def _too_large(request: Request, exc: Exception) -> HTTPResponse:
        limit = runtime.live.max_body_bytes
        return runtime_answer(413, f"Request body is larger than {limit} bytes")

    @app.exception(Exception)
    async def _unexpected(request: Request, exc: Exception) -> HTTPResponse:
        status: int = getattr(exc, "status_code", 500)
        status = timeout_status(request, exc) or status
        if status >= 500:
            log.exception("unexpected error", exc_info=exc)
            return runtime_answer(500, "Internal server error")
        return runtime_answer(status, _TIMEOUT if status == 408 else str(exc) or "Bad Request")

    watcher: list[asyncio.Task[None]] = []

    async def _share_generations(app: Sanic) -> None:
        if app.state.workers > 1:  # the workers switch deployments together
            app.shared_ctx.nk_sync, app.shared_ctx.nk_sync_lock = allocate(app.state.workers)

    if touchup:  # run by Sanic's manager; an in-kernel server (create_server) has no main
        app.main_process_start(_share_generations)  # process and warns on its listeners

    @app.before_server_start
    async def _start_watching(app: Sanic) -> None:
        runtime.refresh()
        if touchup:  # a server process of its own
            freeze_heap()
            guard_children()  # what actions fork or spawn ends with it, holds no port
        shared = getattr(app.shared_ctx, "nk_sync", None)
        if shared is not None:
            runtime.join_node(shared, app.shared_ctx.nk_sync_lock)
            await runtime.settle(timeout=STALE_MS / 1000 + 1)
        loop = asyncio.get_running_loop()
        # In a server process of its own, a worker frozen with the GIL held past the
        # default limit (plus the relay's grace) ends, for its supervisor to replace it;
        # never in a notebook kernel's thread.
        freeze = runtime.live.action_timeout + _GRACE if touchup else None
        runtime.relay = Relay(
            loop,
            cap=runtime.live.max_concurrent_actions,
            grace=_GRACE,
            on_zombie=StuckWorker(app, loop),
            gil_freeze_exit=freeze,
        )
        watcher.append(loop.create_task(runtime.watch(app)))
        if runtime.sync is not None:
            watcher.append(loop.create_task(runtime.beat()))

    if touchup:  # a server process of its own: stop once, whatever signals follow

        @app.after_server_start
        async def _handle_stop_signals(app: Sanic) -> None:
            stop_once_on_signal(app, asyncio.get_running_loop())

    @app.before_server_stop
    async def _stop_watching(app: Sanic) -> None:
        stop_keeping_alive(app)
        runtime.leave_node()
        for task in watcher:
            task.cancel()
        watcher.clear()
        flush_quietly(runtime.flush_log)

    @app.after_server_stop
    async def _stopped(app: Sanic) -> None:
        flush_quietly(runtime.flush_log)  # the calls that were still in flight at the stop
        if touchup:
            stop_children()
        runtime.relay.close()

    return app
