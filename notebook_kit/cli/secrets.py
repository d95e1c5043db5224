"""``notebook-kit secret set|list|delete|rotate-key``: an application's secrets, per stage.

A value is read from stdin (hidden when typed at a terminal) or from an environment
variable (``--from-env``), never from an argument (arguments land in the shell's history
and in every process listing). Nothing prints a value. A change to a stage the
application is live on says, on stderr, that what is live keeps its values until the
next deploy.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..errors import ValidationError
from .output import STAGES, echo_json, echo_table, workspace_of

__all__ = ["secret"]


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Show a change's ``SecretNotLiveWarning`` as one ``warning:`` line on stderr."""
    from ..domain.secrets import SecretNotLiveWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SecretNotLiveWarning)
        yield
    for found in caught:
        if issubclass(found.category, SecretNotLiveWarning):
            click.echo(f"warning: {found.message}", err=True)
        else:
            warnings.showwarning(
                found.message, found.category, found.filename, found.lineno, found.file
            )


def _read_value(from_env: str | None, name: str, prompt: Callable[..., Any]) -> str:
    if from_env is not None:
        value = os.environ.get(from_env)
        if value is None:
            raise ValidationError(f"environment variable {from_env} is not set")
        return value
    if sys.stdin is not None and sys.stdin.isatty():
        return str(prompt(f"value of {name}", hide_input=True))
    text = sys.stdin.read() if sys.stdin is not None else ""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


@click.group()
def secret() -> None:
    """An application's secrets: read by its actions as secrets.NAME, write-only here."""


@secret.command(name="set")
@click.argument("app")
@click.argument("name")
@click.option("--stage", type=STAGES, required=True, help="The stage's value.")
@click.option("--from-env", metavar="VAR", help="Read the value from this variable.")
@click.pass_context
def set_(ctx: click.Context, app: str, name: str, stage: str, from_env: str | None) -> None:
    """Set secret NAME of APP on a stage; the value comes from stdin (one trailing newline
    dropped) or --from-env VAR. Live stages keep their values until the next deploy."""
    ws = workspace_of(ctx)
    ws.application(app)  # an unknown application before a value is read
    value = _read_value(from_env, name, click.prompt)
    with _warnings_as_lines():
        info = ws.set_secret(app, name, value, stage=stage)
    click.echo(f"secret {info.name} of {info.app} set on {info.stage} (version {info.version})")


@secret.command(name="list")
@click.argument("app")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def list_(ctx: click.Context, app: str, as_json: bool) -> None:
    """APP's secrets: name, stage, when set, version (never a value)."""
    rows = [info.to_dict() for info in workspace_of(ctx).secrets(app)]
    if as_json:
        echo_json(rows)
    elif not rows:
        click.echo(f"{app} has no secrets")
    else:
        echo_table(rows, ["name", "stage", "set_at", "version"])


@secret.command()
@click.argument("app")
@click.argument("name")
@click.option("--stage", type=STAGES, required=True, help="The stage's value.")
@click.pass_context
def delete(ctx: click.Context, app: str, name: str, stage: str) -> None:
    """Delete secret NAME of APP on a stage (live stages keep it until the next deploy)."""
    with _warnings_as_lines():
        workspace_of(ctx).delete_secret(app, name, stage)
    click.echo(f"secret {name} of {app} deleted on {stage}")


@secret.command(name="rotate-key")
@click.pass_context
def rotate_key(ctx: click.Context) -> None:
    """Encrypt every secret again under a new key (one transaction) and replace the key
    file; with NOTEBOOK_KIT_SECRETS_KEY set, print the new key once to put there."""
    from ..workspace.secrets import KEY_ENV

    where = workspace_of(ctx).rotate_secrets_key()
    if os.environ.get(KEY_ENV):
        click.echo(where)
        click.echo(f"secrets re-encrypted: set {KEY_ENV} to the key above", err=True)
    else:
        click.echo(f"secrets re-encrypted under a new key, written to {where}")
