"""Replaying a recorded call: run it again on the deployment that answered it and on
another version, and compare the two answers.

A call is recorded when its stage records requests (``record_requests_dev`` /
``record_requests_prod``; ``domain.recording``). ``replay`` finds the definition the call
reached in each version by routing its method and path as the server did, and runs it as
the Test tab runs a definition (``ActionRunner.test``: a sandboxed process, no server,
no key check). The
versions: ``"saved"`` (what is saved now), ``"dev"`` / ``"prod"`` (what that stage
serves now for the application) or a deployment ID of the same application.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..domain.models import Definition, Stage
from ..domain.routing import RouteTable
from ..errors import NotFoundError, ValidationError
from ..store.store import Store
from .publishing import snapshot_definitions

if TYPE_CHECKING:
    from ..domain.test_runs import Invocation

__all__ = ["LoggedCall", "Replay", "logged_call", "recorded_call", "replay"]

#: Headers a logged call does not carry into the Test tab: the transport's, and the
#: credentials (recorded redacted; the Test tab adds the stage's key itself).
_NOT_CARRIED = frozenset(
    {"host", "content-length", "connection", "transfer-encoding", "accept-encoding"}
)


@dataclass(frozen=True)
class Replay:
    """Two answers to one recorded call: ``before`` from the deployment that answered it
    (``before_version``), ``after`` from ``after_version``; ``diff`` is a unified diff of
    the two (status line, headers, body), empty when they are the same."""

    entry_id: int
    app: str
    api_id: str
    before_version: str
    after_version: str
    before: Invocation
    after: Invocation
    diff: str
    truncated: bool  # the recorded body was cut to record_max_bytes

    @property
    def same(self) -> bool:
        return not self.diff

    def to_dict(self) -> dict[str, Any]:
        def answer(run: Invocation) -> dict[str, Any]:
            return {"status": run.status, "headers": run.headers, "body": run.text}

        return {
            "entry_id": self.entry_id,
            "app": self.app,
            "api_id": self.api_id,
            "before_version": self.before_version,
            "after_version": self.after_version,
            "before": answer(self.before),
            "after": answer(self.after),
            "same": self.same,
            "diff": self.diff,
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class LoggedCall:
    """A recorded call as the Test tab takes it: the saved definition its path reaches
    now, with the path parameters, query, headers and body it was called with."""

    entry_id: int
    app: str
    api_id: str
    path_parameters: dict[str, str]
    query: str
    headers: dict[str, str]
    body: str
    truncated: bool


def logged_call(store: Store, entry_id: int) -> LoggedCall:
    """Recorded call ``entry_id`` aimed at the saved definition its path reaches."""
    from ..domain.recording import REDACTED_HEADERS

    request = recorded_call(store, entry_id)["request"]
    app = request["path"].split("/")[2] if request["path"].count("/") > 1 else ""
    definition, params = _route(
        app, store.list_definitions(app), request["method"], request["path"], "saved"
    )
    skipped = _NOT_CARRIED | REDACTED_HEADERS
    return LoggedCall(
        entry_id,
        app,
        definition.id,
        params,
        request["query"],
        {name: value for name, value in request["headers"] if name.lower() not in skipped},
        bytes(request["body"]).decode("utf-8", "replace"),
        bool(request["truncated"]),
    )


def recorded_call(store: Store, entry_id: int) -> dict[str, Any]:
    """The log entry ``entry_id`` with its recorded request, or a clear refusal."""
    entry = store.request_log_entry(entry_id)
    if entry is None:
        raise NotFoundError(
            f"no request-log entry {entry_id}; the log keeps the newest request_log_size "
            f"requests ('notebook-kit logs' lists them)"
        )
    if entry["request"] is None:
        stage = entry["stage"] if entry["stage"] in ("dev", "prod") else "dev|prod"
        raise ValidationError(
            f"request-log entry {entry_id} was not recorded (turn record_requests_{stage} "
            f"on to record calls)",
            field="entry",
        )
    return entry


def _version(store: Store, app: str, against: str | int) -> tuple[str, list[Definition]]:
    """A label and the definitions of version ``against`` of ``app``."""
    text = str(against).strip()
    if text == "saved":
        return "saved", store.list_definitions(app)
    if text in ("dev", "prod"):
        deployment = store.live_deployment_id(Stage(text), app)
        if deployment is None:
            raise NotFoundError(f"{app} is not deployed to {text}")
        return f"{text} (deployment {deployment})", _deployed(store, app, deployment)
    if not text.isdigit():
        raise ValidationError(
            f"replay against 'saved', 'dev', 'prod' or a deployment ID, not {against!r}",
            field="against",
        )
    return f"deployment {text}", _deployed(store, app, int(text))


def _deployed(store: Store, app: str, deployment_id: int) -> list[Definition]:
    found = store.get_deployment(deployment_id)
    if found is None or found[0].app != app:
        raise NotFoundError(f"no deployment {deployment_id} of {app}")
    return snapshot_definitions(found[1])


def _route(
    app: str, definitions: list[Definition], method: str, path: str, version: str
) -> tuple[Definition, dict[str, str]]:
    """The definition ``method path`` reaches in a version, and its path parameters."""
    table = RouteTable((app, d, d) for d in definitions)
    parts = [unquote(p) for p in path.split("/")[2:]]
    if len(parts) > 1 and not parts[-1]:
        parts.pop()
    found = table.match(method, parts)
    if found is None or found.endpoint is None:
        raise NotFoundError(f"{method} {path} reaches no definition in {version}")
    return found.endpoint, dict(found.params)


def _wire(run: Invocation) -> list[str]:
    """An answer as lines to compare: the status, the headers, the body (JSON indented)."""
    try:
        body = json.dumps(run.json(), indent=2, sort_keys=True)
    except ValueError:
        body = run.text
    headers = [f"{name}: {value}" for name, value in sorted(run.headers.items())]
    return [f"status {run.status}", *headers, "", *body.splitlines()]


def replay(
    store: Store,
    run: Callable[..., Invocation],
    entry_id: int,
    against: str | int = "saved",
) -> Replay:
    """Run recorded call ``entry_id`` on the deployment that answered it and on
    ``against`` (each with ``run``: ``ActionRunner.test``); both answers and their diff."""
    entry = recorded_call(store, entry_id)
    request = entry["request"]
    parts = request["path"].split("/")
    app = parts[2] if len(parts) > 2 else ""
    if entry["deployment"] is None:
        raise ValidationError(
            f"request-log entry {entry_id} reached no deployed application", field="entry"
        )
    before_version = f"deployment {entry['deployment']}"
    before_defs = _deployed(store, app, entry["deployment"])
    after_version, after_defs = _version(store, app, against)
    method, path = request["method"], request["path"]
    call = {
        "query": request["query"],
        "headers": dict(request["headers"]),
        "body": request["body"],
        # the secrets of the stage it was called on
        "secrets_stage": entry["stage"] if entry["stage"] in ("dev", "prod") else "dev",
    }
    runs = []
    api_id = ""
    for version, definitions in ((before_version, before_defs), (after_version, after_defs)):
        definition, params = _route(app, definitions, method, path, version)
        api_id = api_id or definition.id
        runs.append(run(definition, path_parameters=params, **call))
    diff = "\n".join(
        difflib.unified_diff(
            _wire(runs[0]), _wire(runs[1]), before_version, after_version, lineterm=""
        )
    )
    return Replay(
        entry_id,
        app,
        api_id,
        before_version,
        after_version,
        runs[0],
        runs[1],
        diff,
        bool(request["truncated"]),
    )
