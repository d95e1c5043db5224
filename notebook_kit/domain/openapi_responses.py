"""The responses of one operation in an OpenAPI document: what its action can answer and
what the runtime answers itself, declared where each can happen.

The action's statuses:

- 200, what an action answers when it does not set ``res.statusCode``;
- every status the action (or its user functions) assigns literally, as in
  ``res.statusCode = 404`` (found by reading the source, not by running it); a status
  computed at run time adds a ``default`` response, because it could be anything;
- every status its contract declares (``domain.contracts``), with the declared media type,
  schema and description.

The runtime's own answers (``domain.answers``; JSON ``{"message": ...}`` readable from
any origin), each a ``components.responses`` entry the operation refers to:

- everywhere: 400 (a malformed request head), 404 (the application is no longer
  deployed), 408 (the head or the body came too slowly), 414 and 431 (a target or a head
  too large), 429 (a rate limit; ``Retry-After``), 500 (the action raised), 502 (its
  process died), 503 (every action process busy; ``Retry-After``), 504 (past its time
  limit);
- 403 where the definition requires the ``x-api-key`` header;
- 413 where a body may be sent (POST, PUT, DELETE);
- 422 where the contract declares parameters or a body: an RFC 9457 problem listing every
  violation.

Where the action and the runtime can give one status, the response says both: both
descriptions, each media type, and where they share a JSON media type, either body.
405 is no operation's response: it answers the methods a path does *not* declare.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from .contracts import BODY_METHODS, ResponseSpec, is_json_media_type, media_type_of
from .models import Definition

__all__ = [
    "MESSAGE_SCHEMA",
    "PROBLEM_SCHEMA",
    "RUNTIME_ANSWERS",
    "action_statuses",
    "component_responses",
    "operation_responses",
]

# Turns a contract's schema into the document's (its $defs moved to components.schemas).
Hoist = Callable[[Mapping[str, Any], str], dict[str, Any]]

_RETRY_AFTER = {
    "Retry-After": {
        "description": "Whole seconds to wait before calling again.",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    }
}
_RATE_LIMIT = {
    "RateLimit-Policy": {
        "description": "A limited consumer's limits (docs/consumers.md).",
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": "What is left of each of a limited consumer's limits.",
        "schema": {"type": "string"},
    },
}
# status: (component name, description, headers besides Access-Control-Allow-Origin)
RUNTIME_ANSWERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "400": (
        "BadRequest",
        "Bad Request: the request head is malformed, or its target is not a path.",
        {},
    ),
    "403": (
        "Forbidden",
        "Forbidden: the x-api-key header is missing or is not a key of this stage.",
        {},
    ),
    "404": ("NotFound", "Not Found: the application is not (or no longer) deployed here.", {}),
    "408": (
        "RequestTimeout",
        "Request Timeout: the head or the body did not arrive within the request_timeout setting.",
        {},
    ),
    "413": ("ContentTooLarge", "The body is larger than the max_body_bytes setting.", {}),
    "414": ("URITooLong", "URI Too Long: the target alone fills the request head's limit.", {}),
    "422": (
        "UnprocessableContent",
        "Unprocessable Content: the request breaks the definition's contract; the action "
        "did not run. Every violation is listed.",
        {},
    ),
    "429": (
        "TooManyRequests",
        "Too Many Requests: past the stage's rate limit, or a consumer's limits.",
        {**_RETRY_AFTER, **_RATE_LIMIT},
    ),
    "431": (
        "RequestHeaderFieldsTooLarge",
        "Request Header Fields Too Large: the request head is longer than its limit.",
        {},
    ),
    "500": (
        "InternalServerError",
        "Internal server error: the action raised (or used more memory than its limit). "
        "On dev the body also carries `error`, the exception's type and message.",
        {},
    ),
    "502": (
        "BadGateway",
        "Bad Gateway: the process running the action ended before it answered.",
        {},
    ),
    "503": (
        "ServiceUnavailable",
        "Service Unavailable: every action process this server may use is busy.",
        dict(_RETRY_AFTER),
    ),
    "504": (
        "GatewayTimeout",
        "Gateway Timeout: the action ran past its time limit. On dev the body names the "
        "action and its timeoutSeconds.",
        {},
    ),
}
_EVERYWHERE = ("400", "404", "408", "414", "429", "431", "500", "502", "503", "504")
_NO_CONTENT = frozenset({"204", "304"})

MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The body of the answers the runtime gives itself.",
    "required": ["message"],
    "properties": {
        "message": {"type": "string"},
        "error": {"type": "string", "description": "On dev: why the call failed."},
        "action": {"type": "string", "description": "On dev: the action (app/id)."},
        "timeoutSeconds": {"type": "number", "description": "On dev: the time limit."},
    },
}
PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An RFC 9457 problem: the request and every way it breaks the contract.",
    "required": ["type", "title", "status", "detail", "errors"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["in", "pointer", "rule", "message"],
                "properties": {
                    "in": {"type": "string", "enum": ["body", "query", "header", "path"]},
                    "pointer": {
                        "type": "string",
                        "description": "A JSON pointer into the body, or to the parameter.",
                    },
                    "rule": {
                        "type": "string",
                        "description": "The JSON Schema keyword that failed.",
                    },
                    "message": {"type": "string"},
                },
            },
        },
    },
}
_SCHEMA_REF = "#/components/schemas/"
_MESSAGE_REF = {"$ref": _SCHEMA_REF + "RuntimeMessage"}
_PROBLEM_REF = {"$ref": _SCHEMA_REF + "Problem"}


def action_statuses(*sources: str) -> tuple[set[int], bool]:
    """The status codes the sources assign to ``<x>.statusCode`` as integer literals, and
    whether any assignment computes its value (so the status cannot be known ahead)."""
    literal: set[int] = set()
    computed = False
    for source in sources:
        if not source.strip():
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:  # deployed sources always compile; be safe anyway
            return literal, True
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                targets, value = [node.target], None
            else:
                continue
            if not any(isinstance(t, ast.Attribute) and t.attr == "statusCode" for t in targets):
                continue
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, int)
                and not isinstance(value.value, bool)
                and 100 <= value.value <= 599
            ):
                literal.add(value.value)
            else:
                computed = True
    return literal, computed


def _runtime_content(status: str) -> dict[str, Any]:
    if status == "422":
        return {"application/problem+json": {"schema": dict(_PROBLEM_REF)}}
    return {"application/json": {"schema": dict(_MESSAGE_REF)}}


def component_responses() -> dict[str, Any]:
    """``components.responses``: each answer the runtime gives itself."""
    cors = {
        "Access-Control-Allow-Origin": {
            "description": "Always `*` on the runtime's own answers.",
            "schema": {"type": "string", "const": "*"},
        }
    }
    return {
        name: {
            "description": description,
            "headers": {**cors, **headers},
            "content": _runtime_content(status),
        }
        for status, (name, description, headers) in RUNTIME_ANSWERS.items()
    }


def _undeclared(media_type: str) -> dict[str, Any]:
    """An answer of ``media_type`` without a declared schema: any JSON, any text, or
    (another media type) no schema at all. Clients then read JSON and text answers."""
    if is_json_media_type(media_type):
        return {"schema": {}}
    if media_type.startswith("text/"):
        return {"schema": {"type": "string"}}
    return {}


def _action_response(
    definition: Definition, status: str, spec: ResponseSpec | None, hoist: Hoist
) -> dict[str, Any]:
    """What the action answers with ``status``: the contract's declaration where it has
    one, else the definition's content type, without a schema."""
    if status == "200":
        default = "Success: the action's answer (200 unless it sets res.statusCode)."
    elif status == "default":
        default = "Any other status: the action computes res.statusCode at run time."
    else:
        default = "Set by the action."
    response: dict[str, Any] = {"description": (spec.description if spec else "") or default}
    if status in _NO_CONTENT:
        return response
    media_type = spec.media_type if spec is not None else None
    if media_type is not None and spec is not None:
        where = f"{definition.id}.response{status.capitalize()}"
        response["content"] = {
            media_type: _undeclared(media_type)
            if spec.schema is None
            else {"schema": hoist(spec.schema, where)}
        }
    elif definition.content_type is not None:
        media_type = media_type_of(definition.content_type)
        response["content"] = {media_type: _undeclared(media_type)}
    else:
        response["description"] += " The action chooses the content type."
    return response


def _merge(action: dict[str, Any], status: str) -> dict[str, Any]:
    """One status both the action and the runtime can give: both descriptions and media
    types; where both send JSON of one media type, either body."""
    content = _runtime_content(status)
    for media_type, declared in action.get("content", {}).items():
        if media_type not in content:
            content[media_type] = declared
        elif declared.get("schema") and is_json_media_type(media_type):
            content[media_type] = {
                "schema": {"anyOf": [declared["schema"], content[media_type]["schema"]]}
            }
        else:
            content[media_type] = dict(declared)  # the action's body may be anything
    runtime = RUNTIME_ANSWERS[status][1]
    return {
        "description": f"{action['description']} Or, from the runtime: {runtime}",
        "content": content,
    }


def _runtime_statuses(definition: Definition) -> list[str]:
    statuses = list(_EVERYWHERE)
    if definition.requires_auth:
        statuses.append("403")
    if definition.method in BODY_METHODS:
        statuses.append("413")
    if definition.contract.checks_requests:
        statuses.append("422")
    return statuses


def operation_responses(definition: Definition, hoist: Hoist) -> dict[str, Any]:
    """The ``responses`` of ``definition``'s operation, sorted by status (default last)."""
    literal, computed = action_statuses(definition.action, definition.functions)
    contract = definition.contract
    statuses = {"200", *(str(s) for s in literal), *(r.status for r in contract.responses)}
    if computed:
        statuses.add("default")
    responses = {
        status: _action_response(definition, status, contract.response(status), hoist)
        for status in statuses
    }
    for status in _runtime_statuses(definition):
        if status in responses:
            responses[status] = _merge(responses[status], status)
        else:
            responses[status] = {"$ref": f"#/components/responses/{RUNTIME_ANSWERS[status][0]}"}
    return dict(sorted(responses.items(), key=lambda item: (item[0] == "default", item[0])))
