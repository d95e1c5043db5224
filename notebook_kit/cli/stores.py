"""``notebook-kit store ...``: moving a workspace's store (``copy --to URL``)."""

from __future__ import annotations

import click

from .output import workspace_of

__all__ = ["store"]


@click.group()
def store() -> None:
    """Manage the store itself (see docs/stores.md)."""


@store.command()
@click.option(
    "--to",
    "target",
    required=True,
    metavar="URL",
    help="An empty PostgreSQL store: postgresql://user:password@host:port/database.",
)
@click.pass_context
def copy(ctx: click.Context, target: str) -> None:
    """Copy the current store (--store, else the workspace's SQLite file) into an EMPTY
    store at URL: all of it (ids, history, live deployments, keys, settings, users, the
    request log) or, on any failure, nothing."""
    from ..store.opening import open_store

    ws = workspace_of(ctx)
    if not target:
        raise click.UsageError("--to needs a store URL")
    destination = open_store(target, ws.home)
    if destination.url is not None and destination.url == ws.store.url:
        raise click.UsageError("--to names the store being copied")
    counts = ws.store.copy_into(destination)
    summary = ", ".join(
        f"{counts[t]} {label}"
        for t, label in (
            ("applications", "applications"),
            ("definitions", "definitions"),
            ("deployments", "deployments"),
            ("users", "users"),
        )
    )
    click.echo(f"copied {ws.store.location} to {destination.location}: {summary}")
