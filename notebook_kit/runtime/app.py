"""The Sanic runtime: ``{base_url}/{stage}/{app_id}/{resource}`` answered by deployed actions.

Each worker holds one immutable ``_Live`` (a compiled route table and the API key per
stage) and swaps it whole when the store's generation changes, so a request in flight
always sees one consistent table. The request path does no store query and compiles
nothing: it splits the path, walks the tree, checks the key, and calls the action.

This module owns the one mapping from errors to HTTP answers. Every answer the runtime
makes itself (403, 404, 405, 413, 500) carries ``Access-Control-Allow-Origin: *`` so a
browser caller sees the real error.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from sanic import Sanic
from sanic.exceptions import PayloadTooLarge, SanicException
from sanic.request import Request
from sanic.response import HTTPResponse
from sanic.response.types import BaseHTTPResponse

from ..builtins.presign import PREFIX as FILES_PREFIX
from ..builtins.presign import use_serving_request
from ..domain.actions import ActionRequest, ActionResponse, CompiledAction, render_response
from ..domain.models import Application, Definition, Stage
from ..domain.openapi import OPENAPI_PREFIX, build_document
from ..domain.routing import Match, RouteTable
from ..store.request_log import action_counters
from ..workspace.workspace import Workspace
from .file_links import answer_file_link

__all__ = ["Runtime", "create_app"]

log = logging.getLogger("notebook_kit.runtime")

_CORS = {"Access-Control-Allow-Origin": "*"}
_MATCHES_KEPT = 4096
_FLUSH_SECONDS = 0.1
_ALL_METHODS = ["GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD"]
FILES_SEGMENT = FILES_PREFIX.strip("/")  # presigned links; never a stage name
# Started and ended (perf_counter times), stage, (method, path), status, (stage, app, API
# ID) of the action that ran or None, error or None. The stage, the (method, path) pair and
# the action's key are objects the stage keeps per path, shared by every entry of that
# path: the pickled batch stores each once, and the flush counts without building keys
# (see request_log.py for how entries are read back).
_LogEntry = tuple[
    float, float, str, tuple[str, str], int, "tuple[str, str, str] | None", "str | None"
]
# What a stage remembers of a path: the match, (method, path), the action's log key.
_Memo = tuple["Match[CompiledAction] | None", tuple[str, str], "tuple[str, str, str] | None"]


class _ActionAnswer(HTTPResponse):
    """An action's answer, made without Sanic's header copies.

    ``HTTPResponse.__init__`` builds an empty ``Header`` and then copies the given headers
    into a second one; the action's ``res.headers`` (a ``CIMultiDict``, which offers all
    Sanic does with response headers) is spent after the action and is handed over as it
    is. The slots set here are all of ``BaseHTTPResponse``'s (checked below).
    """

    __slots__ = ()

    def __init__(self, body: bytes, status: int, headers: Any, content_type: str | None) -> None:
        self.asgi = False
        self.body = body
        self.content_type = content_type
        self.stream = None
        self.status = status
        self.headers = headers
        self._cookies = None


# The shortcut sets every slot of Sanic's response itself; a Sanic whose response has
# other slots gets its own constructor instead (slower, never wrong).
_RESPONSE_SLOTS = {"asgi", "body", "content_type", "stream", "status", "headers", "_cookies"}
_Answer: type[HTTPResponse] = (
    _ActionAnswer if set(BaseHTTPResponse.__slots__) == _RESPONSE_SLOTS else HTTPResponse
)


class _UntypedAnswer(_Answer):  # type: ignore[valid-type,misc]
    """An action's answer without a content type: no Content-Type is sent (Sanic would
    send the text 'None'). A class of its own, so the common answer keeps Sanic's
    ``processed_headers`` as it is."""

    __slots__ = ()

    @property
    def processed_headers(self) -> Any:
        clean = self._sanitize_header_value  # strips CR/LF: no header injection
        return (
            (clean(name).encode("ascii"), clean(f"{value}").encode(errors="surrogateescape"))
            for name, value in self.headers.items()
        )


def _has_key(request: Request, key: bytes) -> bool:
    """Whether the request's x-api-key (header name in any case) is ``key``, compared in
    constant time."""
    given = request.headers.get("x-api-key")
    return given is not None and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), key)


def _runtime_answer(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
) -> HTTPResponse:
    """An answer the runtime makes itself: JSON ``{"message": ...}`` (plus ``extra``) that a
    browser on any origin may read."""
    body = json.dumps({"message": message, **(extra or {})}).encode()
    return HTTPResponse(body, status, {**_CORS, **(headers or {})}, "application/json")


@dataclass(frozen=True, slots=True)
class _Stage:
    name: str
    table: RouteTable[CompiledAction]
    key: bytes
    debug: bool
    # app ID -> (application, deployment id, served definitions): the OpenAPI source
    published: dict[str, tuple[Application, int, list[Definition]]]
    # (method, raw path) -> what it matched, with the request log's shared keys: most calls
    # repeat a few paths, so the tree is walked once per path. Bounded; it lives and dies
    # with this stage's table.
    matches: dict[tuple[str, str], _Memo] = field(default_factory=dict)

    def match(self, method: str, path: str, parts: list[str]) -> _Memo:
        """Walk the table for a path split on '/' (stage first) and remember the answer."""
        segments = [unquote(p) if "%" in p else p for p in parts[2:]]
        if len(segments) > 1 and not segments[-1]:
            segments.pop()  # tolerate one trailing slash
        key = (method, path)
        found = self.table.match(method, segments)
        action = found.endpoint if found is not None else None
        memo = (found, key, None if action is None else (self.name, *action.ident))
        if len(self.matches) >= _MATCHES_KEPT:
            self.matches.clear()
        self.matches[key] = memo
        return memo


@dataclass(frozen=True, slots=True)
class _Live:
    generation: int
    stages: dict[str, _Stage]
    max_body_bytes: int
    request_log_size: int
    reload_interval: float


class Runtime:
    """The live state of one worker and the request handler that reads it."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._compiled: dict[tuple[int, str], CompiledAction] = {}
        self._pending_log: list[_LogEntry] = []
        self.live = self._build(workspace.store.generation())

    # -- building and swapping the live tables -----------------------------------------

    def _compile(
        self, deployment_id: int, definition: Definition, env: dict[str, Any]
    ) -> CompiledAction:
        key = (deployment_id, definition.id)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compiled[key] = self.workspace.compile(definition)
        return compiled

    def _build(self, generation: int) -> _Live:
        """Read what is live and compile it into fresh tables (reusing unchanged actions)."""
        ws = self.workspace
        env = ws.action_env()
        entries: dict[str, list[tuple[str, Definition, CompiledAction]]] = {
            str(s): [] for s in Stage
        }
        in_use: set[tuple[int, str]] = set()
        published: dict[str, dict[str, tuple[Application, int, list[Definition]]]] = {
            str(s): {} for s in Stage
        }
        for stage, app, deployment_id, snapshot in ws.store.live_snapshots():
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
        keys = ws.store.api_keys()
        stages = {
            str(s): _Stage(
                str(s),
                RouteTable(entries[str(s)]),
                keys[s].encode(),
                s is Stage.DEV,
                published[str(s)],
            )
            for s in Stage
        }
        settings = ws.settings()
        return _Live(
            generation,
            stages,
            settings["max_body_bytes"],
            settings["request_log_size"],
            settings["reload_interval"],
        )

    def refresh(self) -> bool:
        """Swap in new tables if the store changed since the last look. Returns whether."""
        generation = self.workspace.store.generation()
        if generation == self.live.generation:
            return False
        self.live = self._build(generation)
        return True

    async def watch(self, app: Sanic) -> None:
        """Poll the store and swap tables on change; flush the request log in between.

        The log is flushed every ``_FLUSH_SECONDS`` (at most every reload interval), so
        each flush is small and never holds the interpreter for long under load.
        """
        loop = asyncio.get_running_loop()
        next_check = 0.0
        while True:
            await asyncio.sleep(min(_FLUSH_SECONDS, self.live.reload_interval))
            try:
                if loop.time() >= next_check:
                    next_check = loop.time() + self.live.reload_interval
                    if await loop.run_in_executor(None, self.refresh):
                        app.config.REQUEST_MAX_SIZE = self.live.max_body_bytes
                # Take the buffer here, on the loop thread that appends to it.
                pending, self._pending_log = self._pending_log, []
                if pending:
                    await loop.run_in_executor(None, self.flush_log, pending)
            except Exception:
                log.exception("reloading deployments failed; still serving the previous ones")

    def flush_log(self, pending: list[_LogEntry] | None = None) -> None:
        """Write buffered request-log rows, and the per-action counters summed from them,
        to the store (the buffer itself by default)."""
        if pending is None:
            pending, self._pending_log = self._pending_log, []
        if not pending:
            return
        wall = time.time() - time.perf_counter()  # entries carry perf_counter times
        stats = action_counters(pending, wall)
        store = self.workspace.store
        store.append_requests(pending, self.live.request_log_size, stats, wall)

    # -- the request path ---------------------------------------------------------------

    async def handle(self, request: Request, rest: str = "") -> HTTPResponse:
        """Every request. The deployed-API path is written out here, in one function,
        because it runs for every call: it adds as little as it can to Sanic's own work.
        (``rest`` is the catch-all route's parameter, named so Sanic's call binds it
        without building a dict of keyword arguments; the path is read from ``request``.)"""
        started = time.perf_counter()
        live = self.live  # one read: this request sees one consistent state
        path = request.path
        parts = path.split("/")
        stage = live.stages.get(parts[1]) if len(parts) > 2 else None
        ran = error = None
        method = request.method
        if stage is None:
            stage_name, key = parts[1], (method, path)
            response = await self._reserved(request, live, parts)
        else:
            stage_name = stage.name
            try:
                match, key, action_key = stage.matches[method, path]
            except KeyError:
                match, key, action_key = stage.match(method, path, parts)
            if match is None:
                response = _runtime_answer(404, "Not Found")
            elif (action := match.endpoint) is None:
                allow = {"Allow": ", ".join(match.allowed)}
                response = _runtime_answer(405, "Method Not Allowed", allow)
            elif action.definition.requires_auth and not _has_key(request, stage.key):
                response = _runtime_answer(403, "Forbidden")
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
                    else:
                        action.run(req, res)
                    status, headers, body, content_type = render_response(res)
                except Exception as exc:
                    response, error = self._action_failed(action.definition, stage, exc)
                else:
                    answer = _UntypedAnswer if content_type is None else _Answer
                    response = answer(body, status, headers, content_type)  # type: ignore[arg-type]
        # perf_counter times: the log turns them into wall-clock time and a duration
        entry = (started, time.perf_counter(), stage_name, key, response.status, ran, error)
        self._pending_log.append(entry)
        return response

    @staticmethod
    def _action_failed(
        definition: Definition, stage: _Stage, exc: Exception
    ) -> tuple[HTTPResponse, str]:
        """The 500 for an action that raised; the error text goes to dev callers only."""
        log.exception("action %s/%s failed on %s", definition.app, definition.id, stage.name)
        error = f"{type(exc).__name__}: {exc}"
        extra = {"error": error} if stage.debug else {}
        return _runtime_answer(500, "Internal server error", extra=extra), error

    async def _reserved(self, request: Request, live: _Live, parts: list[str]) -> HTTPResponse:
        """Paths outside the stages: the OpenAPI documents, presigned files, else 404."""
        if parts[1] == OPENAPI_PREFIX:
            return self._openapi(request, live, parts[2:])
        if parts[1] == FILES_SEGMENT:
            return await self._files(request)
        return _runtime_answer(404, "Not Found")

    def _openapi(self, request: Request, live: _Live, rest: list[str]) -> HTTPResponse:
        """``GET /_openapi/{stage}/{app}.json``: the document of what ``live`` serves."""
        stage = live.stages.get(rest[0]) if len(rest) == 2 else None
        app = rest[1].removesuffix(".json") if stage is not None else ""
        if stage is None or not rest[1].endswith(".json") or app not in stage.published:
            return _runtime_answer(404, "Not Found")
        if request.method not in ("GET", "HEAD"):
            return _runtime_answer(405, "Method Not Allowed", {"Allow": "GET, HEAD"})
        application, deployment_id, definitions = stage.published[app]
        base_url = f"{request.scheme}://{request.host}"
        document = build_document(application, stage.name, definitions, base_url, deployment_id)
        return HTTPResponse(json.dumps(document, indent=2), 200, dict(_CORS), "application/json")

    async def _files(self, request: Request) -> HTTPResponse:
        """``/_files/{path}?...``: a presigned link (see file_links.py), answered off the
        event loop since it reads or writes a file."""
        args = request.args
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(
            None,
            answer_file_link,
            self.workspace,
            request.method,
            request.path,
            args.get("expires"),
            args.get("signature"),
            request.body,
            request.headers.get("content-type"),
        )
        return HTTPResponse(answer.body, answer.status, answer.headers, answer.content_type)


def _serving_request() -> Request | None:
    """The request Sanic is answering in this context, if any."""
    try:
        return Request.get_current()
    except SanicException:
        return None


def create_app(
    workspace: Workspace | str | None = None, name: str = "notebook_kit", *, touchup: bool = True
) -> Sanic:
    """The Sanic application serving ``workspace``'s deployments (a Workspace or its home).

    ``touchup`` keeps Sanic's TouchUp, which strips per-request signal dispatch (about 30 µs
    of CPU a request). Turn it off only where several Sanic apps share one process (a
    notebook kernel, a test run): TouchUp breaks the second app there.
    """
    if not isinstance(workspace, Workspace):
        workspace = Workspace(workspace)
    use_serving_request(_serving_request)  # fn.getPresignedUrl's link base
    runtime = Runtime(workspace)
    Sanic._app_registry.pop(name, None)  # a notebook may build the app again
    app = Sanic(name, configure_logging=False)
    app.config.MOTD = False
    app.config.ACCESS_LOG = False
    app.config.TOUCHUP = touchup
    app.config.REQUEST_MAX_SIZE = runtime.live.max_body_bytes
    app.ctx.runtime = runtime
    app.add_route(runtime.handle, "/", methods=_ALL_METHODS, name="root")
    app.add_route(runtime.handle, "/<rest:path>", methods=_ALL_METHODS, name="everything")

    @app.exception(PayloadTooLarge)
    async def _too_large(request: Request, exc: Exception) -> HTTPResponse:
        limit = runtime.live.max_body_bytes
        return _runtime_answer(413, f"Request body is larger than {limit} bytes")

    @app.exception(Exception)
    async def _unexpected(request: Request, exc: Exception) -> HTTPResponse:
        status = getattr(exc, "status_code", 500)
        if status >= 500:
            log.exception("unexpected error", exc_info=exc)
            return _runtime_answer(500, "Internal server error")
        return _runtime_answer(status, str(exc) or "Bad Request")

    watcher: list[asyncio.Task[None]] = []

    @app.before_server_start
    async def _start_watching(app: Sanic) -> None:
        runtime.refresh()
        watcher.append(asyncio.get_running_loop().create_task(runtime.watch(app)))

    @app.before_server_stop
    async def _stop_watching(app: Sanic) -> None:
        for task in watcher:
            task.cancel()
        watcher.clear()
        runtime.flush_log()

    return app
