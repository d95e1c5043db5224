"""An action process: runs the calls it is handed, one at a time, for one application.

It is forked by the zygote, confined (``confine``) before anything else, and then loops
on its *calls* channel:

* ``{"op": "run", "key": K, ...}`` + the request body: run the code ``K`` names on that
  request and answer with the ``Outcome`` (its body as the payload);
* ``{"op": "load", "keys": [...]}``: compile each (its user functions run once) and say,
  one message per key, whether it loaded; then ``{"done": true}``.

The code for a key comes from the trusted side over the *service* channel (never from
whoever sends the calls: an HTTP worker runs other applications' actions and must not be
able to hand this process code). It is compiled once and kept. An action that exhausts
the memory limit gets ``MEMORY`` and the process ends after answering (what it leaves
behind is not worth trusting); so does one whose process state is broken beyond a
Python exception. The channel closing ends the process.

The trusted side hands an application's secrets with its code (``secrets`` in the
action's namespace; an empty one when there are none). Every value this process was
handed is taken out (``domain.secrets.redact``) of each error, traceback and printed
line before they leave it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import os
import resource
import socket
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from ...builtins import outbound, presign
from ...builtins.context import BuiltinContext
from ...builtins.environment import ActionEnvironment
from ...builtins.failures import take_failure
from ...domain.actions import CompiledAction, compile_action
from ...domain.messages import ActionRequest, ActionResponse, render_response
from ...domain.models import Definition
from ...domain.secrets import Secrets, redact
from ..outcome import MEMORY, OK, RAISED, Outcome, request_of
from ..protocol import ChannelClosed, receive, send
from .service_link import ServiceLink

__all__ = ["ActionProcess", "execute", "serve_calls"]


class _Origin:
    """What ``fn.getPresignedUrl`` reads of the request being answered."""

    __slots__ = ("host", "scheme")

    def __init__(self, base: str) -> None:
        self.scheme, _, self.host = base.partition("://")


def execute(
    action: CompiledAction,
    req: ActionRequest,
    loop: asyncio.AbstractEventLoop | None = None,
    capture: bool = False,
) -> Outcome:
    """Run ``action`` on ``req`` here and now: what the caller gets, as an ``Outcome``
    (``loop`` runs an async action; ``capture`` keeps what it prints)."""
    res = ActionResponse(action.content_type)
    printed = io.StringIO() if capture else None
    waits = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    cpu, wall = time.process_time(), time.perf_counter()
    take_failure()  # a note left by code run outside a call is not this call's
    outbound.take()  # so are outbound calls made outside one
    try:
        with contextlib.redirect_stdout(printed) if printed is not None else _nothing():
            if action.is_async:
                runner = loop if loop is not None else asyncio.new_event_loop()
                runner.run_until_complete(action.run(req, res))
            else:
                action.run(req, res)
        status, headers, body, content_type = render_response(res)
    except MemoryError:
        take_failure()
        return Outcome(MEMORY, stdout=_text(printed))
    except Exception as exc:
        take_failure()  # the error raised names what failed
        return Outcome(
            RAISED,
            error=f"{type(exc).__name__}: {exc}",
            trace="".join(traceback.format_exception(exc)),
            stdout=_text(printed),
            cpu=time.process_time() - cpu,
            wall=time.perf_counter() - wall,
            waits=resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - waits,
            calls=tuple(map(tuple, outbound.take())),
        )
    return Outcome(
        OK,
        status,
        tuple((str(n), str(v)) for n, v in headers.items()),
        body,
        content_type,
        error=take_failure(),  # a built-in's error the action caught, for the log
        stdout=_text(printed),
        cpu=time.process_time() - cpu,
        wall=time.perf_counter() - wall,
        waits=resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - waits,
        calls=tuple(map(tuple, outbound.take())),
    )


@contextlib.contextmanager
def _nothing() -> Any:
    yield


def _text(printed: io.StringIO | None) -> str:
    return printed.getvalue() if printed is not None else ""


class ActionProcess:
    """The state of one action process: its environment, the code it compiled."""

    def __init__(self, home: Path, settings: Mapping[str, Any], link: ServiceLink) -> None:
        self.link = link
        self.settings = dict(settings)
        outbound.record(bool(self.settings.get("tracing")))  # its settings are its own
        context = BuiltinContext(home, lambda: self.settings, link)
        self.environment = ActionEnvironment(context)
        self.compiled: dict[str, CompiledAction] = {}
        self.loop = asyncio.new_event_loop()
        self.held: dict[tuple[str, str], None] = {}  # (name, value) of every secret handed

    def action(self, key: str) -> CompiledAction:
        """The compiled code of ``key``, asked for and compiled on first use."""
        found = self.compiled.get(key)
        if found is None:
            body, values = self.link.code_and_secrets(key)
            definition = Definition.from_dict(body)
            self.held.update(dict.fromkeys(values.items()))
            env = {**self.environment.names(), "secrets": Secrets(values, definition.app)}
            found = self.compiled[key] = compile_action(definition, env)
        return found

    def redacted(self, outcome: Outcome) -> Outcome:
        """``outcome`` with every secret value this process holds taken out of its error,
        traceback and printed lines."""
        if not self.held or not (outcome.error or outcome.trace or outcome.stdout):
            return outcome
        pairs = list(self.held)
        return dataclasses.replace(
            outcome,
            error=redact(outcome.error, pairs) if outcome.error else outcome.error,
            trace=redact(outcome.trace, pairs) if outcome.trace else outcome.trace,
            stdout=redact(outcome.stdout, pairs) if outcome.stdout else outcome.stdout,
        )

    def run(self, header: Mapping[str, Any], body: bytes) -> Outcome:
        """One ``run`` message."""
        req = request_of(header, body)
        base = header.get("base")
        presign.set_current_request(_Origin(base) if isinstance(base, str) else None)
        try:
            action = self.action(str(header.get("key")))
        except MemoryError:
            return Outcome(MEMORY)
        except Exception as exc:  # the code did not load (a syntax error, user functions)
            return self.redacted(Outcome(RAISED, error=f"{type(exc).__name__}: {exc}"))
        outcome = execute(action, req, self.loop, capture=bool(header.get("capture")))
        return self.redacted(outcome)

    def load(self, calls: socket.socket, keys: list[Any]) -> None:
        """One ``load`` message: compile each key, answering as each is done."""
        for key in keys:
            try:
                self.action(str(key))
                send(calls, {"loaded": key, "error": None})
            except MemoryError:
                send(calls, {"loaded": key, "error": "MemoryError: past the memory limit"})
                raise
            except Exception as exc:
                send(calls, {"loaded": key, "error": redact(f"{exc}", list(self.held))})
        send(calls, {"done": True})


def serve_calls(
    calls: socket.socket, services: socket.socket, home: Path, settings: Mapping[str, Any]
) -> NoReturn:
    """The process's loop (see the module docstring); it never returns."""
    process = ActionProcess(home, settings, ServiceLink(services))
    while True:
        try:
            message = receive(calls)
        except ChannelClosed:
            os._exit(0)
        header, body = message.header, message.payload
        try:
            if header.get("op") == "load":
                process.load(calls, list(header.get("keys") or ()))
                continue
            outcome = process.run(header, body)
            send(calls, outcome.to_header(), outcome.body)
        except ChannelClosed:
            os._exit(0)
        except MemoryError:
            with contextlib.suppress(Exception):
                send(calls, Outcome(MEMORY).to_header())
            os._exit(1)
        if outcome.kind == MEMORY:
            os._exit(1)
