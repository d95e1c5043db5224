"""``db`` over SQLAlchemy, for a ``database_url`` such as ``postgresql+psycopg://...``.

The same surface as the SQLite ``Database``: ``query`` (rows as dicts), ``execute``
(row count), ``executemany`` and ``transaction()``. One pooled engine per URL and worker
process. Statements run through ``sqlalchemy.text``, so ``:name`` parameters with a dict
work on every database; ``?`` placeholders with a list are rewritten to ``:p1, :p2, ...``
(outside quotes and comments), so SQL written for the default SQLite database keeps
working. Outside ``transaction()`` each statement commits on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from .failures import failed

__all__ = ["SqlDatabase", "positional_to_named"]

Params = Sequence[Any] | Mapping[str, Any]

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def positional_to_named(sql: str) -> tuple[str, int]:
    """Rewrite each ``?`` outside string literals, quoted names and comments to ``:pN``.
    Returns the new SQL and how many placeholders there were."""
    out: list[str] = []
    count = 0
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in ("'", '"'):
            end = i + 1
            while end < n:
                if sql[end] == c:
                    if end + 1 < n and sql[end + 1] == c:  # doubled quote inside
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1])
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end])
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end])
            i = end
        elif c == "?":
            count += 1
            out.append(f":p{count}")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), count


def _bind(sql: str, params: Params) -> tuple[Any, dict[str, Any]]:
    if isinstance(params, Mapping):
        return text(sql), dict(params)
    if isinstance(params, (str, bytes)):
        raise failed("db: parameters are a list (for ?) or a dict (for :name)")
    values = list(params)
    rewritten, count = positional_to_named(sql)
    if count != len(values):
        raise failed(f"db: the SQL has {count} ? placeholders but {len(values)} values")
    return text(rewritten), {f"p{i}": v for i, v in enumerate(values, 1)}


def _engine(url: str) -> Engine:
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            try:
                engine = create_engine(url, pool_pre_ping=True)
            except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as exc:
                safe = make_url(url).render_as_string() if "://" in url else url
                raise failed(f"db: cannot use database_url {safe}: {exc}") from exc
            _engines[url] = engine
        return engine


class SqlDatabase:
    """``db`` for a SQLAlchemy URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()

    @property
    def engine(self) -> Engine:
        return _engine(self.url)

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        current = getattr(self._local, "conn", None)
        if current is not None:  # inside transaction(): join it
            yield current
            return
        with self.engine.begin() as conn:
            yield conn

    def query(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """Run a SELECT (or anything that returns rows) and return the rows as dicts."""
        statement, bound = _bind(sql, params)
        try:
            with self._connection() as conn:
                result = conn.execute(statement, bound)
                return [dict(row) for row in result.mappings()] if result.returns_rows else []
        except SQLAlchemyError as exc:
            raise failed(f"db: {exc.__cause__ or exc}") from exc

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement and return how many rows it changed."""
        statement, bound = _bind(sql, params)
        try:
            with self._connection() as conn:
                return conn.execute(statement, bound).rowcount
        except SQLAlchemyError as exc:
            raise failed(f"db: {exc.__cause__ or exc}") from exc

    def executemany(self, sql: str, rows: Sequence[Params]) -> int:
        """Run one statement once per parameter set; returns the total row count."""
        total = 0
        with self.transaction():
            for row in rows:
                total += self.execute(sql, row)
        return total

    @contextmanager
    def transaction(self) -> Iterator[SqlDatabase]:
        """Group statements: all of them happen, or (on an exception) none. Nested uses
        join the outer transaction."""
        if getattr(self._local, "conn", None) is not None:
            yield self
            return
        try:
            conn = self.engine.connect()
            conn.begin()
        except SQLAlchemyError as exc:
            raise failed(f"db: {exc.__cause__ or exc}") from exc
        self._local.conn = conn
        try:
            yield self
        except BaseException:
            conn.rollback()
            raise
        else:
            try:
                conn.commit()
            except SQLAlchemyError as exc:
                raise failed(f"db: could not commit: {exc.__cause__ or exc}") from exc
        finally:
            self._local.conn = None
            conn.close()

    def close(self) -> None:
        """Close this worker's pooled connections to the URL."""
        with _engines_lock:
            engine = _engines.pop(self.url, None)
        if engine is not None:
            engine.dispose()

    def __repr__(self) -> str:
        return f"SqlDatabase({make_url(self.url).render_as_string()!r})"
