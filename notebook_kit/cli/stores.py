"""``notebook-kit store ...``: moving a workspace's store (``copy --to URL``) and
bringing its schema to this notebook-kit's (``migrate [--check]``)."""

from __future__ import annotations

from typing import Any

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


# `store migrate --check`'s exit codes (documented in docs/stores.md): 0 nothing to do,
# 1 an error (one line on stderr), 2 a usage error (click's).
PENDING, PENDING_REFUSED, TOO_NEW = 3, 4, 5


@store.command()
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: print the store's schema version and this notebook-kit's, whether "
    "a migration is pending and whether nodes of the store's version can read the store "
    "after it. Exit 0: nothing to do; 3: a migration is pending that older nodes can read "
    "past; 4: one older nodes cannot read (they refuse the store until upgraded); 5: the "
    "store is newer than this notebook-kit can read.",
)
@click.pass_context
def migrate(ctx: click.Context, check: bool) -> None:
    """Bring the store (--store, else the workspace's SQLite file) to this notebook-kit's
    schema version; any notebook-kit command or node does so on opening it. Back the
    store up first (docs/guide/production.md, Upgrading)."""
    import os
    from pathlib import Path

    from ..domain.settings import default_home
    from ..store.opening import STORE_ENV
    from ..store.schema_versions import check_schema

    url = ctx.obj.get("store")
    url = os.environ.get(STORE_ENV) if url is None else url
    home = Path(ctx.obj["home"]).expanduser() if ctx.obj.get("home") else default_home()
    found = check_schema(url, home)
    for line in _describe(found):
        click.echo(line)
    if check:
        if not found.readable_here:
            ctx.exit(TOO_NEW)
        if found.pending:
            ctx.exit(PENDING_REFUSED if found.older_refused else PENDING)
        return
    if not found.readable_here:
        raise click.ClickException("this notebook-kit cannot migrate a newer store: upgrade it")
    if not found.pending:
        click.echo("nothing to migrate")
        return
    workspace_of(ctx)  # opening the store migrates it, in one transaction
    click.echo(f"migrated {found.where} from schema version {found.store} to {found.code}")


def _describe(found: Any) -> list[str]:
    """What ``store migrate`` says of a ``SchemaCheck``, one fact a line."""
    from ..store.dialect import UPGRADE_DOC

    lines = [
        f"store: {found.where}",
        f"store schema version: {found.store}",
        f"this notebook-kit's schema version: {found.code}",
    ]
    if not found.readable_here:
        lines.append(
            f"the store needs notebook-kit of schema version {found.readable_from} or later: "
            f"upgrade this one ({UPGRADE_DOC})"
        )
    elif found.store > found.code:
        lines.append("nothing to migrate: the store is newer, and this notebook-kit can read it")
    elif not found.pending:
        lines.append("nothing to migrate")
    else:
        lines.append(f"pending: {found.pending} migration(s), {found.store} -> {found.code}")
        if not found.store:
            lines.append("a new store: its tables are made when it is first opened")
        elif found.older_refused:
            lines.append(
                f"after it, nodes of schema version {found.readable_after - 1} or older cannot "
                f"read the store and refuse to start: back up, migrate, then upgrade every "
                f"node ({UPGRADE_DOC})"
            )
        else:
            lines.append(
                f"after it, nodes of schema version {found.readable_after} or later can still "
                "read the store: upgrade them one at a time"
            )
    return lines
