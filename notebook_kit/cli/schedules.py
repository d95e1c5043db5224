"""``notebook-kit schedule add|list|pause|resume|run|runs|delete``: scheduled actions.

A schedule runs one of an application's definitions at the ticks of a cron expression
(docs/schedules.md); it runs once the application is deployed, on every node of the
store, each tick once. ``list`` shows each schedule per stage with its next and last
run; ``runs`` the run log.
"""

from __future__ import annotations

import click

from .output import STAGES, echo_json, echo_table, workspace_of

__all__ = ["schedule"]

_DEPLOYED_STAGE = click.option(
    "--stage", type=STAGES, default="dev", show_default=True,
    help="The stage the schedule is deployed to.",
)  # fmt: skip
_LIST_COLUMNS = [
    "app", "name", "stage", "definition", "cron", "timezone", "overlap", "paused",
    "next_run", "last_run", "last_status",
]  # fmt: skip
_RUN_COLUMNS = ["id", "stage", "app", "schedule", "tick", "status", "duration_ms", "node", "error"]


@click.group()
def schedule() -> None:
    """Scheduled actions: run a definition on a cron schedule, once per tick across nodes."""


@schedule.command()
@click.argument("app")
@click.argument("name")
@click.option("--definition", "definition", required=True, metavar="ID",
              help="The API ID of the definition each tick runs.")  # fmt: skip
@click.option("--cron", required=True,
              help="5 fields (minute hour day month weekday), or 6: seconds first.")  # fmt: skip
@click.option("--tz", "timezone", default="UTC", show_default=True,
              help="The IANA time zone the expression is read in.")  # fmt: skip
@click.option("--overlap", type=click.Choice(["skip", "queue"]), default="skip",
              show_default=True,
              help="A tick while the last run runs: skipped, or run after it.")  # fmt: skip
@click.option("--replace", is_flag=True, help="Change the schedule of that name.")
@click.pass_context
def add(ctx: click.Context, app: str, name: str, definition: str, cron: str, timezone: str,
        overlap: str, replace: bool) -> None:  # fmt: skip
    """Save schedule NAME of APP (it runs once APP is deployed: deploy to start it)."""
    saved = workspace_of(ctx).add_schedule(app, name, definition, cron, timezone, overlap,
                                           replace)  # fmt: skip
    click.echo(
        f"schedule {saved.name} of {saved.app} saved: {saved.definition} at '{saved.cron}' "
        f"({saved.timezone}, overlap {saved.overlap}); it runs once {saved.app} is deployed"
    )


@schedule.command(name="list")
@click.argument("app", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_(ctx: click.Context, app: str | None, as_json: bool) -> None:
    """Schedules (of APP), per stage they are deployed to, with their next and last runs
    (stage empty: saved, not deployed)."""
    rows = workspace_of(ctx).schedules(app)
    if as_json:
        echo_json(rows)
    else:
        echo_table(rows, _LIST_COLUMNS)


@schedule.command()
@click.argument("app")
@click.argument("name")
@_DEPLOYED_STAGE
@click.pass_context
def pause(ctx: click.Context, app: str, name: str, stage: str) -> None:
    """Pause a deployed schedule on a stage, at once on every node."""
    workspace_of(ctx).pause_schedule(app, name, stage)
    click.echo(f"schedule {name} of {app} paused on {stage}")


@schedule.command()
@click.argument("app")
@click.argument("name")
@_DEPLOYED_STAGE
@click.pass_context
def resume(ctx: click.Context, app: str, name: str, stage: str) -> None:
    """Resume a paused schedule on a stage (ticks missed while paused are not run)."""
    workspace_of(ctx).resume_schedule(app, name, stage)
    click.echo(f"schedule {name} of {app} resumed on {stage}")


@schedule.command()
@click.argument("app")
@click.argument("name")
@_DEPLOYED_STAGE
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.pass_context
def run(ctx: click.Context, app: str, name: str, stage: str, as_json: bool) -> None:
    """Run a deployed schedule once now, here; exits 1 if the run failed."""
    done = workspace_of(ctx).run_schedule_now(app, name, stage)
    if as_json:
        echo_json(done)
    else:
        line = f"run {done['id']} of {name} on {stage}: {done['status']} "
        line += f"in {done['duration_ms']:.0f} ms"
        click.echo(line + (f": {done['error']}" if done.get("error") else ""))
    if done.get("status") != "succeeded":
        ctx.exit(1)


@schedule.command()
@click.argument("app")
@click.argument("name", required=False)
@click.option("--stage", type=STAGES, default=None, help="Only this stage's runs.")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True,
              help="At most this many runs.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def runs(ctx: click.Context, app: str, name: str | None, stage: str | None, limit: int,
         as_json: bool) -> None:  # fmt: skip
    """The run log of APP's schedules (NAME's only), newest first."""
    rows = workspace_of(ctx).schedule_runs(app, name, stage, limit)
    if as_json:
        echo_json(rows)
    else:
        for row in rows:
            if row["duration_ms"] is not None:
                row["duration_ms"] = f"{row['duration_ms']:.0f}"
        echo_table(rows, _RUN_COLUMNS)


@schedule.command()
@click.argument("app")
@click.argument("name")
@click.pass_context
def delete(ctx: click.Context, app: str, name: str) -> None:
    """Delete a saved schedule (a deployed one runs until APP's next deploy)."""
    workspace_of(ctx).delete_schedule(app, name)
    click.echo(f"schedule {name} of {app} deleted (deploy {app} to stop it where it runs)")
