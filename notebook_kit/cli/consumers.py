"""``notebook-kit consumer create|list|delete``, ``consumer key add|revoke`` and
``notebook-kit usage``: named callers with keys of their own, limits and usage
(docs/consumers.md).

A key is printed once, when it is made (``create``, ``key add``); lists show its prefix.
The built-in consumers ``stage:dev`` and ``stage:prod`` (each stage's own key) are listed
but changed only with ``notebook-kit keys --rotate STAGE``.
"""

from __future__ import annotations

from typing import Any

import click

from ..domain.consumers import Consumer, ConsumerKey
from .output import echo_json, echo_table, workspace_of

__all__ = ["consumer", "usage"]

_USAGE_COLUMNS = ["consumer", "application", "stage", "calls", "4xx", "5xx"]
_QUOTA_COLUMNS = ["quota_used", "quota_left"]

_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
_expires_option = click.option(
    "--expires",
    metavar="DURATION|DATE",
    default=None,
    help="When the key stops working: a duration (45s, 30m, 12h, 90d, 2w) from now or a UTC "
    "date or time (2027-01-31, 2027-01-31T12:00:00Z). Default: never.",
)


def _echo_new_key(new: dict[str, Any], what: str) -> None:
    click.echo(what)
    click.echo(new["key"])
    expiry = f"; it expires {new['expires_at']}" if new.get("expires_at") else ""
    click.echo(f"keep this key now: it will not be shown again{expiry}")


def _scope_text(c: Consumer) -> str:
    apps = ", ".join(c.apps) if c.apps else "every application"
    stages = ", ".join(c.stages) if c.stages else "dev and prod"
    return f"{apps} on {stages}"


def _limits_text(c: Consumer) -> str:
    parts = []
    if c.rate is not None:
        parts.append(f"rate {c.rate.text()} (burst {c.rate.burst})")
    if c.quota is not None:
        parts.append(f"quota {c.quota.text()}")
    return ", ".join(parts) or "no limits"


def _key_text(key: ConsumerKey) -> str:
    shown = key.to_dict()
    notes = []
    if shown["expires_at"]:
        notes.append(f"expires {shown['expires_at']}")
    if shown["last_used_at"]:
        notes.append(f"last used {shown['last_used_at']}")
    elif key.created_at:  # a stage's own key has no usage record
        notes.append("never used")
    return f"{key.prefix}… ({', '.join(notes)})" if notes else f"{key.prefix}…"


def _row(c: Consumer) -> dict[str, Any]:
    rate = None if c.rate is None else f"{c.rate.text()} burst {c.rate.burst}"
    return {
        "name": f"{c.name} (built-in)" if c.builtin else c.name,
        "apps": ",".join(c.apps) or "*",
        "stages": ",".join(c.stages) or "dev,prod",
        "rate": rate or "-",
        "quota": "-" if c.quota is None else c.quota.text(),
        "keys": "; ".join(_key_text(k) for k in c.keys) or "(none)",
    }


@click.group(subcommand_metavar="COMMAND [ARGS]...")
def consumer() -> None:
    """Named callers: their keys, the applications and stages they may call, their rate
    limit and quota (stage keys are the built-in consumers stage:dev and stage:prod)."""


@consumer.command()
@click.argument("name")
@click.option(
    "--app",
    "apps",
    multiple=True,
    metavar="APP",
    help="An application it may call (repeat for several; default: every application).",
)
@click.option(
    "--stage",
    "stages",
    multiple=True,
    metavar="dev|prod",
    help="A stage it may call (repeat for both; default: both).",
)
@click.option(
    "--rate",
    metavar="N/s|N/min",
    default=None,
    help="At most N calls in any second (N/s) or any minute (N/min), across every node.",
)
@click.option(
    "--burst",
    metavar="N",
    default=None,
    help="At most N of them in one tenth of that window (default: N of --rate).",
)
@click.option(
    "--quota",
    metavar="N/day|N/week|N/month",
    default=None,
    help="At most N calls per UTC day, week (from Monday) or calendar month.",
)
@_expires_option
@_json_option
@click.pass_context
def create(
    ctx: click.Context,
    name: str,
    apps: tuple[str, ...],
    stages: tuple[str, ...],
    rate: str | None,
    burst: str | None,
    quota: str | None,
    expires: str | None,
    as_json: bool,
) -> None:
    """Make the consumer NAME and print its first key (shown this once)."""
    ws = workspace_of(ctx)
    new = ws.consumers.create(
        name, list(apps), list(stages), rate=rate, burst=burst, quota=quota,
        expires=expires,
    )  # fmt: skip
    if as_json:
        echo_json(dict(new))
        return
    made = ws.consumers.get(name)
    _echo_new_key(
        new, f"created consumer {name}: {_scope_text(made)}; {_limits_text(made)}; its key:"
    )


@consumer.command(name="list")
@_json_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """Every consumer: scope, limits and keys (by prefix, with expiry and last use)."""
    found = workspace_of(ctx).consumers.list()
    if as_json:
        echo_json([c.to_dict() for c in found])
        return
    echo_table([_row(c) for c in found], ["name", "apps", "stages", "rate", "quota", "keys"])


@consumer.command()
@click.argument("name")
@click.pass_context
def delete(ctx: click.Context, name: str) -> None:
    """Delete the consumer NAME: its keys stop working on every node within a second
    (its calls stay counted in usage)."""
    workspace_of(ctx).consumers.delete(name)
    click.echo(f"deleted consumer {name}; its keys no longer work")


@consumer.group(subcommand_metavar="COMMAND [ARGS]...")
def key() -> None:
    """A consumer's keys: add a second one, then revoke the old one (rotation)."""


@key.command()
@click.argument("name")
@_expires_option
@_json_option
@click.pass_context
def add(ctx: click.Context, name: str, expires: str | None, as_json: bool) -> None:
    """Give NAME another key (at most two at once) and print it (shown this once)."""
    new = workspace_of(ctx).consumers.add_key(name, expires)
    if as_json:
        echo_json(dict(new))
        return
    _echo_new_key(new, f"new key of consumer {name} (prefix {new['prefix']}):")


@key.command()
@click.argument("name")
@click.argument("key_prefix")
@click.pass_context
def revoke(ctx: click.Context, name: str, key_prefix: str) -> None:
    """Revoke NAME's key that starts with KEY_PREFIX (as 'consumer list' shows it): every
    node refuses it within a second."""
    prefix = workspace_of(ctx).consumers.revoke_key(name, key_prefix)
    click.echo(f"revoked the key {prefix}… of consumer {name}")


@click.command()
@click.option("--consumer", "name", metavar="NAME", default=None, help="Only this consumer.")
@_json_option
@click.pass_context
def usage(ctx: click.Context, name: str | None, as_json: bool) -> None:
    """Calls per consumer, application and stage (every day counted), 4xx and 5xx answers,
    and the quota used and left in the current period."""
    rows = workspace_of(ctx).consumers.usage(name)
    if as_json:
        echo_json(rows)
        return
    echo_table(rows, _USAGE_COLUMNS + _QUOTA_COLUMNS)
