"""The execution environment's database, reached from actions as ``db``.

By default a SQLite file in the workspace (``environment/environment.sqlite3``), driven
by the stdlib's sqlite3 directly (the fast path). With the ``database_url`` setting, any
SQLAlchemy URL (``postgresql+psycopg://user:pw@host/db``, ``mysql+pymysql://...``)
through a pooled SQLAlchemy engine (``SqlDatabase``); a ``sqlite:///path`` URL stays on
the stdlib path. Both offer the same ``query``/``execute``/``executemany``/``transaction``.

Parameters are always bound by the driver, never formatted into SQL. Two styles work on
every URL: ``?`` with a list (``db.query("... WHERE id = ?", [id])``) and ``:name`` with a
dict (``db.query("... WHERE id = :id", {"id": id})``). Each ``execute`` is its own
transaction unless wrapped in ``db.transaction()``. Failures raise ``BuiltinError``.

What SQL may reach is the kernel's business: the process that runs an action can open
the environment database's folder and the files root, not the workspace store
(``sandbox.plan``), so an ``ATTACH`` of the store fails like any other open of it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..store.connection import ThreadConnections
from .failures import failed

__all__ = ["Database", "open_database"]

Params = Sequence[Any] | dict[str, Any]
_first = itemgetter(0)


def _size_in_wal(conn: sqlite3.Connection) -> None:
    """Write one WAL frame when the file's WAL holds none, changing nothing.

    While a WAL-mode file's WAL is empty (as it is whenever the last connection to it has
    closed), SQLite learns the database's size by asking the kernel (an ``fstat``) at the
    start of every read: one system call on every ``db.query``. After one commit the size
    is in the WAL index, shared by every connection, and stays there. So a new connection
    sets ``user_version`` to the value it has (a frame, no data changed), without waiting:
    if another connection is writing, or the file is read-only, reads just keep the syscall.
    """
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    with contextlib.suppress(OSError):
        if path and os.path.getsize(f"{path}-wal") > 0:
            return  # frames there already (or another process will write them)
    (wait,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            conn.execute(f"PRAGMA user_version = {int(version)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error:
        pass  # busy or read-only: nothing changed, reads work as before
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(wait)}")


class Database:
    """``db`` in actions: ``query`` returns rows as dicts, ``execute`` the row count."""

    __slots__ = ("_threads", "path")

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._threads = ThreadConnections(
            self.path,
            timeout=5.0,
            pragmas=("journal_mode=WAL",),
            after_open=_size_in_wal,
            error=failed,
            begin_failed="db",
            commit_failed="db: could not commit",
            disk_full="db: the environment database's disk is full",
        )

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Run a SELECT (or anything that returns rows) and return the rows as dicts."""
        threads = self._threads
        try:
            conn = threads.local.conn or threads.connection()
            cursor = conn.execute(sql, params)
            rows = cursor.fetchall()  # [] for a statement that returns no rows
            if not rows:
                return []
            # C-level loops (this runs on most requests); a row has one value per column.
            columns = tuple(map(_first, cursor.description))
            if len(rows) == 1:
                return [dict(zip(columns, rows[0]))]  # noqa: B905
            return list(map(dict, map(zip, repeat(columns), rows)))
        except sqlite3.Error as exc:
            raise failed(f"db: {exc}") from exc

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement and return how many rows it changed."""
        threads = self._threads
        try:
            conn = threads.local.conn or threads.connection()
            return conn.execute(sql, params).rowcount
        except sqlite3.Error as exc:
            raise failed(f"db: {exc}") from exc

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run one statement once per parameter set; returns the total row count."""
        try:
            return self._threads.connection().executemany(sql, rows).rowcount
        except sqlite3.Error as exc:
            raise failed(f"db: {exc}") from exc

    def transaction(self) -> AbstractContextManager[Database]:
        """Group statements: all of them happen, or (on an exception) none. Nested uses
        join the outer transaction."""
        return _DbTransaction(self)

    def close(self) -> None:
        """Close this thread's connection."""
        self._threads.close()

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r})"


class _DbTransaction:
    """``db.transaction()``."""

    __slots__ = ("_began", "_db")

    def __init__(self, db: Database) -> None:
        self._db = db
        self._began = False

    def __enter__(self) -> Database:
        self._began = self._db._threads.begin()
        return self._db

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._db._threads.end(self._began, failed=kind is not None)


def open_database(url: str | None, default_path: str | Path) -> Any:
    """``db`` for the ``database_url`` setting: the stdlib SQLite ``Database`` when unset
    (``default_path``) or ``sqlite:///<path>``, else a SQLAlchemy ``SqlDatabase``."""
    if not url:
        with contextlib.suppress(OSError):  # made 0644 before the workspace was owner-only
            os.chmod(default_path, 0o600)
        return Database(default_path)
    if url.startswith("sqlite:///") and "?" not in url and url != "sqlite:///:memory:":
        return Database(url.removeprefix("sqlite:///"))
    from .sql_db import SqlDatabase

    return SqlDatabase(url)
