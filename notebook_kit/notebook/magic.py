"""The ``%%notebook_kit`` cell magic: write an action in a notebook cell.

    %load_ext notebook_kit

    %%notebook_kit APP API_ID [--method M --resource PATH --label TEXT
                              --content-type T --no-auth]
                             [--test [--path-param NAME=VALUE ...] [--query Q] [--body TEXT]]
                             [--home DIR [--create] | --ws VARIABLE]
    res.body = {"hello": req.pathParameters["name"]}

The cell body becomes the action of ``APP``/``API_ID``: an existing definition is edited
(the options given change it too), a missing one is created when ``--method`` and
``--resource`` are given. ``--test`` then runs the saved definition (a test run, sandboxed)
and prints its status and body. The workspace is ``--ws`` (a ``Workspace`` variable of the
notebook), else ``--home`` (which must exist unless ``--create`` is given, as on the command
line), else ``Workspace()`` (``NOTEBOOK_KIT_HOME``). Refusals print one line on stderr,
never a traceback.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..errors import NotebookKitError, NotFoundError, ValidationError
from ..workspace.configuration import require_home
from ..workspace.workspace import Workspace

__all__ = ["load_ipython_extension", "notebook_kit_magic", "run_magic"]


class _UsageError(Exception):
    """The magic's line could not be parsed."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel
        raise _UsageError(message)


def _parser() -> _Parser:
    parser = _Parser(prog="%%notebook_kit", add_help=False)
    parser.add_argument("app")
    parser.add_argument("api_id")
    parser.add_argument("--method")
    parser.add_argument("--resource")
    parser.add_argument("--label")
    parser.add_argument("--content-type")
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument("--auth", dest="requires_auth", action="store_true", default=None)
    auth.add_argument("--no-auth", dest="requires_auth", action="store_false")
    parser.add_argument("--test", action="store_true")
    parser.add_argument("--path-param", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--query", default="")
    parser.add_argument("--body", default="")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--home")
    where.add_argument("--ws")
    parser.add_argument("--create", action="store_true")
    return parser


def _workspace(args: argparse.Namespace, namespace: dict[str, Any]) -> Workspace:
    if args.ws:
        found = namespace.get(args.ws)
        if not isinstance(found, Workspace):
            raise ValidationError(f"--ws {args.ws}: the notebook has no Workspace named {args.ws}")
        return found
    if not args.home:
        return Workspace()
    if not args.create:  # a mistyped --home is refused, not made into a new workspace
        try:
            require_home(Path(args.home))
        except NotFoundError as exc:
            raise NotFoundError(f"{exc} (add --create to make a new workspace there)") from None
    return Workspace(args.home)


def _path_parameters(items: list[str]) -> dict[str, str]:
    params = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise ValidationError(f"--path-param {item!r} must be written NAME=VALUE")
        params[name] = value
    return params


def run_magic(line: str, cell: str, namespace: dict[str, Any] | None = None) -> str:
    """Do what ``%%notebook_kit line`` with body ``cell`` asks; return what to print."""
    try:
        args = _parser().parse_args(shlex.split(line))
    except ValueError as exc:  # unbalanced quotes
        raise _UsageError(str(exc)) from None
    ws = _workspace(args, namespace or {})
    params = _path_parameters(args.path_param)
    options = {
        "label": args.label,
        "method": args.method,
        "resource": args.resource,
        "requires_auth": args.requires_auth,
    }
    changes = {k: v for k, v in options.items() if v is not None}
    if args.content_type is not None:
        changes["content_type"] = args.content_type or None
    if ws.store.get_definition(args.app, args.api_id) is not None:
        saved = ws.edit(args.app, args.api_id, action=cell, **changes)
        verb = "Saved the action of"
    elif args.method and args.resource:
        changes.setdefault("label", args.api_id)
        saved = ws.create(args.app, args.api_id, action=cell, **changes)
        verb = "Created"
    else:
        raise ValidationError(
            f"{args.app}/{args.api_id} does not exist; give --method and --resource to create it"
        )
    lines = [f"{verb} {saved.app}/{saved.id} ({saved.method} /{saved.resource})"]
    if args.test:
        result = ws.invoke(
            saved.app, saved.id, path_parameters=params, query=args.query, body=args.body
        )
        lines.append(f"{result.status} {result.text}")
        if result.stdout:
            lines.append(result.stdout.rstrip("\n"))
        if result.error:
            lines.append(result.error.rstrip("\n"))
    return "\n".join(lines)


def notebook_kit_magic(line: str, cell: str) -> None:
    """The ``%%notebook_kit`` cell magic (see the module docstring)."""
    from IPython import get_ipython

    shell = get_ipython()
    try:
        print(run_magic(line, cell, shell.user_ns if shell is not None else None))
    except _UsageError as exc:
        print(f"%%notebook_kit: {exc}", file=sys.stderr)
    except NotebookKitError as exc:  # a compile error's message names its line already
        print(f"%%notebook_kit: {exc}", file=sys.stderr)


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magic_function(notebook_kit_magic, "cell", "notebook_kit")
