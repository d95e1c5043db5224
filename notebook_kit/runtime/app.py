"""The Sanic runtime: ``{base_url}/{stage}/{app_id}/{resource}`` answered by deployed actions.

Each worker holds one immutable ``LiveState`` (a compiled route table and the API key per
stage) and swaps it whole when the store's generation changes, so a request in flight
always sees one consistent table. The request path does no store query and compiles
nothing: it splits the path, walks the tree, checks the key, and calls the action.

This module owns the one mapping from errors to HTTP answers. Every answer the runtime
makes itself (400, 403, 404, 405, 408, 413, 429, 500) carries
``Access-Control-Allow-Origin: *`` so a browser caller sees the real error.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from typing import TYPE_CHECKING, Any

from sanic import Sanic
from sanic.exceptions import PayloadTooLarge, SanicException
from sanic.request import Request
from sanic.response import HTTPResponse

from ..builtins.context import ActionEnvironment, BuiltinContext
from ..builtins.presign import use_serving_request
from ..domain.actions import CompiledAction, compile_action
from ..domain.messages import ActionRequest, ActionResponse, render_response
from ..domain.models import Application, Definition, Stage
from ..domain.routing import RouteTable
from ..errors import StoreError
from ..store.request_log import TIMEOUT_ERROR, action_counters
from .http_guard import GuardedRequest, apply_timeouts, timeout_status
from .interrupts import ActionTimeout
from .limits import RateLimiter, limiter_for, retry_after
from .live import LiveState, LogEntry, StageTable
from .relay import Busy, Relay
from .reserved import ReservedPaths, runtime_answer
from .responses import ActionAnswer, UntypedActionAnswer
from .store_guard import protect_store
from .store_link import StoreLink
from .watchdog import StuckWorker

if TYPE_CHECKING:
    from ..workspace.workspace import Workspace

__all__ = ["Runtime", "create_app"]

log = logging.getLogger("notebook_kit.runtime")

_FLUSH_SECONDS = 0.1
_TIMEOUT = "Request Timeout"
GRACEFUL_STOP_SECONDS = 10.0
BUSY_TEXT = "Too many requests in flight"
_ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD"]


def _has_key(request: Request, key: bytes, _same: Any = hmac.compare_digest) -> bool:
    """Whether the request's x-api-key (header name in any case) is ``key``, compared in
    constant time. ``compare_digest`` is bound here, and ``handle`` binds this function,
    when the module loads: an action that replaces ``hmac.compare_digest`` or this
    module's ``_has_key`` does not change the check (see docs/trust-model.md)."""
    given = request.headers.get("x-api-key")
    return given is not None and _same(given.encode("utf-8", "surrogateescape"), key)


def _limited(limiter: RateLimiter, request: Request, now: float) -> str:
    """The ``Retry-After`` of a call past its stage's rate limit, or "" when it may go.
    The caller is the x-api-key it presents, else its IP address."""
    wait = limiter.wait(request.headers.get("x-api-key") or request.ip, now)
    return retry_after(wait) if wait else ""


class Runtime:
    """The live state of one worker and the request handler that reads it."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.store = workspace.store
        # The built-ins read the settings snapshot of the last reload: no store query on
        # the request path. Reloads follow every settings change (it bumps the generation).
        self._settings: dict[str, Any] = workspace.settings()
        self.context = BuiltinContext(self.store, workspace.home, lambda: self._settings)
        self._environment = ActionEnvironment(self.context)
        self._reserved = ReservedPaths(self.context)
        self._compiled: dict[tuple[int, str], CompiledAction] = {}
        self._pending_log: list[LogEntry] = []
        self._limiters: dict[str, RateLimiter | None] = {}  # kept across reloads
        self.live = self._build(self.store.generation())
        self.relay: Relay  # set when the server starts (it needs the running loop)

    # -- building and swapping the live tables -----------------------------------------

    def _compile(
        self, deployment_id: int, definition: Definition, env: dict[str, Any]
    ) -> CompiledAction:
        key = (deployment_id, definition.id)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = compile_action(definition, env)
        return compiled

    def _build(self, generation: int) -> LiveState:
        """Read what is live and compile it into fresh tables (reusing unchanged actions)."""
        store = self.store
        settings = self._settings = self.workspace.settings()
        env = self._environment.names()
        entries: dict[str, list[tuple[str, Definition, CompiledAction]]] = {
            str(s): [] for s in Stage
        }
        in_use: set[tuple[int, str]] = set()
        published: dict[str, dict[str, tuple[Application, int, list[Definition]]]] = {
            str(s): {} for s in Stage
        }
        for stage, app, deployment_id, snapshot in store.live_snapshots():
            served = published[str(stage)][app] = (
                Application.from_dict(snapshot["application"]),
                deployment_id,
                [],
            )
            for data in snapshot["definitions"]:
                definition = Definition.from_dict(data)
                try:
                    compiled = self._compile(deployment_id, definition, env)
                except Exception:  # validated at deploy; keep serving the rest
                    log.exception(
                        "cannot load %s/%s (deployment %s)", app, definition.id, deployment_id
                    )
                    continue
                in_use.add((deployment_id, definition.id))
                entries[str(stage)].append((app, definition, compiled))
                served[2].append(definition)
        self._compiled = {k: v for k, v in self._compiled.items() if k in in_use}
        keys = store.api_keys()
        burst = settings["rate_limit_burst"]
        for s in Stage:
            rate = settings[f"rate_limit_{s}"]
            self._limiters[s] = limiter_for(rate, burst, self._limiters.get(s))
        stages = {
            str(s): StageTable(
                str(s),
                RouteTable(entries[str(s)]),
                keys[s].encode(),
                s is Stage.DEV,
                published[str(s)],
                limiter=self._limiters[s],
            )
            for s in Stage
        }
        return LiveState(
            generation,
            stages,
            settings["max_body_bytes"],
            settings["request_log_size"],
            settings["reload_interval"],
            settings["action_timeout"],
            settings["max_concurrent_actions"],
            settings["request_timeout"],
        )

    def refresh(self) -> bool:
        """Swap in new tables if the store changed since the last look. Returns whether."""
        generation = self.store.generation()
        if generation == self.live.generation:
            return False
        self.live = self._build(generation)
        if hasattr(self, "relay"):
            self.relay.cap = self.live.max_concurrent_actions
        return True

    async def watch(self, app: Sanic) -> None:
        """Reload on change and flush the request log in between; never stops on an error.

        A change is noticed at once where the store tells (``StoreLink.wake``), else at the
        next poll of the generation (every reload interval). The log is flushed every
        ``_FLUSH_SECONDS`` (at most every reload interval), so each flush is small. While
        the store is away, the worker serves what it has and keeps a bounded backlog.
        """
        loop = asyncio.get_running_loop()
        link = StoreLink(self.store, loop)
        next_check = 0.0
        try:
            while True:
                with contextlib.suppress(asyncio.TimeoutError):
                    tick = min(_FLUSH_SECONDS, self.live.reload_interval)
                    await asyncio.wait_for(link.wake.wait(), tick)
                if link.wake.is_set():
                    link.wake.clear()
                    next_check = 0.0
                # Take the buffer here, on the loop thread that appends to it.
                pending, self._pending_log = link.take(self._pending_log), []
                try:
                    if loop.time() >= next_check:
                        next_check = loop.time() + self.live.reload_interval
                        if await loop.run_in_executor(None, self.refresh):
                            app.config.REQUEST_MAX_SIZE = self.live.max_body_bytes
                            apply_timeouts(app.config, self.live.request_timeout)
                        link.answered()
                    if pending and not link.lost:
                        await loop.run_in_executor(None, self.flush_log, pending)
                        pending = []
                except StoreError as exc:
                    link.failed(exc)
                except Exception:  # a defect, not an outage: do not retry the same entries
                    log.exception("reloading deployments failed; still serving the previous ones")
                    pending = []
                link.keep(pending)
        finally:
            link.close()

    def flush_log(self, pending: list[LogEntry] | None = None) -> None:
        """Write buffered request-log rows, and the per-action counters summed from them,
        to the store (the buffer itself by default)."""
        if pending is None:
            pending, self._pending_log = self._pending_log, []
        if not pending:
            return
        wall = time.time() - time.perf_counter()  # entries carry perf_counter times
        stats = action_counters(pending, wall)
        self.store.append_requests(pending, self.live.request_log_size, stats, wall)

    # -- the request path ---------------------------------------------------------------

    async def handle(
        self, request: Request, rest: str = "", _has_key: Any = _has_key
    ) -> HTTPResponse:
        """Every request. The deployed-API path is written out here, in one function,
        because it runs for every call: it adds as little as it can to Sanic's own work.
        (``rest`` is the catch-all route's parameter, named so Sanic's call binds it
        without building a dict of keyword arguments; the path is read from ``request``.
        ``_has_key`` is the key check bound when the class is made: patching the module's
        name from an action does not reach it.)"""
        started = time.perf_counter()
        live = self.live  # one read: this request sees one consistent state
        path = request.path
        parts = path.split("/")
        stage = live.stages.get(parts[1]) if len(parts) > 2 else None
        ran = error = None
        method = request.method
        if stage is None:
            stage_name, key = parts[min(1, len(parts) - 1)], (method, path)  # "*": no "/"
            response = await self._reserved.answer(request, live, parts)
        else:
            stage_name = stage.name
            try:
                match, key, action_key = stage.matches[method, path]
            except KeyError:
                match, key, action_key = stage.match(method, path, parts)
            if match is None:
                response = runtime_answer(404, "Not Found")
            elif (action := match.endpoint) is None:
                allow = {"Allow": ", ".join(match.allowed)}
                response = runtime_answer(405, "Method Not Allowed", allow)
            elif stage.limiter is not None and (wait := _limited(stage.limiter, request, started)):
                response = runtime_answer(429, "Too Many Requests", {"Retry-After": wait})
            elif action.definition.requires_auth and not _has_key(request, stage.key):
                response = runtime_answer(403, "Forbidden")
            else:
                ran = action_key
                req = ActionRequest(
                    method,
                    path,
                    stage.name,
                    request.headers,
                    dict(match.params),  # the remembered match is shared: give a copy
                    request.query_string,
                    request.body,
                )
                res = ActionResponse(action.content_type)
                try:
                    if action.is_async:
                        await action.run(req, res)
                    else:  # on a relay lane: the loop keeps answering meanwhile
                        limit = action.definition.timeout or live.action_timeout
                        await self.relay.call(action.run, (req, res), limit)
                    status, headers, body, content_type = render_response(res)
                except ActionTimeout:
                    limit = action.definition.timeout or live.action_timeout
                    response, error = self._timed_out(action.definition, stage, limit)
                except Busy:
                    response = runtime_answer(503, BUSY_TEXT, {"Retry-After": "1"})
                except Exception as exc:
                    response, error = self._action_failed(action.definition, stage, exc)
                else:
                    answer = UntypedActionAnswer if content_type is None else ActionAnswer
                    response = answer(body, status, headers, content_type)  # type: ignore[arg-type]
        # perf_counter times: the log turns them into wall-clock time and a duration
        entry = (started, time.perf_counter(), stage_name, key, response.status, ran, error)
        self._pending_log.append(entry)
        return response

    @staticmethod
    def _timed_out(
        definition: Definition, stage: StageTable, limit: float
    ) -> tuple[HTTPResponse, str]:
        """The 504 of an action past its time limit; dev callers learn which and when."""
        seconds = int(limit) if limit == int(limit) else limit
        name = f"{definition.app}/{definition.id}"
        log.warning("action %s on %s timed out after %s s", name, stage.name, seconds)
        extra = {"action": name, "timeoutSeconds": seconds} if stage.debug else {}
        answer = runtime_answer(504, "Endpoint request timed out", extra=extra)
        return answer, f"{TIMEOUT_ERROR}: timed out after {seconds} s"

    @staticmethod
    def _action_failed(
        definition: Definition, stage: StageTable, exc: Exception
    ) -> tuple[HTTPResponse, str]:
        """The 500 for an action that raised; the error text goes to dev callers only."""
        log.exception("action %s/%s failed on %s", definition.app, definition.id, stage.name)
        error = f"{type(exc).__name__}: {exc}"
        extra = {"error": error} if stage.debug else {}
        return runtime_answer(500, "Internal server error", extra=extra), error


def _serving_request() -> Request | None:
    """The request Sanic is answering in this context, if any."""
    try:
        return Request.get_current()
    except SanicException:
        return None


def _last_flush(runtime: Runtime) -> None:
    """Write what is left of the request log; a store that is away loses it, logged."""
    try:
        runtime.flush_log()
    except StoreError as exc:
        log.warning("could not write the last request-log entries: %s", exc)


def create_app(workspace: Workspace, name: str = "notebook_kit", *, touchup: bool = True) -> Sanic:
    """The Sanic application serving ``workspace``'s deployments.

    ``touchup`` keeps Sanic's TouchUp, which strips per-request signal dispatch (about 30 µs
    of CPU a request). Turn it off only where several Sanic apps share one process (a
    notebook kernel, a test run): TouchUp breaks the second app there.
    """
    use_serving_request(_serving_request)  # fn.getPresignedUrl's link base
    if workspace.store.path is not None:
        protect_store(workspace.store.path)  # actions may not open the store's files
    runtime = Runtime(workspace)
    with contextlib.suppress(SanicException):  # a notebook may build the app again
        Sanic.unregister_app(Sanic.get_app(name))
    app = Sanic(name, configure_logging=False, request_class=GuardedRequest)
    app.config.MOTD = False
    app.config.ACCESS_LOG = False
    app.config.TOUCHUP = touchup
    app.config.REQUEST_MAX_SIZE = runtime.live.max_body_bytes
    apply_timeouts(app.config, runtime.live.request_timeout)
    # SIGTERM: stop accepting, let calls in flight finish up to this, flush the log, exit 0.
    app.config.GRACEFUL_SHUTDOWN_TIMEOUT = GRACEFUL_STOP_SECONDS
    app.ctx.runtime = runtime
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

    @app.before_server_start
    async def _start_watching(app: Sanic) -> None:
        runtime.refresh()
        loop = asyncio.get_running_loop()
        runtime.relay = Relay(
            loop, cap=runtime.live.max_concurrent_actions, on_zombie=StuckWorker(app, loop)
        )
        watcher.append(loop.create_task(runtime.watch(app)))

    @app.before_server_stop
    async def _stop_watching(app: Sanic) -> None:
        for task in watcher:
            task.cancel()
        watcher.clear()
        _last_flush(runtime)

    @app.after_server_stop
    async def _stopped(app: Sanic) -> None:
        _last_flush(runtime)  # the calls that were still in flight at the stop
        runtime.relay.close()

    return app
