"""``notebook-kit``: thin commands over the Workspace.

Each command builds the workspace, calls one method and prints the result (``--json``
where offered). A refusal prints one line on stderr and exits 1; a usage mistake exits 2.
This module holds the group, the entry point and the workspace-wide commands (sample,
keys, serve, export, import, commit); the definition commands are in ``definitions``,
the stage commands in ``publishing``, ``example`` and ``check`` in ``examples``,
``settings`` in ``settings``, ``consumer`` and ``usage`` in ``consumers``, ``contract``
in ``contracts``, ``schedule`` in ``schedules``.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, NoReturn

import click

from ..errors import NotebookKitError, StoreError
from . import canary as cli_canary
from . import consumers as cli_consumers
from . import contracts as cli_contracts
from . import definitions as cli_definitions
from . import examples as cli_examples
from . import logs as cli_logs
from . import publishing as cli_publishing
from . import schedules as cli_schedules
from . import secrets as cli_secrets
from .output import STAGES, workspace_of
from .settings import settings as settings_group
from .stores import store as store_group

if TYPE_CHECKING:
    from ..workspace.workspace import Workspace

__all__ = ["main"]


def _fail(message: str, code: int = 1) -> NoReturn:
    # One line, always: click's messages (e.g. a missing Choice option) can span lines.
    click.echo(f"notebook-kit: {' '.join(message.split())}", err=True)
    sys.exit(code)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=True,
    subcommand_metavar="COMMAND [ARGS]...",
)
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    default=None,
    help="Workspace directory (default: $NOTEBOOK_KIT_HOME or ~/.notebook_kit). One named "
    "here or in $NOTEBOOK_KIT_HOME must exist, unless --create is given.",
)
@click.option(
    "--create",
    is_flag=True,
    help="Make the workspace directory named by --home or $NOTEBOOK_KIT_HOME if it does "
    "not exist (~/.notebook_kit is always made on first use).",
)
@click.option(
    "--store",
    metavar="URL",
    default=None,
    help="The store: postgresql://user:password@host:port/database, shared by every node "
    "(default: $NOTEBOOK_KIT_STORE, else the SQLite file in the workspace).",
)
@click.version_option(package_name="notebook-kit")
@click.pass_context
def cli(ctx: click.Context, home: str | None, create: bool, store: str | None) -> None:
    """Define, test and publish small REST APIs."""
    ctx.obj = {"home": home, "create": create, "store": store}
    if ctx.invoked_subcommand is None:
        # No command: the help as --help prints it, but exit 2 (nothing was done).
        click.echo(ctx.get_help())
        ctx.exit(2)


@cli.command()
@click.pass_context
def sample(ctx: click.Context) -> None:
    """Install the restapi_sample application and deploy it to dev and prod."""
    ws = workspace_of(ctx)
    app = ws.install_sample()
    click.echo(
        f"installed {app.id} ({len(ws.definitions(app.id))} definitions), deployed to dev and prod"
    )


@cli.command()
@click.option("--rotate", type=STAGES, default=None, help="Replace this stage's key.")
@click.pass_context
def keys(ctx: click.Context, rotate: str | None) -> None:
    """Show the API keys, one per stage (callers send them as x-api-key)."""
    ws = workspace_of(ctx)
    if rotate:
        ws.rotate_key(rotate)
    for stage, key in ws.keys().items():
        click.echo(f"{stage} {key}")


@cli.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on (0.0.0.0: every interface).",
)
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="TCP port to listen on.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="HTTP worker processes (sandboxed; the supervisor holds the store).",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Run in the background: return once the server answers, printing its URL, "
    "process ID and log file. 'notebook-kit stop' ends it.",
)
@click.option(
    "--admin-port",
    default=None,
    type=click.IntRange(1, 65535),
    help="Open the admin listener on this port: GET /live, /ready, /metrics (Prometheus).",
)
@click.option(
    "--admin-host",
    default="127.0.0.1",
    show_default=True,
    help="Interface of the admin listener.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    workers: int,
    detach: bool,
    admin_port: int | None,
    admin_host: str,
) -> None:
    """Serve the deployed APIs at http://HOST:PORT/{dev|prod}/{app}/{resource}. A
    PostgreSQL store that does not answer yet is waited for (/ready says so)."""
    from ..runtime.process.handles import serve as run_server
    from ..runtime.process.node import is_unreachable

    admin = None if admin_port is None else (admin_host, admin_port)
    try:
        ws: Workspace | None = workspace_of(ctx)
    except StoreError as exc:
        if detach or not is_unreachable(exc):
            raise
        ws = None  # the node waits for it
    if detach:
        from ..runtime.process.detached import start_detached

        assert ws is not None
        shared = f" (store {ws.store.location})" if ws.store.url else ""
        server = start_detached(ws.home, host, port, workers, ws.store.url or "", admin=admin)
        click.echo(
            f"notebook-kit serving {ws.home}{shared} at {server.url} in the background "
            f"(pid {server.pid}, log {server.log}); 'notebook-kit stop' ends it"
        )
        return
    opened = [ws] if ws is not None else []

    def open_workspace() -> Workspace:
        opened.append(workspace_of(ctx))
        return opened[-1]

    def banner() -> None:  # once the workers serve, so it never precedes a failure
        served = opened[-1]
        shared = f" (store {served.store.location})" if served.store.url else ""
        where = f"; admin at http://{admin_host}:{admin_port}" if admin_port is not None else ""
        _say(
            f"notebook-kit serving {served.home}{shared} at http://{host}:{port} "
            f"({workers} worker{'s' if workers > 1 else ''}{where}); Ctrl+C stops"
        )

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    run_server(
        ws if ws is not None else open_workspace,
        host,
        port,
        workers,
        on_ready=banner,
        admin_host=admin_host,
        admin_port=admin_port,
    )


@cli.command()
@click.option("--port", default=None, type=click.IntRange(1, 65535), help="Only this one.")
@click.pass_context
def stop(ctx: click.Context, port: int | None) -> None:
    """Stop the servers 'serve --detach' started for this workspace (they finish the calls
    in flight first)."""
    from ..runtime.process.detached import stop_detached

    for server in stop_detached(workspace_of(ctx).home, port):
        click.echo(f"stopped the server at {server.url} (pid {server.pid})")


def _say(line: str) -> None:
    click.echo(line)
    sys.stdout.flush()


@cli.command(name="export")
@click.argument("app")
@click.option(
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The JSON file to write (replaced whole).",
)
@click.pass_context
def export_(ctx: click.Context, app: str, output: str) -> None:
    """Write APP and its definitions to one JSON file."""
    path = workspace_of(ctx).export_file(app, output)
    click.echo(f"exported {app} to {path}")


@cli.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--replace", is_flag=True, help="Overwrite an existing application's definitions.")
@click.pass_context
def import_(ctx: click.Context, file: str, replace: bool) -> None:
    """Import an exported application (type "REST API" only)."""
    app = workspace_of(ctx).import_application(file, replace=replace)
    click.echo(f"imported {app.id}")


@cli.command()
@click.argument("app")
@click.option(
    "--repo",
    required=True,
    type=click.Path(file_okay=False),
    help="The git repository (relative to the current directory; created when missing).",
)
@click.option("--message", required=True, help="The commit message (not empty).")
@click.option(
    "--author",
    default=None,
    help="'Name <email>' (default: user.name/user.email from git config).",
)
@click.pass_context
def commit(ctx: click.Context, app: str, repo: str, message: str, author: str | None) -> None:
    """Commit APP's files (only those) to a git repository (created when missing)."""
    sha = workspace_of(ctx).commit(app, repo, message, author=author)
    click.echo(f"committed {app} to {repo} as {sha[:12]}")


for _command in (
    cli_definitions.create,
    cli_definitions.edit,
    cli_definitions.delete,
    cli_definitions.copy,
    cli_definitions.preflight,
    cli_definitions.list_,
    cli_examples.example,
    cli_examples.check,
    cli_publishing.deploy,
    cli_publishing.undeploy,
    cli_publishing.rollback,
    cli_publishing.deployments,
    cli_publishing.resources,
    cli_publishing.openapi,
    cli_canary.promote,
    cli_canary.canary,
    cli_logs.logs,
    cli_logs.replay,
    cli_contracts.contract,
    cli_consumers.consumer,
    cli_consumers.usage,
    cli_secrets.secret,
    cli_schedules.schedule,
    settings_group,
    store_group,
):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: domain errors and usage mistakes become one line on stderr."""
    try:
        # a command's ctx.exit(n) comes back as n (``check`` exits 1 when an example fails)
        code = cli.main(args=argv, prog_name="notebook-kit", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        _fail("aborted", 1)
    except click.exceptions.NoArgsIsHelpError as exc:
        # a group named without its command (``notebook-kit settings``): its help, whole,
        # as bare ``notebook-kit`` prints its own; exit 2, nothing was done
        click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
        sys.exit(2)
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
    sys.exit(code if isinstance(code, int) else 0)
