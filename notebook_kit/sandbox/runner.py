"""Running action code for the trusted side: the Test tab, ``ws.invoke``, examples at
deploy and in ``check``, replay, and the load check a deploy makes.

``ActionRunner`` runs each call in a *fresh* action process forked from this process's
zygote (``processes.zygote``), confined by the runner's plan: a test run of one draft
leaves nothing behind for the next. While the call runs, the runner answers what the
process asks over its service channel (the code it is to run; the built-ins that need
the store), and at the limit it kills the process: the call ends ``TIMED_OUT`` ("timed
out after 2 s"), whatever the action was doing, and the notebook or the command line
goes on. The same limits, the same confinement and the same built-ins as a call to a
server (``runtime``).

An application's secrets reach its test runs as ``secrets``: the *current* values of one
stage (``secrets_stage``: dev unless the caller says otherwise; a deploy's examples and
load check use the stage deployed to, a replay the stage the call was recorded on),
handed with the code to that application's process only.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..builtins.services import Services, answer
from ..domain.actions import check_sources
from ..domain.answers import (
    CRASHED,
    REJECTED,
    REQUEST_CONTRACT,
    TIMED_OUT,
    contract_error,
    limit_text,
    unprocessable,
)
from ..domain.contract_checks import compile_contract
from ..domain.messages import ActionRequest
from ..domain.models import Definition
from ..domain.settings import for_actions
from ..domain.test_runs import Invocation, test_request
from .outcome import Outcome, call_header
from .plan import PLAN_SETTINGS, SandboxPlan, plan_for
from .processes import ActionProcessHandle, zygote
from .protocol import ChannelClosed, receive, send

__all__ = ["ActionRunner"]


class ActionRunner:
    """Runs action code in sandboxed processes for the workspace at ``home`` (see the
    module docstring). ``settings()`` gives the settings in force; ``services`` answers
    the built-ins that need the trusted side; ``secrets(app, stage)`` the values of an
    application's secrets on a stage (none by default)."""

    def __init__(
        self,
        home: Path,
        settings: Callable[[], Mapping[str, Any]],
        services: Services,
        secrets: Callable[[str, str], Mapping[str, str]] | None = None,
    ) -> None:
        self.home = home
        self._settings = settings
        self._services = services
        self._secrets = secrets or (lambda app, stage: {})
        self._plan: SandboxPlan | None = None
        self._key: tuple[Any, ...] = ()
        self._lock = threading.Lock()

    def _fork(self, values: Mapping[str, Any], app: str) -> ActionProcessHandle:
        """A fresh action process for ``app``, confined by the plan for the settings in
        force (a new plan when what it depends on changed: the files root, the
        environment database, the memory limit)."""
        key = tuple(values[name] for name in PLAN_SETTINGS)
        with self._lock:
            if self._plan is None or key != self._key:
                if self._plan is not None:
                    self._plan.discard()
                memory = int(values["action_memory_limit"])
                self._plan, self._key = plan_for(self.home, values, memory_mb=memory), key
            plan = self._plan
        return zygote().fork(plan, app, for_actions(values))

    def test(
        self,
        definition: Definition,
        *,
        path_parameters: Mapping[str, str] | None = None,
        query: str | Mapping[str, str] = "",
        headers: Mapping[str, str] | None = None,
        body: str | bytes = "",
        secrets_stage: str = "dev",
    ) -> Invocation:
        """A test run (the Test tab, ``ws.invoke``, an example): ``definition`` on a
        request of stage ``test``, within its time limit, with the secrets of
        ``secrets_stage``. Raises ValidationError for a request it cannot make (a path
        parameter without a value), ActionSyntaxError for sources that do not compile
        (naming the line; checked here, nothing runs). A request that breaks the
        definition's contract gets the 422 a caller would (the action does not run); an
        answer that breaks a declared response says how (``Invocation.contract``)."""
        started = time.perf_counter()
        check_sources(definition.action, definition.functions)
        req = test_request(definition, path_parameters or {}, query, headers or {}, body)
        name = f"{definition.app}/{definition.id}"
        contract = compile_contract(definition.contract)
        if contract is not None and contract.checks_requests:
            violations = contract.check_request(
                req.pathParameters, req.query_string, req.headers, req.raw_body
            )
            if violations:  # the 422 a caller would get: the action does not run
                answer = unprocessable(name, violations)
                elapsed = (time.perf_counter() - started) * 1000
                error = contract_error(REQUEST_CONTRACT, violations)
                return Invocation(
                    answer.status, answer.headers, answer.body, answer.content_type,
                    elapsed, "", error, REJECTED,
                )  # fmt: skip
        values = self._settings()
        limit = definition.timeout or float(values["action_timeout"])
        outcome = self.run(definition, req, limit, values=values, secrets_stage=secrets_stage)
        elapsed = (time.perf_counter() - started) * 1000
        invocation = outcome.invocation(name, limit, values["action_memory_limit"], elapsed)
        if contract is not None and outcome.ok and contract.checks_responses:
            status, content_type = invocation.status, invocation.content_type
            broken = contract.check_response(status, content_type, invocation.body)
            if broken:
                invocation = replace(invocation, contract=tuple(str(v) for v in broken))
        return invocation

    def run(
        self,
        definition: Definition,
        req: ActionRequest,
        limit: float,
        *,
        capture: bool = True,
        base: str | None = None,
        values: Mapping[str, Any] | None = None,
        secrets_stage: str = "dev",
    ) -> Outcome:
        """Run ``definition`` on ``req`` in a fresh action process, for at most ``limit``
        seconds (compiling it included), with the secrets of ``secrets_stage``."""
        values = self._settings() if values is None else values
        held = self._secrets(definition.app, secrets_stage)
        process = self._fork(values, definition.app)
        codes = {"draft": definition}
        try:
            header = call_header(req, "draft", base=base, capture=capture)
            send(process.calls, header, req.raw_body)
            deadline = time.monotonic() + limit
            while True:
                reply = self._next(process, codes, deadline, held)
                if reply is None:
                    return Outcome(TIMED_OUT, error=limit_text(limit))
                return Outcome.from_header(reply.header, reply.payload)
        except ChannelClosed:
            return Outcome(
                CRASHED,
                error=f"the action process of {definition.app}/"
                f"{definition.id} ended before it answered",
            )
        finally:
            process.kill()

    def load(
        self, definitions: Sequence[Definition], secrets_stage: str = "dev"
    ) -> dict[str, str | None]:
        """Compile each definition (its user functions run once, with the secrets of
        ``secrets_stage``) in one action process, each within its time limit: the error
        of each by API ID (None: it loads). One that does not load within its limit fails
        those after it too (never tried)."""
        if not definitions:
            return {}
        held = self._secrets(definitions[0].app, secrets_stage)
        values = self._settings()
        process = self._fork(values, definitions[0].app)
        codes = {d.id: d for d in definitions}
        errors: dict[str, str | None] = {}

        def limit(definition: Definition) -> float:
            return definition.timeout or float(values["action_timeout"])

        try:
            send(process.calls, {"op": "load", "keys": list(codes)})
            for definition in definitions:
                deadline = time.monotonic() + limit(definition)
                reply = self._next(process, codes, deadline, held)
                name = f"{definition.app}/{definition.id}"
                if reply is None:
                    text = limit_text(limit(definition))
                    errors[definition.id] = f"user functions of {name} did not load: {text}"
                    break
                if reply.header.get("loaded") == definition.id:
                    errors[definition.id] = reply.header.get("error")
        except ChannelClosed:
            pass
        finally:
            process.kill()
        for definition in definitions:
            errors.setdefault(definition.id, "not loaded: the action process ended before it")
        return errors

    def _next(
        self,
        process: ActionProcessHandle,
        codes: Mapping[str, Definition],
        deadline: float,
        held: Mapping[str, str],
    ) -> Any:
        """The next message on the calls channel, answering the service channel
        meanwhile (``held``: the secrets handed with the code); None past ``deadline``."""
        calls, services = process.calls, process.services
        poller = select.poll()
        for sock in (calls, services):
            poller.register(sock, select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready = {fd for fd, _ in poller.poll(left * 1000)}
            if services.fileno() in ready:
                with contextlib.suppress(ChannelClosed):
                    request = receive(services).header
                    send(services, self._answer(request, codes, held))
            if calls.fileno() in ready:
                return receive(calls)

    def _answer(
        self,
        request: Mapping[str, Any],
        codes: Mapping[str, Definition],
        held: Mapping[str, str],
    ) -> Any:
        if request.get("op") == "code":
            definition = codes.get(str(request.get("key")))
            if definition is None:
                return {"error": f"no code {request.get('key')!r} here"}
            if held:
                return {"definition": definition.to_dict(), "secrets": dict(held)}
            return {"definition": definition.to_dict()}
        return answer(self._services, request)

    def close(self) -> None:
        """Remove this runner's temporary folder (and what actions left in it)."""
        with self._lock:
            if self._plan is not None:
                self._plan.discard()
                self._plan = None
