"""The action's environment: ``fn``, ``db`` and ``http``, and where ``db`` lives.

``ActionEnvironment`` is what every action sees besides ``req``, ``res`` and ``const``,
built once per context. The default environment database is
``<home>/environment/environment.sqlite3``: a folder of its own, apart from the
workspace store, because SQLite makes its ``-wal``, ``-shm`` and journal files beside a
database, and the processes that run action code may create and remove files in the
database's folder but must not be able to do that beside the store (``sandbox.plan``).

Workspaces made before kept it at ``<home>/environment.sqlite3``; ``move_environment``
moves it (checkpointed, so its WAL holds nothing) the first time the trusted side opens
the workspace. Stop running servers of an older version before upgrading: one would
keep writing to the old name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

from .context import BuiltinContext
from .db import open_database

__all__ = [
    "ActionEnvironment",
    "environment_folder",
    "environment_path",
    "move_environment",
    "sqlite_file_of",
]

FILE_NAME = "environment.sqlite3"


def environment_folder(home: Path) -> Path:
    return home / "environment"


def environment_path(home: Path) -> Path:
    """The default environment database (``db`` without a ``database_url``)."""
    return environment_folder(home) / FILE_NAME


def sqlite_file_of(url: str | None) -> Path | None:
    """The file a ``sqlite:///path`` ``database_url`` names (None for anything else)."""
    if url and url.startswith("sqlite:///") and "?" not in url and url != "sqlite:///:memory:":
        return Path(url.removeprefix("sqlite:///"))
    return None


def move_environment(home: Path) -> None:
    """Move an environment database of the old layout into its folder (idempotent)."""
    folder = environment_folder(home)
    old = home / FILE_NAME
    folder.mkdir(mode=0o700, exist_ok=True)
    if not old.exists() or (folder / FILE_NAME).exists():
        return
    with contextlib.closing(sqlite3.connect(old)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.replace(old, folder / FILE_NAME)
    for suffix in ("-wal", "-shm", "-journal"):
        Path(f"{old}{suffix}").unlink(missing_ok=True)


class ActionEnvironment:
    """``fn``, ``db`` and ``http`` over one context, made on first use (so a process that
    never runs an action never loads the HTTP client). ``db`` follows the
    ``database_url`` setting: it is reopened when the setting changes (and wrapped to be
    timed while the ``tracing`` setting is on)."""

    def __init__(self, context: BuiltinContext) -> None:
        self.context = context
        self._names: dict[str, Any] = {}
        self._database_url: Any = object()  # nothing opened yet
        self._database: Any = None

    @property
    def database(self) -> Any:
        """``db`` for the ``database_url`` in force."""
        settings = self.context.settings()  # read once: this runs at every ``db`` use
        url, tracing = settings["database_url"], bool(settings.get("tracing"))
        if (url, tracing) != self._database_url:
            self._database = open_database(url, environment_path(self.context.home))
            if tracing:  # its statements noted for the call's trace (``outbound``)
                from .outbound import TimedDatabase

                self._database = TimedDatabase(self._database)
            self._database_url = (url, tracing)
        return self._database

    def names(self) -> dict[str, Any]:
        """The names actions compile with."""
        if not self._names:
            from .functions import Functions
            from .http import HttpClient

            context = self.context
            self._names = {
                "fn": Functions(context),
                "http": HttpClient(lambda: context.setting("http_timeout")),
            }
        return {**self._names, "db": self.database}
