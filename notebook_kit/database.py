"""The execution environment's database, reached from actions as ``db``.

A SQLite file in the workspace (``environment.sqlite3``). Parameters are always bound by
the driver, never formatted into SQL. One connection per thread, opened on first use, in
autocommit mode: each ``execute`` is its own transaction unless wrapped in
``db.transaction()``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["Database"]

Params = Sequence[Any] | dict[str, Any]


class Database:
    """``db`` in actions: ``query`` returns rows as dicts, ``execute`` the row count."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=5.0)
            conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
        return conn

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Run a SELECT (or anything that returns rows) and return the rows as dicts."""
        cursor = self._connection().execute(sql, params)
        if cursor.description is None:
            return []
        columns = [column[0] for column in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement and return how many rows it changed."""
        return self._connection().execute(sql, params).rowcount

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        return self._connection().executemany(sql, rows).rowcount

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Group statements: all of them happen, or (on an exception) none."""
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __repr__(self) -> str:
        return f"Database({str(self.path)!r})"
