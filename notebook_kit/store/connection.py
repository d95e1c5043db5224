"""One SQLite file shared by threads and processes: connections and transactions.

``StoreConnection`` is the machinery every table group of the workspace store builds on
(``Store``, ``RequestLog``, the user directory): a connection per thread (WAL mode, so a
notebook, the CLI and servers use the file at once) and ``transaction()``, in which a
change all happens or none of it does. Writes outside a transaction are refused.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from ..errors import StoreError

__all__ = ["StoreConnection"]


class StoreConnection:
    """Thread-local connections to ``path`` and nestable transactions over them."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=10.0, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            self._local.conn = conn
            self._local.depth = 0
        return conn

    @contextmanager
    def transaction(self) -> Iterator[Self]:
        """One atomic change. Nested uses join the outer transaction."""
        conn = self._conn()
        if self._local.depth:
            self._local.depth += 1
            try:
                yield self
            finally:
                self._local.depth -= 1
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"the workspace store is busy or broken: {exc}") from exc
        self._local.depth = 1
        try:
            yield self
        except BaseException:
            self._local.depth = 0
            conn.execute("ROLLBACK")
            raise
        self._local.depth = 0
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"could not save the change: {exc}") from exc

    def _execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        try:
            return self._conn().execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"workspace store error: {exc}") from exc

    def _write(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if not getattr(self._local, "depth", 0):
            raise StoreError("internal error: a write outside a transaction")
        return self._execute(sql, params)

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
