"""Test runs: one definition run in this process on one request, timed as a person waits.

The studio's Test, ``ws.invoke`` and ``%%notebook_kit --test`` run the definition as it
is now (saved or being edited) on a request of stage ``test``. The duration covers building
the request, compiling the action and running it: the action alone of a small definition
takes a few microseconds, which is why timing only the call showed "0.0 ms". The runtime's
own latency is in the request log.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict

from ..errors import ValidationError
from .actions import CompiledAction
from .messages import ActionRequest, ActionResponse, render_response
from .models import Definition

__all__ = ["Invocation", "run_test", "test_request"]


@dataclass(frozen=True)
class Invocation:
    """The outcome of a test run: what a caller would get, plus what only a developer sees."""

    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str | None
    duration_ms: float
    stdout: str
    error: str | None = None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)


def _call(action: CompiledAction, req: ActionRequest, res: ActionResponse) -> None:
    if not action.is_async:
        action.run(req, res)
        return
    outcome: list[BaseException] = []

    def in_own_loop() -> None:  # a notebook's thread already runs a loop
        try:
            asyncio.run(action.run(req, res))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=in_own_loop, name="notebook-kit-invoke")
    thread.start()
    thread.join()
    if outcome:
        raise outcome[0]


def run_test(
    compile_definition: Callable[[Definition], CompiledAction],
    definition: Definition,
    path_parameters: Mapping[str, str] | None = None,
    query: str | Mapping[str, str] = "",
    headers: Mapping[str, str] | None = None,
    body: str | bytes = "",
) -> Invocation:
    """Run ``definition`` (saved or not) in this process on a test request, capturing its
    output and any traceback; ``duration_ms`` is the whole run.

    This is the studio's "Test" button: it needs no server and no deploy. Authentication
    is not checked here; the runtime does that. A request without a path parameter's
    value, or a definition that does not compile, is refused (raised), not run.
    """
    started = time.perf_counter()
    req = test_request(definition, path_parameters or {}, query, headers or {}, body)
    action = compile_definition(definition)
    res = ActionResponse(action.content_type)
    printed = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(printed):
            _call(action, req, res)
        status, wire_headers, body, content_type = render_response(res)
        headers = {name: str(value) for name, value in wire_headers.items()}
    except Exception as exc:
        error = "".join(traceback.format_exception(exc))
        status, headers, content_type = 500, {}, "application/json"
        body = json.dumps(
            {"message": "Internal server error", "error": f"{type(exc).__name__}: {exc}"}
        ).encode()
    elapsed = (time.perf_counter() - started) * 1000
    return Invocation(status, headers, body, content_type, elapsed, printed.getvalue(), error)


def test_request(
    definition: Definition,
    path_parameters: Mapping[str, str],
    query: str | Mapping[str, str],
    headers: Mapping[str, str],
    body: str | bytes,
) -> ActionRequest:
    """The ``req`` of a test run (stage ``test``): every path parameter needs a value."""
    from urllib.parse import urlencode

    params = {name: str(path_parameters.get(name, "")) for name in definition.path_parameters}
    missing = [name for name, value in params.items() if not value]
    if missing:
        raise ValidationError(
            f"give a value for the path parameter {{{missing[0]}}}", field="path_parameters"
        )
    resource = "/".join(params[s[1:-1]] if s.startswith("{") else s for s in definition.segments)
    return ActionRequest(
        httpMethod=definition.method,
        path=f"/test/{definition.app}/{resource}",
        stage="test",
        headers=CIMultiDict(headers),
        pathParameters=params,
        query_string=query if isinstance(query, str) else urlencode(query),
        body=body,
    )
