"""One request: ``{base_url}/{stage}/{app_id}/{resource}`` answered by a deployed action.

``Dispatcher.handle`` is every request a worker reads. It reads the worker's one
immutable ``LiveState`` once (a compiled route table and the callers' key digests per
stage, see ``reload`` and ``callers``), so a request always sees one consistent table,
then: route, caller, the stage's rate limit, key, the consumer's limits (``allotments``),
and the action, in an action process (``sandbox.serving``) or, once proven fast,
inline in this worker (``sandbox.pace``). The request path does no store query and
compiles nothing; what is not the action's own answer comes from ``domain.answers``.
Each answered call adds one entry to the request log, which the worker sends to the
supervisor in batches (``flush``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from time import perf_counter, thread_time
from typing import Any

from multidict import CIMultiDict
from sanic.request import Request
from sanic.response import HTTPResponse

from ...builtins import outbound
from ...builtins.failures import take_failure
from ...domain import answers
from ...domain.messages import ActionRequest, ActionResponse, render_response
from ...sandbox.pace import INLINE_MAX, INLINE_WALL_MAX, SAMPLE_EVERY
from ...sandbox.serving import ActionPool, Busy
from ..process.pages import INLINE, SEQ, SLEEPING
from ..reload.live import LiveAction, LiveState, LogEntry, StageTable
from .allotments import Allotments, Verdict
from .callers import Caller, caller_of
from .connections import PACED_BYTES, is_paced, send_paced
from .hooks import Hooks
from .limits import retry_after
from .request_body import HELD, read_held
from .reserved import ReservedPaths
from .responses import ActionAnswer, UntypedActionAnswer, to_response

__all__ = ["FLUSH_SECONDS", "Dispatcher"]

log = logging.getLogger("notebook_kit.runtime")

FLUSH_SECONDS = 0.25  # a busy worker sends its log entries this often

# ``await asyncio.sleep(0)``: the loop's next turn. An inline action waits for it, so the
# loop reads and routes every request that arrived with this one before any of their
# actions runs, then runs the actions and writes the answers one after the other: each
# stage's code and data stay in the CPU's caches, and the answers leave together. Under
# load that is a quarter less CPU a call than running each action as its request is read
# (docs/performance.md); alone, it costs one turn of the loop (about a microsecond).
_next_turn = asyncio.sleep


def server_timing(started: float, acting: float, acted: float, ended: float) -> str:
    """The Server-Timing header (the ``server_timing`` setting), durations in ms from the
    dispatcher's clock readings: ``routing`` until the action began (the whole call when
    none ran), ``action`` while it ran, ``total`` to the answer."""
    if not acting:
        acting = acted = ended
    return (
        f"routing;dur={(acting - started) * 1000:.3f}, action;dur={(acted - acting) * 1000:.3f}, "
        f"total;dur={(ended - started) * 1000:.3f}"
    )


class Dispatcher:
    """A worker's request handler and what it reads: the live state (set by the
    worker's ``Follower``), its action processes, its page, its log buffer."""

    def __init__(
        self,
        live: LiveState,
        pool: ActionPool,
        page: Any,
        reserved: ReservedPaths,
        wake: Callable[[], None],
        send_log: Callable[[list[LogEntry]], Coroutine[Any, Any, None]],
        allotments: Allotments | None = None,
    ) -> None:
        self.live = live
        self.pool = pool
        self.page = page
        self.app: Any = None  # the Sanic app serving this (set once it is made)
        self.committed: Any = None  # the node page (set when the worker joins its node)
        self.catch_up: Callable[[], LiveState] = lambda: self.live
        self._reserved = reserved
        self._wake = wake
        self._send_log = send_log
        self._pending_log: list[LogEntry] = []
        self._hooks = Hooks()
        # while tracing: (traceparent, outbound calls) by entry (its start), for the log;
        # the calls of action processes' answers by request until their entry is made
        self._traced: dict[float, list[Any]] = {}
        self._calls: dict[int, tuple[Any, ...]] = {}
        self._flushing: asyncio.TimerHandle | None = None
        self.allotments = allotments
        self.used: dict[str, float] = {}  # consumer key digest -> when it was last used

    # -- the request path ---------------------------------------------------------------

    async def handle(self, request: Request, rest: str = "") -> HTTPResponse | None:
        """Every request. The deployed-API path is written out here, in one function,
        because it runs for every call: it adds as little as it can to Sanic's own work.
        (``rest`` is the catch-all route's parameter, named so Sanic's call binds it
        without building a dict of keyword arguments; the path is read from ``request``.)"""
        started = perf_counter()
        live = self.live  # one read: this request sees one consistent state
        committed = self.committed
        if committed is not None and committed[0] != live.generation:
            live = self.catch_up()  # the node moved on: so does this worker, first
        path = request.path
        parts = path.split("/")
        stage = live.stages.get(parts[1]) if len(parts) > 2 else None
        ran = error = consumer = None
        acting = acted = 0.0  # when the action ran (Server-Timing)
        method = request.method
        if stage is None:
            stage_name, key = parts[min(1, len(parts) - 1)], (method, path)  # "*": no "/"
            served = None
            response = await self._reserved.answer(request, live, parts)
        else:
            if stage.hooks is not None:  # a canary runs or calls are recorded here
                if request.body is HELD and stage.hooks.record_bytes:
                    await read_held(request)  # the recording keeps it
                stage = self._hooks.before(stage, request, parts, started)
            stage_name = stage.name
            try:
                match, key, action_key, served = stage.matches[method, path]
            except KeyError:
                match, key, action_key, served = stage.match(method, path, parts)
            if match is None:
                response = to_response(answers.not_found())
            elif (action := match.endpoint) is None:
                response = to_response(answers.method_not_allowed(match.allowed))
            else:
                caller = caller_of(
                    stage.callers, request.headers.get("x-api-key"), action.app, time.time
                )
                verdict = refused = None
                if stage.limiter is not None and (
                    wait := stage.limiter.wait(
                        request.ip if caller is None else caller.name, started
                    )
                ):
                    refused = answers.too_many(retry_after(wait))
                elif caller is None:
                    if action.definition.requires_auth:
                        refused = answers.forbidden()
                else:
                    consumer = caller.name
                    if caller.digest is not None:
                        self.used[caller.digest] = started
                    if caller.limited:
                        verdict = await self._limit(caller, started)
                        if verdict is not None and not verdict.admitted:
                            refused = answers.too_many(verdict.retry_after, verdict.headers)
                if refused is None and request.body is HELD:  # the caller awaits a 100
                    await read_held(request)  # Continue (request_body.py): read it now
                contract = action.contract
                if refused is None and contract is not None and contract.checks_requests:
                    violations = contract.check_request(
                        match.params, request.query_string, request.headers, request.body
                    )
                    if violations:
                        name = f"{action.app}/{action.definition.id}"
                        refused = answers.unprocessable(name, violations)
                        error = answers.contract_error(answers.REQUEST_CONTRACT, violations)
                if refused is not None:
                    response = to_response(refused)
                else:
                    ran = action_key
                    req = ActionRequest(
                        "GET" if method == "HEAD" else method,  # HEAD: the GET's answer
                        path,
                        stage.name,
                        request.headers,
                        dict(match.params),  # the remembered match is shared: give a copy
                        request.query_string,
                        request.body,
                    )
                    limit = action.definition.timeout or live.action_timeout
                    if action.pace.inline:
                        await _next_turn(0)  # the calls read with this one go first
                        if live.server_timing:
                            acting = perf_counter()
                        response, error = self._inline(action, req, stage, limit)
                    else:
                        if live.server_timing:
                            acting = perf_counter()
                        response, error = await self._in_process(action, req, stage, limit, request)
                    if live.server_timing:
                        acted = perf_counter()
                    if live.tracing:  # its http and db calls: its process's, or noted here
                        calls = self._calls.pop(id(request), None)
                        if calls is None:
                            calls = tuple(map(tuple, outbound.take()))
                        self._traced[started] = [request.headers.get("traceparent"), calls]
                    if (
                        contract is not None
                        and contract.checks_responses
                        and (error is None or error.startswith(answers.CAUGHT_ERROR))
                    ):
                        error = self._check_answer(action, stage, response) or error
                    if verdict is not None:
                        response.headers.update(verdict.headers)
        # perf_counter times: the log turns them into wall-clock time and a duration
        # (``served``: the ID of the deployment that answered, a constant of the table's path)
        entry = (
            started, perf_counter(), stage_name, key, response.status, ran, error, served,
            consumer,
        )  # fmt: skip
        if live.server_timing:
            response.headers["Server-Timing"] = server_timing(started, acting, acted, entry[1])
        if live.tracing and started not in self._traced:
            self._traced[started] = [request.headers.get("traceparent"), ()]
        if len(response.body or b"") > PACED_BYTES and is_paced(request, response):
            await self._send_paced(request, response, entry)  # Sanic has nothing to send
            return None
        pending = self._pending_log
        if not pending:
            self._flushing = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)
        pending.append(entry)
        return response

    async def _send_paced(self, request: Request, response: HTTPResponse, entry: Any) -> None:
        """Send a large answer at its reader's pace (``connections.send_paced``); its log
        entry once it is sent, with the error of a cut if its reader stopped reading."""
        cut = None
        try:
            cut = await send_paced(request, response)
        finally:
            if cut is not None and entry[6] is None:
                entry = (*entry[:6], cut, *entry[7:])
            pending = self._pending_log
            if not pending:
                loop = asyncio.get_running_loop()
                self._flushing = loop.call_later(FLUSH_SECONDS, self.flush)
            pending.append(entry)

    async def _limit(self, caller: Caller, started: float) -> Verdict | None:
        """A limited consumer's verdict; None where this dispatcher has no share of the
        limits (a harness without a supervisor)."""
        allotments = self.allotments
        if allotments is None:
            return None
        verdict = allotments.spend(caller, started)
        if verdict is not None:
            return verdict
        try:
            return await allotments.admit(caller)
        except LookupError:  # the supervisor did not answer: no unlimited call for it
            return Verdict(False, {}, "1")

    def _inline(
        self, action: LiveAction, req: ActionRequest, stage: StageTable, limit: float
    ) -> tuple[HTTPResponse, str | None]:
        """Run a proven-fast action here. The worker's page says which one runs, so a
        call that never ends is seen (and its worker replaced) from outside."""
        page = self.page
        if page[SLEEPING]:
            page[SLEEPING] = 0
            self._wake()  # before the call: a frozen worker cannot say it any more
        pace = action.pace
        pace.calls += 1
        sampled = not pace.calls % SAMPLE_EVERY
        page[SEQ] += 1
        page[INLINE] = action.version
        run = action.run
        if run is None:  # its first inline call loads it, watched like a call, not timed
            try:
                run = action.load()
            except Exception as exc:
                page[INLINE] = 0
                pace.quarantine()  # its user functions fail here: never inline again
                return self._failed(
                    action, stage, answers.RAISED, f"{type(exc).__name__}: {exc}", limit
                )
        take_failure()  # a note left by code run outside a call is not this call's
        cpu = thread_time() if sampled else 0.0
        began = perf_counter()
        try:
            res = ActionResponse(action.content_type)
            run(req, res)
            status, headers, body, content_type = render_response(res)
        except Exception as exc:
            take_failure()  # the error raised names what failed
            log.exception("action %s/%s failed on %s", action.app, action.definition.id, stage.name)
            return self._failed(
                action, stage, answers.RAISED, f"{type(exc).__name__}: {exc}", limit
            )
        finally:
            page[INLINE] = 0
            if perf_counter() - began > INLINE_WALL_MAX or (
                sampled and thread_time() - cpu > INLINE_MAX
            ):
                pace.demote()
        answer = UntypedActionAnswer if content_type is None else ActionAnswer
        caught = take_failure()  # a built-in's error the action caught, for the log
        return answer(body, status, headers, content_type), caught  # type: ignore[arg-type]

    async def _in_process(
        self,
        action: LiveAction,
        req: ActionRequest,
        stage: StageTable,
        limit: float,
        request: Request,
    ) -> tuple[HTTPResponse, str | None]:
        """Run the action in one of this worker's action processes."""
        base = f"{request.scheme}://{request.host}"
        try:
            outcome = await self.pool.call(action.app, action.key, req, limit, base)
        except Busy:
            return to_response(answers.busy()), None
        if outcome.calls:  # while tracing: its http and db calls, for the trace
            self._calls[id(request)] = outcome.calls
        if outcome.ok:
            action.pace.pool_call_ended(outcome.wall, outcome.cpu, outcome.waits)
            answer = UntypedActionAnswer if outcome.content_type is None else ActionAnswer
            headers = CIMultiDict(outcome.headers)
            answered = answer(outcome.body, outcome.status, headers, outcome.content_type)  # type: ignore[arg-type]
            return answered, outcome.error
        if outcome.kind == answers.RAISED:
            action.pace.pool_call_ended(outcome.wall, outcome.cpu, outcome.waits)
            name = f"{action.app}/{action.definition.id}"
            log.error(
                "action %s failed on %s:\n%s", name, stage.name, outcome.trace or outcome.error
            )
        return self._failed(action, stage, outcome.kind, outcome.error, limit)

    def _check_answer(
        self, action: LiveAction, stage: StageTable, response: HTTPResponse
    ) -> str | None:
        """The log's note on an answer that breaks its declared response (None: it
        holds). The answer goes out unchanged."""
        assert action.contract is not None
        violations = action.contract.check_response(
            response.status, response.content_type, bytes(response.body or b"")
        )
        if not violations:
            return None
        note = answers.contract_error(answers.RESPONSE_CONTRACT, violations)
        name = f"{action.app}/{action.definition.id}"
        log.warning("action %s on %s answered outside its contract: %s", name, stage.name, note)
        return note

    def _failed(
        self, action: LiveAction, stage: StageTable, kind: str, error: str | None, limit: float
    ) -> tuple[HTTPResponse, str]:
        """The answer to a call that gave none of its own, and its log entry's error."""
        name = f"{action.app}/{action.definition.id}"
        memory = self.live.settings.get("action_memory_limit")
        answer, why = answers.failed_call(
            kind, name, error, limit=limit, memory_mb=memory, debug=stage.debug
        )
        if kind != answers.RAISED:
            log.warning("action %s on %s: %s", name, stage.name, why)
        return to_response(answer), why

    # -- the request log ----------------------------------------------------------------

    def take_log(self) -> list[Any]:
        """The buffered log entries (recordings joined), the buffer emptied."""
        pending, self._pending_log = self._pending_log, []
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        joined = self._hooks.attach(pending, self.live.request_timeout)
        traced = self._traced
        if not traced:
            return joined
        if not self.live.tracing:
            traced.clear()
            return joined
        # the trace after the recorded request (None where there is none): index 10
        return [
            (*e[:9], e[9] if len(e) > 9 else None, traced.pop(e[0], [None, ()])) for e in joined
        ]

    def flush(self) -> None:
        """Send the buffered entries to the supervisor (on the loop)."""
        entries = self.take_log()
        if entries:
            asyncio.get_running_loop().create_task(self._send_log(entries))

    def __repr__(self) -> str:
        return f"<Dispatcher generation {self.live.generation}, {self.pool!r}>"
