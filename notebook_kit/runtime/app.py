"""The Sanic runtime: ``{base_url}/{stage}/{app_id}/{resource}`` answered by deployed actions.

Each worker holds one immutable ``LiveState`` (a compiled route table and the API key per
stage) and swaps it whole when the store's generation changes (built off the loop from
what changed only: ``builder``; a server's workers swap together: ``worker_sync``), so a
request always sees one consistent table. The request path does no store query and
compiles nothing: it splits the path, walks the tree, checks the key, calls the action.

Every answer the runtime makes itself carries ``Access-Control-Allow-Origin: *`` so a
browser caller sees the real error (``answers``). ``application.create_app`` wires it up.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from typing import TYPE_CHECKING, Any

from sanic import Sanic
from sanic.request import Request
from sanic.response import HTTPResponse

from ..builtins.context import ActionEnvironment, BuiltinContext
from ..domain.messages import ActionRequest, ActionResponse, render_response
from ..domain.models import Definition, Stage
from ..errors import StoreError
from ..store.file_stamp import FileStamp
from ..store.request_log import TIMEOUT_ERROR, action_counters
from .builder import LiveBuilder
from .connections import apply_connection_settings
from .hooks import Hooks
from .interrupts import ActionTimeout, within
from .limits import RateLimiter, limiter_for, retry_after
from .live import LiveState, LogEntry, StageTable
from .pace import local_db
from .relay import Busy, Relay
from .reserved import ReservedPaths, runtime_answer
from .responses import ActionAnswer, UntypedActionAnswer
from .store_link import StoreLink
from .worker_sync import WorkerSync

if TYPE_CHECKING:
    from ..workspace.workspace import Workspace

__all__ = ["Runtime"]

log = logging.getLogger("notebook_kit.runtime")

_BEAT_SECONDS = 0.5  # a worker's heartbeat (worker_sync.STALE_MS is four times longer)
BUSY_TEXT = "Too many requests in flight"


# ``await asyncio.sleep(0)``: the loop's next turn. An inline action waits for it, so the
# loop reads and routes every request that arrived with this one before any of their
# actions runs, then runs the actions and writes the answers one after the other: each
# stage's code and data stay in the CPU's caches, and the answers leave together. Under
# load that is a quarter less CPU a call than running each action as its request is read
# (docs/performance.md); alone, it costs one turn of the loop (about a microsecond).
_next_turn = asyncio.sleep


def _has_key(request: Request, key: bytes, _same: Any = hmac.compare_digest) -> bool:
    """Whether the request's x-api-key (header name in any case) is ``key``, compared in
    constant time. ``compare_digest`` is bound here, and ``handle`` binds this function,
    when the module loads: an action that replaces ``hmac.compare_digest`` or this
    module's ``_has_key`` does not change the check (see docs/trust-model.md)."""
    given = request.headers.get("x-api-key")
    return given is not None and _same(given.encode("utf-8", "surrogateescape"), key)


def _limited(
    limiter: RateLimiter, request: Request, key: bytes, now: float, _same: Any = hmac.compare_digest
) -> str:
    """The ``Retry-After`` of a call past its stage's rate limit, or "" when it may go.
    The caller is the stage's API key when it presents that key, else its IP address: a
    made-up key is no caller of its own (it would get a fresh bucket per value)."""
    given = request.headers.get("x-api-key")
    if given is None or not _same(given.encode("utf-8", "surrogateescape"), key):
        given = request.ip
    wait = limiter.wait(given, now)
    return retry_after(wait) if wait else ""


class Runtime:
    """The live state of one worker and the request handler that reads it."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.store = workspace.store
        # The built-ins read the settings snapshot of the last reload: no store query on
        # the request path. Reloads follow every settings change (it bumps the generation).
        self._settings: dict[str, Any] = workspace.settings()
        self._local_db = local_db(self._settings)  # a remote db never runs inline (pace.py)
        self.context = BuiltinContext(self.store, workspace.home, lambda: self._settings)
        self._environment = ActionEnvironment(self.context)
        self._reserved = ReservedPaths(self.context)
        self._pending_log: list[LogEntry] = []
        self._hooks = Hooks()  # what stages with hooks do per call (hooks.py)
        self._limiters: dict[Stage, RateLimiter | None] = {}  # kept across reloads
        self._builder = LiveBuilder(self.store, self._environment.names)
        self.live = self._prepared = self._build()
        self._ready: list[LiveState] = []  # built, not yet served (oldest first)
        self.relay: Relay  # set when the server starts (it needs the running loop)
        self.app: Sanic | None = None  # set by create_app
        # The node's workers switch together (worker_sync); None: this worker alone.
        self.sync: WorkerSync | None = None
        self._committed: Any = None  # sync's shared array, read on the request path
        # SQLite: skip the generation poll while the store's files have not changed.
        self._stamp = FileStamp(self.store.path) if self.store.path is not None else None

    # -- building and swapping the live tables -----------------------------------------

    def _build(self) -> LiveState:
        """Read what is live and build it, reusing what did not change (``builder``)."""
        settings = self.workspace.settings()
        burst = settings["rate_limit_burst"]
        for s in Stage:
            rate = settings[f"rate_limit_{s}"]
            self._limiters[s] = limiter_for(rate, burst, self._limiters.get(s))
        return self._builder.build(settings, self._limiters)

    def prepare(self) -> LiveState | None:
        """Build the store's new state if it changed since the last build (or another
        worker of the node has built a newer one); None if nothing changed. Run it in a
        thread: it reads the store and compiles. ``activate`` puts it in service."""
        generation = self._builder.generation()
        newest = self._prepared.generation
        if generation == newest and (self.sync is None or self.sync.target <= newest):
            return None
        state = self._prepared = self._build()
        # Kept until served: the node may commit this one after this worker built newer.
        self._ready = [*self._ready[-3:], state]
        return state

    def activate(self, state: LiveState) -> None:
        """Serve ``state`` from now on (on the event loop, between requests)."""
        self.live = state
        self._ready = [s for s in self._ready if s.generation > state.generation]
        self._settings = dict(state.settings)
        self._local_db = local_db(self._settings)
        if hasattr(self, "relay"):
            self.relay.cap = state.max_concurrent_actions
            if self.relay.gil_freeze_exit:  # the GIL watchdog follows the default limit
                self.relay.gil_freeze_exit = state.action_timeout + self.relay.grace
        if self.app is not None:
            self.app.config.REQUEST_MAX_SIZE = state.max_body_bytes
            apply_connection_settings(self.app.config, state.settings)

    def refresh(self) -> bool:
        """Build and serve the store's new state now, if it changed. Returns whether."""
        state = self.prepare()
        if state is None:
            return False
        self.activate(state)
        return True

    def catch_up(self) -> LiveState:
        """The state to serve now that the node's committed generation moved: the newest
        one built that is not newer than what every worker has."""
        committed = self._committed
        limit = committed[0] if committed is not None else self._prepared.generation
        ready = [s for s in self._ready if s.generation <= limit]
        if ready and ready[-1].generation > self.live.generation:
            self.activate(ready[-1])
        return self.live

    def join_node(self, shared: Any, lock: Any) -> None:
        """Switch states together with the node's other workers (``worker_sync``)."""
        sync = WorkerSync(shared, lock)
        if sync.join(self._prepared.generation):
            self.sync, self._committed = sync, shared

    async def settle(self, timeout: float) -> None:
        """Before this worker's first request: be on the node's committed generation. A
        worker (re)started while the store moved on has built a state the others do not
        serve yet, or an older one than they do; answering from either would flap. So:
        behind, build the newest; ahead, wait (up to ``timeout``) until the others, told
        through the target, have built it too."""
        sync = self.sync
        if sync is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            built = self._prepared.generation
            committed = sync.built(built)
            if committed > built or sync.target > built:
                await self._reload(loop)
            elif committed == built:
                self.catch_up()
                return
            else:
                await asyncio.sleep(0.02)

    def leave_node(self) -> None:
        if self.sync is not None:
            self.sync.leave()
            self.sync = self._committed = None

    async def _reload(self, loop: asyncio.AbstractEventLoop) -> None:
        """One reload step: build off the loop, then activate (at once when alone, when
        every worker has it when in a node)."""
        state = await loop.run_in_executor(None, self.prepare)
        sync = self.sync
        if sync is None:
            if state is not None:
                self.activate(state)
            return
        sync.built(self._prepared.generation)  # commits when every worker has it
        if self._ready:
            self.catch_up()

    async def watch(self, app: Sanic) -> None:
        """Reload on change and flush the request log in between; never stops on an error.

        A change is noticed at once where the store tells (``StoreLink.wake``: NOTIFY, or
        the SQLite files' inotify), else at the next poll of the generation (on SQLite
        only when the store's files changed: ``FileStamp``). How long the loop waits:
        ``StoreLink.tick``. While the store is away, the worker serves what it has and
        keeps a bounded backlog.
        """
        loop = asyncio.get_running_loop()
        link = StoreLink(self.store, loop)
        next_check = 0.0
        try:
            while True:
                with contextlib.suppress(asyncio.TimeoutError):
                    busy = bool(self._pending_log or link.backlog)
                    alone = self.sync is None
                    tick = link.tick(busy, self.live.reload_interval, loop.time(), alone)
                    await asyncio.wait_for(link.wake.wait(), tick)
                if link.woken(loop.time()):
                    next_check = 0.0
                # Take the buffer here, on the loop thread that appends to it.
                pending, self._pending_log = link.take(self._pending_log), []
                pending = self._hooks.attach(pending, self.live.request_timeout)
                try:
                    sync = self.sync
                    behind = sync is not None and sync.target > self._prepared.generation
                    if loop.time() >= next_check or behind:
                        next_check = loop.time() + self.live.reload_interval
                        stamp = self._stamp
                        if behind or link.lost or stamp is None or stamp.changed():
                            await self._reload(loop)
                            link.answered()
                    elif sync is not None:
                        sync.built(self._prepared.generation)
                        if self._ready:
                            self.catch_up()
                    if pending and not link.lost:
                        await loop.run_in_executor(None, self.flush_log, pending)
                        pending = self._hooks.wrote()
                    if self._hooks.judging_due(self.live, loop.time()):  # docs/canary.md
                        await loop.run_in_executor(None, self.workspace.canaries.check)
                except StoreError as exc:
                    link.failed(exc)
                except Exception:  # a defect, not an outage: do not retry the same entries
                    log.exception("reloading deployments failed; still serving the previous ones")
                    pending = []
                link.keep(pending)
        finally:
            self._pending_log[:0] = link.backlog  # the last flush, at the stop, tries them
            link.close()

    async def beat(self) -> None:
        """Tell the node this worker's loop is alive, every ``_BEAT_SECONDS``, whatever the
        watcher is doing (a build of thousands of definitions must not make it look gone)."""
        while (sync := self.sync) is not None:
            sync.beat()
            await asyncio.sleep(_BEAT_SECONDS)

    def flush_log(self, pending: list[LogEntry] | None = None) -> None:
        """Write buffered request-log rows, and the per-action counters summed from them,
        to the store (the buffer itself by default)."""
        if pending is None:  # on the loop, or stopped: recordings are joined here
            pending, self._pending_log = self._pending_log, []
            pending = self._hooks.attach(pending, self.live.request_timeout)
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
        committed = self._committed
        if committed is not None and committed[0] != live.generation:
            live = self.catch_up()  # the node moved on: so does this worker, first
        path = request.path
        parts = path.split("/")
        stage = live.stages.get(parts[1]) if len(parts) > 2 else None
        ran = error = None
        method = request.method
        if stage is None:
            stage_name, key = parts[min(1, len(parts) - 1)], (method, path)  # "*": no "/"
            served = None
            response = await self._reserved.answer(request, live, parts)
        else:
            if stage.hooks is not None:  # a canary runs or calls are recorded here
                stage = self._hooks.before(stage, request, parts, started)
            stage_name = stage.name
            try:
                match, key, action_key, served = stage.matches[method, path]
            except KeyError:
                match, key, action_key, served = stage.match(method, path, parts)
            if match is None:
                response = runtime_answer(404, "Not Found")
            elif (action := match.endpoint) is None:
                allow = {"Allow": ", ".join(match.allowed)}
                response = runtime_answer(405, "Method Not Allowed", allow)
            elif stage.limiter is not None and (
                wait := _limited(stage.limiter, request, stage.key, started)
            ):
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
                limit = action.definition.timeout or live.action_timeout
                try:
                    if action.is_async:
                        await within(action.run(req, res), limit)
                    else:  # inline while it is fast, else on a lane (see pace.py)
                        relay = self.relay
                        run = action.run
                        pace = relay.paces.get(run) or relay.pace_of(run, self._local_db)
                        if pace.inline:
                            await _next_turn(0)  # the calls read with this one go first
                            relay.run_inline(run, (req, res), limit, pace)
                        else:
                            await relay.call(run, (req, res), limit, pace)
                    status, headers, body, content_type = render_response(res)
                except ActionTimeout:
                    self.relay.end_inline()  # a no-op unless the stop hit an inline call
                    response, error = self._timed_out(action.definition, stage, limit)
                except Busy:
                    response = runtime_answer(503, BUSY_TEXT, {"Retry-After": "1"})
                except Exception as exc:
                    response, error = self._action_failed(action.definition, stage, exc)
                else:
                    answer = UntypedActionAnswer if content_type is None else ActionAnswer
                    response = answer(body, status, headers, content_type)  # type: ignore[arg-type]
        # perf_counter times: the log turns them into wall-clock time and a duration
        # (``served``: the ID of the deployment that answered, a constant of the table's path)
        entry = (started, time.perf_counter(), stage_name, key, response.status, ran, error, served)
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
