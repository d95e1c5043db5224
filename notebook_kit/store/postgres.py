"""The workspace store on PostgreSQL (psycopg 3): the same API as ``StoreConnection``.

A connection per thread in autocommit mode (a statement outside a transaction is its
own), a nestable ``transaction()``, ``execute``/``write``/``executemany``, rows that read
as ``row["col"]`` and ``row[0]`` like ``sqlite3.Row``, every error a ``StoreError``.

Writers are serialised as SQLite's ``BEGIN IMMEDIATE`` serialises them: each outermost
transaction starts with ``pg_advisory_xact_lock`` on one store-wide key, held until it
commits or rolls back. Every rule that reads then writes inside ``transaction()`` ("the
name is free", "the live deployment is N") therefore sees no concurrent writer on either
backend. A connection that breaks (the server restarted) is dropped and reopened on next
use; only the statement that found it broken fails.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import psycopg

from ..errors import StoreError
from .dialect import DISK_FULL, apply_migrations, check_store_url, mask_url, scrub, to_pyformat
from .pg_schema import PG_MIGRATIONS

__all__ = ["CHANNEL", "PgConnection", "Row", "connect"]

_T = TypeVar("_T")

#: The advisory lock every write transaction takes first ("nk_store" as a number).
WRITE_LOCK = 0x6E6B5F73746F7265
#: The channel ``changed()`` notifies (at commit) and listeners ``LISTEN`` to.
CHANNEL = "notebook_kit_changes"
_FAILED = psycopg.pq.TransactionStatus.INERROR


class Row:
    """One result row: ``row["column"]``, ``row[0]``, unpacking, ``keys()``, ``dict(row)``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and tuple(self._values) == tuple(other._values)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=False))!r})"


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    description = cursor.description or ()
    index = {column.name: i for i, column in enumerate(description)}
    return lambda values: Row(values, index)


def connect(url: str, *, connect_timeout: int = 5) -> psycopg.Connection[Any]:
    """An autocommit connection to ``url``; failures as ``StoreError`` (password masked)."""
    try:
        # A writer waits for the write lock this long, as SQLite's busy timeout (added to
        # the URL's own ``options``); a dead peer is noticed by keepalives, not never.
        given = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
        return psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=connect_timeout,
            row_factory=_row_factory,
            options=f"{given} -c lock_timeout=10000".strip(),
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=3,
        )
    except psycopg.Error as exc:
        detail = scrub(" ".join(str(exc).split()), url)
        raise StoreError(f"cannot reach the store {mask_url(url)}: {detail}") from None


class _PerThread(threading.local):
    conn: psycopg.Connection[Any] | None = None
    depth: int = 0


def _close_all(opened: list[tuple[threading.Thread, psycopg.Connection[Any]]]) -> None:
    for _, conn in opened:
        conn.close()
    opened.clear()


class PgConnection:
    """The store's connections to one PostgreSQL database, one per thread.

    Every connection opened is remembered with its thread: a thread's that has ended is
    closed when another opens, and all of them when this object goes away (a connection
    must be closed, not dropped)."""

    path = None

    def __init__(self, url: str) -> None:
        self.url: str | None = check_store_url(url)
        self._url = url
        self.local = _PerThread()
        self._opened: list[tuple[threading.Thread, psycopg.Connection[Any]]] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _close_all, self._opened)
        self.connection()  # fail now, with a clear message, when the store is unreachable

    def __repr__(self) -> str:
        return f"PgConnection({mask_url(self._url)!r})"

    def connection(self) -> psycopg.Connection[Any]:
        """This thread's connection, opened on first use (or after it broke)."""
        conn = self.local.conn
        if conn is None or conn.closed:
            conn = self.local.conn = connect(self._url)
            self.local.depth = 0
            with self._lock:
                kept = [(t, c) for t, c in self._opened if t.is_alive() and not c.closed]
                for thread, old in self._opened:
                    if not thread.is_alive():
                        old.close()
                self._opened[:] = [*kept, (threading.current_thread(), conn)]
        return conn

    def _failed(self, exc: psycopg.Error, what: str) -> StoreError:
        """``exc`` as a StoreError; a broken connection is dropped (reopened on next use)."""
        conn = self.local.conn
        if conn is not None and (conn.broken or conn.closed):
            self.local.conn = None
            self.local.depth = 0
            conn.close()
        if isinstance(exc, psycopg.errors.DiskFull):  # SQLSTATE 53100
            return StoreError(DISK_FULL)
        detail = scrub(" ".join(str(exc).split()), self._url)
        return StoreError(f"{what}: {detail}")

    @property
    def in_transaction(self) -> bool:
        """Whether this thread is inside ``transaction()``."""
        return self.local.depth > 0

    def transaction(self, value: _T, *, durable: bool = True) -> _Transaction[_T]:
        """One atomic change holding the store's write lock; ``with`` gives ``value``.
        Nested uses join the outer transaction, as on SQLite. ``durable=False``: the
        commit does not wait for the WAL's flush (``synchronous_commit`` off for it)."""
        return _Transaction(self, value, durable)

    def _reconnected(self, exc: psycopg.Error) -> bool:
        """Whether a statement that failed with ``exc`` may run again on a new connection:
        this thread's connection broke (the server restarted) and no transaction was open,
        so nothing was lost with it."""
        conn = self.local.conn
        if self.local.depth or conn is None or not (conn.broken or conn.closed):
            return False
        self.local.conn = None
        conn.close()
        return True

    @contextlib.contextmanager
    def consistent_read(self) -> Iterator[None]:
        """Reads that all see one committed state: a REPEATABLE READ, READ ONLY
        transaction (it takes no lock a writer waits for). Inside ``transaction()`` it
        just joins."""
        if self.local.depth:
            yield
            return
        conn = self.connection()
        try:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        except psycopg.Error as exc:
            raise self._failed(exc, "workspace store error") from exc
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("COMMIT")  # a failed read turns it into a rollback

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        """Run one statement: a read, or a change inside ``transaction()``."""
        query = to_pyformat(sql)
        try:
            return self.connection().execute(query, params)
        except psycopg.Error as exc:
            if not self._reconnected(exc):
                raise self._failed(exc, "workspace store error") from exc
        try:
            return self.connection().execute(query, params)
        except psycopg.Error as exc:
            raise self._failed(exc, "workspace store error") from exc

    def write(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        """Run one change; refused outside ``transaction()``."""
        if not self.local.depth:
            raise StoreError("internal error: a write outside a transaction")
        return self.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> None:
        """Run one change per parameter row; inside ``transaction()`` only."""
        if not self.local.depth:
            raise StoreError("internal error: a write outside a transaction")
        try:
            with self.connection().cursor() as cursor:
                cursor.executemany(to_pyformat(sql), rows)
        except psycopg.Error as exc:
            raise self._failed(exc, "workspace store error") from exc

    def migrate(self) -> None:
        """Apply the migrations this database has not had (inside ``transaction()``)."""
        self.write("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = self.execute("SELECT MAX(version) FROM schema_version").fetchone()
        version = row[0] if row and row[0] is not None else 0
        if apply_migrations(PG_MIGRATIONS, version, self, self.write, mask_url(self._url)):
            self.write("DELETE FROM schema_version")
            self.write("INSERT INTO schema_version (version) VALUES (?)", (len(PG_MIGRATIONS),))

    def changed(self) -> None:
        """Tell listening nodes that what is live changed (delivered when this commits)."""
        self.write(f"NOTIFY {CHANNEL}")

    def reset_ids(self, tables: tuple[str, ...]) -> None:
        """After rows were inserted with their ids: the next id follows the largest."""
        for table in tables:
            self.write(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"COALESCE((SELECT MAX(id) FROM {table}), 1), "
                f"(SELECT MAX(id) FROM {table}) IS NOT NULL)"
            )

    def close_all(self) -> None:
        """Close every thread's connection (each reopens on its next use)."""
        with self._lock:
            _close_all(self._opened)

    def close(self) -> None:
        """Close this thread's connection; other threads keep theirs."""
        conn, self.local.conn = self.local.conn, None
        self.local.depth = 0
        if conn is not None:
            conn.close()


class _Transaction(Generic[_T]):
    """``PgConnection.transaction()``: BEGIN and the write lock, then COMMIT or ROLLBACK."""

    __slots__ = ("_began", "_durable", "_owner", "_value")

    def __init__(self, owner: PgConnection, value: _T, durable: bool = True) -> None:
        self._owner = owner
        self._value = value
        self._durable = durable
        self._began: psycopg.Connection[Any] | None = None

    def __enter__(self) -> _T:
        owner = self._owner
        local = owner.local
        if local.depth:
            local.depth += 1
            return self._value
        for attempt in (1, 2):  # again on a new connection if this one had broken
            conn = owner.connection()
            try:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                if not self._durable:
                    conn.execute("SET LOCAL synchronous_commit TO OFF")
                break
            except psycopg.Error as exc:
                if not conn.broken and not conn.closed:
                    conn.execute("ROLLBACK")
                elif attempt == 1 and owner._reconnected(exc):
                    continue
                raise owner._failed(exc, "the workspace store is busy or broken") from exc
        local.depth = 1
        self._began = conn
        return self._value

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        owner = self._owner
        conn = self._began
        if conn is None:  # a nested one: the outermost ends the transaction
            owner.local.depth -= 1
            return
        owner.local.depth = 0
        if kind is None and conn.info.transaction_status == _FAILED:
            # A statement failed and was caught: COMMIT would quietly roll back.
            conn.execute("ROLLBACK")
            raise StoreError("could not save the change: a statement in it failed")
        try:
            conn.execute("ROLLBACK" if kind is not None else "COMMIT")
        except psycopg.Error as exc:
            error = owner._failed(exc, "could not save the change")
            if kind is None:
                raise error from exc
