"""OpenAPI 3.1 documents for what a stage serves: one document per deployed application.

Pure: built from a deployed snapshot (the application record and its definitions), never
from the saved definitions, so the document describes what callers really reach, in a
shape the tools callers use accept without edits (client generators, Postman, linters,
schemathesis):

- ``info.version`` is ``0.{deployment}.0``: a valid PEP 440 and semver version (client
  generators make it the package's version); the stage and the deployment are in
  ``info.description`` and ``info.x-notebook-kit``;
- each definition is one operation (``operationId`` = API ID, ``summary`` = label),
  tagged with its resource's first segment. Its parameters are the path's (a string
  unless the contract declares them) and the query and header parameters its contract
  declares. Its request body is the declared one; a POST or PUT that declares none is
  declared as taking any JSON (what client generators and Postman can send);
- its responses are ``openapi_responses.operation_responses``: the action's (the
  contract's where declared) and every answer the runtime gives itself where it can;
- ``security`` is the ``x-api-key`` scheme where a key is required, ``[]`` where not;
- a POST's or PUT's declared 2xx answer whose schema has a property named like a path
  parameter of an operation on the same path or below it (``items`` -> ``items/{id}``)
  links to that operation (``$response.body#/id``): what stateful clients follow.

A contract's schemas are JSON Schema 2020-12 with local references; their ``$defs`` move
to ``components.schemas`` (one entry per distinct schema) so the references resolve in
the document. ``openapi30.to_openapi30`` makes the 3.0 export of a document.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ValidationError
from .contracts import is_json_media_type
from .models import Application, Definition, Stage
from .openapi_responses import (
    MESSAGE_SCHEMA,
    PROBLEM_SCHEMA,
    component_responses,
    operation_responses,
)

__all__ = [
    "OPENAPI_PREFIX",
    "OPENAPI_VERSION",
    "OPENAPI_VERSIONS",
    "api_version",
    "build_document",
    "document_path",
    "parse_document_name",
]

OPENAPI_VERSION = "3.1.0"
OPENAPI_VERSIONS = ("3.1", "3.0")  # what ``build_document(version=...)`` makes
OPENAPI_PREFIX = "_openapi"  # user URLs start with /dev/ or /prod/: this cannot collide
_SCHEME = "apiKey"
_STAGE_WORDS = {Stage.DEV: "debug deploy (dev)", Stage.PROD: "release deploy (prod)"}
# What a POST or PUT that declares no body is declared to take: any JSON. Any body reaches
# the action, but a client needs one media type to send: Postman sends the first listed,
# openapi-python-client warns on text/plain and fails at call time on an any-JSON body
# listed beside a form or bytes (``isinstance(body, Any)``).
_UNDECLARED_BODY: dict[str, Any] = {"application/json": {"schema": {}}}
_BUILT_IN_SCHEMAS = {"RuntimeMessage": MESSAGE_SCHEMA, "Problem": PROBLEM_SCHEMA}
_COMPONENT_NAME = re.compile(r"[A-Za-z0-9._-]+")
_LINK_SOURCES = frozenset({"POST", "PUT"})
_LINK_TARGETS = frozenset({"GET", "PUT", "DELETE"})


def api_version(deployment_id: int | None) -> str:
    """``info.version`` of a deployment's document: ``0.{id}.0`` (``0.0.0`` without one),
    valid for PEP 440 and semver alike."""
    return f"0.{deployment_id or 0}.0"


def document_path(stage: Stage | str, app: str, version: str = "3.1") -> str:
    """The runtime's reserved URL path of ``app``'s document on ``stage``:
    ``/_openapi/dev/shop.json``, ``/_openapi/dev/shop.3.0.json`` for the 3.0 export."""
    suffix = ".json" if version == "3.1" else f".{version}.json"
    return f"/{OPENAPI_PREFIX}/{Stage.parse(stage)}/{app}{suffix}"


def parse_document_name(name: str) -> tuple[str, str] | None:
    """``shop.json`` -> ``("shop", "3.1")``, ``shop.3.0.json`` -> ``("shop", "3.0")``; None
    for any other name (application IDs hold no dot)."""
    stem = name.removesuffix(".json")
    if stem == name or not stem:
        return None
    app, _, version = stem.partition(".")
    if not version:
        return app, "3.1"
    return (app, version) if version in OPENAPI_VERSIONS else None


class _Schemas:
    """``components.schemas``, and moving a contract schema's ``$defs`` there."""

    def __init__(self) -> None:
        self.components: dict[str, Any] = copy.deepcopy(_BUILT_IN_SCHEMAS)
        self._given = copy.deepcopy(_BUILT_IN_SCHEMAS)  # each as it came, before rewriting

    def _name(self, wanted: str, schema: Any) -> str:
        """``wanted`` if free, or holding this very schema (one without references, which
        could point elsewhere); else ``wanted2``, ``wanted3``..."""
        base = wanted if _COMPONENT_NAME.fullmatch(wanted) else "Schema"
        name, number = base, 1
        shared = not any(True for _ in _refs(schema))
        while name in self.components and not (shared and self._given.get(name) == schema):
            number += 1
            name = f"{base}{number}"
        self._given[name] = schema
        return name

    def hoist(self, schema: Mapping[str, Any], where: str) -> dict[str, Any]:
        """``schema`` as the document holds it: its ``$defs`` in ``components.schemas``,
        its references rewritten; a schema referring to itself (``#``) is a component."""
        root: dict[str, Any] = json.loads(json.dumps(schema))
        for key in ("$schema", "$id"):
            root.pop(key, None)
        defs = {**root.pop("definitions", {}), **root.pop("$defs", {})}
        refs = set(_refs(root)) | {r for d in defs.values() for r in _refs(d)}
        moved = {name: self._name(name, value) for name, value in defs.items()}
        for name in moved.values():
            self.components.setdefault(name, {})  # taken while its references are rewritten
        self_name = None
        if any(not _def_ref(ref, defs) for ref in refs if ref.startswith("#")):
            self_name = self._name(where, root)
        mapping = {f"#/$defs/{name}": target for name, target in moved.items()}
        mapping |= {f"#/definitions/{name}": target for name, target in moved.items()}

        def rewrite(ref: str) -> str:
            for old, target in mapping.items():
                if ref == old or ref.startswith(old + "/"):
                    return "#/components/schemas/" + target + ref[len(old) :]
            if ref.startswith("#") and self_name is not None:
                return "#/components/schemas/" + self_name + ref[1:]
            return ref

        for name, value in defs.items():
            self.components[moved[name]] = _rewrite(value, rewrite)
        result: dict[str, Any] = _rewrite(root, rewrite)
        if self_name is not None:
            self.components[self_name] = result
            return {"$ref": "#/components/schemas/" + self_name}
        return result


def _def_ref(ref: str, defs: Mapping[str, Any]) -> bool:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix) and ref[len(prefix) :].split("/")[0] in defs:
            return True
    return False


def _refs(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _rewrite(value: Any, rewrite: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: rewrite(v) if k == "$ref" and isinstance(v, str) else _rewrite(v, rewrite)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_rewrite(item, rewrite) for item in value]
    return value


def _tag(definition: Definition) -> str:
    first = definition.segments[0]
    return definition.app if first.startswith("{") else first


def _parameters(definition: Definition, schemas: _Schemas) -> list[dict[str, Any]]:
    """The path's parameters (a string unless declared), then the declared query and
    header parameters."""
    contract = definition.contract
    declared = {p.name: p for p in contract.parameters_in("path")}
    found: list[dict[str, Any]] = []
    for name in definition.path_parameters:
        parameter: dict[str, Any] = {"name": name, "in": "path", "required": True}
        if name in declared:
            where = f"{definition.id}.path.{name}"
            parameter["schema"] = schemas.hoist(declared[name].schema, where)
            if declared[name].description:
                parameter["description"] = declared[name].description
        else:
            parameter["schema"] = {"type": "string"}
        found.append(parameter)
    for location in ("query", "header"):
        for p in contract.parameters_in(location):
            parameter = {
                "name": p.name,
                "in": location,
                "required": p.required,
                "schema": schemas.hoist(p.schema, f"{definition.id}.{location}.{p.name}"),
            }
            if p.description:
                parameter["description"] = p.description
            found.append(parameter)
    return found


def _body_schema(media_type: str) -> dict[str, Any]:
    """The schema of a declared body of ``media_type`` that declares none."""
    if is_json_media_type(media_type):
        return {}
    if media_type.startswith("text/"):
        return {"type": "string"}
    if media_type == "application/x-www-form-urlencoded":
        return {"type": "object"}
    return {"type": "string", "format": "binary"}


def _request_body(definition: Definition, schemas: _Schemas) -> dict[str, Any] | None:
    body = definition.contract.body
    if body is not None:
        schema = (
            _body_schema(body.media_type)
            if body.schema is None
            else schemas.hoist(body.schema, f"{definition.id}.body")
        )
        declared: dict[str, Any] = {
            "required": body.required,
            "content": {body.media_type: {"schema": schema}},
        }
        if body.description:
            declared["description"] = body.description
        return declared
    if definition.method not in ("POST", "PUT"):
        return None
    return {
        "description": "Any JSON, passed to the action as req.body, unparsed (the definition "
        "declares no body: other media types reach the action the same way).",
        "required": False,
        "content": copy.deepcopy(_UNDECLARED_BODY),
    }


def _description(definition: Definition) -> str:
    lines = [f"Answered by the action `{definition.id}` of `{definition.app}`."]
    if definition.method == "GET":
        lines.append("HEAD is answered too: the GET's status and headers, without the body.")
    if definition.contract.checks_requests:
        lines.append(
            "The request is checked against the definition's contract before the action "
            "runs: one that breaks it is answered 422, listing every violation."
        )
    if definition.requires_auth:
        lines.append("Send the stage's key in the `x-api-key` header.")
    return " ".join(lines)


def _operation(definition: Definition, schemas: _Schemas) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": definition.id,
        "summary": definition.label,
        "description": _description(definition),
        "tags": [_tag(definition)],
    }
    parameters = _parameters(definition, schemas)
    if parameters:
        operation["parameters"] = parameters
    body = _request_body(definition, schemas)
    if body is not None:
        operation["requestBody"] = body
    operation["responses"] = operation_responses(definition, schemas.hoist)
    operation["security"] = [{_SCHEME: []}] if definition.requires_auth else []
    return operation


def _properties(schema: Any, components: Mapping[str, Any]) -> set[str]:
    """The top-level property names of an object schema (through a component ``$ref``)."""
    for _ in range(8):  # a chain of references, never a loop
        if not isinstance(schema, Mapping):
            return set()
        ref = schema.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/components/schemas/")):
            break
        schema = components.get(ref.rsplit("/", 1)[1])
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    return set(properties) if isinstance(properties, Mapping) else set()


def _add_links(definitions: list[Definition], paths: dict[str, Any], schemas: _Schemas) -> None:
    """Link each POST's and PUT's declared 2xx answers to the operations at or below its
    path whose path parameters the answer (or the request's path) gives."""
    for source in definitions:
        if source.method not in _LINK_SOURCES:
            continue
        responses = paths["/" + source.resource][source.method.lower()]["responses"]
        for status, response in responses.items():
            if not status.startswith("2") or "content" not in response:
                continue
            media: dict[str, Any] = next(iter(response["content"].values()), {})
            schema = media.get("schema")
            given = _properties(schema, schemas.components)
            links = {}
            for target in definitions:
                if target is source or target.method not in _LINK_TARGETS:
                    continue
                if target.segments[: len(source.segments)] != source.segments:
                    continue
                from_body = [n for n in target.path_parameters if n not in source.path_parameters]
                if not from_body or not set(from_body) <= given:
                    continue
                links[target.id] = {
                    "operationId": target.id,
                    "parameters": {
                        name: f"$response.body#/{name}"
                        if name in from_body
                        else f"$request.path.{name}"
                        for name in target.path_parameters
                    },
                    "description": f"The {target.method} of what this answer names.",
                }
            if links:
                response["links"] = links


def _used_components(paths: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """``components``: the runtime's answers the operations refer to, and the schemas."""
    used = set(_refs(paths))
    responses = {
        name: response
        for name, response in component_responses().items()
        if f"#/components/responses/{name}" in used
    }
    used |= set(_refs(responses))
    kept = {
        name: schema
        for name, schema in schemas.items()
        if name not in _BUILT_IN_SCHEMAS or f"#/components/schemas/{name}" in used
    }
    return {"schemas": kept, "responses": responses}


def build_document(
    application: Application,
    stage: Stage | str,
    definitions: Iterable[Definition],
    base_url: str,
    deployment_id: int | None = None,
    version: str = "3.1",
) -> dict[str, Any]:
    """The OpenAPI document of ``application`` as deployed on ``stage``: 3.1, or the 3.0
    export with ``version="3.0"``."""
    stage = Stage.parse(stage)
    if version not in OPENAPI_VERSIONS:
        raise ValidationError(
            f"OpenAPI version must be one of {', '.join(OPENAPI_VERSIONS)}, not {version!r}",
            field="version",
        )
    definitions = sorted(definitions, key=lambda d: (d.resource, d.method))
    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    for definition in definitions:
        item = paths.setdefault("/" + definition.resource, {})
        item[definition.method.lower()] = _operation(definition, schemas)
    _add_links(definitions, paths, schemas)
    deployment = f"deployment {deployment_id}" if deployment_id is not None else "no deployment"
    document: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": application.label,
            "version": api_version(deployment_id),
            "description": (
                f"Application `{application.id}` as served by the {_STAGE_WORDS[stage]} of a "
                f"notebook-kit runtime ({deployment}). A GET resource answers HEAD too; a "
                "method that a path does not declare is answered 405 with an Allow header "
                "listing the declared ones."
            ),
            "x-notebook-kit": {
                "application": application.id,
                "stage": str(stage),
                "deployment": deployment_id,
            },
        },
        "servers": [
            {
                "url": f"{base_url.rstrip('/')}/{stage}/{application.id}",
                "description": _STAGE_WORDS[stage],
            }
        ],
        "tags": [
            {"name": tag, "description": f"The operations on /{tag}."}
            for tag in sorted({_tag(d) for d in definitions})
        ],
        "paths": paths,
        "components": _used_components(paths, schemas.components),
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
    if version == "3.0":
        from .openapi30 import to_openapi30

        return to_openapi30(document)
    return document
