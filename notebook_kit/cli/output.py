"""What every ``notebook-kit`` command shares: the workspace named by ``--home``, the
files options name, and the two output shapes (aligned tables and ``--json``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from ..domain.models import Stage
from ..domain.settings import HOME_ENV
from ..errors import NotebookKitError, NotFoundError
from ..workspace.configuration import require_home
from ..workspace.workspace import Workspace

__all__ = ["STAGES", "echo_json", "echo_table", "read_file", "workspace_of"]

STAGES = click.Choice([str(s) for s in Stage])


def workspace_of(ctx: click.Context) -> Workspace:
    """The workspace of ``--home`` on the store of ``--store`` (the group keeps both in
    ``ctx.obj``). A home the user named (``--home`` or ``$NOTEBOOK_KIT_HOME``) must exist
    unless ``--create`` was given: a typo is refused, not made into a new workspace."""
    home = ctx.obj["home"]
    named = home if home is not None else os.environ.get(HOME_ENV) or None
    if named is not None and not ctx.obj.get("create"):
        try:
            require_home(Path(named))
        except NotFoundError as exc:
            raise NotebookKitError(f"{exc} (add --create to make a new workspace there)") from None
    return Workspace(home, store=ctx.obj.get("store"))


def read_file(path: str | None, what: str) -> str | None:
    """The text of the ``what`` file at ``path`` (None when no path is given)."""
    if path is None:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotebookKitError(f"cannot read the {what} file {path}: {exc}") from None


def echo_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """``columns`` of ``rows`` under upper-case headers, padded to line up; '(none)' if empty."""
    if not rows:
        click.echo("(none)")
        return
    text = [[("" if r[c] is None else str(r[c])) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in text)) for i, c in enumerate(columns)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in text:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))
