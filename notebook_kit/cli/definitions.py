"""``notebook-kit create|edit|delete|copy|list``: the saved definitions.

What these commands change is saved, not live: it goes live at the next ``deploy``.
"""

from __future__ import annotations

import json
from typing import Any

import click

from ..domain.models import METHODS, Constant, validate_timeout
from ..errors import ValidationError
from .output import echo_json, echo_table, read_file, workspace_of

__all__ = ["copy", "create", "delete", "edit", "list_", "preflight"]


def _timeout(text: str) -> float | None:
    """``--timeout``: seconds, or 'default' (the action_timeout setting)."""
    return None if text.strip().lower() in ("", "default", "none") else validate_timeout(text)


def _contract(path: str | None) -> Any:
    """The JSON of ``--contract-file`` (None when not given)."""
    text = read_file(path, "contract")
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"the contract file {path} is not JSON: {exc}") from None


def _definition_options(function: Any) -> Any:
    for option in reversed(
        [
            click.option("--content-type", default=None, help="Response Content-Type."),
            click.option(
                "--auth/--no-auth",
                "requires_auth",
                default=None,
                help="Require the stage's x-api-key (default: required).",
            ),
            click.option(
                "--functions-file",
                type=click.Path(dir_okay=False),
                default=None,
                help="Python file with user functions.",
            ),
            click.option(
                "--timeout",
                default=None,
                metavar="SECONDS",
                help="Seconds the action may run before a 504 (at most 3600); "
                "'default' uses the action_timeout setting.",
            ),
            click.option(
                "--const",
                "constants",
                multiple=True,
                metavar="NAME:TYPE=VALUE",
                help="A constant (String, Integer, Decimal, Boolean, JSON); repeatable.",
            ),
            click.option(
                "--contract-file",
                type=click.Path(dir_okay=False),
                default=None,
                help="JSON file with its contract: parameters, body, responses "
                "(see 'notebook-kit contract').",
            ),
        ]
    ):
        function = option(function)
    return function


@click.command()
@click.argument("app")
@click.argument("api_id")
@click.option("--label", required=True, help="What the definition does, in words.")
@click.option(
    "--method",
    required=True,
    type=click.Choice(METHODS, case_sensitive=False),
    help="The HTTP method it answers.",
)
@click.option("--resource", required=True, help="Path such as employee/{id}.")
@click.option(
    "--action-file",
    required=True,
    type=click.Path(dir_okay=False),
    help="Python file holding the action (reads req, sets res).",
)
@_definition_options
@click.pass_context
def create(
    ctx: click.Context,
    app: str,
    api_id: str,
    label: str,
    method: str,
    resource: str,
    action_file: str,
    content_type: str | None,
    requires_auth: bool | None,
    functions_file: str | None,
    timeout: str | None,
    constants: tuple[str, ...],
    contract_file: str | None,
) -> None:
    """Create a definition in APP (the application is created if new)."""
    ws = workspace_of(ctx)
    d = ws.create(
        app,
        api_id,
        label=label,
        method=method,
        resource=resource,
        action=read_file(action_file, "action") or "",
        content_type=content_type,
        requires_auth=True if requires_auth is None else requires_auth,
        functions=read_file(functions_file, "functions") or "",
        constants=[Constant.from_text(c) for c in constants],
        timeout=None if timeout is None else _timeout(timeout),
        contract=_contract(contract_file),
    )
    click.echo(f"created {d.app}/{d.id}: {d.method} {d.resource}")


@click.command()
@click.argument("app")
@click.argument("api_id")
@click.option("--new-id", default=None, help="Rename the definition to this API ID.")
@click.option("--label", default=None, help="A new label.")
@click.option(
    "--method",
    default=None,
    type=click.Choice(METHODS, case_sensitive=False),
    help="A new HTTP method.",
)
@click.option("--resource", default=None, help="A new resource path, such as employee/{id}.")
@click.option(
    "--action-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Python file holding the new action.",
)
@_definition_options
@click.pass_context
def edit(
    ctx: click.Context,
    app: str,
    api_id: str,
    new_id: str | None,
    label: str | None,
    method: str | None,
    resource: str | None,
    action_file: str | None,
    content_type: str | None,
    requires_auth: bool | None,
    functions_file: str | None,
    timeout: str | None,
    constants: tuple[str, ...],
    contract_file: str | None,
) -> None:
    """Change a definition; what is live changes at the next deploy."""
    ws = workspace_of(ctx)
    changes: dict[str, Any] = {}
    if content_type is not None:
        changes["content_type"] = content_type
    if timeout is not None:
        changes["timeout"] = _timeout(timeout)
    if constants:
        changes["constants"] = [Constant.from_text(c) for c in constants]
    if contract_file is not None:
        changes["contract"] = _contract(contract_file)
    d = ws.edit(
        app,
        api_id,
        new_id=new_id,
        label=label,
        method=method,
        resource=resource,
        action=read_file(action_file, "action"),
        requires_auth=requires_auth,
        functions=read_file(functions_file, "functions"),
        **changes,
    )
    click.echo(f"saved {d.app}/{d.id}: {d.method} {d.resource} (deploy to make it live)")


@click.command()
@click.argument("app")
@click.argument("api_id")
@click.pass_context
def delete(ctx: click.Context, app: str, api_id: str) -> None:
    """Delete a definition (what is live stays until the next deploy)."""
    workspace_of(ctx).delete(app, api_id)
    click.echo(f"deleted {app}/{api_id}")


@click.command()
@click.argument("app")
@click.argument("api_id")
@click.option("--to", "to_app", required=True, help="The application to copy into.")
@click.option("--new-id", default=None, help="ID of the copy (default: the same).")
@click.pass_context
def copy(ctx: click.Context, app: str, api_id: str, to_app: str, new_id: str | None) -> None:
    """Copy a definition into another application."""
    d = workspace_of(ctx).copy(app, api_id, to_app, new_id)
    click.echo(f"copied {app}/{api_id} to {d.app}/{d.id}")


@click.command()
@click.argument("app")
@click.argument("api_id")
@click.option(
    "--origin",
    default="*",
    show_default=True,
    help="The origin browsers may call from ('*' or one, like https://example.org).",
)
@click.pass_context
def preflight(ctx: click.Context, app: str, api_id: str, origin: str) -> None:
    """Add the CORS preflight (OPTIONS, no key) a browser needs to call API_ID's resource
    with x-api-key and a JSON body; it goes live at the next deploy."""
    d = workspace_of(ctx).add_preflight(app, api_id, origin)
    click.echo(f"created {d.app}/{d.id} (OPTIONS {d.resource}): deploy to make it live")


@click.command(name="list")
@click.option("--app", default=None, help="Only this application's definitions.")
@click.option("--label", default=None, help="Case-insensitive substring of the label.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON objects instead of a table.")
@click.pass_context
def list_(ctx: click.Context, app: str | None, label: str | None, as_json: bool) -> None:
    """List definitions."""
    rows = workspace_of(ctx).listing(app, label)
    if as_json:
        echo_json([{k: v for k, v in row.items() if k != "updated_at"} for row in rows])
        return
    echo_table(rows, ["app", "id", "method", "resource", "label", "requires_auth", "dev", "prod"])
