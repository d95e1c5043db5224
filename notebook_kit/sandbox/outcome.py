"""One action call as it travels: the request a sandboxed process is handed, and what
became of the call.

``call_header``/``request_of`` carry ``req`` (method, path, stage, headers, path
parameters, query string; the body is the message's payload). ``Outcome`` is every way
a call can end: it answered (``OK``), it raised (``RAISED``), it ran past its limit
(``TIMED_OUT``), past its memory limit (``MEMORY``), or its process died under it
(``CRASHED``). What HTTP answer each becomes is decided in one place,
``domain.answers``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict

from ..domain.answers import CRASHED, MEMORY, OK, RAISED, TIMED_OUT, failed_call
from ..domain.messages import ActionRequest
from ..domain.test_runs import Invocation

__all__ = [
    "CRASHED",
    "MEMORY",
    "OK",
    "RAISED",
    "TIMED_OUT",
    "Outcome",
    "call_header",
    "request_of",
]

_KINDS = frozenset((OK, RAISED, TIMED_OUT, MEMORY, CRASHED))


@dataclass(frozen=True)
class Outcome:
    """How one call ended. ``error`` is one line (``ZeroDivisionError: division by
    zero``, ``timed out after 2 s``); ``trace`` the traceback of an action that raised;
    ``stdout`` what it printed when asked to capture it; ``cpu`` and ``wall`` the
    seconds it used in its process, ``waits`` how often it gave up the CPU to wait
    (sleeping, reading a socket: voluntary context switches)."""

    kind: str
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    content_type: str | None = None
    error: str | None = None
    trace: str | None = None
    stdout: str = ""
    cpu: float = 0.0
    wall: float = 0.0
    waits: int = 0
    calls: tuple[tuple[Any, ...], ...] = ()  # its http and db calls, while tracing (outbound)

    @property
    def ok(self) -> bool:
        return self.kind == OK

    def invocation(
        self, action: str, limit: float, memory_mb: int | None, duration_ms: float
    ) -> Invocation:
        """This outcome as a test run shows it (``action``: ``app/id``): the answer a dev
        caller would get, with the traceback or the reason it did not answer."""
        if self.ok:
            headers = dict(self.headers)
            return Invocation(
                self.status, headers, self.body, self.content_type, duration_ms, self.stdout
            )
        answer, why = failed_call(
            self.kind, action, self.error, limit=limit, memory_mb=memory_mb, debug=True
        )
        return Invocation(
            answer.status,
            answer.headers,
            answer.body,
            answer.content_type,
            duration_ms,
            self.stdout,
            self.trace or why,
            self.kind,
        )

    def to_header(self) -> dict[str, Any]:
        """The message header carrying this outcome (the body is the payload)."""
        return {
            "kind": self.kind,
            "status": self.status,
            "headers": [list(pair) for pair in self.headers],
            "type": self.content_type,
            "error": self.error,
            "trace": self.trace,
            "stdout": self.stdout,
            "cpu": self.cpu,
            "wall": self.wall,
            "waits": self.waits,
            **({"calls": [list(c) for c in self.calls]} if self.calls else {}),
        }

    @classmethod
    def from_header(cls, header: Mapping[str, Any], body: bytes) -> Outcome:
        """An outcome read from a message of a process that may run action code: every
        field is checked, a malformed one makes the call a crash, not an exception."""
        try:
            kind = str(header["kind"])
            status = int(header["status"])
            headers = tuple((str(n), str(v)) for n, v in header.get("headers") or ())
            content_type = header.get("type")
            if kind not in _KINDS or (kind == OK and not 100 <= status <= 599):
                raise ValueError(f"kind {kind!r}, status {status}")
            return cls(
                kind,
                status,
                headers,
                body,
                None if content_type is None else str(content_type),
                None if header.get("error") is None else str(header["error"]),
                None if header.get("trace") is None else str(header["trace"]),
                str(header.get("stdout") or ""),
                float(header.get("cpu") or 0.0),
                float(header.get("wall") or 0.0),
                int(header.get("waits") or 0),
                _calls(header.get("calls")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            return cls(CRASHED, error=f"the action process answered nonsense ({exc})")


def _calls(raw: Any) -> tuple[tuple[Any, ...], ...]:
    """The outbound calls an action process noted, checked field by field (a malformed
    one is dropped): kind, name, started, ended, error, attributes."""
    found = []
    for row in raw if isinstance(raw, list) else ():
        try:
            kind, name, started, ended, error, attributes = row
            found.append(
                (
                    str(kind)[:16],
                    str(name)[:200],
                    float(started),
                    float(ended),
                    None if error is None else str(error)[:300],
                    {str(k)[:64]: v for k, v in dict(attributes).items()
                     if isinstance(v, (str, int, float, bool))},
                )
            )  # fmt: skip
        except (TypeError, ValueError):
            continue
    return tuple(found)


def call_header(req: ActionRequest, key: str, *, base: str | None, capture: bool) -> dict[str, Any]:
    """The header of a ``run`` message for ``req`` (its body goes as the payload);
    ``key`` names the code to run (see ``sandbox.runner``)."""
    return {
        "op": "run",
        "key": key,
        "method": req.httpMethod,
        "path": req.path,
        "stage": req.stage,
        "headers": [[n, v] for n, v in req.headers.items()],
        "params": req.pathParameters,
        "query": req.query_string,
        "base": base,
        "capture": capture,
    }


def request_of(header: Mapping[str, Any], body: bytes) -> ActionRequest:
    """``req`` rebuilt from a ``run`` message."""
    headers: CIMultiDict[str] = CIMultiDict(
        (str(n), str(v)) for n, v in header.get("headers") or ()
    )
    params = header.get("params") or {}
    return ActionRequest(
        str(header.get("method", "")),
        str(header.get("path", "")),
        str(header.get("stage", "")),
        headers,
        {str(k): str(v) for k, v in dict(params).items()},
        str(header.get("query") or ""),
        body,
    )
