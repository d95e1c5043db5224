"""``notebook-kit contract show|set|infer|clear``: what a definition accepts and answers.

A contract (docs/contracts.md) is JSON: ``{"parameters": [...], "body": {...},
"responses": [...]}``. ``set`` takes a whole contract from a file (``-``: stdin) and/or
changes parts of it with flags; ``infer`` drafts one from the definition's examples and
recorded calls (``--save`` keeps it). What is live changes at the next deploy, as with any
edit.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..errors import ValidationError
from .output import echo_json, echo_table, read_file, workspace_of

__all__ = ["contract"]


@click.group()
def contract() -> None:
    """A definition's contract: parameters, request body and responses, checked by the
    runtime (a 422 listing every violation) and shown in the OpenAPI document."""


def _describe(data: dict[str, Any]) -> None:
    """A contract as a person reads it: the parameters as a table, then the body and the
    responses, a line each."""
    if not data:
        click.echo("(nothing declared: every request reaches the action)")
        return
    parameters = [
        {
            "in": p["in"],
            "name": p["name"],
            "type": _type_of(p["schema"]),
            "required": p["required"],
            "description": p.get("description", ""),
        }
        for p in data.get("parameters", [])
    ]
    if parameters:
        echo_table(parameters, ["in", "name", "type", "required", "description"])
    body = data.get("body")
    if body is not None:
        required = "required" if body["required"] else "optional"
        click.echo(f"body: {body['media_type']}, {required}, {_schema_words(body.get('schema'))}")
    for response in data.get("responses", []):
        media_type = response.get("media_type") or "no body declared"
        words = _schema_words(response.get("schema"))
        click.echo(f"response {response['status']}: {media_type}, {words}")


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "any")
    return "|".join(kind) if isinstance(kind, list) else str(kind)


def _schema_words(schema: dict[str, Any] | None) -> str:
    if schema is None:
        return "no schema"
    properties = schema.get("properties")
    if isinstance(properties, dict):
        return f"{_type_of(schema)} with {', '.join(properties) or 'no properties'}"
    return _type_of(schema)


@contract.command()
@click.argument("app")
@click.argument("api_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the contract as JSON.")
@click.pass_context
def show(ctx: click.Context, app: str, api_id: str, as_json: bool) -> None:
    """Show the saved contract of definition ID of APP."""
    data = workspace_of(ctx).contract(app, api_id).to_dict()
    if as_json:
        echo_json(data)
    else:
        _describe(data)


def _parameter(text: str, location: str) -> dict[str, Any]:
    """``NAME:TYPE[:required]`` as a parameter's dict."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0] or (len(parts) == 3 and parts[2] != "required"):
        raise ValidationError(
            f"--{location} {text!r} must be NAME:TYPE or NAME:TYPE:required "
            "(TYPE: string, integer, number, boolean or array)"
        )
    return {"name": parts[0], "in": location, "type": parts[1], "required": len(parts) == 3}


def _json_file(path: str, what: str) -> Any:
    text = sys.stdin.read() if path == "-" else read_file(path, what)
    try:
        return json.loads(text or "")
    except ValueError as exc:
        raise ValidationError(f"the {what} file {path} is not JSON: {exc}") from None


def _response(text: str) -> dict[str, Any]:
    """``STATUS[:MEDIA_TYPE]=SCHEMA_FILE`` or ``STATUS[:MEDIA_TYPE]``."""
    head, _, path = text.partition("=")
    status, _, media_type = head.partition(":")
    data: dict[str, Any] = {"status": status}
    if media_type:
        data["media_type"] = media_type
    if path:
        data["schema"] = _json_file(path, "response schema")
    return data


@contract.command(name="set")
@click.argument("app")
@click.argument("api_id", metavar="ID")
@click.argument("file", required=False)
@click.option(
    "--query", multiple=True, metavar="NAME:TYPE[:required]", help="Declare a query parameter."
)
@click.option("--header", multiple=True, metavar="NAME:TYPE[:required]", help="Declare a header.")
@click.option("--path", "path_", multiple=True, metavar="NAME:TYPE", help="Type a path parameter.")
@click.option("--body-schema", metavar="FILE", help="The request body's JSON Schema (a file).")
@click.option("--body-type", metavar="MEDIA_TYPE", help="The body's media type (application/json).")
@click.option("--body-optional", is_flag=True, help="The body may be left out.")
@click.option(
    "--response",
    multiple=True,
    metavar="STATUS[:MEDIA_TYPE][=FILE]",
    help="Declare a response; FILE: its JSON Schema (application/json unless named).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the saved contract as JSON.")
@click.pass_context
def set_(
    ctx: click.Context,
    app: str,
    api_id: str,
    file: str | None,
    query: tuple[str, ...],
    header: tuple[str, ...],
    path_: tuple[str, ...],
    body_schema: str | None,
    body_type: str | None,
    body_optional: bool,
    response: tuple[str, ...],
    as_json: bool,
) -> None:
    """Declare the contract of definition ID of APP: the whole of it from FILE (JSON;
    '-' reads stdin), and/or parts with the options, over what is saved. Refused whole
    if any part is invalid; live stages change at the next deploy."""
    ws = workspace_of(ctx)
    data = _json_file(file, "contract") if file else ws.contract(app, api_id).to_dict()
    if not isinstance(data, dict):
        raise ValidationError("a contract file holds one JSON object")
    given = [
        *(_parameter(t, "query") for t in query),
        *(_parameter(t, "header") for t in header),
        *({**_parameter(t, "path"), "required": True} for t in path_),
    ]
    if given:
        named = {(p["in"], p["name"]) for p in given}
        kept = [
            p
            for p in data.get("parameters", [])
            if isinstance(p, dict) and (p.get("in"), p.get("name")) not in named
        ]
        data["parameters"] = kept + given
    if body_schema or body_type or body_optional:
        body = dict(data.get("body") or {})
        if body_schema:
            body["schema"] = _json_file(body_schema, "body schema")
        if body_type:
            body["media_type"] = body_type
        body["required"] = not body_optional
        data["body"] = body
    if response:
        declared = [_response(t) for t in response]
        statuses = {r["status"] for r in declared}
        kept = [
            r
            for r in data.get("responses", [])
            if isinstance(r, dict) and str(r.get("status")) not in statuses
        ]
        data["responses"] = kept + declared
    saved = ws.edit(app, api_id, contract=data).contract.to_dict()
    if as_json:
        echo_json(saved)
    else:
        click.echo(f"contract of {app}/{api_id} saved; live stages change at the next deploy")
        _describe(saved)


@contract.command()
@click.argument("app")
@click.argument("api_id", metavar="ID")
@click.option("--save", is_flag=True, help="Save the draft as the definition's contract.")
@click.option("--json", "as_json", is_flag=True, help="Print the draft as JSON.")
@click.pass_context
def infer(ctx: click.Context, app: str, api_id: str, save: bool, as_json: bool) -> None:
    """Draft a contract of definition ID of APP from its examples and recorded calls (and
    what it answers them now). Printed; saved only with --save."""
    ws = workspace_of(ctx)
    draft = ws.infer_contract(app, api_id)
    if save:
        ws.edit(app, api_id, contract=draft)
    if as_json:
        echo_json(draft.to_dict())
        return
    _describe(draft.to_dict())
    if save:
        click.echo(f"saved as the contract of {app}/{api_id}")


@contract.command()
@click.argument("app")
@click.argument("api_id", metavar="ID")
@click.pass_context
def clear(ctx: click.Context, app: str, api_id: str) -> None:
    """Remove the contract of definition ID of APP: every request reaches the action."""
    workspace_of(ctx).edit(app, api_id, contract={})
    click.echo(f"contract of {app}/{api_id} cleared; live stages change at the next deploy")
