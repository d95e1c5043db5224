"""``notebook-kit promote|canary``: end a canary by making it live, and read how it does.

A canary starts with ``deploy APP --stage prod --canary PERCENT``; ``rollback APP --stage
prod`` drops it (``publishing``)."""

from __future__ import annotations

from typing import Any

import click

from ..domain.canary import Canary, SideStats
from .output import echo_json, echo_table, workspace_of

__all__ = ["canary", "promote"]


@click.command()
@click.argument("app")
@click.pass_context
def promote(ctx: click.Context, app: str) -> None:
    """Serve APP's prod canary to every call: it becomes the live deployment."""
    deployment = workspace_of(ctx).promote(app)
    click.echo(f"{app} on prod now serves deployment {deployment.id} (the canary) to every call")


def _side(name: str, stats: SideStats | None) -> dict[str, Any]:
    assert stats is not None  # status() reads them
    rate = stats.error_rate

    def ms(value: float | None) -> str | None:
        return None if value is None else f"{value:.1f}"

    return {
        "side": name,
        "deployment": stats.deployment,
        "calls": stats.calls,
        "5xx": stats.errors,
        "error_%": None if rate is None else f"{rate:.1f}",
        "p50_ms": ms(stats.p50_ms),
        "p99_ms": ms(stats.p99_ms),
    }


def _describe(found: Canary) -> None:
    click.echo(
        f"canary of {found.app} on {found.stage} since {found.started_at}: deployment "
        f"{found.canary_id} serves {found.percent} % of the calls, deployment "
        f"{found.live_id} the rest"
    )
    if found.rollback_above is None:
        click.echo("automatic rollback: off")
    else:
        click.echo(
            f"automatic rollback: above {found.rollback_above:g} % of 5xx answers, "
            f"once the canary has answered {found.min_calls} calls"
        )
    rows = [_side("live", found.live), _side("canary", found.canary)]
    echo_table(rows, ["side", "deployment", "calls", "5xx", "error_%", "p50_ms", "p99_ms"])


@click.command(name="canary")
@click.argument("app")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_context
def canary(ctx: click.Context, app: str, as_json: bool) -> None:
    """APP's canary on prod: the split and each side's calls, 5xx share, p50 and p99."""
    ws = workspace_of(ctx)
    found = ws.canary(app)
    ended = ws.canaries.ended(app) if found is None else None
    if as_json:
        echo_json({"canary": None if found is None else found.to_dict(), "ended": ended})
    elif found is not None:
        _describe(found)
    else:
        click.echo(f"no canary of {app} on prod" + (f"; the last one was {ended}" if ended else ""))
