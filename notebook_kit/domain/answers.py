"""Every HTTP answer notebook_kit decides itself, in one place, without a web framework.

An action's own answer is what it set on ``res``. Everything else a caller can get, the
server decides here: a path or method that is not served, a missing key, a rate limit,
a head or body too large or too slow, a request that breaks its contract (422, an RFC
9457 problem), a full queue, and how an action call that did not
answer ends (it raised, ran past its time or memory limit, or its process died). The
Test tab and ``ws.invoke`` show the same answers a dev caller would get.

Each is JSON ``{"message": ...}`` (the 422: a problem document) with
``Access-Control-Allow-Origin: *``, so a browser caller on any origin reads the real
error; on a debug stage (dev, test runs) an action's failure also says which action and
why. Domain errors map to statuses in ``error_status`` and only there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import ConflictError, NotFoundError, ValidationError

if TYPE_CHECKING:
    from .contract_checks import Violation

__all__ = [
    "CAUGHT_ERROR",
    "CORS",
    "CRASHED",
    "MEMORY",
    "OK",
    "RAISED",
    "REJECTED",
    "REQUEST_CONTRACT",
    "RESPONSE_CONTRACT",
    "TIMED_OUT",
    "TIMEOUT_ERROR",
    "Answer",
    "asterisk",
    "bad_request",
    "busy",
    "contract_error",
    "error_status",
    "failed_call",
    "file",
    "file_preflight",
    "file_stored",
    "file_too_large",
    "forbidden",
    "header_fields_too_large",
    "limit_text",
    "message",
    "method_not_allowed",
    "not_found",
    "refusal",
    "request_timeout",
    "server_error",
    "too_large",
    "too_many",
    "unprocessable",
    "uri_too_long",
]

CORS = {"Access-Control-Allow-Origin": "*"}

# How an action call ended (``sandbox.outcome.Outcome.kind``); a test run may also end
# ``REJECTED``: its request broke its contract, so the action did not run (a 422).
OK, RAISED, TIMED_OUT, MEMORY, CRASHED = "ok", "raised", "timed_out", "memory", "crashed"
REJECTED = "rejected"

# How a request-log entry's error starts when the action ran past its time limit.
TIMEOUT_ERROR = "ActionTimeout"
# ... when the request broke its contract (a 422, the action did not run), and when the
# answer broke the declared response (logged, the answer unchanged; not an error of the
# action's counters).
REQUEST_CONTRACT, RESPONSE_CONTRACT = "RequestContract", "ResponseContract"
# ... when a built-in failed under an action that caught its error and answered (the
# sample's lookup answers 500 "System error." when its table is missing): the log says
# what failed; not an error of the action's counters, as the action answered.
CAUGHT_ERROR = "Caught"

# Domain refusals a caller caused; anything else is the server's fault (500).
_ERROR_STATUS = ((ValidationError, 400), (NotFoundError, 404), (ConflictError, 409))


class Answer(NamedTuple):
    """An HTTP answer as plain parts."""

    status: int
    headers: dict[str, str]
    body: bytes
    content_type: str | None


def message(
    status: int,
    text: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Answer:
    """JSON ``{"message": text, **extra}`` that a browser on any origin may read."""
    body = json.dumps({"message": text, **(extra or {})}).encode()
    return Answer(status, {**CORS, **(headers or {})}, body, "application/json")


def error_status(exc: BaseException) -> int | None:
    """The status of a domain refusal (400, 404, 409), or None for an unexpected error."""
    return next((status for kind, status in _ERROR_STATUS if isinstance(exc, kind)), None)


def limit_text(limit: float) -> str:
    """``timed out after 2 s`` (whole seconds without a fraction)."""
    seconds = int(limit) if limit == int(limit) else limit
    return f"timed out after {seconds} s"


# -- what the server answers before or instead of an action ---------------------------


def not_found() -> Answer:
    return message(404, "Not Found")


def method_not_allowed(allowed: list[str] | tuple[str, ...]) -> Answer:
    return message(405, "Method Not Allowed", {"Allow": ", ".join(allowed)})


def forbidden(reason: str = "") -> Answer:
    return message(403, f"Forbidden: {reason}" if reason else "Forbidden")


def too_many(retry_after: str, headers: Mapping[str, str] | None = None) -> Answer:
    """A call past a limit; ``headers``: a consumer's RateLimit fields (docs/consumers.md)."""
    return message(429, "Too Many Requests", {**(headers or {}), "Retry-After": retry_after})


def unprocessable(action: str, violations: Sequence[Violation]) -> Answer:
    """A request that breaks its definition's contract (domain.contracts): 422, an RFC 9457
    problem listing every violation, readable by a browser on any origin."""
    count = len(violations)
    body = {
        "type": "about:blank",
        "title": "Unprocessable Content",
        "status": 422,
        "detail": f"The request does not match the contract of {action}: "
        f"{count} violation{'' if count == 1 else 's'}.",
        "errors": [v.to_dict() for v in violations],
    }
    return Answer(422, dict(CORS), json.dumps(body).encode(), "application/problem+json")


def contract_error(kind: str, violations: Sequence[Violation]) -> str:
    """The request log's error for a call outside its contract: ``kind`` and every
    violation, one after the other."""
    return f"{kind}: " + "; ".join(str(v) for v in violations)


def busy() -> Answer:
    """Every action process this worker may use is busy, and stayed busy a second."""
    return message(503, "Too many requests in flight", {"Retry-After": "1"})


def too_large(limit: int) -> Answer:
    return message(413, f"Request body is larger than {limit} bytes")


def uri_too_long(limit: int) -> Answer:
    """A request target so long that the request line alone fills the head's limit."""
    return message(
        414,
        f"URI Too Long: the request target is longer than a request head's limit ({limit} bytes)",
    )


def header_fields_too_large(limit: int) -> Answer:
    """A head (request line and header fields) larger than its limit."""
    return message(
        431,
        "Request Header Fields Too Large: the request head is longer than its limit "
        f"({limit} bytes)",
    )


def request_timeout() -> Answer:
    return message(408, "Request Timeout")


def bad_request(text: str = "Bad Request", status: int = 400) -> Answer:
    """A request the server cannot read (a malformed head, a path that is not one)."""
    return message(status, text or "Bad Request")


def server_error() -> Answer:
    return message(500, "Internal server error")


def refusal(exc: BaseException) -> Answer | None:
    """A domain refusal as its answer (``error_status``), or None for anything else."""
    status = error_status(exc)
    return None if status is None else message(status, str(exc))


# -- presigned file links (``/_files/``) ---------------------------------------------

# A served file may be HTML someone uploaded: never let it script this origin.
_FILE_HEADERS = {
    **CORS,
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox",
    "Cache-Control": "private, no-store",
}


def file_preflight() -> Answer:
    allow = {"Access-Control-Allow-Methods": "GET, PUT, OPTIONS"}
    return Answer(204, {**CORS, **allow, "Access-Control-Allow-Headers": "content-type"}, b"", None)


def file(data: bytes, content_type: str, disposition: str | None) -> Answer:
    headers = dict(_FILE_HEADERS)
    if disposition:
        headers["Content-Disposition"] = disposition
    return Answer(200, headers, data, content_type)


def file_too_large(limit: int) -> Answer:
    return message(413, f"The file is larger than {limit} bytes")


def file_stored(info: bytes, created: bool) -> Answer:
    """A file a presigned PUT stored: 201 when it is new, 200 when it replaced one."""
    return Answer(201 if created else 200, dict(CORS), info, "application/json")


def asterisk(method: str) -> Answer:
    """``OPTIONS *`` (RFC 9110 9.3.7): 200 with the methods served; another method: 400."""
    if method == "OPTIONS":
        return message(200, "OK", {"Allow": "GET, HEAD, POST, PUT, DELETE, OPTIONS"})
    return bad_request()


# -- an action call that did not answer ---------------------------------------------


def failed_call(
    kind: str,
    action: str,
    error: str | None,
    *,
    limit: float,
    memory_mb: int | None,
    debug: bool,
) -> tuple[Answer, str]:
    """The answer to a call of ``action`` (``app/id``) that ended ``kind`` and the error
    text its request-log entry keeps. ``debug`` (dev, a test run): the answer says why."""
    if kind == TIMED_OUT:
        seconds = int(limit) if limit == int(limit) else limit
        extra = {"action": action, "timeoutSeconds": seconds} if debug else {}
        answer = message(504, "Endpoint request timed out", extra=extra)
        return answer, f"{TIMEOUT_ERROR}: {limit_text(limit)}"
    if kind == MEMORY:
        text = f"the action used more memory than its limit ({memory_mb} MiB)"
        extra = {"action": action, "error": f"MemoryError: {text}"} if debug else {}
        return message(500, f"Internal server error: {text}", extra=extra), f"MemoryError: {text}"
    if kind == CRASHED:
        text = f"the process running {action} ended before it answered"
        why = f"{text}: {error}" if error else text
        return message(502, f"Bad Gateway: {text}", extra={"error": why} if debug else {}), why
    why = error or "the action failed"
    return message(500, "Internal server error", extra={"error": why} if debug else {}), why
