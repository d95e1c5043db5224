"""OpenAPI 3.1 documents for what a stage serves: one document per deployed application.

Pure: built from a deployed snapshot (the application record and its definitions), never
from the saved definitions, so the document describes what callers really reach. The
responses are the ones this runtime can give, and no others:

- 200, the status an action answers with when it does not set ``res.statusCode``;
- every status the action (or its user functions) assigns literally, as in
  ``res.statusCode = 404`` (found by reading the source, not by running it); a status
  computed at run time adds a ``default`` response, because it could be anything;
- 403 where the definition requires the ``x-api-key`` header;
- 404 for every operation: the runtime's answer once the application is no longer
  deployed on the stage (the path no longer exists);
- 413 where a body is accepted (POST, PUT): the body is larger than ``max_body_bytes``;
- 500 for every operation: the action raised (the runtime's own answer).

405 is not an operation's response: the runtime gives it for the methods a documented
path does *not* declare, so it is described in ``components.responses`` and in the
document's description. The runtime never answers 400 itself; a 400 appears only when the
action sets it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from .models import Application, Definition, Stage

__all__ = [
    "OPENAPI_PREFIX",
    "OPENAPI_VERSION",
    "action_statuses",
    "build_document",
    "document_path",
]

OPENAPI_VERSION = "3.1.0"
OPENAPI_PREFIX = "_openapi"  # user URLs start with /dev/ or /prod/: this cannot collide
_BODY_METHODS = frozenset({"POST", "PUT"})
_SCHEME = "apiKey"
_STAGE_WORDS = {Stage.DEV: "debug deploy (dev)", Stage.PROD: "release deploy (prod)"}
_RUNTIME_ANSWERS = {  # status: (component name, description)
    "403": ("Forbidden", "Forbidden: the x-api-key header is missing or is not this stage's key."),
    "404": ("NotFound", "Not Found: the application is not (or no longer) deployed here."),
    "413": ("PayloadTooLarge", "The body is larger than the workspace's max_body_bytes."),
    "500": (
        "InternalServerError",
        "Internal server error: the action raised. On dev the body also carries `error`, "
        "the exception's type and message.",
    ),
}
_MESSAGE_REF = {"$ref": "#/components/schemas/RuntimeMessage"}
_MESSAGE_SCHEMA = {
    "type": "object",
    "description": "The body of every answer the runtime gives itself.",
    "required": ["message"],
    "properties": {"message": {"type": "string"}, "error": {"type": "string"}},
}


def document_path(stage: Stage | str, app: str) -> str:
    """The runtime's reserved URL path of ``app``'s document on ``stage``."""
    return f"/{OPENAPI_PREFIX}/{Stage.parse(stage)}/{app}.json"


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


def _cors_header() -> dict[str, Any]:
    return {
        "Access-Control-Allow-Origin": {
            "description": "Always `*` on the runtime's own answers.",
            "schema": {"type": "string", "const": "*"},
        }
    }


def _runtime_response(description: str, **headers: Any) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {**_cors_header(), **headers},
        "content": {"application/json": {"schema": dict(_MESSAGE_REF)}},
    }


def _action_response(definition: Definition, description: str) -> dict[str, Any]:
    if definition.content_type is None:
        return {"description": description + " The action chooses the content type."}
    return {"description": description, "content": {definition.content_type: {}}}


def _merge(action: dict[str, Any], status: str) -> dict[str, Any]:
    """One status both the action and the runtime can give: both descriptions and media
    types; where they share a media type, any body (the action's may not fit the schema)."""
    runtime = _runtime_response(_RUNTIME_ANSWERS[status][1])
    content = dict(runtime["content"])
    for media_type in action.get("content", {}):
        content[media_type] = {}
    return {
        "description": f"{action['description']} Or, from the runtime: {runtime['description']}",
        "content": content,
    }


def _responses(definition: Definition) -> dict[str, Any]:
    literal, computed = action_statuses(definition.action, definition.functions)
    responses: dict[str, Any] = {
        "200": _action_response(
            definition, "Success: the action's answer (200 unless it sets res.statusCode)."
        )
    }
    for status in sorted(literal - {200}):
        responses[str(status)] = _action_response(definition, "Set by the action.")
    runtime = ["404", "500"]
    if definition.requires_auth:
        runtime.append("403")
    if definition.method in _BODY_METHODS:
        runtime.append("413")
    for code in runtime:
        if code in responses:
            responses[code] = _merge(responses[code], code)
        else:
            responses[code] = {"$ref": f"#/components/responses/{_RUNTIME_ANSWERS[code][0]}"}
    if computed:
        responses["default"] = _action_response(
            definition, "Any other status: the action computes res.statusCode at run time."
        )
    return dict(sorted(responses.items(), key=lambda item: (item[0] == "default", item[0])))


def _operation(definition: Definition) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": definition.id,
        "summary": definition.label,
        "responses": _responses(definition),
    }
    if definition.method in _BODY_METHODS:
        operation["requestBody"] = {
            "description": "Passed to the action as req.body, unparsed.",
            "required": False,
            "content": {"*/*": {}},
        }
    if definition.requires_auth:
        operation["security"] = [{_SCHEME: []}]
    return operation


def build_document(
    application: Application,
    stage: Stage | str,
    definitions: Iterable[Definition],
    base_url: str,
    deployment_id: int | None = None,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``application`` as deployed on ``stage``."""
    stage = Stage.parse(stage)
    definitions = sorted(definitions, key=lambda d: (d.resource, d.method))
    paths: dict[str, dict[str, Any]] = {}
    for definition in definitions:
        item = paths.setdefault("/" + definition.resource, {})
        if definition.path_parameters and "parameters" not in item:
            item["parameters"] = [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in definition.path_parameters
            ]
        item[definition.method.lower()] = _operation(definition)
    version = f"{stage}-{deployment_id}" if deployment_id is not None else str(stage)
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": application.label,
            "version": version,
            "description": (
                f"Application `{application.id}` as served by the {_STAGE_WORDS[stage]} "
                "of a notebook-kit runtime. A method that a path does not declare is "
                "answered 405 with an Allow header listing the declared ones."
            ),
        },
        "servers": [
            {
                "url": f"{base_url.rstrip('/')}/{stage}/{application.id}",
                "description": _STAGE_WORDS[stage],
            }
        ],
        "paths": paths,
        "components": {
            "schemas": {"RuntimeMessage": dict(_MESSAGE_SCHEMA)},
            "responses": {
                **{name: _runtime_response(text) for name, text in _RUNTIME_ANSWERS.values()},
                "MethodNotAllowed": _runtime_response(
                    "Method Not Allowed: the path exists without this method.",
                    Allow={
                        "description": "The methods the path declares.",
                        "schema": {"type": "string"},
                    },
                ),
            },
        },
    }
    if any(d.requires_auth for d in definitions):
        document["components"]["securitySchemes"] = {
            _SCHEME: {
                "type": "apiKey",
                "in": "header",
                "name": "x-api-key",
                "description": f"The {stage} stage's API key (`notebook-kit keys`).",
            }
        }
    return document
