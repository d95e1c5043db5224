"""``notebook-kit``: thin commands over the Workspace.

Each command builds the workspace, calls one method and prints the result (``--json``
where offered). A refusal prints one line on stderr and exits 1; a usage mistake exits 2.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from .cli_settings import settings as settings_group
from .errors import NotebookKitError
from .models import METHODS, Constant, Definition, Stage, endpoint_url
from .workspace import Workspace

__all__ = ["main"]

STAGES = click.Choice([str(s) for s in Stage])


def _fail(message: str, code: int = 1) -> NoReturn:
    # One line, always: click's messages (e.g. a missing Choice option) can span lines.
    click.echo(f"notebook-kit: {' '.join(message.split())}", err=True)
    sys.exit(code)


def _workspace(ctx: click.Context) -> Workspace:
    return Workspace(ctx.obj["home"])


def _read(path: str | None, what: str) -> str | None:
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotebookKitError(f"cannot read the {what} file {path}: {exc}") from None


def _table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    if not rows:
        click.echo("(none)")
        return
    text = [[("" if r[c] is None else str(r[c])) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in text)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in text:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


def _definition_row(d: Definition) -> dict[str, Any]:
    return {
        "app": d.app,
        "id": d.id,
        "label": d.label,
        "method": d.method,
        "resource": d.resource,
        "content_type": d.content_type,
        "requires_auth": d.requires_auth,
    }


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="Workspace directory (default: $NOTEBOOK_KIT_HOME or ~/.notebook_kit).",
)
@click.version_option(package_name="notebook-kit")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """Define, test and publish small REST APIs."""
    ctx.obj = {"home": home}


@cli.command()
@click.pass_context
def sample(ctx: click.Context) -> None:
    """Install the restapi_sample application and deploy it to dev and prod."""
    ws = _workspace(ctx)
    app = ws.install_sample()
    click.echo(
        f"installed {app.id} ({len(ws.definitions(app.id))} definitions), deployed to dev and prod"
    )


@cli.command()
@click.option("--rotate", type=STAGES, default=None, help="Replace this stage's key.")
@click.pass_context
def keys(ctx: click.Context, rotate: str | None) -> None:
    """Show the API keys, one per stage (callers send them as x-api-key)."""
    ws = _workspace(ctx)
    if rotate:
        ws.rotate_key(rotate)
    for stage, key in ws.keys().items():
        click.echo(f"{stage} {key}")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64))
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, workers: int) -> None:
    """Serve the deployed APIs at http://HOST:PORT/{dev|prod}/{app}/{resource}."""
    from .server import serve as run_server

    ws = _workspace(ctx)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    click.echo(
        f"notebook-kit serving {ws.home} at http://{host}:{port} "
        f"({workers} worker{'s' if workers > 1 else ''}); Ctrl+C stops"
    )
    sys.stdout.flush()
    run_server(ws, host, port, workers)


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
                "--const",
                "constants",
                multiple=True,
                metavar="NAME:TYPE=VALUE",
                help="A constant (String, Integer, Decimal, Boolean, JSON); repeatable.",
            ),
        ]
    ):
        function = option(function)
    return function


@cli.command()
@click.argument("app")
@click.argument("api_id")
@click.option("--label", required=True)
@click.option("--method", required=True, type=click.Choice(METHODS, case_sensitive=False))
@click.option("--resource", required=True, help="Path such as employee/{id}.")
@click.option("--action-file", required=True, type=click.Path(dir_okay=False))
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
    constants: tuple[str, ...],
) -> None:
    """Create a definition in APP (the application is created if new)."""
    ws = _workspace(ctx)
    d = ws.create(
        app,
        api_id,
        label=label,
        method=method,
        resource=resource,
        action=_read(action_file, "action") or "",
        content_type=content_type,
        requires_auth=True if requires_auth is None else requires_auth,
        functions=_read(functions_file, "functions") or "",
        constants=[Constant.from_text(c) for c in constants],
    )
    click.echo(f"created {d.app}/{d.id}: {d.method} {d.resource}")


@cli.command()
@click.argument("app")
@click.argument("api_id")
@click.option("--new-id", default=None)
@click.option("--label", default=None)
@click.option("--method", default=None, type=click.Choice(METHODS, case_sensitive=False))
@click.option("--resource", default=None)
@click.option("--action-file", default=None, type=click.Path(dir_okay=False))
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
    constants: tuple[str, ...],
) -> None:
    """Change a definition; what is live changes at the next deploy."""
    ws = _workspace(ctx)
    changes: dict[str, Any] = {}
    if content_type is not None:
        changes["content_type"] = content_type
    if constants:
        changes["constants"] = [Constant.from_text(c) for c in constants]
    d = ws.edit(
        app,
        api_id,
        new_id=new_id,
        label=label,
        method=method,
        resource=resource,
        action=_read(action_file, "action"),
        requires_auth=requires_auth,
        functions=_read(functions_file, "functions"),
        **changes,
    )
    click.echo(f"saved {d.app}/{d.id}: {d.method} {d.resource} (deploy to make it live)")


@cli.command()
@click.argument("app")
@click.argument("api_id")
@click.pass_context
def delete(ctx: click.Context, app: str, api_id: str) -> None:
    """Delete a definition (what is live stays until the next deploy)."""
    _workspace(ctx).delete(app, api_id)
    click.echo(f"deleted {app}/{api_id}")


@cli.command()
@click.argument("app")
@click.argument("api_id")
@click.option("--to", "to_app", required=True, help="The application to copy into.")
@click.option("--new-id", default=None, help="ID of the copy (default: the same).")
@click.pass_context
def copy(ctx: click.Context, app: str, api_id: str, to_app: str, new_id: str | None) -> None:
    """Copy a definition into another application."""
    d = _workspace(ctx).copy(app, api_id, to_app, new_id)
    click.echo(f"copied {app}/{api_id} to {d.app}/{d.id}")


@cli.command(name="list")
@click.option("--app", default=None)
@click.option("--label", default=None, help="Case-insensitive substring of the label.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def list_(ctx: click.Context, app: str | None, label: str | None, as_json: bool) -> None:
    """List definitions."""
    ws = _workspace(ctx)
    definitions = ws.definitions(app, label)
    if as_json:
        rows = []
        for d in definitions:
            row = _definition_row(d)
            row.update({s: ws.deployed_state(d, s) for s in ("dev", "prod")})
            rows.append(row)
        _print_json(rows)
        return
    _table(
        [_definition_row(d) for d in definitions],
        ["app", "id", "method", "resource", "label", "requires_auth"],
    )


@cli.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES)
@click.option(
    "--base-url",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="Base URL used to print the endpoint URLs.",
)
@click.pass_context
def deploy(ctx: click.Context, app: str, stage: str, base_url: str) -> None:
    """Publish APP's saved definitions to a stage."""
    ws = _workspace(ctx)
    deployment = ws.deploy(app, stage)
    click.echo(f"deployed {app} to {stage} (deployment {deployment.id})")
    for d in ws.definitions(app):
        click.echo(f"  {d.method:<7} {endpoint_url(base_url, stage, app, d.resource)}")


@cli.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES)
@click.pass_context
def undeploy(ctx: click.Context, app: str, stage: str) -> None:
    """Stop serving APP on a stage."""
    _workspace(ctx).undeploy(app, stage)
    click.echo(f"undeployed {app} from {stage}")


@cli.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES)
@click.option(
    "--to",
    "to",
    type=int,
    default=None,
    help="Deployment ID (default: the one before the live one).",
)
@click.pass_context
def rollback(ctx: click.Context, app: str, stage: str, to: int | None) -> None:
    """Serve an earlier deployment of APP on a stage."""
    deployment = _workspace(ctx).rollback(app, stage, to)
    click.echo(
        f"{app} on {stage} now serves deployment {deployment.id} of {deployment.deployed_at}"
    )


@cli.command()
@click.option("--app", default=None)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def deployments(ctx: click.Context, app: str | None, as_json: bool) -> None:
    """The deployment history; ACTIVE marks what each stage serves now."""
    rows = [d.to_dict() for d in _workspace(ctx).deployments(app)]
    if as_json:
        _print_json(rows)
    else:
        _table(rows, ["id", "app", "stage", "deployed_at", "host", "active"])


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def resources(ctx: click.Context, as_json: bool) -> None:
    """Resource counts per stage: the root plus one per application and path segment."""
    ws = _workspace(ctx)
    counts = ws.resources()
    if as_json:
        _print_json(counts)
        return
    for stage, data in counts.items():
        click.echo(f"{stage}: {data['total']} resources")
        for line in ws.resource_tree(stage):
            click.echo(f"  {line}")


@cli.command(name="export")
@click.argument("app")
@click.option("--output", required=True, type=click.Path(dir_okay=False))
@click.pass_context
def export_(ctx: click.Context, app: str, output: str) -> None:
    """Write APP and its definitions to one JSON file."""
    path = _workspace(ctx).export_file(app, output)
    click.echo(f"exported {app} to {path}")


@cli.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--replace", is_flag=True, help="Overwrite an existing application's definitions.")
@click.pass_context
def import_(ctx: click.Context, file: str, replace: bool) -> None:
    """Import an exported application (type "REST API" only)."""
    app = _workspace(ctx).import_application(file, replace=replace)
    click.echo(f"imported {app.id}")


@cli.command()
@click.argument("app")
@click.option("--repo", required=True, type=click.Path(file_okay=False))
@click.option("--message", required=True)
@click.pass_context
def commit(ctx: click.Context, app: str, repo: str, message: str) -> None:
    """Commit APP to a git repository (created when missing)."""
    sha = _workspace(ctx).commit(app, repo, message)
    click.echo(f"committed {app} to {repo} as {sha[:12]}")


@cli.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES)
@click.option("--output", "-o", default=None, type=click.Path(dir_okay=False), help="File.")
@click.option(
    "--base-url",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="Base URL of the runtime; the server URL is BASE/STAGE/APP.",
)
@click.pass_context
def openapi(ctx: click.Context, app: str, stage: str, output: str | None, base_url: str) -> None:
    """Print (or write to --output) the OpenAPI 3.1 document of APP as deployed on a stage."""
    text = json.dumps(_workspace(ctx).openapi(app, stage, base_url), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise NotebookKitError(f"cannot write {output}: {exc.strerror}") from None
    click.echo(f"wrote the OpenAPI document of {app} on {stage} to {output}")


cli.add_command(settings_group)


def main(argv: list[str] | None = None) -> None:
    """Entry point: domain errors and usage mistakes become one line on stderr."""
    try:
        cli.main(args=argv, prog_name="notebook-kit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        _fail("aborted", 1)
    except click.UsageError as exc:
        hint = (
            f" (see 'notebook-kit {exc.ctx.command_path.partition(' ')[2]} --help')".replace(
                "notebook-kit  --help", "notebook-kit --help"
            )
            if exc.ctx
            else ""
        )
        _fail(f"{exc.format_message()}{hint}", 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except NotebookKitError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(0)
