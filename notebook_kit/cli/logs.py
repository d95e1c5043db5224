"""``notebook-kit logs|replay``: the request log, newest last, with the deployment that
answered; a recorded call run again on another version, the two answers diffed."""

from __future__ import annotations

import click

from ..workspace.traffic import STATUS_CLASSES, filter_requests
from .output import STAGES, echo_json, echo_table, workspace_of

__all__ = ["logs", "replay"]


def _cut(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@click.command()
@click.option("--stage", type=STAGES, default=None, help="Only this stage's requests.")
@click.option("--app", default=None, help="Only requests to this application.")
@click.option("--status", type=click.Choice(STATUS_CLASSES), default=None, help="Status class.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many of the newest matching requests.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def logs(
    ctx: click.Context,
    stage: str | None,
    app: str | None,
    status: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The newest logged requests: ID, time, stage, app, method, path, status, duration, the
    deployment that answered, the caller's consumer and the error (cut to 60 characters
    here; whole with --json)."""
    rows = filter_requests(workspace_of(ctx).request_log(), stage, app, status)[-limit:]
    if as_json:
        echo_json(rows)
        return
    shown = [
        {
            **row,
            "ms": f"{row['duration_ms']:.1f}",
            "consumer": row.get("consumer") or "",
            "error": _cut(row.get("error") or "", 60),
        }
        for row in rows
    ]
    columns = ["id", "at", "stage", "app", "method", "path", "status", "ms", "deployment"]
    columns += ["consumer", "error"]
    echo_table(shown, columns)


@click.command()
@click.argument("entry_id", type=int)
@click.option(
    "--against",
    default="saved",
    show_default=True,
    help="The version to compare with: saved, dev, prod or a deployment ID.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def replay(ctx: click.Context, entry_id: int, against: str, as_json: bool) -> None:
    """Run recorded call ENTRY_ID (see 'logs') again, in sandboxed processes, on the
    deployment that answered it and on another version, and show the two answers'
    differences."""
    result = workspace_of(ctx).replay(entry_id, against)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(
        f"replayed entry {entry_id} ({result.app}/{result.api_id}) on "
        f"{result.before_version} ({result.before.status}) and {result.after_version} "
        f"({result.after.status})"
    )
    if result.truncated:
        click.echo("note: the recorded body was cut to record_max_bytes")
    click.echo(result.diff if result.diff else "same answer")
