"""``notebook-kit deploy|undeploy|rollback|deployments|resources|openapi``: what the
stages serve, its history, and the documents derived from it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..domain.checks import CheckReport
from ..domain.models import endpoint_url
from ..workspace.transfer import write_json
from .output import STAGES, echo_json, echo_table, workspace_of

__all__ = ["deploy", "deployments", "openapi", "resources", "rollback", "undeploy"]


F = TypeVar("F", bound=Callable[..., Any])


def _base_url_option(text: str) -> Callable[[F], F]:
    return click.option("--base-url", default="http://127.0.0.1:8000", show_default=True, help=text)


@click.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES, help="dev (debug) or prod (release).")
@click.option(
    "--canary",
    "canary",
    type=int,
    default=None,
    metavar="PERCENT",
    help="Prod only: serve the new deployment to PERCENT (1-99) % of the calls, the live "
    "one to the rest, until 'promote' or 'rollback'.",
)
@click.option(
    "--rollback-above",
    type=float,
    default=None,
    metavar="PERCENT",
    help="With --canary: roll the canary back by itself once more than PERCENT % of its "
    "calls answer 5xx (after the canary_min_calls setting's number of calls).",
)
@click.option(
    "--description",
    "-m",
    default="",
    help="What this deploy is for (one line, kept in the deployment history).",
)
@_base_url_option("Base URL used to print the endpoint URLs.")
@click.option("--force", is_flag=True, help="Deploy even when an example fails.")
@click.pass_context
def deploy(
    ctx: click.Context,
    app: str,
    stage: str,
    canary: int | None,
    rollback_above: float | None,
    description: str,
    base_url: str,
    force: bool,
) -> None:
    """Publish APP's saved definitions to a stage, once its examples pass (--canary: to a
    share of prod's calls)."""
    ws = workspace_of(ctx)
    deployment = ws.deploy(
        app,
        stage,
        force=force,
        canary=canary,
        rollback_above=rollback_above,
        description=description,
    )
    said = f": {deployment.description}" if deployment.description else ""
    if canary is None:
        click.echo(f"deployed {app} to {stage} (deployment {deployment.id}){said}")
    else:
        running = ws.canary(app, stats=False)
        assert running is not None  # the deploy just started it
        click.echo(
            f"deployed {app} to {stage} as a canary (deployment {deployment.id}): "
            f"{canary} % of the calls, deployment {running.live_id} the rest{said}"
        )
    if deployment.checks is not None:
        report = CheckReport.from_dict(deployment.checks)
        if report.passed:
            click.echo(f"  examples: {report.summary()}")
        else:
            click.echo(f"  forced past failing examples: {report.summary()}")
            for line in report.lines():
                click.echo(f"  {line}")
    for d in ws.definitions(app):
        click.echo(f"  {d.method:<7} {endpoint_url(base_url, stage, app, d.resource)}")


@click.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES, help="dev (debug) or prod (release).")
@click.pass_context
def undeploy(ctx: click.Context, app: str, stage: str) -> None:
    """Stop serving APP on a stage."""
    workspace_of(ctx).undeploy(app, stage)
    click.echo(f"undeployed {app} from {stage}")


@click.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES, help="dev (debug) or prod (release).")
@click.option(
    "--to",
    "to",
    type=int,
    default=None,
    help="Deployment ID (default: the one before the live one).",
)
@click.pass_context
def rollback(ctx: click.Context, app: str, stage: str, to: int | None) -> None:
    """Serve an earlier deployment of APP on a stage; while a canary runs (and no --to is
    given), drop the canary and keep the live deployment."""
    ws = workspace_of(ctx)
    canary = ws.canary(app, stats=False) if stage == "prod" and to is None else None
    deployment = ws.rollback(app, stage, to)
    dropped = f" (canary deployment {canary.canary_id} dropped)" if canary else ""
    click.echo(
        f"{app} on {stage} now serves deployment {deployment.id} of "
        f"{deployment.deployed_at}{dropped}"
    )


@click.command()
@click.option("--app", default=None, help="Only this application's deployments.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON objects instead of a table.")
@click.pass_context
def deployments(ctx: click.Context, app: str | None, as_json: bool) -> None:
    """The deployment history; ACTIVE marks what each stage serves now, DESCRIPTION what
    the deploy was said to be for, EXAMPLES what the deploy's examples found ('3 pass',
    '1 of 3 fail, forced')."""
    found = workspace_of(ctx).deployments(app)
    if as_json:
        echo_json([d.to_dict() for d in found])
    else:
        rows = [{**d.to_dict(), "examples": d.checks_summary()} for d in found]
        columns = ["id", "app", "stage", "deployed_at", "host", "active", "description"]
        echo_table(rows, [*columns, "examples"])


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def resources(ctx: click.Context, as_json: bool) -> None:
    """Resource counts per stage: the root plus one per application and path segment."""
    ws = workspace_of(ctx)
    counts = ws.resources()
    if as_json:
        echo_json(counts)
        return
    for stage, data in counts.items():
        click.echo(f"{stage}: {data['total']} resources")
        for line in ws.resource_tree(stage):
            click.echo(f"  {line}")


@click.command()
@click.argument("app")
@click.option("--stage", required=True, type=STAGES, help="dev (debug) or prod (release).")
@click.option(
    "--output", "-o", default=None, type=click.Path(dir_okay=False), help="Write to this file."
)
@_base_url_option("Base URL of the runtime; the server URL is BASE/STAGE/APP.")
@click.option(
    "--openapi-version",
    "version",
    type=click.Choice(["3.1", "3.0"]),
    default="3.1",
    show_default=True,
    help="3.0: the export for tools that read only OpenAPI 3.0.",
)
@click.pass_context
def openapi(
    ctx: click.Context, app: str, stage: str, output: str | None, base_url: str, version: str
) -> None:
    """Print (or write to --output) the OpenAPI document of APP as deployed on a stage."""
    document = workspace_of(ctx).openapi(app, stage, base_url, version)
    if output is None:
        echo_json(document)
        return
    write_json(output, document)
    click.echo(f"wrote the OpenAPI document of {app} on {stage} to {output}")
