"""``notebook-kit settings get|set|unset|list``: the workspace settings from a shell.

Secret settings (passwords, client secrets, the database URL) are shown masked
(``****abcd`` for long values, ``********`` for short ones) unless ``get --reveal`` asks.
A value set in the environment (``NOTEBOOK_KIT_<NAME>``) wins over the stored one; the
listing's SOURCE column says which applies: env, stored or default.
"""

from __future__ import annotations

import os
from typing import Any

import click

from ..domain.settings import SETTINGS, Setting, env_name, find_setting, mask
from ..workspace.workspace import Workspace
from .output import echo_json, echo_table, workspace_of

__all__ = ["settings"]


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _rows(ws: Workspace) -> list[dict[str, Any]]:
    stored = ws.store.stored_settings()
    values = ws.settings()
    rows = []
    for setting in SETTINGS:
        source = (
            "env"
            if env_name(setting) in os.environ
            else "stored"
            if setting.name in stored
            else "default"
        )
        rows.append(
            {
                "name": setting.name,
                "value": mask(setting, values[setting.name]),
                "source": source,
                "secret": setting.secret,
                "help": setting.help,
            }
        )
    return rows


def _note_override(setting: Setting) -> None:
    if env_name(setting) in os.environ:
        click.echo(
            f"note: {env_name(setting)} is set and overrides the stored value here", err=True
        )


@click.group()
def settings() -> None:
    """Workspace settings: SMTP, OAuth2, file storage, database URL, limits."""


@settings.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON objects instead of a table.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """Every setting with its value in force (secrets masked) and where it comes from."""
    rows = _rows(workspace_of(ctx))
    if as_json:
        echo_json(rows)
        return
    echo_table([{**r, "value": _show(r["value"])} for r in rows], ["name", "value", "source"])


@settings.command()
@click.argument("name")
@click.option("--reveal", is_flag=True, help="Show a secret setting unmasked.")
@click.pass_context
def get(ctx: click.Context, name: str, reveal: bool) -> None:
    """Print the value of NAME in force (empty when unset)."""
    setting = find_setting(name)
    value = workspace_of(ctx).setting(name)
    click.echo(_show(value if reveal else mask(setting, value)))


@settings.command(name="set")
@click.argument("name")
@click.argument("value")
@click.pass_context
def set_(ctx: click.Context, name: str, value: str) -> None:
    """Store VALUE for NAME in the workspace (checked first)."""
    setting = find_setting(name)
    workspace_of(ctx).set_setting(name, value)
    shown = _show(mask(setting, value)) if setting.secret else value
    click.echo(f"set {name} = {shown}")
    _note_override(setting)


@settings.command()
@click.argument("name")
@click.pass_context
def unset(ctx: click.Context, name: str) -> None:
    """Forget the stored value of NAME (back to its default)."""
    setting = find_setting(name)
    workspace_of(ctx).set_setting(name, None)
    click.echo(f"unset {name} (default: {_show(setting.default) or 'none'})")
    _note_override(setting)
